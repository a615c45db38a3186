//! Is there a picture coming in? The encoder's input can go away without any error: an HDMI
//! cable pulled from the bridge, a camera that stops, a USB dongle that hangs. The capture
//! element then simply stops delivering frames. [`SignalWatch`] looks once a second at two
//! things, the source's frame counter and (for the TC358743 HDMI bridge) what the bridge says
//! of its link, and says when the signal went, came back, or when the capture must be started
//! again (the source came back at another resolution, or the bridge has a lock but the capture
//! does not resume, which is how the bridge behaves after a replug: it raises SOURCE_CHANGED
//! and wants its timings set again). Pure: no clock, no device; the encoder role feeds it once
//! a second and puts the answer in its stats (`signal`), where the daemon picks it up.

use telebridge_media::capture_device::DvTimings;

/// No frame for this long (after the first) means the signal is gone, ms.
pub const STALL_MS: u64 = 1_500;
/// Before the first frame of a start, the capture gets this long, ms.
pub const FIRST_FRAME_MS: u64 = 5_000;
/// With the bridge locked but no frames for this long, the capture is started again, ms.
pub const REARM_MS: u64 = 3_000;

/// What the HDMI bridge says of its input (`VIDIOC_QUERY_DV_TIMINGS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeLink {
    /// Locked to a signal with these timings.
    Locked(DvTimings),
    /// No signal, or no stable lock.
    NoLink,
}

/// What one look concluded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The signal came (`Some(true)`) or went (`Some(false)`); `None` when unchanged.
    pub changed: Option<bool>,
    /// Start the capture again, and why.
    pub restart: Option<String>,
}

/// Watches one run of the media (start a new watch for every start).
#[derive(Debug, Clone)]
pub struct SignalWatch {
    present: Option<bool>,
    started_ms: u64,
    frames: Option<u64>,
    last_frame_ms: Option<u64>,
    timings: Option<DvTimings>,
    locked_since_ms: Option<u64>,
}

impl SignalWatch {
    /// A watch over media started at `now_ms`. It has no opinion until the first frame, or
    /// until the first frame is overdue, so a box keeps what it believed before the start.
    pub fn new(now_ms: u64) -> Self {
        Self {
            present: None,
            started_ms: now_ms,
            frames: None,
            last_frame_ms: None,
            timings: None,
            locked_since_ms: None,
        }
    }

    /// The capture stopped with an error: when the HDMI input now has other timings than the
    /// watch last saw (the source changed format between two looks; some drivers end the
    /// stream at once), that is a source change to follow, not a failure. The reason, or `None`.
    pub fn capture_error(&self, bridge: Option<BridgeLink>) -> Option<String> {
        match (self.timings, bridge) {
            (Some(before), Some(BridgeLink::Locked(t))) if before != t => {
                Some(format!("the HDMI input changed from {} to {}", describe(&before), describe(&t)))
            }
            _ => None,
        }
    }

    /// Whether a signal is present; `None` before the watch knows.
    pub fn present(&self) -> Option<bool> {
        self.present
    }

    /// One look: the source's frame counter and, for an HDMI bridge, its link.
    pub fn look(&mut self, frames_captured: u64, bridge: Option<BridgeLink>, now_ms: u64) -> Verdict {
        let advanced = self.frames.is_none_or(|f| frames_captured > f) && frames_captured > 0;
        if advanced {
            self.last_frame_ms = Some(now_ms);
        }
        self.frames = Some(frames_captured);
        let flowing = match self.last_frame_ms {
            Some(t) => Some(now_ms.saturating_sub(t) < STALL_MS),
            // Nothing yet: no opinion until the first frame is overdue.
            None if now_ms.saturating_sub(self.started_ms) < FIRST_FRAME_MS => None,
            None => Some(false),
        };
        let mut restart = None;
        let present = match bridge {
            None => flowing,
            Some(BridgeLink::NoLink) => {
                self.locked_since_ms = None;
                Some(false)
            }
            Some(BridgeLink::Locked(t)) => {
                let since = *self.locked_since_ms.get_or_insert(now_ms);
                match self.timings {
                    None => self.timings = Some(t),
                    Some(before) if before != t => {
                        restart =
                            Some(format!("the HDMI input changed from {} to {}", describe(&before), describe(&t)));
                    }
                    Some(_) => {}
                }
                if restart.is_none() && flowing != Some(true) && now_ms.saturating_sub(since) >= REARM_MS {
                    restart = Some(format!("the HDMI bridge has a {} signal but no frames arrive", describe(&t)));
                }
                flowing
            }
        };
        let changed = present.filter(|p| self.present != Some(*p));
        if present.is_some() {
            self.present = present;
        }
        Verdict { changed, restart }
    }
}

/// `1920x1080p60`, `1920x1080i50`.
pub fn describe(t: &DvTimings) -> String {
    let fps = t.fps_milli as f64 / 1000.0;
    let fps = if (fps - fps.round()).abs() < 0.01 { format!("{}", fps.round()) } else { format!("{fps:.2}") };
    format!("{}x{}{}{}", t.width, t.height, if t.interlaced { "i" } else { "p" }, fps)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P1080: DvTimings = DvTimings { width: 1920, height: 1080, fps_milli: 60_000, interlaced: false };
    const P720: DvTimings = DvTimings { width: 1280, height: 720, fps_milli: 59_940, interlaced: false };

    /// Looks once a second from t = 1 s: `(frames, bridge)` each.
    fn looks(watch: &mut SignalWatch, seq: &[(u64, Option<BridgeLink>)]) -> Vec<Verdict> {
        seq.iter().enumerate().map(|(i, (f, b))| watch.look(*f, *b, (i as u64 + 1) * 1000)).collect()
    }

    #[test]
    fn frames_that_stop_mean_the_signal_went_and_frames_again_that_it_came_back() {
        let mut w = SignalWatch::new(0);
        let v = looks(&mut w, &[(30, None), (60, None), (60, None), (60, None), (90, None), (120, None)]);
        let changes: Vec<_> = v.iter().map(|v| v.changed).collect();
        // Frames at 1 s: present. 60 at 2 s, still 60 at 3 s (1 s: not yet), at 4 s (2 s >= 1.5 s:
        // gone), 90 at 5 s: back.
        assert_eq!(changes, vec![Some(true), None, None, Some(false), Some(true), None]);
        assert!(v.iter().all(|v| v.restart.is_none()));
    }

    #[test]
    fn a_slow_start_is_not_a_lost_signal_but_a_start_without_frames_is() {
        let mut w = SignalWatch::new(0);
        let v = looks(&mut w, &[(0, None), (0, None), (0, None), (0, None), (0, None), (0, None)]);
        let changes: Vec<_> = v.iter().map(|v| v.changed).collect();
        assert_eq!(changes, vec![None, None, None, None, Some(false), None], "lost at 5 s, not before");
        // No opinion before the first frame, so a box keeps what it believed; then present.
        let mut w = SignalWatch::new(0);
        assert_eq!((w.look(0, None, 1000).changed, w.present()), (None, None));
        assert_eq!(w.look(25, None, 2000).changed, Some(true));
    }

    #[test]
    fn the_bridge_losing_its_link_is_believed_at_once() {
        let mut w = SignalWatch::new(0);
        let locked = Some(BridgeLink::Locked(P1080));
        let v = looks(&mut w, &[(60, locked), (120, Some(BridgeLink::NoLink)), (130, locked), (190, locked)]);
        let changes: Vec<_> = v.iter().map(|v| v.changed).collect();
        assert_eq!(changes, vec![Some(true), Some(false), Some(true), None]);
        assert!(v.iter().all(|v| v.restart.is_none()));
    }

    #[test]
    fn a_new_resolution_restarts_the_capture() {
        let mut w = SignalWatch::new(0);
        let v = looks(
            &mut w,
            &[
                (60, Some(BridgeLink::Locked(P1080))),
                (60, Some(BridgeLink::NoLink)),
                (60, Some(BridgeLink::Locked(P720))),
            ],
        );
        assert_eq!(v[2].restart.as_deref(), Some("the HDMI input changed from 1920x1080p60 to 1280x720p59.94"));
    }

    #[test]
    fn a_capture_that_fails_on_new_timings_is_followed_and_any_other_failure_is_not() {
        let mut w = SignalWatch::new(0);
        assert_eq!(w.capture_error(Some(BridgeLink::Locked(P720))), None, "no timings seen yet");
        looks(&mut w, &[(60, Some(BridgeLink::Locked(P1080)))]);
        assert_eq!(
            w.capture_error(Some(BridgeLink::Locked(P720))).as_deref(),
            Some("the HDMI input changed from 1920x1080p60 to 1280x720p59.94")
        );
        assert_eq!(w.capture_error(Some(BridgeLink::Locked(P1080))), None, "same timings: a real failure");
        assert_eq!(w.capture_error(Some(BridgeLink::NoLink)), None);
        assert_eq!(w.capture_error(None), None);
    }

    #[test]
    fn a_lock_without_frames_rearms_the_capture_after_three_seconds() {
        let mut w = SignalWatch::new(0);
        let locked = Some(BridgeLink::Locked(P1080));
        let v = looks(
            &mut w,
            &[(60, locked), (60, Some(BridgeLink::NoLink)), (60, locked), (60, locked), (60, locked), (60, locked)],
        );
        let restarts: Vec<_> = v.iter().map(|v| v.restart.is_some()).collect();
        // Locked again at 3 s; 3 s later (6 s) with no frame since 1 s: start the capture again.
        assert_eq!(restarts, vec![false, false, false, false, false, true]);
        assert_eq!(v[5].restart.as_deref(), Some("the HDMI bridge has a 1920x1080p60 signal but no frames arrive"));
        assert_eq!(w.present(), Some(false));
    }
}
