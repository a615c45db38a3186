//! The live monitor: browsers watching a feed over WebRTC, asked for with WHEP (one POST of an
//! SDP offer, answered with the box's SDP; a DELETE ends it).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Serialize;

use crate::feed::Feed;

/// How many viewers a box serves at once unless `monitor.viewers` says otherwise.
pub const DEFAULT_VIEWERS: u32 = 4;

/// A viewer not heard from (its RTCP, which browsers send every second or so) for this long
/// at least is gone; checked at each status (a second), so a browser that stops answering is
/// dropped within 5 s. A viewer that reports less often (RFC 3550's 5 s, as GStreamer's RTP
/// stack does) is given [`MISSED_REPORTS`] of its own intervals.
pub const GONE_AFTER: Duration = Duration::from_secs(3);

/// How many reports a viewer sends before its interval between them is believed: an RTP
/// stack's first reports come sooner than the rest.
pub const REPORTS_TO_KNOW: u64 = 4;

/// How many of its own report intervals a viewer may miss before it is gone.
pub const MISSED_REPORTS: f64 = 2.5;

/// A viewer heard, its interval not yet known (its first few reports), is gone when silent
/// this long (twice RFC 3550's 5 s and a margin).
pub const FIRST_REPORT_GRACE: Duration = Duration::from_secs(12);

/// A viewer that has not connected within this long never will.
pub const CONNECT_WITHIN: Duration = Duration::from_secs(15);

/// A browser asking to watch.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// Which feed.
    pub feed: Feed,
    /// Its SDP offer.
    pub offer: String,
    /// Who asks.
    pub from: SocketAddr,
    /// The box's address it reached the panel at: where its ICE candidates are gathered.
    pub local: Option<IpAddr>,
}

/// The box's answer to a viewer.
#[derive(Debug, Clone)]
pub struct WatchAnswer {
    /// The viewer's number, for its DELETE.
    pub id: u64,
    /// The SDP answer, every candidate in it.
    pub sdp: String,
}

/// Why a viewer is not served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchRefusal {
    /// The feed is not running (an encoder not live, a decoder with nothing coming in).
    #[error("nothing to watch: the {} feed is not running", .0.name())]
    NotRunning(Feed),
    /// As many viewers as allowed watch already.
    #[error("{limit} viewers watch already, as many as monitor.viewers allows: close one first")]
    Full {
        /// The limit.
        limit: u32,
    },
    /// The monitor is switched off.
    #[error("the monitor is off (monitor.viewers = 0)")]
    Off,
    /// The offer cannot be answered, in words.
    #[error("{0}")]
    Offer(String),
    /// The box failed to set the viewer up (for the log; the API says only that it failed).
    #[error("{0}")]
    Failed(String),
}

/// A viewer, as the status lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewerInfo {
    /// Its number.
    pub id: u64,
    /// What it watches.
    pub feed: Feed,
    /// Where it watches from.
    pub address: String,
    /// Since when, ms since the Unix epoch.
    pub since_unix_ms: u64,
    /// `connecting` or `watching`.
    pub state: &'static str,
}

/// How a viewer's connection stands, as the monitor reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewerHealth {
    /// WebRTC says the connection failed or closed.
    pub ended: bool,
    /// How long since it started.
    pub age: Duration,
    /// How long since its last RTCP; `None` before the first.
    pub silent_for: Option<Duration>,
    /// The longest time between two of its reports; `None` while it is not yet known.
    pub report_every: Option<Duration>,
}

impl ViewerHealth {
    /// Whether to drop it: ended; not heard for [`MISSED_REPORTS`] of its report intervals,
    /// [`GONE_AFTER`] at least ([`FIRST_REPORT_GRACE`] while its interval is not known); or
    /// never heard within [`CONNECT_WITHIN`].
    pub fn gone(&self) -> bool {
        let allowed = match self.report_every {
            Some(every) => GONE_AFTER.max(every.mul_f64(MISSED_REPORTS)),
            None => FIRST_REPORT_GRACE,
        };
        self.ended
            || match self.silent_for {
                Some(silent) => silent > allowed,
                None => self.age > CONNECT_WITHIN,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_is_gone_when_ended_or_past_its_reports_or_never_heard_in_15_s() {
        let s = Duration::from_secs;
        // A browser: a report a second.
        let browser = |ended, age, silent_for: Option<u64>| ViewerHealth {
            ended,
            age: s(age),
            silent_for: silent_for.map(s),
            report_every: Some(Duration::from_millis(1100)),
        };
        assert!(!browser(false, 60, Some(1)).gone());
        assert!(!browser(false, 60, Some(3)).gone());
        assert!(browser(false, 60, Some(4)).gone(), "a browser silent 4 s is gone");
        assert!(browser(true, 1, Some(0)).gone());
        assert!(!browser(false, 10, None).gone(), "still connecting");
        assert!(browser(false, 16, None).gone());
        // RFC 3550's 5 s (GStreamer's RTP stack): 12.5 s of silence allowed, and 12 s after
        // its first report, before the second says how often it reports.
        let rfc = |silent: u64, every: Option<u64>| ViewerHealth {
            ended: false,
            age: s(60),
            silent_for: Some(s(silent)),
            report_every: every.map(s),
        };
        assert!(!rfc(6, Some(5)).gone() && !rfc(12, Some(5)).gone() && rfc(13, Some(5)).gone());
        assert!(!rfc(11, None).gone() && rfc(13, None).gone());
    }

    #[test]
    fn refusals_say_what_to_do() {
        assert_eq!(
            WatchRefusal::NotRunning(Feed::Programme).to_string(),
            "nothing to watch: the programme feed is not running"
        );
        assert_eq!(
            WatchRefusal::Full { limit: 4 }.to_string(),
            "4 viewers watch already, as many as monitor.viewers allows: close one first"
        );
    }
}
