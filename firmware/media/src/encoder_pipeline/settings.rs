//! What the pipeline is asked to make, and what it counts.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use telebridge_config::{AudioCodec, AudioSource, ValidConfig, VideoSource};

use crate::encoder_choice::EncoderChoice;

/// Everything the pipeline needs to know, taken from a validated configuration.
#[derive(Debug, Clone)]
pub struct EncoderSettings {
    /// Where the picture comes from.
    pub video_source: VideoSource,
    /// Encoded size and rate.
    pub width: u32,
    /// Encoded height.
    pub height: u32,
    /// Frames per second.
    pub fps: u32,
    /// Video bitrate, kbit/s.
    pub bitrate_kbps: u32,
    /// How much the encoder's rate may run ahead of its bitrate, as time at it (x264's VBV
    /// buffer): a second keeps a fixed rate even; an adaptive one must follow a cut within a
    /// fraction of a second (with 1 s, x264 kept making the old rate for 0.4 s after a cut to
    /// a quarter, which the link could not carry in time).
    pub rate_buffer_ms: u32,
    /// Keyframe interval.
    pub keyframe_interval: Duration,
    /// x264 speed preset.
    pub x264_preset: String,
    /// Where the sound comes from.
    pub audio_source: AudioSource,
    /// AAC or none.
    pub audio_codec: AudioCodec,
    /// AAC bitrate, kbit/s.
    pub audio_bitrate_kbps: u32,
    /// The sound played this much later than captured, ms (negative: earlier).
    pub audio_delay_ms: i32,
    /// The encoder element to use.
    pub encoder: EncoderChoice,
    /// Take frames pushed through [`crate::EncoderPipeline::frame_input`] instead of `video_source`
    /// (a decoder re-encoding what it shows, for round-trip measurements).
    pub frames_from_app: bool,
}

/// What the running pipeline is wired to beside its settings: shared state it writes or reads
/// while it runs (none of it is a setting, and none of it is compared or saved).
#[derive(Debug, Clone, Default)]
pub struct Taps {
    /// Where to keep a small JPEG of the picture, made at most once a second (the panel's
    /// preview); `None` makes none.
    pub preview: Option<PreviewSlot>,
    /// While this holds `false` the source's frames are thrown away as they leave it, as if the
    /// HDMI cable were out: the simulated cable of `telebridge run --sim`. `None`: no gate.
    pub signal_gate: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The bridge: the far box's timecode to burn back under this box's own (test source only).
    pub echo: Option<crate::timecode::Echo>,
    /// Where the programme's sound meter writes its readings ([`crate::sound_level`]); `None`
    /// meters nothing.
    pub levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
}

/// The latest preview picture: a JPEG at most [`PREVIEW_WIDTH`] wide, replaced once a second.
pub type PreviewSlot = Arc<std::sync::Mutex<Option<Vec<u8>>>>;

/// The preview's width in pixels.
pub const PREVIEW_WIDTH: u32 = 320;

impl EncoderSettings {
    /// Settings from a validated configuration and an encoder choice.
    pub fn from_config(config: &ValidConfig, encoder: EncoderChoice) -> Self {
        let p = &config.picture;
        Self {
            video_source: config.video_source.clone(),
            width: p.width,
            height: p.height,
            fps: p.fps,
            bitrate_kbps: p.bitrate_kbps,
            rate_buffer_ms: match p.bitrate_mode {
                telebridge_config::BitrateMode::Fixed => 1000,
                telebridge_config::BitrateMode::Adaptive => 300,
            },
            keyframe_interval: config.keyframe_interval,
            x264_preset: p.x264_preset.clone(),
            audio_source: config.audio_source.clone(),
            audio_codec: config.audio_codec,
            audio_bitrate_kbps: config.audio_bitrate_kbps,
            audio_delay_ms: config.audio_delay_ms,
            encoder,
            frames_from_app: false,
        }
    }

    pub(super) fn keyframe_frames(&self) -> u32 {
        ((self.keyframe_interval.as_millis() as u64 * u64::from(self.fps)) / 1000).max(1) as u32
    }
}

/// Counters the pipeline keeps; read them at any time.
#[derive(Debug, Default)]
pub struct EncoderCounters {
    /// Frames that left the source.
    pub frames_captured: AtomicU64,
    /// Frames that left the encoder.
    pub frames_encoded: AtomicU64,
    /// Keyframes among them.
    pub keyframes: AtomicU64,
    /// Encoded video bytes.
    pub video_bytes: AtomicU64,
    /// Frames dropped before the encoder because it could not keep up.
    pub frames_dropped: AtomicU64,
    /// Frames left out on purpose before the encoder: an adaptive bitrate under its floor keeps
    /// one frame in two ([`super::EncoderPipeline::frame_rate_setter`]).
    pub frames_skipped: AtomicU64,
    /// AAC frames encoded.
    pub audio_frames: AtomicU64,
    /// MPEG-TS bytes handed to outputs.
    pub ts_bytes: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoder_choice::EncoderKind;

    #[test]
    fn keyframe_interval_in_frames() {
        let s = |ms: u64, fps: u32| EncoderSettings {
            video_source: VideoSource::Test,
            width: 1280,
            height: 720,
            fps,
            bitrate_kbps: 4000,
            rate_buffer_ms: 1000,
            keyframe_interval: Duration::from_millis(ms),
            x264_preset: "superfast".into(),
            audio_source: AudioSource::Test,
            audio_codec: AudioCodec::Aac,
            audio_bitrate_kbps: 128,
            audio_delay_ms: 0,
            encoder: EncoderChoice { kind: EncoderKind::X264enc, reason: String::new() },
            frames_from_app: false,
        };
        assert_eq!(s(1000, 30).keyframe_frames(), 30);
        assert_eq!(s(2000, 25).keyframe_frames(), 50);
        assert_eq!(s(100, 9).keyframe_frames(), 1);
    }
}
