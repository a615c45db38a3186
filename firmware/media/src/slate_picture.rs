//! The slate as a picture: the words the decoder shows while no picture arrives, rendered
//! once per text and size.

use gst::prelude::*;
use tracing::warn;

use crate::error::MediaError;

/// Renders the slate: the text centred on a dark blue picture. Without GStreamer's text overlay
/// (package gstreamer1.0-x) the picture is plain, never missing.
pub fn render_slate(text: &str, size: (u32, u32)) -> gst::Sample {
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
