//! The slate as a picture: the words the decoder shows while no picture arrives, rendered
//! once per text and size.

use gst::prelude::*;
use telebridge_contract::sound::ChannelLevel;
use tracing::warn;

use crate::error::MediaError;

/// The tally border's colour on the slate (red, BT.601 limited range): Y, U, V.
pub const TALLY_RED: (u8, u8, u8) = (81, 90, 240);

/// The tally border's thickness on a slate `height` lines high (even, so the chroma planes
/// follow it exactly).
pub fn tally_border(height: u32) -> u32 {
    ((height / 24).max(2) + 1) & !1
}

/// Paints a border `thickness` pixels wide round an I420 picture of `width` x `height` (even
/// sizes) in `yuv`. Pure.
pub fn paint_border(data: &mut [u8], width: u32, height: u32, thickness: u32, yuv: (u8, u8, u8)) {
    let (w, h, t) = (width as usize, height as usize, thickness as usize);
    let (cw, ch, ct) = (w / 2, h / 2, t / 2);
    if data.len() < w * h + 2 * cw * ch {
        return;
    }
    let (y, chroma) = data.split_at_mut(w * h);
    let (u, v) = chroma.split_at_mut(cw * ch);
    let paint = |plane: &mut [u8], pw: usize, ph: usize, pt: usize, value: u8| {
        for row in 0..ph {
            let line = &mut plane[row * pw..(row + 1) * pw];
            if row < pt || row + pt >= ph {
                line.fill(value);
            } else {
                line[..pt.min(pw)].fill(value);
                line[pw.saturating_sub(pt)..].fill(value);
            }
        }
    };
    paint(y, w, h, t, yuv.0);
    paint(u, cw, ch, ct, yuv.1);
    paint(v, cw, ch, ct, yuv.2);
}

/// The meter's scale: its bars run from this to full scale, dBFS.
pub const METER_FLOOR_DB: f64 = -60.0;
const METER_BACK: (u8, u8, u8) = (40, 128, 128);
const METER_GREEN: (u8, u8, u8) = (145, 54, 34);
const METER_AMBER: (u8, u8, u8) = (170, 34, 170);
const METER_PEAK: (u8, u8, u8) = (235, 128, 128);

/// Paints the sound's meter into an I420 picture: a bar a channel across the bottom sixth, its
/// RMS filled (green, amber above -12 dBFS) and its peak a white tick, from [`METER_FLOOR_DB`]
/// to full scale. Cells of 2x2 pixels, so that the chroma planes follow.
pub fn paint_meters(data: &mut [u8], width: u32, height: u32, channels: &[ChannelLevel]) {
    let (w, h) = (width as usize & !1, height as usize & !1);
    let (cw, ch) = (width as usize / 2, height as usize / 2);
    if channels.is_empty() || data.len() < (width * height) as usize + 2 * cw * ch || w < 64 || h < 64 {
        return;
    }
    let bar = ((h / 40) & !1).max(4);
    let gap = (bar / 2) & !1;
    let left = (w / 10) & !1;
    let span = w - 2 * left;
    let top0 = (h - h / 12 - channels.len() * (bar + gap)) & !1;
    let x_of =
        |db: f64| (left + (((db - METER_FLOOR_DB) / -METER_FLOOR_DB).clamp(0.0, 1.0) * span as f64) as usize) & !1;
    let (y, chroma) = data.split_at_mut(width as usize * height as usize);
    let (u, v) = chroma.split_at_mut(cw * ch);
    let mut fill = |x0: usize, x1: usize, top: usize, yuv: (u8, u8, u8)| {
        for row in top..top + bar {
            let line = row * width as usize;
            y[line + x0..line + x1].fill(yuv.0);
            if row % 2 == 0 {
                let c = row / 2 * cw;
                u[c + x0 / 2..c + x1 / 2].fill(yuv.1);
                v[c + x0 / 2..c + x1 / 2].fill(yuv.2);
            }
        }
    };
    for (i, c) in channels.iter().enumerate() {
        let top = top0 + i * (bar + gap);
        fill(left, left + span, top, METER_BACK);
        let rms = x_of(c.rms_db);
        fill(left, rms, top, if c.rms_db > -12.0 { METER_AMBER } else { METER_GREEN });
        let peak = x_of(c.peak_db).min(left + span - 2);
        if c.peak_db > METER_FLOOR_DB {
            fill(peak, peak + 2, top, METER_PEAK);
        }
    }
}

/// `sample` (an I420 picture) with the sound's meter painted in ([`paint_meters`]).
pub fn with_meters(sample: &gst::Sample, channels: &[ChannelLevel]) -> gst::Sample {
    let Some(info) = sample.caps().and_then(|c| gst_video::VideoInfo::from_caps(c).ok()) else { return sample.clone() };
    let Some(mut buffer) = sample.buffer_owned() else { return sample.clone() };
    if let Ok(mut m) = buffer.make_mut().map_writable() {
        paint_meters(m.as_mut_slice(), info.width(), info.height(), channels);
    }
    let caps = sample.caps_owned();
    let mut b = gst::Sample::builder().buffer(&buffer);
    if let Some(c) = caps.as_ref() {
        b = b.caps(c);
    }
    b.build()
}

/// Renders the slate: the text centred on a dark blue picture, framed in red while the box is
/// on air (the tally). Without GStreamer's text overlay (package gstreamer1.0-x) the picture is
/// plain, never missing.
pub fn render_slate(text: &str, size: (u32, u32), on_air: bool) -> gst::Sample {
    let sample = render_text(text, size);
    if !on_air {
        return sample;
    }
    let Some(mut buffer) = sample.buffer_owned() else { return sample };
    if let Ok(mut m) = buffer.make_mut().map_writable() {
        paint_border(m.as_mut_slice(), size.0, size.1, tally_border(size.1), TALLY_RED);
    }
    let caps = sample.caps_owned();
    let mut b = gst::Sample::builder().buffer(&buffer);
    if let Some(c) = caps.as_ref() {
        b = b.caps(c);
    }
    b.build()
}

fn render_text(text: &str, size: (u32, u32)) -> gst::Sample {
    let build = || -> Result<gst::Sample, MediaError> {
        let pipeline = gst::Pipeline::with_name("slate-render");
        let src = gst::ElementFactory::make("videotestsrc")
            .property("num-buffers", 1i32)
            .property_from_str("pattern", "solid-color")
            .property("foreground-color", 0xff_14_2a_4cu32)
            .build()?;
        let caps = gst::Caps::builder("video/x-raw")
            .field("format", "I420")
            .field("width", size.0 as i32)
            .field("height", size.1 as i32)
            .field("framerate", gst::Fraction::new(5, 1))
            .build();
        let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
        let sink = gst_app::AppSink::builder().sync(false).build();
        let mut chain: Vec<gst::Element> = vec![src, filter];
        match gst::ElementFactory::make("textoverlay").build() {
            Ok(overlay) => {
                let points = (size.1 / 30).clamp(8, 48);
                overlay.set_property("text", text);
                overlay.set_property("font-desc", format!("DejaVu Sans {points}"));
                overlay.set_property_from_str("halignment", "center");
                overlay.set_property_from_str("valignment", "center");
                overlay.set_property_from_str("line-alignment", "center");
                overlay.set_property("shaded-background", false);
                chain.push(overlay);
            }
            Err(_) => warn!("textoverlay is missing (install gstreamer1.0-x): the slate has no words"),
        }
        chain.push(sink.clone().upcast());
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        pipeline.set_state(gst::State::Playing)?;
        let sample = sink.try_pull_sample(gst::ClockTime::from_seconds(2));
        let _ = pipeline.set_state(gst::State::Null);
        sample.ok_or_else(|| MediaError::Gst("slate renderer produced nothing".into()))
    };
    match build() {
        Ok(s) => s,
        Err(e) => {
            warn!(error = %e, "cannot render the slate; showing a black picture");
            let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, size.0, size.1).build().ok();
            let mut buffer = gst::Buffer::with_size(info.as_ref().map(|i| i.size()).unwrap_or(0))
                .unwrap_or_else(|_| gst::Buffer::new());
            if let Some(b) = buffer.get_mut() {
                if let Ok(mut m) = b.map_writable() {
                    let luma = (size.0 * size.1) as usize;
                    let data = m.as_mut_slice();
                    let split = luma.min(data.len());
                    let (y, uv) = data.split_at_mut(split);
                    y.fill(16);
                    uv.fill(128);
                }
            }
            let mut b = gst::Sample::builder().buffer(&buffer);
            let caps = info.and_then(|i| i.to_caps().ok());
            if let Some(c) = caps.as_ref() {
                b = b.caps(c);
            }
            b.build()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_border_frames_every_plane_and_leaves_the_middle() {
        let (w, h) = (64u32, 48u32);
        let (cw, ch) = (32usize, 24usize);
        let mut data = vec![0u8; (w * h) as usize + 2 * cw * ch];
        let t = tally_border(h);
        assert_eq!(t % 2, 0);
        paint_border(&mut data, w, h, t, TALLY_RED);
        let y = |x: usize, r: usize| data[r * w as usize + x];
        let u = |x: usize, r: usize| data[(w * h) as usize + r * cw + x];
        let v = |x: usize, r: usize| data[(w * h) as usize + cw * ch + r * cw + x];
        for (x, r) in [(0, 0), (63, 0), (0, 47), (63, 47), (30, 0), (0, 20), (63, 20), (30, 47)] {
            assert_eq!(y(x, r), 81, "luma at {x},{r}");
        }
        for (x, r) in [(0, 0), (31, 23), (15, 0), (0, 12)] {
            assert_eq!((u(x, r), v(x, r)), (90, 240), "chroma at {x},{r}");
        }
        assert_eq!(y(32, 24), 0, "the middle is the slate's");
        assert_eq!((u(16, 12), v(16, 12)), (0, 0));
        // A buffer too small for the size is left alone, not overrun.
        let mut short = vec![7u8; 10];
        paint_border(&mut short, w, h, t, TALLY_RED);
        assert!(short.iter().all(|b| *b == 7));
    }

    /// A blank I420 picture: luma 16, chroma 128.
    fn blank(w: usize, h: usize) -> Vec<u8> {
        let mut d = vec![16u8; w * h];
        d.extend(std::iter::repeat_n(128u8, 2 * (w / 2) * (h / 2)));
        d
    }

    #[test]
    fn the_meter_fills_each_channels_rms_and_ticks_its_peak_in_every_plane() {
        let (w, h) = (320usize, 180usize);
        let mut d = blank(w, h);
        paint_meters(&mut d, w as u32, h as u32, &[ChannelLevel::new(-6.0, -9.0), ChannelLevel::new(-100.0, -100.0)]);
        // Geometry as painted: bars of 4 lines, 2 apart, from x 32 over 256 pixels, above
        // the bottom 15 lines.
        let (bar, gap, left, span) = (4usize, 2usize, 32usize, 256usize);
        let top = (h - h / 12 - 2 * (bar + gap)) & !1;
        let y = |x: usize, row: usize| d[row * w + x];
        let u = |x: usize, row: usize| d[w * h + row / 2 * (w / 2) + x / 2];
        let at = |db: f64| left + ((db + 60.0) / 60.0 * span as f64) as usize;
        // Left: amber to -9 dBFS (RMS over -12), the peak's tick at -6, the rest of the bar dark.
        assert_eq!((y(left + 2, top), u(left + 2, top)), (METER_AMBER.0, METER_AMBER.1));
        assert_eq!(y(at(-9.0) - 4, top + 3), METER_AMBER.0);
        assert_eq!(y(at(-7.5), top), METER_BACK.0);
        assert_eq!(y(at(-6.0) & !1, top + 1), METER_PEAK.0);
        assert_eq!(y(left + span - 2, top), METER_BACK.0);
        // Right: silence, a dark bar and no tick; nothing painted outside the bars.
        let top2 = top + bar + gap;
        assert!((left..left + span).all(|x| y(x, top2) == METER_BACK.0));
        assert_eq!((y(left - 1, top), y(left + 2, top - 1), y(left + 2, top + bar)), (16, 16, 16));
    }

    #[test]
    fn a_picture_too_small_or_short_of_bytes_is_left_as_it_is() {
        let mut d = blank(32, 32);
        paint_meters(&mut d, 32, 32, &[ChannelLevel::new(0.0, 0.0)]);
        assert_eq!(d, blank(32, 32));
        let mut short = vec![16u8; 100];
        paint_meters(&mut short, 320, 180, &[ChannelLevel::new(0.0, 0.0)]);
        assert!(short.iter().all(|b| *b == 16));
    }
}
