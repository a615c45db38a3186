//! Over a bond, before the rules: an uplink found dead is a capacity drop read at once.

use std::time::Duration;

use super::reading::Reading;
use super::Adaptive;
use crate::{RateDecision, Why};

/// An uplink's death under this share of the bond's sending is left to the rules (the others
/// take a few packets a second without a queue worth a cut).
const UPLINK_LOST_MIN: f64 = 0.1;
/// After an uplink's death, the most the rate leaves of what the others carried: room for the
/// dead uplink's packets in flight, sent again over them (some 0.2 s of its share).
const UPLINK_LOST_CUT: f64 = 0.9;

impl Adaptive {
    /// Before the rules, over a bond: an uplink found dead took its share of the sending with
    /// it, and the others must carry the stream. Their queues would show it a round trip or
    /// more later, with the dead uplink's packets sent again over them meanwhile: in the
    /// bonding bench, 17 of a run's 19 frames lost were at one 4G uplink's outage, found dead
    /// in 0.2 s, while the rate stayed where the two had carried it. So it is a capacity drop
    /// read at once: what the bond carried less that share is the new capacity, the rate goes
    /// under it, and the drop's send cap holds libsrt to it while the rescued packets leave.
    /// The rises that follow find what the others can carry.
    pub(super) fn lost_uplink(&mut self, r: &Reading, now: Duration) -> Option<RateDecision> {
        if r.uplink_lost < UPLINK_LOST_MIN {
            return None;
        }
        let carried = if r.known { r.carried } else { self.rate };
        let link = (carried * (1.0 - r.uplink_lost)).max(self.bounds.least_kbps);
        self.episode_kbps = Some(self.episode_kbps.map_or(link, |e| e.min(link)));
        self.episode_start = now;
        self.draining = true;
        self.low_before = false;
        self.provisional_kbps = None;
        self.last_cut = Some(now);
        self.pressure_at_cut = r.queue.max(r.backlog).max(r.flight_queue);
        self.ceiling = Some(link);
        let why = Why::UplinkLost { share_pct: r.uplink_lost * 100.0, link_kbps: link };
        let d = self.decide((self.rate * (1.0 - r.uplink_lost)).min(link * UPLINK_LOST_CUT), why);
        self.dips.deep_cut(now, self.dip_rate());
        Some(d)
    }
}
