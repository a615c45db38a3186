//! What the decoder role reports: one line a second of `decode --stats json` and the summary at
//! exit (the panel, `/api/status` and `/metrics` read the same types).

use std::time::{Duration, Instant};

use serde::Serialize;
use telebridge_media::latency::{LatencyHistogram, LatencySummary, LatencyWindow};
use telebridge_media::lipsync::AvOffsetSummary;
use telebridge_media::timecode;
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

/// The lip-sync events of the last few seconds, in fixed memory.
#[derive(Debug, Clone, Default)]
pub struct RecentAvEvents(std::collections::VecDeque<AvEvent>);

impl RecentAvEvents {
    /// How long an event is kept, ms.
    const KEEP_MS: u64 = 3000;
    /// At most this many (events come once a second).
    const MAX: usize = 8;

    /// Records an event.
    pub fn push(&mut self, event: AvEvent) {
        if self.0.len() == Self::MAX {
            self.0.pop_front();
        }
        self.0.push_back(event);
    }

    /// The events of the last 3 s before `now_unix_ms`, oldest first.
    pub fn list(&mut self, now_unix_ms: u64) -> Vec<AvEvent> {
        self.0.retain(|e| e.at_unix_ms + Self::KEEP_MS > now_unix_ms);
        self.0.iter().copied().collect()
    }
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

/// The round trip read from the echo strip. The far box may return one timecode in several of
/// its frames (it sends more frames than it shows of ours): only the first counts.
pub(crate) struct RoundTrip {
    last_frame: Option<u32>,
    pub(crate) recent: LatencyWindow,
    pub(crate) whole: LatencyHistogram,
}

impl Default for RoundTrip {
    fn default() -> Self {
        Self {
            last_frame: None,
            recent: LatencyWindow::new(Duration::from_secs(5)),
            whole: LatencyHistogram::default(),
        }
    }
}

impl RoundTrip {
    pub(crate) fn heard(&mut self, mine: timecode::Timecode, now_us: u64, now: Instant) {
        if self.last_frame == Some(mine.frame) {
            return;
        }
        self.last_frame = Some(mine.frame);
        let ms = mine.age_us(now_us) as f64 / 1000.0;
        if ms < 60_000.0 {
            self.recent.push(now, ms);
            self.whole.push(ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_lip_sync_events_are_those_of_the_last_three_seconds_at_most_eight() {
        let mut r = RecentAvEvents::default();
        let e = |at| AvEvent { offset_ms: -32.0, at_unix_ms: at };
        assert!(r.list(1000).is_empty());
        r.push(e(1000));
        r.push(e(2000));
        assert_eq!(r.list(2500), [e(1000), e(2000)]);
        assert_eq!(r.list(4000), [e(2000)], "the first is 3 s old");
        for k in 0..20 {
            r.push(e(4000 + k * 10));
        }
        assert_eq!(r.list(4200), (12..20).map(|k| e(4000 + k * 10)).collect::<Vec<_>>());
        assert!(r.list(9000).is_empty());
    }
}
