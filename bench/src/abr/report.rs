//! The table and the verdict, over one run of each trace and mode or several (`--repeats`:
//! runs of one law differ by tens of frames on the 4G traces, so a change is judged on the
//! median, with the spread beside it).

use super::{Figures, Mode};

/// The middle value (the lower of the two middle ones for an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// A figure of one run, or of several as "median (lowest-highest)".
fn cell(figs: &[Figures], f: impl Fn(&Figures) -> f64, digits: usize) -> String {
    let xs: Vec<f64> = figs.iter().map(f).collect();
    let m = median(xs.clone());
    if xs.len() < 2 {
        return format!("{m:.digits$}");
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{m:.digits$} ({lo:.digits$}-{hi:.digits$})")
}

/// The median of what was lost for good, and of the mean bitrate.
pub(super) fn medians(figs: &[Figures]) -> (f64, f64) {
    (median(figs.iter().map(|f| f.lost as f64).collect()), median(figs.iter().map(|f| f.mean_kbps).collect()))
}

/// One line of the table.
pub(super) fn row(trace: &str, mode: Mode, figs: &[Figures]) -> String {
    // The worst recovery over the runs (never: infinite).
    let worst =
        figs.iter().filter_map(|f| f.recovery_s).fold(None, |w: Option<f64>, r| Some(w.map_or(r, |w| w.max(r))));
    let rec = match worst {
        None => "no drop".to_string(),
        Some(x) if x.is_finite() => format!("{x:.0} s"),
        Some(_) => "never".to_string(),
    };
    format!(
        "| {trace} | {} | {} | {} | {} | {} | {rec} |",
        mode.label(),
        cell(figs, |f| f.lost as f64, 0),
        cell(figs, |f| f.lossy_seconds as f64, 0),
        cell(figs, |f| f.mean_kbps, 0),
        cell(figs, |f| f.p10_kbps, 0),
    )
}

/// The bar on one trace: ours loses no more than belacoder's rule and delivers at least
/// its mean; on the 4G traces strictly fewer lost frames (medians over the repeats).
pub(super) fn verdict(name: &str, belacoder: &[Figures], ours: &[Figures]) -> String {
    let ((bl, bm), (ol, om)) = (medians(belacoder), medians(ours));
    let fewer = if name.starts_with("4g") { ol < bl } else { ol <= bl };
    format!(
        "{name}: ours {} belacoder's rule on lost frames ({ol} vs {bl}), {} on mean bitrate ({om:.0} vs {bm:.0} kbit/s){}",
        if fewer { "beats or equals" } else { "LOSES TO" },
        if om >= bm { "at least" } else { "UNDER" },
        if ours.len() > 1 { format!(" (medians of {} runs)", ours.len()) } else { String::new() },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(lost: u64, mean: f64) -> Figures {
        Figures { lost, lossy_seconds: 1, mean_kbps: mean, p10_kbps: mean / 2.0, recovery_s: Some(3.0) }
    }

    #[test]
    fn one_run_reads_as_before_several_as_median_and_spread() {
        assert_eq!(row("4g-1", Mode::Ours, &[f(12, 1500.0)]), "| 4g-1 | ours | 12 | 1 | 1500 | 750 | 3 s |");
        let three = [f(40, 1400.0), f(12, 1500.0), f(90, 1300.0)];
        assert_eq!(
            row("4g-1", Mode::Ours, &three),
            "| 4g-1 | ours | 40 (12-90) | 1 (1-1) | 1400 (1300-1500) | 700 (650-750) | 3 s |"
        );
        assert_eq!(medians(&three), (40.0, 1400.0));
    }

    #[test]
    fn the_verdict_is_on_the_medians() {
        let bela = [f(10, 700.0), f(150, 600.0), f(30, 800.0)];
        let ours = [f(25, 1400.0), f(20, 1500.0), f(200, 1300.0)];
        let v = verdict("4g-1", &bela, &ours);
        assert!(v.starts_with("4g-1: ours beats or equals belacoder's rule on lost frames (25 vs 30)"), "{v}");
        assert!(v.ends_with("(medians of 3 runs)"), "{v}");
        assert!(verdict("4g-2", &[f(5, 700.0)], &[f(5, 900.0)]).contains("LOSES TO"), "4G needs strictly fewer");
        assert!(verdict("steps", &[f(5, 700.0)], &[f(5, 600.0)]).contains("UNDER"));
    }
}
