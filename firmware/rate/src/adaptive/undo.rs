//! A cut the link never confirmed, undone: one read from packets waiting at home or in flight
//! alone (the round trip at the link's own, nothing lost nor given up) is held under watch, and
//! when a second passes with the link still showing nothing, the law goes back to where it was
//! before the cut, its ceiling and its dips with it.
//!
//! Such a cut is this box's or the receiver's moment, not the link's: an encoder that releases
//! a pile of frames at once as it warms up, a receiver whose ACKs come late while its machine is
//! busy. On a free link a cut so in the first second, followed by the rises after a cut (3.5 %,
//! and 0.8 % near the ceiling it set), left the rate under the maximum until 13.45 s in the
//! law's tests. (A CI run of `tests/abr.rs` showed that shape, not reproduced here: the adaptive
//! default sent 90 % of the fixed rate's packets over 45 s of a free link.) A cut
//! the link did cause shows the link's signs within a round trip or two: the queue the rate
//! built grows the round trip, the bottleneck drops packets, or the ACKs stall.

use std::time::Duration;

use super::reading::Reading;
use super::Adaptive;
use crate::dips::Dips;
use crate::{RateDecision, Why};

/// How long a cut stays under watch before it is undone (at least three round trips).
const WATCH: Duration = Duration::from_secs(1);

/// What a cut under watch changed, to be put back.
#[derive(Debug, Clone)]
pub(super) struct Unconfirmed {
    /// When the last cut of the series was.
    at: Duration,
    rate: f64,
    ceiling: Option<f64>,
    last_cut: Option<Duration>,
    pressure_at_cut: f64,
    dips: Dips,
}

impl Reading {
    /// The link's own signs of a capacity under the rate: a queue on the way, losses past what
    /// random loss makes, a packet given up. (A lone loss is no sign: a radio link loses a
    /// packet now and then whatever the rate. Nor are ACKs that stall by themselves: a busy
    /// receiver's come late, and a link gone dark shows its losses once it carries again; but
    /// no cut is undone while they stall.)
    fn link_signs(&self) -> bool {
        self.queue > self.queue_limit || self.long_queue || self.dropped || self.heavy_losses
    }
}

impl Adaptive {
    /// The law's state a cut is about to change: taken before an overload or queueing cut.
    pub(super) fn before_cut(&self, now: Duration) -> Unconfirmed {
        Unconfirmed {
            at: now,
            rate: self.rate,
            ceiling: self.ceiling,
            last_cut: self.last_cut,
            pressure_at_cut: self.pressure_at_cut,
            dips: self.dips.clone(),
        }
    }

    /// After an overload or queueing cut read in `r`: under watch when the link showed none of
    /// its signs (a series of such cuts is watched as one, from the state before its first).
    pub(super) fn watch_cut(&mut self, r: &Reading, before: Unconfirmed) {
        if r.link_signs() || self.episode_kbps.is_some() {
            self.unconfirmed = None;
            return;
        }
        let at = before.at;
        let watched = self.unconfirmed.take().unwrap_or(before);
        self.unconfirmed = Some(Unconfirmed { at, ..watched });
    }

    /// Before the rules: a cut under watch is confirmed by any sign of the link's, and undone
    /// when [`WATCH`] (and three round trips) passed without one, the queue and backlog gone.
    pub(super) fn undo_unconfirmed(&mut self, r: &Reading, now: Duration) -> Option<RateDecision> {
        let u = self.unconfirmed.as_ref()?;
        if r.link_signs() || self.episode_kbps.is_some() {
            self.unconfirmed = None;
            return None;
        }
        let calm = r.queue < r.queue_limit / 2.0 && r.backlog < r.backlog_limit / 2.0;
        if !calm || r.stalled || now.saturating_sub(u.at) < WATCH.max(3 * r.round_trip) {
            return None;
        }
        let u = self.unconfirmed.take()?;
        let cut_kbps = self.rate;
        self.ceiling = u.ceiling;
        self.last_cut = u.last_cut;
        self.pressure_at_cut = u.pressure_at_cut;
        self.dips = u.dips;
        self.last_raise = now;
        Some(self.decide(u.rate, Why::Undone { cut_kbps }))
    }
}
