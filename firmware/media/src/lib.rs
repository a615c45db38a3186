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
pub mod platform;
mod slate_picture;
pub mod timecode;
pub mod timeline;
pub mod watched;

pub use encoder_choice::{choose_encoder, EncoderChoice, EncoderKind};
pub use encoder_pipeline::{
    probe_encoder, EncoderCounters, EncoderPipeline, EncoderSettings, PreviewSlot, TsConsumerId, TsFanout,
};
pub use error::{make, MediaError};
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

/// Whether GStreamer has an element factory of this name (initialising GStreamer first: the
/// question is asked before any pipeline exists, e.g. when a connected monitor makes the setup
/// screen pick `kmssink`).
pub fn has_element(name: &str) -> bool {
    init().is_ok() && gst::ElementFactory::find(name).is_some()
}
