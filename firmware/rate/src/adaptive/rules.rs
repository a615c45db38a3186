//! The rules of [`Adaptive`]'s step, each deciding or passing on, in this order: the box's own
//! stall, a capacity drop, overload, queueing, and calm's rise (the module above says why).

use std::time::Duration;

use super::reading::Reading;
use super::{Adaptive, EPISODE_CUT};
use crate::{RateDecision, Why, START_RISE, START_RISE_EVERY, STEP};

/// After a cut, calm, the rate rises by this share every 250 ms ...
const RISE: f64 = 0.035;
/// ... and over a bond by this: a bond's capacity is its uplinks' together, each 4G uplink's
/// swinging on its own, and a rise at 3.5 % (15 % a second) overshoots what one fade leaves.
/// In a bonding bench run the rate rose from 1.9 to 3.7 Mbit/s in 5 s past the last cut's
/// ceiling, an uplink faded, and 23 frames were lost for good; in the next run the rise stayed
/// near the ceiling (0.8 %), met the same fade at 2.4 Mbit/s and lost none.
const BOND_RISE: f64 = 0.015;

/// An episode counts as a capacity drop when the link carried under this share of the rate.
const DROP_SHARE: f64 = 0.8;

/// A gap between steps this long means this box stood still (the process descheduled, a
/// virtual machine paused, the SD card blocking the kernel): libsrt's threads stood still too,
/// so the round trips measured across the gap, the ACKs not yet read and the packets in flight
/// all read as a queue that is not on the link. A 200 ms stop of the encoder's process halved
/// the rate on a free link.
const OWN_STALL: Duration = Duration::from_millis(150);
/// How long the readings after such a gap are not trusted: at least this, and twice the gap
/// (libsrt's round trip is smoothed over the ACKs of the next ~150 ms; the windows of what the
/// link delivered hold the gap's silence for up to a second, but they bound rises, not cuts).
const BLIND_AFTER_STALL: Duration = Duration::from_millis(500);

impl Adaptive {
    /// Before the rules: a step that comes [`OWN_STALL`] late says this box stood still, and
    /// what it reads for a while after is the stall's, not the link's: the rate holds (packets
    /// given up still cut: they are lost whatever the cause).
    pub(super) fn after_own_stall(&mut self, r: &Reading, dt: f64, now: Duration) -> Option<RateDecision> {
        let gap = Duration::from_secs_f64(dt);
        if gap >= OWN_STALL {
            let until = now + BLIND_AFTER_STALL.max(2 * gap);
            let ms = gap.as_secs_f64() * 1000.0;
            self.blind = Some(self.blind.map_or((until, ms), |(u, m)| (u.max(until), m.max(ms))));
        }
        let (until, ms) = self.blind?;
        if now >= until || r.dropped {
            self.blind = None;
            return None;
        }
        self.low_before = false;
        self.provisional_kbps = None;
        Some(self.decide(self.rate, Why::Stalled { ms }))
    }

    /// Rule 0: reads a capacity drop (twice in a row) and cuts under it at once; in one, follows
    /// its first steps and ends it when the queue and the backlog are gone.
    pub(super) fn follow_drop(&mut self, r: &Reading, now: Duration) -> Option<RateDecision> {
        if !r.pressed {
            self.low_before = false;
        }
        self.provisional_kbps = None;
        // The drop is over when the queue on the way and what the cap held back at home are gone.
        if r.queue < r.queue_limit / 2.0 && r.flight_queue < r.queue_limit / 2.0 && r.backlog < r.backlog_limit / 2.0 {
            self.episode_kbps = None;
        } else if let Some(e) = self.episode_kbps {
            // In the first steps, one that overlapped the drop read high: lower (not by an ACK
            // held back by a loss, which reads near nothing, nor by ACKs that stalled in these
            // 100 ms: the drop's own tail drops hold them back, and in a rate trace that read a
            // 1.8 Mbit/s link as 0.88 and paced it at 0.76; and not later, when the cap itself
            // sets what is acknowledged).
            let early = now.saturating_sub(self.episode_start) <= 3 * STEP;
            if let Some(x) = r.recent.filter(|&x| early && !r.stalled && x < e && x >= e * 0.5) {
                self.episode_kbps = Some(x.max(self.bounds.least_kbps));
            }
            self.low_before = false;
        } else if let (true, Some(recent), Some(recent_sends)) = (r.pressed && r.known, r.recent, r.recent_sends) {
            // Only a link that carries well under the rate and what was sent is a drop (a queue
            // a rise found is met by the usual cuts), read twice in a row (a keyframe's burst or
            // ACKs a moment late read low once); ACKs that stalled behind the drop's losses say
            // nothing of the link's rate: then what the last round trip carried.
            let link = if r.stalled { r.carried } else { recent.min(r.carried) }.max(self.bounds.least_kbps);
            // Not from ACKs that stalled (a lost packet holds the cumulative ACK back until its
            // resend arrives: a false drop on a free 5 Mbit/s link in a rate trace), unless
            // losses are many (the drop's). A resend alone is no reason to wait: on a 4G link
            // one goes out every few hundred ms, and waiting held a fade unread for 700 ms.
            // (What was sent for the first time says nothing once losses are heavy and a backlog
            // waits at home: the resends take the room. In a rate trace of the steps trace that
            // kept a 6.4 -> 2 Mbit/s drop unread, its resends unpaced: 48 frames lost against
            // 8-23 in the other runs. Heavy losses alone are no drop: a 4G burst read so.)
            let sent_more = link < recent_sends * DROP_SHARE || (r.heavy_losses && r.backlog > r.backlog_limit);
            let low = link < self.rate * DROP_SHARE && sent_more && (!r.stalled || r.heavy_losses);
            let confirmed = low && self.low_before;
            self.low_before = low;
            // (Held at home for a step, what a false reading holds back leaves at the next; the
            // bottleneck's queue fills no further meanwhile: at 6.4 Mbit/s into 2 a step is 22
            // packets dropped at its tail, on the steps trace.)
            self.provisional_kbps = (low && !confirmed).then_some(link);
            if confirmed {
                // A drop: cut at once, under what the link now carries.
                self.episode_kbps = Some(link);
                self.episode_start = now;
                self.draining = true;
                self.last_cut = Some(now);
                self.pressure_at_cut = r.queue.max(r.backlog).max(r.flight_queue);
                self.ceiling = Some(link);
                let why = Why::Queueing { link_kbps: link, queue_ms: self.pressure_at_cut };
                let d = self.decide((self.rate * 0.92).min(link * EPISODE_CUT), why);
                self.dips.deep_cut(now, self.dip_rate());
                return Some(d);
            }
        }
        None
    }

    /// After a cut, a pressure that falls means the cut works (the queue drains, the packets
    /// lost in the drop are being sent again): no further cut then (within 2 s of the cut:
    /// later pressure is news).
    fn relieved(&self, r: &Reading) -> bool {
        r.since_cut.is_some_and(|t| t < Duration::from_secs(2)) && r.queue.max(r.backlog) < self.pressure_at_cut * 0.9
    }

    /// Rule 1: what is queued now arrives near its play time, so the queue must drain at once:
    /// the cut goes to 80 % of the last round trip's rate. `None` when there is no overload.
    pub(super) fn overload(&mut self, r: &Reading, now: Duration) -> Option<RateDecision> {
        // (In a drop, what waits at home is the cap's doing and leaves at the link's rate: it
        // calls for no cut of its own.)
        let home = if self.episode_kbps.is_some() { 0.0 } else { r.backlog };
        // (Or, outside a drop, packets in flight a third of the latency over the round trip:
        // ACKs stalled behind a fade's tail drops freeze the round trip and delay the losses'
        // reports; a fade from 3.6 to 1.4 Mbit/s went unread so for 700 ms in a rate trace.)
        let flight_over = self.episode_kbps.is_none() && r.flight_queue >= r.latency / 3.0;
        if !(r.dropped || r.long_queue || home > r.latency / 2.0 || flight_over) {
            return None;
        }
        let due = r.since_cut.is_none_or(|t| t >= r.round_trip.max(Duration::from_millis(250)));
        if !due || self.relieved(r) {
            return Some(self.decide(self.rate, Why::Holding { link_kbps: r.carried }));
        }
        let before = self.before_cut(now);
        self.last_cut = Some(now);
        self.pressure_at_cut = r.queue.max(r.backlog);
        self.ceiling = Some(r.carried);
        // (At most halved by one cut: the next round trip's can go on. In a drop, over half the
        // link's rate read then, unless packets are being given up: the link fell further, as a
        // 4G fade does within one, from 2.8 to 0.5 Mbit/s.)
        let episode_bound = self.episode_kbps.map_or(f64::INFINITY, |e| e * EPISODE_CUT);
        let episode_floor = self.episode_kbps.map_or(0.0, |e| e * 0.5);
        let floor = if r.dropped { 0.0 } else { episode_floor.min(self.rate) };
        let rate = if r.known {
            (self.rate * 0.7).min(r.delivered * 0.8).max(self.rate * 0.5).min(episode_bound).max(floor)
        } else {
            self.rate * 0.7
        };
        // The send cap of a drop follows the cut: resends and all at the old link's rate would
        // keep the new one's queue full.
        if r.dropped {
            let cut = rate.clamp(self.floor(), self.bounds.max_kbps);
            self.episode_kbps = self.episode_kbps.map(|e| e.min(cut / EPISODE_CUT));
        }
        let d = self.decide(rate, Why::Overload { link_kbps: r.delivered, send_buffer_ms: r.send_buffer_ms });
        self.dips.deep_cut(now, self.dip_rate());
        self.watch_cut(r, before);
        Some(d)
    }

    /// Rule 2: a queue above what jitter explains, or a backlog: 90 % of what the link carried.
    /// `None` when nothing queues.
    pub(super) fn queueing(&mut self, r: &Reading, now: Duration) -> Option<RateDecision> {
        let home = if self.episode_kbps.is_some() { 0.0 } else { r.backlog };
        if !(r.queue > r.queue_limit || home > r.backlog_limit) {
            return None;
        }
        // Already under what the link carries: the queue is draining (resends first); a further
        // cut would only overshoot. (And ACKs that stalled with nothing lost swell the backlog
        // and shrink what the link seems to carry: unless the round trip shows a queue, that
        // waits.)
        let unseen = r.stalled && !r.heavy_losses && r.queue <= r.queue_limit;
        let draining = self.relieved(r) || (r.known && self.rate <= r.carried * 0.9) || unseen;
        if draining || r.since_cut.is_some_and(|t| t < r.round_trip + Duration::from_millis(100)) {
            return Some(self.decide(self.rate, Why::Holding { link_kbps: r.carried }));
        }
        let pressure = r.queue.max(r.backlog);
        let before = self.before_cut(now);
        self.last_cut = Some(now);
        self.pressure_at_cut = pressure;
        self.ceiling = Some(r.carried);
        let episode_bound = self.episode_kbps.map_or(f64::INFINITY, |e| e * EPISODE_CUT);
        let rate = if r.known { (self.rate * 0.92).min(r.carried * 0.9).min(episode_bound) } else { self.rate * 0.92 };
        let from = self.rate;
        let d = self.decide(rate, Why::Queueing { link_kbps: r.carried, queue_ms: pressure });
        self.dips.cut(now, from, self.dip_rate());
        self.watch_cut(r, before);
        Some(d)
    }

    /// Rules 3 and 4: calm, a second after the last cut, the rate rises, bounded by what the
    /// link carried lately and by its dips; otherwise it holds.
    pub(super) fn rise_or_hold(&mut self, r: &Reading, now: Duration) -> RateDecision {
        let calm = r.queue < r.queue_limit / 2.0 && r.backlog < r.backlog_limit / 2.0;
        let rested = r.since_cut.is_none_or(|t| t >= Duration::from_secs(1));
        let starting = self.last_cut.is_none();
        let every = if starting { START_RISE_EVERY } else { 5 * STEP };
        if calm && rested && now.saturating_sub(self.last_raise) >= every {
            self.last_raise = now;
            if self.ceiling.is_some_and(|c| self.rate > c * 1.05) {
                self.ceiling = None;
            }
            let near = self.ceiling.is_some_and(|c| self.rate >= c * 0.9);
            let share = match (starting, r.bonded) {
                (true, _) => START_RISE,
                (false, false) => RISE,
                (false, true) => BOND_RISE,
            };
            let step = if near { (self.rate * 0.008).max(15.0) } else { (self.rate * share).max(40.0) };
            let bound = self.proven.bound().min(self.dips.bound(now, self.rate + step)).max(self.rate);
            return self.decide((self.rate + step).min(bound), Why::Rising { link_kbps: r.delivered });
        }
        let why =
            if self.rate >= self.bounds.max_kbps { Why::AtMaximum } else { Why::Holding { link_kbps: r.delivered } };
        self.decide(self.rate, why)
    }
}
