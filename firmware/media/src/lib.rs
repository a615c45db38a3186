//! Telebridge's GStreamer pipelines: sources (test pattern, V4L2 capture, libcamera, ALSA),
//! the run-time choice of H.264 encoder, the burnt-in timecode, and the encoder pipeline that
//! hands MPEG-TS to any number of outputs.

pub mod capture_device;
pub mod decode_pipeline;
pub mod decoder_choice;
pub mod display;
pub mod encoder_choice;
pub mod encoder_pipeline;
mod error;
mod kms;
pub mod latency;
pub mod lipsync;
pub mod monitor;
pub mod platform;
mod slate_picture;
pub mod sound_level;
mod stream_kind;
#[allow(unsafe_code)]
mod sys;
pub mod talk;
pub mod timecode;
pub mod timeline;
pub mod watched;

pub use encoder_choice::{choose_encoder, EncoderChoice, EncoderKind};
pub use encoder_pipeline::{
    probe_encoder, EncoderCounters, EncoderPipeline, EncoderSettings, PreviewSlot, Taps, TsConsumerId, TsFanout,
};
pub use error::{make, MediaError, VIDEO_SOURCE};
pub use platform::{CodecPart, Platform};

/// The sample rate and channel count of raw audio caps on `pad`, if it has them.
pub(crate) fn audio_format(pad: &gst::Pad) -> Option<(u32, usize)> {
    let caps = gst::prelude::PadExt::current_caps(pad)?;
    let s = caps.structure(0)?;
    Some((s.get::<i32>("rate").ok()? as u32, s.get::<i32>("channels").ok()? as usize))
}

/// Initialises GStreamer once per process.
pub fn init() -> Result<(), MediaError> {
    gst::init().map_err(|e| MediaError::Gst(e.to_string()))
}

/// Routes GStreamer's log through `tracing` (errors only, unless `GST_DEBUG` is set); the lines
/// of its SRT plugin, which takes libsrt's log over where a peer in this process uses it, go to
/// `srtlib_line` (they still say why a connection was refused). Once per process, after [`init`].
pub fn route_log(srtlib_line: fn(&str)) {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        if std::env::var_os("GST_DEBUG").is_none() {
            gst::log::remove_default_log_function();
        }
        gst::log::add_log_function(move |category, level, _file, _function, _line, object, message| {
            let Some(text) = message.get() else { return };
            if category.name() == "srtlib" {
                srtlib_line(&text);
                return;
            }
            if level <= gst::DebugLevel::Error {
                let who = object.map(|o| o.to_string()).unwrap_or_default();
                tracing::debug!(target: "gstreamer", "{} {who}: {text}", category.name());
            }
        });
    });
}

/// Whether GStreamer has an element factory of this name (initialising GStreamer first: the
/// question is asked before any pipeline exists, e.g. when a connected monitor makes the setup
/// screen pick `kmssink`).
pub fn has_element(name: &str) -> bool {
    init().is_ok() && gst::ElementFactory::find(name).is_some()
}
