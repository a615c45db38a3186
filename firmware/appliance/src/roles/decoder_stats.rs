//! What the decoder role reports: one line a second of `decode --stats json` and the summary at
//! exit (the panel, `/api/status` and `/metrics` read the same types).

use std::time::{Duration, Instant};

use telebridge_media::latency::{LatencyHistogram, LatencyWindow};
use telebridge_media::timecode;

pub use telebridge_contract::roles::{AvEvent, DecodeSample, DecoderStats, DisplayStats};

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

pub use telebridge_contract::roles::DecodeSummary;

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
