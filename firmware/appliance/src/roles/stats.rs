//! The statistics the box publishes once a second (`--stats json`, later the API and /metrics).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use telebridge_media::{EncoderChoice, EncoderCounters};
use telebridge_srt::OutputStatus;

/// Encoder figures for one interval plus totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EncoderStats {
    /// The encoder element in use.
    pub element: String,
    /// Why this encoder (the board, its kernel, what was installed and worked).
    pub reason: String,
    /// Frames encoded per second over the last interval.
    pub fps: f64,
    /// Video bitrate over the last interval, kbit/s.
    pub bitrate_kbps: f64,
    /// Frames that left the source so far (they stop when the input signal goes).
    pub frames_captured: u64,
    /// Frames encoded so far.
    pub frames_encoded: u64,
    /// Frames dropped before encoding so far.
    pub frames_dropped: u64,
    /// Frames left out on purpose so far: the frame rate stepped down under the adaptive
    /// bitrate's floor.
    pub frames_skipped: u64,
    /// Keyframes so far.
    pub keyframes: u64,
    /// AAC frames so far.
    pub audio_frames: u64,
}

/// One line of `--stats json`.
#[derive(Debug, Clone, Serialize)]
pub struct StatsSample {
    /// Seconds since start.
    pub t: f64,
    /// Frames arrive from the source (see `roles::signal`); `null` until the first frame, or
    /// until it is overdue.
    pub signal: Option<bool>,
    /// The encoder.
    pub encoder: EncoderStats,
    /// Each output.
    pub outputs: Vec<OutputStatus>,
    /// The adaptive bitrate: what it chose and why (`None` with a fixed bitrate).
    pub rate: Option<crate::rate::RateStatus>,
}

/// The line printed at exit.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// How long it ran, seconds.
    pub duration_s: f64,
    /// Encoder totals and averages over the whole run.
    pub encoder: EncoderStats,
    /// Each output's final status and counters.
    pub outputs: Vec<OutputStatus>,
}

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
