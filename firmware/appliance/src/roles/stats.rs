//! The statistics the box publishes once a second (`--stats json`, later the API and /metrics).

use std::sync::atomic::Ordering;
use std::time::Duration;

use telebridge_media::{EncoderChoice, EncoderCounters};

pub use telebridge_contract::roles::{EncoderStats, StatsSample, Summary};

/// Turns counter readings into per-interval figures.
#[derive(Debug, Default)]
pub struct EncoderMeter {
    last_frames: u64,
    last_bytes: u64,
}

impl EncoderMeter {
    /// Figures since the last call, over `interval`.
    pub fn sample(&mut self, choice: &EncoderChoice, c: &EncoderCounters, interval: Duration) -> EncoderStats {
        let frames = c.frames_encoded.load(Ordering::Relaxed);
        let bytes = c.video_bytes.load(Ordering::Relaxed);
        let secs = interval.as_secs_f64().max(1e-3);
        let s = EncoderStats {
            element: choice.kind.element().to_string(),
            reason: choice.reason.clone(),
            fps: round1(frames.saturating_sub(self.last_frames) as f64 / secs),
            bitrate_kbps: round1(bytes.saturating_sub(self.last_bytes) as f64 * 8.0 / 1000.0 / secs),
            frames_captured: c.frames_captured.load(Ordering::Relaxed),
            frames_encoded: frames,
            frames_dropped: c.frames_dropped.load(Ordering::Relaxed),
            frames_skipped: c.frames_skipped.load(Ordering::Relaxed),
            keyframes: c.keyframes.load(Ordering::Relaxed),
            audio_frames: c.audio_frames.load(Ordering::Relaxed),
        };
        self.last_frames = frames;
        self.last_bytes = bytes;
        s
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
