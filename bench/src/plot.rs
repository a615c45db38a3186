//! Line charts of time series to PNG (plotters, with the DejaVu font the setup installs).

use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::prelude::*;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// One line: a label and (x, y) points.
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

fn register_font() -> anyhow::Result<()> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    let font = std::fs::read(FONT).with_context(|| format!("reading {FONT} (install fonts-dejavu-core)"))?;
    let font: &'static [u8] = Box::leak(font.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, font).map_err(|_| anyhow!("cannot load {FONT}"))?;
    let _ = DONE.set(());
    Ok(())
}

/// Draws labelled bars (one value each) into a PNG at `path`.
pub fn bars(path: &Path, title: &str, y_label: &str, bars: &[(String, f64)]) -> anyhow::Result<()> {
    register_font()?;
    let ymax = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.15;
    let root = BitMapBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0..bars.len()).into_segmented(), 0f64..ymax)?;
    chart
        .configure_mesh()
        .y_desc(y_label)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .draw()?;
    let colors = [RED, BLUE];
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let mut bar = Rectangle::new(
            [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), b.1)],
            colors[i % colors.len()].mix(0.7).filled(),
        );
        bar.set_margin(0, 0, 20, 20);
        bar
    }))?;
    root.present()?;
    Ok(())
}

/// Draws `series` into a PNG at `path`.
pub fn lines(path: &Path, title: &str, x_label: &str, y_label: &str, series: &[Series]) -> anyhow::Result<()> {
    register_font()?;
    let xmax = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(1.0, f64::max);
    let ymax = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
    let root = BitMapBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).label_style(("sans-serif", 14)).draw()?;
    let colors = [
        RED,
        BLUE,
        GREEN,
        MAGENTA,
        CYAN,
        BLACK,
        RGBColor(255, 140, 0),
        RGBColor(128, 0, 128),
        RGBColor(139, 69, 19),
        RGBColor(128, 128, 128),
    ];
    for (i, s) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
