//! What the decoder role reports: one line a second of `decode --stats json` and the summary at
//! exit (the panel, `/api/status` and `/metrics` read the same types).

use serde::Serialize;
use telebridge_media::latency::LatencySummary;
use telebridge_media::lipsync::AvOffsetSummary;
use telebridge_srt::{InputStatus, OutputStatus};

/// Decoder figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DecoderStats {
    /// The decoder element.
    pub element: String,
    /// Why this decoder (the board, its kernel, what was installed).
    pub reason: String,
    /// Frames decoded per second over the last interval.
    pub fps: f64,
    /// Frames decoded so far.
    pub frames_decoded: u64,
    /// Frames missing between timecodes (lost for good upstream), test-pattern senders only.
    pub frames_missing: u64,
    /// Audio frames decoded so far.
    pub audio_frames: u64,
    /// Picture size of the last frame.
    pub width: u32,
    /// Picture height.
    pub height: u32,
    /// Why a stream arrives but shows no picture, in words (an unsupported codec, data that
    /// is not MPEG-TS); null while the picture shows or nothing arrives.
    pub problem: Option<String>,
}

/// What the screen shows.
#[derive(Debug, Clone, Serialize)]
pub struct DisplayStats {
    /// kms, window, fake, file.
    pub sink: String,
    /// `video` or `slate`.
    pub showing: &'static str,
    /// The slate's words (what the box waits for, and why).
    pub slate: String,
    /// When the slate last came on screen (ms since the Unix epoch).
    pub slate_since_unix_ms: Option<u64>,
    /// When the picture last came on screen (ms since the Unix epoch).
    pub video_since_unix_ms: Option<u64>,
}

/// One line of `decode --stats json`.
#[derive(Debug, Clone, Serialize)]
pub struct DecodeSample {
    /// Seconds since start.
    pub t: f64,
    /// The SRT input.
    pub input: InputStatus,
    /// The decoder.
    pub decoder: DecoderStats,
    /// The screen.
    pub display: DisplayStats,
    /// Glass-to-glass latency over the last 5 s, when the sender burns in timecodes.
    pub latency: Option<LatencySummary>,
    /// The bridge's round trip glass to glass over the last 5 s: this box's own timecode, shown
    /// by the far box and returned in its picture, on this box's clock alone.
    pub round_trip: Option<LatencySummary>,
    /// Lip sync over the last 10 s, when the sender's sound and picture carry the test source's
    /// marks: the picture's time less the sound's (positive: the sound comes first).
    pub av_offset: Option<AvOffsetSummary>,
    /// The latest lip-sync event.
    pub av_last: Option<AvLast>,
    /// The `--loop-to` output, when there is one.
    pub loop_output: Option<OutputStatus>,
}

/// One lip-sync event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AvLast {
    /// The picture's time less the sound's, ms.
    pub offset_ms: f64,
    /// When it was measured, ms since the Unix epoch.
    pub at_unix_ms: u64,
}

/// The decoder's summary at exit.
#[derive(Debug, Clone, Serialize)]
pub struct DecodeSummary {
    /// How long it ran, s.
    pub duration_s: f64,
    /// Decoder totals.
    pub decoder: DecoderStats,
    /// The input's final status.
    pub input: InputStatus,
    /// Latency over the whole run.
    pub latency: Option<LatencySummary>,
    /// The bridge's round trip over the whole run.
    pub round_trip: Option<LatencySummary>,
    /// Lip sync over the whole run.
    pub av_offset: Option<AvOffsetSummary>,
    /// Seconds the slate was on screen (counted once a second).
    pub slate_s: u64,
}
