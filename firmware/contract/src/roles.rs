//! What each role reports once a second and at exit: the encoder's figures and its outputs'
//! status (`--stats json`), the decoder's (`decode --stats json`) and the bridge's two halves.
//! The roles fill them in; the daemon publishes them; the panel, the history and /metrics read
//! them.

use serde::Serialize;

use crate::measure::{AvOffsetSummary, LatencySummary};
use crate::srt::{InputStatus, OutputStatus};

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
    pub rate: Option<telebridge_rate::RateStatus>,
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
    /// Frames shown whose timecode could not be read (not missing), test-pattern senders only.
    pub frames_unread: u64,
    /// Audio frames decoded so far.
    pub audio_frames: u64,
    /// Picture size of the last frame.
    pub width: u32,
    /// Picture height.
    pub height: u32,
    /// Why a stream arrives but shows no picture, in words (an unsupported codec, data that
    /// is not MPEG-TS); null while the picture shows or nothing arrives.
    pub problem: Option<String>,
    /// When a frame was last decoded (ms since the Unix epoch, to the second): a picture that
    /// stopped moving says since when.
    pub last_frame_unix_ms: Option<u64>,
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
    /// The lip-sync events of the last 3 s, oldest first. Lines come about once a second and
    /// events once a second, so a line repeats some of the line before's (a reader keeps them by
    /// `at_unix_ms`), and none is lost between two lines.
    pub av_events: Vec<AvEvent>,
    /// The `--loop-to` output, when there is one.
    pub loop_output: Option<OutputStatus>,
}

/// One lip-sync event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AvEvent {
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

/// One second of the bridge: what it sends and what it receives.
#[derive(Debug, Clone, Serialize)]
pub struct BridgeSample {
    /// The encoder, its outputs and the connection to the peer (output `peer`).
    pub sending: StatsSample,
    /// The decoder of what the peer sends (none before its first second).
    pub receiving: Option<DecodeSample>,
    /// The recording of what arrives, if asked for.
    pub received_recording: Option<OutputStatus>,
}

/// The bridge's summary at exit.
#[derive(Debug, Clone, Serialize)]
pub struct BridgeSummary {
    /// What it sent.
    pub sending: Summary,
    /// What it received (the round trip among it).
    pub receiving: DecodeSummary,
}
