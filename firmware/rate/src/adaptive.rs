//! Our rate law: follow what the link delivers, cut by the queue it builds.
//!
//! Every step it measures, from libsrt's counters of one connection, **what the link delivered**
//! lately (the cumulative ACK's advance over the last round trip, 0.3 s to 1 s: on a congested
//! link its capacity, on a free one what the encoder made), **the queue on the way** (the round
//! trip above its lowest of the last 10 s, and sooner, the packets in flight beyond a round
//! trip) and **the backlog at home** (the send buffer beyond one round trip), and decides, in
//! this order (docs/architecture.md tells why each, from the traces):
//!
//! Before the rules, over a bond, an uplink found dead is a capacity drop read at once: the
//! rate goes under what the others carried (the dead one's share less), with the drop's send
//! cap ([`Why::UplinkLost`]). And a step that comes late (this box stood still:
//! [`Why::Stalled`]) holds the rate for a while, as what is read then is the stall's. And an
//! overload or queueing cut read from packets at home or in flight alone, after which a second
//! passes with no queue on the way and no heavy losses, is undone ([`Why::Undone`], `undo`):
//! the law goes back to its state before the cut (an encoder's warm-up burst or a busy
//! receiver's late ACKs otherwise left a free link under the maximum for 13.45 s).
//!
//! 0. **a capacity drop** (a queue, or packets in flight beyond the round trip, while the ACK
//!    rate of the last 100 ms is under 80 % of the rate and of what was sent, twice in a row,
//!    not from ACKs that stalled unless the receiver reports many losses or libsrt resends
//!    many; packets counted by libsrt's bytes; capped at the first of the two readings until
//!    the next): that ACK rate is the new capacity; the rate goes at once to 75 % of it, and
//!    the connection is capped under it while the queue drains, then at it until what waits at
//!    home has left, with room for the resends owed
//!    (`cap::DropCap`): libsrt's pacing by the input rate would go on sending the old
//!    rate into the bottleneck for a second. Where 75 % of the link is under the floor, the
//!    rate may go under it, to the stream at half the frame rate ([`super::Bounds::least_kbps`]);
//! 1. **overload** (a packet given up, or the queue or the backlog past a third of the SRT
//!    latency; a round trip past it only from a queue): to 80 % of what the link delivered (at
//!    least 30 % lower, at most halved), once
//!    per round trip; in a connection's first second by 30 %; in a drop, to at least half the
//!    drop's capacity unless packets are being given up;
//! 2. **queueing** (the queue above what jitter explains: 20 ms, four times the round trip's
//!    variation, a fifth of the base round trip; or a backlog): 90 % of what the link delivered
//!    (at least 8 % lower), at most once per round trip plus 100 ms, and not while the rate is
//!    already under 90 % of it; what it delivered is remembered as the link's ceiling;
//! 3. **calm** (queue and backlog gone), a second after the last cut: up by 3.5 % (at least 40
//!    kbit/s; over a bond 1.5 %, `rules::BOND_RISE`) every 250 ms (until the first cut,
//!    [`super::START_RISE`]); within 10 % under the
//!    remembered ceiling only by 0.8 %, and past it,
//!    calm, the ceiling is forgotten; never more than 25 % (plus 300 kbit/s) over what the link
//!    carried in the last 5 s, and on a link that dipped twice in 30 s (a drop, an overload, or
//!    queueing cuts that took 30 % off) never more than 2.5 times the lowest rate a dip brought
//!    (`dips::DIP_HEADROOM`);
//! 4. otherwise it holds.
//!
//! The step runs in phases: `reading` measures, then each rule above in its own function (in
//! `rules`) decides or passes on (`follow_drop`, `overload`, `queueing`, `rise_or_hold`).
//!
//! Unlike a rule that drops to the floor when the round trip passes a share of the latency, a
//! cut lands under what the link still carries; unlike a rule on the round trip alone, loss
//! without a queue (a radio link's) does not lower the rate: SRT's retransmissions repair it.

use std::time::Duration;

mod reading;
mod rules;
mod undo;
mod uplink;

use super::cap::{DropCap, Owed};
use super::dips::Dips;
use super::tally::{BaseRtt, PacketSize, Proven, Tally};
use super::{Bounds, LinkSample, RateDecision, RateLaw, Why};

/// What the link delivered is counted over the last round trip, at least this long (an ACK
/// that a growing queue holds back for a moment is not a slower link) ...
const DELIVERED_MIN_WINDOW: Duration = Duration::from_millis(300);
/// ... and at most this long (a capacity drop shows within a second).
const DELIVERED_MAX_WINDOW: Duration = Duration::from_secs(1);

/// The window of the link's rate that reads a capacity drop.
const RECENT: Duration = Duration::from_millis(100);
/// In a drop, the most a cut leaves of the link's rate (the queue built meanwhile must drain).
const EPISODE_CUT: f64 = 0.75;
/// Packets in flight beyond the round trip that are no queue: a frame sent as a burst, ms.
const FLIGHT_SLACK_MS: f64 = 50.0;

/// Losses (or resends) over 100 ms that random loss does not explain: more than this many
/// packets ...
const HEAVY_LOSSES: f64 = 3.0;
/// ... and more than this share of the first sends.
const HEAVY_LOSS_SHARE: f64 = 0.05;

/// Our law's state for one connection.
#[derive(Debug, Clone)]
pub struct Adaptive {
    bounds: Bounds,
    rate: f64,
    prev: Option<(LinkSample, Duration)>,
    /// When the first sample came.
    first: Duration,
    /// (time, packets acknowledged so far), for the last DELIVERED_MAX_WINDOW.
    acked: Tally,
    acked_total: i64,
    rtt_var: f64,
    base: BaseRtt,
    /// What the link carried lately, for the bound on rises.
    proven: Proven,
    last_cut: Option<Duration>,
    /// The queue or backlog when the rate was last cut, ms.
    pressure_at_cut: f64,
    last_raise: Duration,
    ceiling: Option<f64>,
    /// In a capacity drop (from when it is read until the queue on the way and the backlog at
    /// home are gone): the link's rate over the 100 ms when it was read, kbit/s.
    episode_kbps: Option<f64>,
    /// When the drop was seen.
    episode_start: Duration,
    /// In a drop, while the queue on the way is above what jitter explains.
    draining: bool,
    /// (time, packets sent for the first time so far), for the last DELIVERED_MAX_WINDOW.
    sends: Tally,
    sends_total: i64,
    /// The last step read the link well under the rate (a drop is read twice in a row) ...
    low_before: bool,
    /// ... and at that first reading the connection is capped at it until the next step, kbit/s.
    provisional_kbps: Option<f64>,
    /// Packets acknowledged in the last step.
    acked_before: i64,
    /// (time, packets sent again so far), for the last DELIVERED_MAX_WINDOW.
    resends: Tally,
    /// (time, packets reported lost so far), for the last DELIVERED_MAX_WINDOW.
    losses: Tally,
    /// The dips of the last 30 s, for the bound on rises.
    dips: Dips,
    /// What a packet sent for the first time carries lately.
    packet: PacketSize,
    /// Packets the encoder has put in so far: sent, and waiting for their first send.
    made: Tally,
    /// In a drop, what the encoder has made since it followed the cut, kbit/s.
    made_kbps: Option<f64>,
    /// The resends owed.
    owed: Owed,
    /// After this box itself stood still (no step for `rules::OWN_STALL`), the law reads the link
    /// again before it changes the rate, until then.
    /// (until when, the longest stall in ms).
    blind: Option<(Duration, f64)>,
    unconfirmed: Option<undo::Unconfirmed>,
}

/// How long the encoder takes to follow a cut (the frames in the making), before what it makes
/// sets the least a drop's send cap leaves it.
const ENCODER_FOLLOWS: Duration = Duration::from_millis(300);

impl Adaptive {
    /// A law starting at `bounds.start_kbps`.
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            rate: bounds.start_kbps.clamp(bounds.min_kbps, bounds.max_kbps),
            prev: None,
            first: Duration::ZERO,
            acked: Tally::default(),
            acked_total: 0,
            rtt_var: 0.0,
            base: BaseRtt::default(),
            proven: Proven::default(),
            last_cut: None,
            pressure_at_cut: 0.0,
            last_raise: Duration::ZERO,
            ceiling: None,
            episode_kbps: None,
            episode_start: Duration::ZERO,
            draining: false,
            sends: Tally::default(),
            sends_total: 0,
            low_before: false,
            provisional_kbps: None,
            acked_before: 0,
            resends: Tally::default(),
            losses: Tally::default(),
            dips: Dips::default(),
            packet: PacketSize::default(),
            made: Tally::default(),
            made_kbps: None,
            owed: Owed::default(),
            blind: None,
            unconfirmed: None,
        }
    }

    /// The least rate now: under the full frame rate's floor (stepped down) in a drop whose
    /// link is too slow for the floor after the drop's cut, and once under, until rises.
    fn floor(&self) -> f64 {
        let starved = self.episode_kbps.is_some_and(|e| e * EPISODE_CUT < self.bounds.min_kbps);
        if starved || self.rate < self.bounds.min_kbps {
            self.bounds.least_kbps
        } else {
            self.bounds.min_kbps
        }
    }

    /// The rate a dip brought, for the bound on rises: under the floor, the floor. (At half the
    /// frame rate the stream is a third of a 4G link's fades' lows; 2.5 times that held the
    /// rate at 0.8 Mbit/s of video on a link of 4-6 for a third of each 4g-1 run, and ours
    /// carried less than belacoder's rule there, 1147 against 1217 kbit/s.)
    fn dip_rate(&self) -> f64 {
        self.rate.max(self.bounds.min_kbps)
    }

    fn decide(&mut self, rate: f64, why: Why) -> RateDecision {
        self.rate = rate.clamp(self.floor(), self.bounds.max_kbps);
        let why = match why {
            Why::Rising { .. } if self.rate >= self.bounds.max_kbps => Why::AtMaximum,
            w => w,
        };
        let send_cap_kbps = self.episode_kbps.map(|link_kbps| {
            DropCap {
                link_kbps,
                draining: self.draining,
                stream_kbps: self.rate * self.packet.header_factor(),
                made_kbps: self.made_kbps.unwrap_or(0.0),
                owed_kbit: self.owed.kbit(),
            }
            .kbps()
        });
        let send_cap_kbps = send_cap_kbps.or(self.provisional_kbps);
        RateDecision { stream_kbps: self.rate, why, send_cap_kbps }
    }
}

impl RateLaw for Adaptive {
    fn step(&mut self, s: &LinkSample, now: Duration) -> RateDecision {
        let Some((p, then)) = self.prev.replace((*s, now)) else {
            self.first = now;
            self.base.note(s.rtt_ms, now);
            return RateDecision { stream_kbps: self.rate, why: Why::Start, send_cap_kbps: None };
        };
        let dt = now.saturating_sub(then).as_secs_f64();
        if dt <= 0.0 {
            return RateDecision { stream_kbps: self.rate, why: Why::Holding { link_kbps: 0.0 }, send_cap_kbps: None };
        }
        let r = self.measure(s, &p, dt, now);
        if let Some(d) = self.lost_uplink(&r, now) {
            return d;
        }
        if let Some(d) = self.after_own_stall(&r, dt, now) {
            return d;
        }
        if let Some(d) = self.undo_unconfirmed(&r, now) {
            return d;
        }
        if let Some(d) = self.follow_drop(&r, now) {
            return d;
        }
        self.draining = self.episode_kbps.is_some() && r.queue.max(r.flight_queue) > r.queue_limit;
        self.overload(&r, now).or_else(|| self.queueing(&r, now)).unwrap_or_else(|| self.rise_or_hold(&r, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dips::DIP_HEADROOM;
    use crate::{BondView, PACKET_BYTES, STEP};
    use std::collections::VecDeque;

    /// A bottleneck as a fluid queue, for closed-loop tests: the encoder sends at the law's rate,
    /// the link serves `capacity` kbit/s behind a queue of `queue_limit_ms`, the round trip is
    /// the base one plus the queue's delay, and what waits longer than the latency is given up.
    /// Not a model of SRT: just enough of a link to close the loop without sleeping.
    struct Bottleneck {
        base_rtt_ms: f64,
        queue_limit_ms: f64,
        latency_ms: f64,
        queue_kbit: f64,
        /// Lost at the queue's tail, sent again in the next step.
        resend_kbit: f64,
        sent: i64,
        retransmitted: i64,
        lost: i64,
        dropped: i64,
        unacked_kbit: f64,
        /// Share of the rate the encoder really makes (a still picture makes less).
        fill: f64,
        /// Steps at the start that report libsrt's initial round trip, before it measured one.
        unmeasured_steps: u32,
        /// Seen through a bond: its queue is the bottleneck's.
        bonded: bool,
    }

    impl Bottleneck {
        fn new(base_rtt_ms: f64, queue_limit_ms: f64, latency_ms: f64) -> Self {
            Self {
                base_rtt_ms,
                queue_limit_ms,
                latency_ms,
                queue_kbit: 0.0,
                resend_kbit: 0.0,
                sent: 0,
                retransmitted: 0,
                lost: 0,
                dropped: 0,
                unacked_kbit: 0.0,
                fill: 1.0,
                unmeasured_steps: 0,
                bonded: false,
            }
        }

        /// One step at `rate_kbps` over a link of `capacity_kbps`: the sample after it.
        fn step(&mut self, rate_kbps: f64, capacity_kbps: f64, dt: f64) -> LinkSample {
            let kbit_per_packet = PACKET_BYTES * 8.0 / 1000.0;
            let fresh = rate_kbps * self.fill * dt;
            let resent = std::mem::take(&mut self.resend_kbit);
            let offered = fresh + resent;
            let served = (self.queue_kbit + offered).min(capacity_kbps * dt);
            self.queue_kbit += offered - served;
            let limit = capacity_kbps * self.queue_limit_ms / 1000.0;
            if self.queue_kbit > limit {
                self.resend_kbit = self.queue_kbit - limit;
                self.lost += (self.resend_kbit / kbit_per_packet).round() as i64;
                self.queue_kbit = limit;
            }
            // What waits longer than the latency is given up by the sender.
            let mut given_up = 0.0;
            let too_late = capacity_kbps * (self.latency_ms - self.base_rtt_ms / 2.0) / 1000.0;
            if self.queue_kbit > too_late {
                given_up = self.queue_kbit - too_late;
                self.queue_kbit = too_late;
            }
            let mut rtt = self.base_rtt_ms + self.queue_kbit / capacity_kbps * 1000.0;
            if self.unmeasured_steps > 0 {
                self.unmeasured_steps -= 1;
                rtt = 100.0;
            }
            // A packet leaves the send buffer once it got through (acknowledged) or was given up.
            self.unacked_kbit += fresh - served - given_up;
            self.sent += (offered / kbit_per_packet).round() as i64;
            self.retransmitted += (resent / kbit_per_packet).round() as i64;
            self.dropped += (given_up / kbit_per_packet).round() as i64;
            let in_buffer = (self.unacked_kbit.max(0.0) / kbit_per_packet).round() as i64;
            LinkSample {
                rtt_ms: rtt,
                send_buffer_ms: rtt + 30.0,
                send_buffer_packets: in_buffer,
                flight_packets: in_buffer,
                packets_sent: self.sent,
                packets_retransmitted: self.retransmitted,
                bytes_sent: self.sent * PACKET_BYTES as i64,
                bytes_retransmitted: self.retransmitted * PACKET_BYTES as i64,
                packets_dropped: self.dropped,
                packets_lost: self.lost,
                bandwidth_mbps: capacity_kbps / 1000.0,
                send_rate_mbps: rate_kbps / 1000.0,
                acks_received: 0,
                latency_ms: self.latency_ms,
                bond: self.bonded.then_some(BondView { queue_ms: Some(rtt - self.base_rtt_ms), lost_share: 0.0 }),
                ..LinkSample::default()
            }
        }
    }

    struct Run {
        rates: Vec<(f64, f64)>,
        /// Given up (too late): what a viewer would miss.
        dropped: i64,
        /// Lost at the bottleneck and sent again.
        lost: i64,
        max_queue_ms: f64,
    }

    /// Runs the law against the bottleneck over `capacity(t)` for `seconds`.
    fn run(link: &mut Bottleneck, start_kbps: f64, seconds: f64, capacity: impl Fn(f64) -> f64) -> Run {
        let bounds = Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: 8000.0, start_kbps };
        run_within(bounds, link, seconds, capacity)
    }

    fn run_within(bounds: Bounds, link: &mut Bottleneck, seconds: f64, capacity: impl Fn(f64) -> f64) -> Run {
        let start_kbps = bounds.start_kbps;
        let mut law = Adaptive::new(bounds);
        let mut rate = start_kbps;
        let mut rates = Vec::new();
        let mut max_queue_ms: f64 = 0.0;
        let dt = STEP.as_secs_f64();
        let steps = (seconds / dt) as u64;
        for i in 0..steps {
            let t = i as f64 * dt;
            let s = link.step(rate, capacity(t), dt);
            max_queue_ms = max_queue_ms.max(s.rtt_ms - link.base_rtt_ms);
            let d = law.step(&s, STEP * i as u32);
            rate = d.stream_kbps;
            rates.push((t, rate));
        }
        Run { rates, dropped: link.dropped, lost: link.lost, max_queue_ms }
    }

    fn rate_at(run: &Run, t: f64) -> f64 {
        run.rates.iter().rev().find(|&&(x, _)| x <= t).map(|&(_, r)| r).unwrap()
    }

    #[test]
    fn a_free_link_keeps_the_maximum() {
        let mut link = Bottleneck::new(40.0, 300.0, 500.0);
        let r = run(&mut link, 8000.0, 60.0, |_| 20_000.0);
        assert!(r.rates.iter().all(|&(_, x)| x == 8000.0), "never lower on a link with room");
        assert_eq!(r.dropped + r.lost, 0);
    }

    #[test]
    fn libsrts_initial_round_trip_is_no_queue_on_a_long_link() {
        // libsrt reports 100 ms until it has measured the round trip; on a 150 ms 4G link that
        // guess, taken as the link's own round trip, read as 50 ms of queue for 10 s (a rate
        // trace: cut from 3.2 Mbit/s to the floor in the first 3 s, on a link of 4-6).
        let mut link = Bottleneck::new(150.0, 300.0, 1000.0);
        link.unmeasured_steps = 4;
        let r = run(&mut link, 4000.0, 20.0, |_| 20_000.0);
        let lowest = r.rates.iter().map(|&(_, x)| x).fold(f64::INFINITY, f64::min);
        assert_eq!(lowest, 4000.0, "never cut on a link with room");
    }

    #[test]
    fn a_capacity_step_down_is_followed_within_a_second_without_loss_and_back_up() {
        // 8 -> 2 Mbit/s at 10 s, back to 5 at 40 s; 150 ms round trip, 300 ms of buffer, latency 1000.
        let mut link = Bottleneck::new(150.0, 300.0, 1000.0);
        let cap = |t: f64| {
            if t < 10.0 {
                9000.0
            } else if t < 40.0 {
                2000.0
            } else {
                5000.0
            }
        };
        let r = run(&mut link, 8000.0, 90.0, cap);
        assert_eq!(r.dropped, 0, "nothing given up");
        // A 300 ms buffer at 2 Mbit/s fills in 100 ms at 8: a law that waits for the round trip
        // to grow loses packets at the drop (they are sent again, counted each time they are
        // lost: 8 Mbit/s for 100 ms more is 76 packets over); one that reads the packets in
        // flight and the ACK rate cuts first.
        assert!(r.lost < 76, "lost {} packets at the drop", r.lost);
        assert!(rate_at(&r, 11.0) < 2000.0, "under the new capacity 1 s after the drop: {}", rate_at(&r, 11.0));
        // It settles just under the capacity, not at the floor.
        let settled: Vec<f64> = r.rates.iter().filter(|&&(t, _)| (25.0..40.0).contains(&t)).map(|&(_, x)| x).collect();
        let mean = settled.iter().sum::<f64>() / settled.len() as f64;
        assert!((1500.0..=2050.0).contains(&mean), "mean over 25-40 s: {mean}");
        assert!(r.max_queue_ms < 333.0, "the queue stayed under a third of the latency: {}", r.max_queue_ms);
        // And finds the room again.
        assert!(rate_at(&r, 80.0) > 4000.0, "back towards 5 Mbit/s by 80 s: {}", rate_at(&r, 80.0));
    }

    #[test]
    fn a_slow_fade_is_tracked_under_the_capacity() {
        // 8 Mbit/s fading to 1.5 over 60 s.
        let mut link = Bottleneck::new(60.0, 200.0, 600.0);
        let cap = |t: f64| (8000.0 - t * 6500.0 / 60.0).max(1500.0);
        let r = run(&mut link, 8000.0, 70.0, cap);
        assert_eq!(r.dropped, 0);
        for &(t, x) in r.rates.iter().filter(|&&(t, _)| t > 5.0) {
            assert!(x <= cap(t) * 1.15, "at {t:.1} s: {x} over a capacity of {}", cap(t));
        }
        assert!(rate_at(&r, 65.0) > 1000.0, "not at the floor: {}", rate_at(&r, 65.0));
    }

    #[test]
    fn a_still_picture_that_makes_less_than_its_rate_is_not_cut() {
        let mut link = Bottleneck::new(40.0, 300.0, 500.0);
        link.fill = 0.3;
        let r = run(&mut link, 8000.0, 30.0, |_| 20_000.0);
        assert!(r.rates.iter().all(|&(_, x)| x == 8000.0));
    }

    /// A sender's counters step by step: `sent` new packets and `acked` acknowledged in each
    /// step, the packets in flight what is left, the round trip the base one plus what the
    /// flight holds beyond it at `link_kbps`, shown `lag` steps late (libsrt smooths it).
    struct Counters {
        s: LinkSample,
        rtts: VecDeque<f64>,
        /// Bytes a packet carries (headers included).
        packet_bytes: i64,
        /// Packets waiting for their first send.
        unsent: i64,
    }

    impl Counters {
        fn new() -> Self {
            let s = LinkSample { rtt_ms: 60.0, latency_ms: 500.0, ..LinkSample::default() };
            Self { s, rtts: VecDeque::from(vec![60.0; 2]), packet_bytes: PACKET_BYTES as i64, unsent: 0 }
        }

        fn step(&mut self, sent: i64, acked: i64, link_kbps: f64, base_flight: i64) -> LinkSample {
            self.s.packets_sent += sent;
            self.s.bytes_sent += sent * self.packet_bytes;
            self.s.flight_packets = (self.s.flight_packets + sent - acked).max(0);
            self.s.send_buffer_packets = self.s.flight_packets + self.unsent;
            let queued =
                (self.s.flight_packets - base_flight).max(0) as f64 * self.packet_bytes as f64 * 8.0 / link_kbps;
            self.rtts.push_back(60.0 + queued);
            self.s.rtt_ms = self.rtts.pop_front().unwrap_or(60.0);
            self.s
        }
    }

    /// A law between the 500 kbit/s floor and `kbps`, starting at `kbps`.
    fn at_most(kbps: f64) -> Adaptive {
        Adaptive::new(Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: kbps, start_kbps: kbps })
    }

    /// A law after 5 s at 5 Mbit/s (24 packets a step, all acknowledged) on a link with room,
    /// and its counters.
    fn at_5_mbps_on_a_free_link() -> (Adaptive, Counters) {
        let mut law = at_most(5000.0);
        let mut c = Counters::new();
        c.s.flight_packets = 28;
        for i in 0..100u32 {
            law.step(&c.step(24, 24, 20_000.0, 28), STEP * i);
        }
        (law, c)
    }

    /// From step 100, six steps of `sent` packets on a link that acknowledges 9 or 10 a step
    /// (`link_kbps`): the first decision that cuts the rate under the link with a send cap (the
    /// drop's; the first reading's cap comes a step before it), and how many steps after.
    fn first_cap(
        law: &mut Adaptive,
        c: &mut Counters,
        sent: i64,
        link_kbps: f64,
        base_flight: i64,
    ) -> Option<(u32, RateDecision)> {
        let mut reacted = None;
        for i in 100..106u32 {
            let d = law.step(&c.step(sent, if i % 2 == 0 { 9 } else { 10 }, link_kbps, base_flight), STEP * i);
            if reacted.is_none() && d.send_cap_kbps.is_some() && d.stream_kbps < link_kbps {
                reacted = Some((i - 100, d));
            }
        }
        reacted
    }

    #[test]
    fn a_capacity_drop_is_read_from_the_acks_and_paced_under_at_once() {
        let mut law = at_most(6000.0);
        let mut c = Counters::new();
        c.s.flight_packets = 34;
        // 5 s at 6 Mbit/s on a link with room (28 packets a step, all acknowledged).
        for i in 0..100u32 {
            let d = law.step(&c.step(28, 28, 20_000.0, 34), STEP * i);
            assert_eq!(d.send_cap_kbps, None, "step {i}: no cap on a free link");
        }
        // The link drops to 2 Mbit/s (9.5 packets a step); the encoder still sends 6.
        let (steps, d) = first_cap(&mut law, &mut c, 28, 2000.0, 34).expect("a drop to a third was seen within 300 ms");
        assert!(steps <= 3, "seen {steps} steps after the drop");
        let cap = d.send_cap_kbps.unwrap();
        assert!((1500.0..=2100.0).contains(&cap), "paced at {cap} kbit/s on a 2 Mbit/s link");
        assert!(d.stream_kbps <= 2000.0 * 0.8, "cut to {} kbit/s", d.stream_kbps);
        // The queue drains (all of it acknowledged, the flight back to a round trip's): the
        // ceiling is lifted, pacing by the input again.
        let mut lifted = false;
        for i in 106..140u32 {
            let flight = c.s.flight_packets;
            let d = law.step(&c.step(9, if flight > 12 { 9 + (flight - 12).min(8) } else { 9 }, 2000.0, 12), STEP * i);
            lifted |= d.send_cap_kbps.is_none();
        }
        assert!(lifted, "the ceiling stays only while the queue does");
    }

    #[test]
    fn a_drop_is_read_in_the_bytes_sent_not_in_full_packets() {
        // 2 Mbit/s in short packets of 650 bytes (at a low rate most are a frame's last), 19 a
        // step: counted at 1316 bytes each, a link that carries half of them would read as 2.
        let mut law = at_most(2000.0);
        let mut c = Counters::new();
        c.packet_bytes = 650;
        c.s.flight_packets = 28;
        for i in 0..100u32 {
            law.step(&c.step(19, 19, 20_000.0, 28), STEP * i);
        }
        // The link falls to 1 Mbit/s: 9.6 of those packets a step.
        let (steps, d) = first_cap(&mut law, &mut c, 19, 1000.0, 28).expect("a drop to half was seen within 300 ms");
        assert!(steps <= 3, "seen {steps} steps after the drop");
        let cap = d.send_cap_kbps.unwrap();
        assert!(cap <= 1100.0, "paced at {cap} kbit/s on a 1 Mbit/s link");
        assert!(d.stream_kbps <= 800.0, "cut to {} kbit/s", d.stream_kbps);
    }

    #[test]
    fn in_a_drop_the_cap_leaves_room_over_what_the_encoder_makes() {
        // A drop from 5 to 2 Mbit/s; after the cut the encoder makes 1.5 Mbit/s (7 packets a
        // step), more than the rate it was asked for: libsrt resends nothing while a packet
        // waits for its first send, so a cap at or under that keeps the drop's losses unsent.
        let (mut law, mut c) = at_5_mbps_on_a_free_link();
        let (steps, _) = first_cap(&mut law, &mut c, 24, 2000.0, 28).expect("the drop was read");
        let cut = 100 + steps;
        let mut last = None;
        for i in 106..(cut + 14) {
            // 7 made, 6 sent and acknowledged a step: the rest waits at home.
            c.unsent += 1;
            last = law.step(&c.step(6, 6, 2000.0, 28), STEP * i).send_cap_kbps;
        }
        let made = 7.0 * PACKET_BYTES * 8.0 / 1000.0 / STEP.as_secs_f64();
        let cap = last.expect("still in the drop");
        assert!(cap >= made * 1.1 - 1.0, "cap {cap} under 10 % over the {made} the encoder makes");
        assert!(cap <= 2000.0 * 1.05, "cap {cap} over the link");
    }

    #[test]
    fn an_ack_held_back_by_a_lost_packet_is_no_capacity_drop() {
        // A free link at 5 Mbit/s loses a packet: for two steps nothing is acknowledged (the
        // hole waits for its resend), then everything at once.
        let (mut law, mut c) = at_5_mbps_on_a_free_link();
        for i in 100..110u32 {
            let acked = match i {
                100 => 12,
                101 | 102 => 0,
                103 => 60,
                _ => 24,
            };
            if i == 101 {
                c.s.packets_retransmitted += 1;
                c.s.packets_sent += 1;
            }
            // (The round trip does not grow: it is measured by ACKs, which a hole does not delay.)
            let d = law.step(&c.step(24, acked, f64::INFINITY, 28), STEP * i);
            assert_eq!(d.send_cap_kbps, None, "step {i}: {:?}", d.why);
            assert!(d.stream_kbps >= 5000.0 * 0.9, "step {i}: cut to {} ({:?})", d.stream_kbps, d.why);
        }
    }

    #[test]
    fn a_latency_of_3_round_trips_is_no_overload_of_a_free_link() {
        // A bridge's choice over a metro link: 60 ms for a 20 ms round trip, which jitters by
        // a millisecond either side. At 5 Mbit/s for 30 s: never cut.
        let mut law = at_most(5000.0);
        let mut c = Counters::new();
        c.s.latency_ms = 60.0;
        c.s.flight_packets = 10;
        for i in 0..600u32 {
            let mut s = c.step(24, 24, 20_000.0, 10);
            s.rtt_ms = [19.3, 20.3, 19.8, 20.1][i as usize % 4];
            let d = law.step(&s, STEP * i);
            assert!(d.stream_kbps >= 5000.0, "step {i}: cut to {} ({})", d.stream_kbps, d.why);
        }
        // A queue past a third of the latency is one: a 30 ms queue on that link cuts.
        let cut = (600..610u32).any(|i| {
            let mut s = c.step(24, 24, 20_000.0, 10);
            s.rtt_ms = 50.0;
            law.step(&s, STEP * i).stream_kbps < 4000.0
        });
        assert!(cut, "a 30 ms queue at 60 ms of latency was not cut");
    }

    /// A free long link (106 ms round trip, latency 3 x RTT = 318 ms) at 3 Mbit/s, 14 packets
    /// a step, that loses one packet every 1.25 s: each loss is reported a round trip after
    /// its send, and its resend arrives `hold` steps later, the cumulative ACK held meanwhile.
    /// The lowest rate over 30 s.
    fn lone_losses(hold: u32) -> f64 {
        let mut law = at_most(3000.0);
        let mut c = Counters::new();
        c.s.latency_ms = 318.0;
        c.rtts = VecDeque::from(vec![106.0; 2]);
        c.s.flight_packets = 30;
        let mut lowest = f64::INFINITY;
        let mut owed = 0;
        for i in 0..600u32 {
            let k = i % 25;
            if i >= 100 && k == 0 {
                c.s.packets_lost += 1;
            }
            if i >= 100 && k == 2 {
                c.s.packets_retransmitted += 1;
            }
            let held = i >= 100 && k < hold;
            let acked = if held {
                owed += 14;
                0
            } else {
                14 + std::mem::take(&mut owed)
            };
            let mut s = c.step(14, acked, f64::INFINITY, 30);
            s.rtt_ms = [105.8, 106.4, 106.1, 105.5][i as usize % 4];
            lowest = lowest.min(law.step(&s, STEP * i).stream_kbps);
        }
        lowest
    }

    #[test]
    fn a_lone_loss_under_repair_is_no_queue_on_a_long_link() {
        // The ACK held for 200 ms (a round trip and the resend's wait) after each of 20 lone
        // losses: the flight doubles and is no queue. (Before: halved at the first loss.)
        let lowest = lone_losses(4);
        assert!(lowest >= 3000.0 * 0.9, "a lone loss cut the rate to {lowest}");
        // Held for 600 ms, a queue of the latency's third beyond the repair's round trip: cut.
        assert!(lone_losses(12) < 3000.0 * 0.8, "a 600 ms hold after a loss was not cut");
    }

    /// A free link at 5 Mbit/s whose next step comes `gap` after the last, and whose readings
    /// then show 250 ms more round trip (fading over 250 ms unless `lasting`), and a step's
    /// packets in flight unacknowledged for a step: what a box that stood still reads (its
    /// libsrt stood still too, so the round trips across the gap are long), or a queue.
    fn after_a_gap(gap: Duration, lasting: bool) -> Vec<RateDecision> {
        let (mut law, mut c) = at_5_mbps_on_a_free_link();
        let start = STEP * 99 + gap;
        (0..30u32)
            .map(|k| {
                let mut s = c.step(24, [0, 48].get(k as usize).copied().unwrap_or(24), f64::INFINITY, 28);
                s.rtt_ms += if lasting { 250.0 } else { (250.0 - 50.0 * k as f64).max(0.0) };
                law.step(&s, start + STEP * k)
            })
            .collect()
    }

    #[test]
    fn a_box_that_stood_still_holds_its_rate_and_a_queue_still_cuts() {
        // Read 250 ms late: the box stood still, the round trips are the stall's. It holds.
        let stood = after_a_gap(Duration::from_millis(250), false);
        assert!(matches!(stood[0].why, Why::Stalled { ms } if (249.0..251.0).contains(&ms)), "{:?}", stood[0].why);
        assert!(stood.iter().all(|d| d.stream_kbps >= 5000.0), "cut after a stall: {stood:?}");
        assert_eq!(stood.last().map(|d| d.why), Some(Why::AtMaximum), "the link is read again");
        // The same readings on time are a queue: cut.
        let queue = after_a_gap(STEP, false);
        assert!(queue.iter().any(|d| d.stream_kbps < 4000.0), "a 250 ms queue not cut: {queue:?}");
        // A queue that outlasts the stall's blind time is cut then.
        let lasting = after_a_gap(Duration::from_millis(250), true);
        let cut = lasting.iter().position(|d| d.stream_kbps < 4000.0);
        assert!(cut.is_some_and(|k| k >= 10), "a lasting queue cut at step {cut:?}: {lasting:?}");
    }

    /// A free link at 5 Mbit/s whose ACKs stop for `steps` steps with nothing lost (the
    /// receiver or the way back held them), then all come at once: the decisions.
    fn acks_stalled_for(steps: u32) -> Vec<RateDecision> {
        let (mut law, mut c) = at_5_mbps_on_a_free_link();
        (100..110 + steps)
            .map(|i| {
                let acked = match i - 100 {
                    n if n < steps => 0,
                    n if n == steps => 24 * (steps as i64 + 1),
                    _ => 24,
                };
                law.step(&c.step(24, acked, f64::INFINITY, 28), STEP * i)
            })
            .collect()
    }

    #[test]
    fn acks_that_stall_without_a_loss_are_no_capacity_drop() {
        // 100 ms: nothing at all.
        for (i, d) in acks_stalled_for(2).iter().enumerate() {
            assert_eq!(d.send_cap_kbps, None, "step {i}: {:?}", d.why);
            assert!(d.stream_kbps >= 5000.0 * 0.9, "step {i}: cut to {} ({:?})", d.stream_kbps, d.why);
        }
        // 300 ms (the packets in flight a third of the 500 ms latency over the round trip):
        // whatever held them, they are in danger: an overload's cut (at most halved), no drop.
        let long = acks_stalled_for(6);
        assert!(long.iter().all(|d| d.send_cap_kbps.is_none()), "no drop read from a stall");
        let lowest = long.iter().map(|d| d.stream_kbps).fold(f64::INFINITY, f64::min);
        assert!((2500.0..=3500.0).contains(&lowest), "one cut, to {lowest}");
    }

    /// A free link at 5 Mbit/s whose ACKs stop for a moment while the bottleneck drops at its
    /// tail (a 4G fade) and the packets in flight pile up; `losses` marks, each step, six of
    /// them resent or reported lost: how many steps until a drop was read, and its decision.
    fn drop_read_with(losses: impl Fn(&mut LinkSample)) -> Option<(u32, RateDecision)> {
        let (mut law, mut c) = at_5_mbps_on_a_free_link();
        let mut reacted = None;
        for i in 100..106u32 {
            losses(&mut c.s);
            let d = law.step(&c.step(24, if i < 103 { 0 } else { 4 }, 800.0, 28), STEP * i);
            if reacted.is_none() && d.send_cap_kbps.is_some() && d.stream_kbps < law.bounds.max_kbps * 0.95 {
                reacted = Some((i - 100, d));
            }
        }
        reacted
    }

    #[test]
    fn a_drop_with_many_resends_or_losses_reported_is_read_as_one_at_once() {
        // Many resends: a drop, though a resend went out within the round trip. Many losses
        // reported and none resent (libsrt holds resends back while new packets wait): a drop
        // too, before any resend goes out. (Read as a drop, not only as an overload: the
        // connection is capped under the link.)
        let resent = |s: &mut LinkSample| {
            s.packets_retransmitted += 6;
            s.packets_sent += 6;
        };
        let reported = |s: &mut LinkSample| s.packets_lost += 6;
        for (what, reacted) in [("resends", drop_read_with(resent)), ("losses", drop_read_with(reported))] {
            let (steps, d) = reacted.unwrap_or_else(|| panic!("{what}: no drop read within 300 ms"));
            assert!(steps <= 3, "{what}: read {steps} steps after the drop");
            assert!(d.stream_kbps < 5000.0 * 0.8, "{what}: cut to {}", d.stream_kbps);
        }
    }

    /// A law between a floor of 660 (the stream of 500 kbit/s of video) and 5 Mbit/s that may
    /// step the frame rate down to 400, after 5 s at 5 Mbit/s on a free link; then the link
    /// falls to `link_kbps`: the lowest rate it chose in the next 3 s.
    fn lowest_after_a_drop_to(link_kbps: f64) -> f64 {
        let mut law =
            Adaptive::new(Bounds { min_kbps: 660.0, least_kbps: 400.0, max_kbps: 5000.0, start_kbps: 5000.0 });
        let mut c = Counters::new();
        c.s.flight_packets = 28;
        for i in 0..100u32 {
            law.step(&c.step(24, 24, 20_000.0, 28), STEP * i);
        }
        // The encoder sends what the law asks for; the link carries `link_kbps` of it, the rest
        // queues (the packets in flight beyond the free link's 28).
        let per_step = |kbps: f64| (kbps * STEP.as_secs_f64() / (PACKET_BYTES * 8.0 / 1000.0)).round() as i64;
        let (mut rate, mut lowest) = (5000.0, f64::INFINITY);
        for i in 100..160u32 {
            let sent = per_step(rate);
            let acked = (c.s.flight_packets + sent - 28).clamp(0, per_step(link_kbps));
            rate = law.step(&c.step(sent, acked, link_kbps, 28), STEP * i).stream_kbps;
            lowest = lowest.min(rate);
        }
        lowest
    }

    #[test]
    fn a_link_under_the_floor_steps_the_frame_rate_down_and_one_over_it_does_not() {
        // 0.5 Mbit/s: the floor's 660 does not fit; under it, not under the least.
        let under = lowest_after_a_drop_to(500.0);
        assert!((400.0..660.0).contains(&under), "at 0.5 Mbit/s the lowest rate was {under}");
        // 1.2 Mbit/s carries the floor with room (a cut to 75 % of it is over 660): the full
        // frame rate stays.
        let over = lowest_after_a_drop_to(1200.0);
        assert!(over >= 660.0, "at 1.2 Mbit/s the lowest rate was {over}");
    }

    #[test]
    fn a_long_round_trip_under_a_short_latency_is_no_overload_on_a_free_link() {
        // 45 ms of round trip, SRT's default 120 ms of latency (under three round trips): the
        // rate climbs to the maximum; it went to the floor and stayed there (issue 37).
        let mut link = Bottleneck::new(45.0, 250.0, 120.0);
        let r = run(&mut link, 2000.0, 20.0, |_| 50_000.0);
        assert!(rate_at(&r, 19.0) >= 7900.0, "{}", rate_at(&r, 19.0));
    }

    #[test]
    fn a_link_that_fades_again_and_again_is_not_climbed_far_over_its_fades_then_is_again() {
        // 5 Mbit/s with fades to 0.8 for 1.5 s every 10 s until 60 s, then no more.
        let mut link = Bottleneck::new(150.0, 300.0, 1000.0);
        let cap = |t: f64| if t < 61.0 && t % 10.0 >= 8.5 { 800.0 } else { 5000.0 };
        let r = run(&mut link, 4000.0, 150.0, cap);
        let lowest = |a: f64, b: f64| {
            r.rates.iter().filter(|&&(t, _)| (a..b).contains(&t)).map(|&(_, x)| x).fold(f64::MAX, f64::min)
        };
        let mut lows = Vec::new();
        for k in 1..6 {
            let fade = f64::from(k) * 10.0 - 1.5;
            let low = lowest(fade, fade + 1.5);
            assert!(low < 1000.0, "the fade at {fade} s is followed: {low}");
            lows.push(low);
        }
        // From the second fade on, never more than DIP_HEADROOM times the fades' lows (where
        // rises alone climb to twice that and more).
        let bound = lows.iter().copied().fold(0.0, f64::max) * DIP_HEADROOM;
        let highest = r.rates.iter().filter(|&&(t, _)| (20.0..60.0).contains(&t)).map(|&(_, x)| x).fold(0.0, f64::max);
        assert!(highest <= bound + 1.0, "{highest} between fades, over {bound} (lows {lows:?})");
        // Before the second fade, and 30 s after the last, the rises are those of a link with room.
        // (The start's faster rises find the 5 Mbit/s in 2 s and cut to 90 % of it: 4482 at 8 s.)
        assert!(rate_at(&r, 8.0) > 4400.0, "{}", rate_at(&r, 8.0));
        assert!(rate_at(&r, 140.0) > 4000.0, "the fades forgotten: {}", rate_at(&r, 140.0));
    }

    #[test]
    fn after_fades_under_the_floor_the_rate_climbs_to_the_floors_bound_not_the_half_frame_rates() {
        // 5 Mbit/s with fades to 0.3 (under the floor's stream) for 1.5 s every 10 s until 60 s.
        let bounds = Bounds { min_kbps: 660.0, least_kbps: 330.0, max_kbps: 6000.0, start_kbps: 3000.0 };
        let mut link = Bottleneck::new(150.0, 300.0, 1000.0);
        let cap = |t: f64| if t < 61.0 && t % 10.0 >= 8.5 { 300.0 } else { 5000.0 };
        let r = run_within(bounds, &mut link, 100.0, cap);
        let lowest =
            r.rates.iter().filter(|&&(t, _)| (18.5..20.0).contains(&t)).map(|&(_, x)| x).fold(f64::MAX, f64::min);
        assert!(lowest < 660.0, "the fade at 18.5 s takes the rate under the floor: {lowest}");
        // Between fades: over 2.5 times the half frame rate's stream, within 2.5 times the floor.
        let highest = r.rates.iter().filter(|&&(t, _)| (20.0..58.0).contains(&t)).map(|&(_, x)| x).fold(0.0, f64::max);
        assert!(highest > 330.0 * DIP_HEADROOM * 1.2, "held at the half frame rate's bound: {highest}");
        assert!(highest <= 660.0 * DIP_HEADROOM + 1.0, "over the floor's bound: {highest}");
    }

    #[test]
    fn loss_without_a_queue_does_not_lower_the_rate() {
        // A radio link: the retransmissions count, nothing queues.
        let mut law = at_most(5000.0);
        let mut s = LinkSample { rtt_ms: 60.0, send_buffer_ms: 90.0, latency_ms: 500.0, ..LinkSample::default() };
        for i in 0..600u32 {
            s.packets_sent += 24;
            s.packets_retransmitted += 1;
            s.send_buffer_packets = 28 + i64::from(i % 3);
            let d = law.step(&s, STEP * i);
            assert_eq!(d.stream_kbps, 5000.0, "step {i}: {:?}", d.why);
        }
    }

    #[test]
    fn over_a_bond_an_uplinks_death_cuts_by_its_share_at_once() {
        // A free link carrying the stream at 5 Mbit/s; at 5 s an uplink that carried 43 % dies.
        let run = |lost: f64| {
            let mut law = at_most(5000.0);
            let bond = Some(BondView::default());
            let mut s = LinkSample { rtt_ms: 60.0, latency_ms: 2000.0, bond, ..LinkSample::default() };
            let mut rates = Vec::new();
            for i in 0..110u32 {
                s.packets_sent += 24;
                s.send_buffer_packets = 28;
                s.flight_packets = 26;
                if i == 100 {
                    s.bond.as_mut().expect("bonded").lost_share += lost;
                }
                rates.push(law.step(&s, STEP * i));
            }
            rates
        };
        let before = run(0.43)[99];
        assert_eq!(before.stream_kbps, 5000.0);
        let cut = run(0.43)[100];
        assert!(matches!(cut.why, Why::UplinkLost { .. }), "{:?}", cut.why);
        assert!(cut.stream_kbps <= 5000.0 * 0.57 && cut.stream_kbps > 2000.0, "{cut:?}");
        let cap = cut.send_cap_kbps.expect("libsrt held to what the others carry");
        assert!(cap < 5000.0 * 0.6, "{cap}");
        // Once: the next steps read no further death.
        assert!(run(0.43)[101..].iter().all(|d| !matches!(d.why, Why::UplinkLost { .. })));
        // An uplink that carried a few packets a second costs nothing.
        assert!(run(0.05).iter().all(|d| d.stream_kbps == 5000.0));
    }

    #[test]
    fn over_a_bond_the_rate_rises_past_the_last_cut_at_1_5_percent_a_step_not_3_5() {
        // Capacity 2 Mbit/s for 20 s, then 8: the cut at the start leaves a ceiling near 2,
        // and past it the rate climbs. Over a bond it climbs slower: a bond's summed capacity
        // swings with each uplink, and a fast climb met a fade at 3.7 Mbit/s in a bench run.
        let climb = |bonded: bool| {
            let mut link = Bottleneck::new(60.0, 300.0, 2000.0);
            link.bonded = bonded;
            let r = run(&mut link, 4000.0, 40.0, |t| if t < 20.0 { 2000.0 } else { 8000.0 });
            (rate_at(&r, 24.0), rate_at(&r, 30.0), rate_at(&r, 39.0))
        };
        let (plain, bonded) = (climb(false), climb(true));
        // Past the ceiling at 3.5 % a step (some 15 % a second), the plain law more than
        // doubles from 24 s to 30 s ...
        assert!(plain.1 > plain.0 * 1.9, "{plain:?}");
        // ... over a bond at 1.5 % (some 6 % a second), less than half as much ...
        assert!(bonded.1 < bonded.0 * 1.5, "{bonded:?} against {plain:?}");
        // ... and it still climbs.
        assert!(bonded.2 > bonded.1 * 1.4, "{bonded:?}");
    }

    #[test]
    fn over_a_bond_the_fastest_uplinks_queue_is_no_queue_while_another_has_room() {
        // SRT's round trip is the fastest uplink's: it grows by 40 ms. Over a bond whose
        // least queued uplink shows 2 ms the rate holds; on a plain connection it is cut.
        let run = |queue_ms: Option<f64>| {
            let mut law = at_most(5000.0);
            let bond = queue_ms.map(|q| BondView { queue_ms: Some(q), lost_share: 0.0 });
            let mut s = LinkSample { rtt_ms: 60.0, latency_ms: 2000.0, bond, ..LinkSample::default() };
            let mut lowest = f64::MAX;
            for i in 0..200u32 {
                s.packets_sent += 24;
                s.send_buffer_packets = 28;
                s.flight_packets = 26;
                s.rtt_ms = if i < 60 { 60.0 } else { 100.0 };
                lowest = lowest.min(law.step(&s, STEP * i).stream_kbps);
            }
            lowest
        };
        assert_eq!(run(Some(2.0)), 5000.0);
        assert!(run(None) < 4700.0, "{}", run(None));
    }

    #[test]
    fn a_connection_that_starts_on_a_keyframe_burst_is_cut_by_its_rate_not_sent_to_the_floor() {
        // The first second: a round trip swollen by the first keyframe, and hardly anything
        // acknowledged yet (so what the link "delivered" reads near zero).
        let mut law = at_most(6000.0);
        let mut s = LinkSample { rtt_ms: 60.0, send_buffer_ms: 90.0, latency_ms: 500.0, ..LinkSample::default() };
        let mut lowest = f64::MAX;
        for i in 0..20u32 {
            s.rtt_ms = if (2..8).contains(&i) { 240.0 } else { 60.0 };
            s.packets_sent += 28;
            // The keyframe's 150 packets leave the send buffer over half a second.
            s.send_buffer_packets = (150 - 15 * i64::from(i)).max(30);
            lowest = lowest.min(law.step(&s, STEP * i).stream_kbps);
        }
        assert!(lowest >= 6000.0 * 0.7 * 0.7 - 1.0, "cut to {lowest} on the first keyframe");
        // Later, the same overload with what the link delivered known: at most halved per cut.
        for i in 20..60u32 {
            s.rtt_ms = 60.0;
            s.packets_sent += 28;
            s.send_buffer_packets = 30;
            law.step(&s, STEP * i);
        }
        let before = law.step(&s, STEP * 60).stream_kbps;
        s.packets_dropped += 5;
        s.rtt_ms = 240.0;
        let after = law.step(&s, STEP * 61).stream_kbps;
        assert!(after < before * 0.71 && after >= before * 0.5 - 1.0, "{before} -> {after}");
    }

    #[test]
    fn a_packet_given_up_cuts_at_once_and_says_so() {
        let mut law = at_most(5000.0);
        let mut s = LinkSample { rtt_ms: 60.0, send_buffer_ms: 90.0, latency_ms: 500.0, ..LinkSample::default() };
        for i in 0..40u32 {
            s.packets_sent += 24;
            law.step(&s, STEP * i);
        }
        s.packets_sent += 24;
        s.packets_dropped += 3;
        let d = law.step(&s, STEP * 40);
        assert!(d.stream_kbps <= 3500.0, "{d:?}");
        assert!(matches!(d.why, Why::Overload { .. }), "{:?}", d.why);
        assert!(d.why.to_string().starts_with("link carries "), "{}", d.why);
    }

    /// One step of a rate trace as `RateControl::record_to` writes it (the fields a replay needs).
    #[derive(serde::Deserialize)]
    struct Recorded {
        t: f64,
        sample: LinkSample,
    }

    /// Replays a recorded rate trace from a fresh law started at its first step's rate: the law
    /// is open-loop here, so only what the samples show before its decisions could change them
    /// is a test of it. (t, decision) for each step.
    fn replay(trace: &str, start_kbps: f64) -> Vec<(f64, RateDecision)> {
        // The bench's bounds: 500 kbit/s of video at least (250 at half the frame rate), 6000 at
        // most, 128 of audio, as streams.
        let stream = |video_kbps: f64| (video_kbps + 128.0) * crate::TS_OVERHEAD;
        let bounds =
            Bounds { min_kbps: stream(500.0), least_kbps: stream(250.0), max_kbps: stream(6000.0), start_kbps };
        let mut law = Adaptive::new(bounds);
        trace
            .lines()
            .map(|l| serde_json::from_str::<Recorded>(l).unwrap())
            .map(|r| (r.t, law.step(&r.sample, Duration::from_secs_f64(r.t))))
            .collect()
    }

    #[test]
    fn a_drop_read_through_stalled_acks_and_heavy_losses_is_capped_at_once() {
        // Recorded on the steps trace (720p30, latency 500 ms): at 20 s the link fell from 8
        // Mbit/s to 2 under a 6.4 Mbit/s stream. The ACKs stalled behind the tail drops, and
        // from 20.5 s the losses were heavy while libsrt's resends took the room of first
        // sends; what was sent for the first time read under the link, and the drop went
        // unread: halved twice by the overload rule, the resends unpaced, 48 frames lost.
        let steps = replay(include_str!("testdata/steps-drop.jsonl"), 6434.4);
        let at = |a: f64, b: f64| steps.iter().filter(move |(t, _)| (a..b).contains(t)).map(|(_, d)| d);
        assert!(at(20.52, 20.8).all(|d| d.send_cap_kbps.is_some()), "{:?}", at(20.4, 20.8).collect::<Vec<_>>());
        assert!(at(20.52, 20.8).all(|d| d.stream_kbps <= 2100.0 * 0.75), "{:?}", at(20.4, 20.8).collect::<Vec<_>>());
    }

    #[test]
    fn a_recorded_4g_fade_is_capped_at_its_first_reading_and_cut_under_the_link() {
        // Recorded on the 4g-1 trace (720p30, 6 Mbit/s at most, 500 kbit/s of video at least,
        // latency 1000 ms) with the law before the first reading's cap: at 30.4 s of the
        // trace's clock (about 30.7 on this one's) the link fell from 5.5 Mbit/s to 0.86 and
        // stayed under 1.1 until 31.8. The first of the two readings a drop needs came at
        // 30.85: capped there, the connection sends no more into the bottleneck's full queue
        // while the second comes.
        // (The first connection starts at half the maximum.)
        let steps = replay(include_str!("testdata/4g-1-fade.jsonl"), (6000.0 + 128.0) * crate::TS_OVERHEAD / 2.0);
        let first_cap = steps.iter().find(|(_, d)| d.send_cap_kbps.is_some()).expect("a drop was read");
        let first_cut = steps.iter().find(|(t, d)| *t > 30.0 && d.stream_kbps < 1000.0).expect("the fade was followed");
        assert!(first_cap.0 < first_cut.0, "capped at {} s, cut at {} s", first_cap.0, first_cut.0);
        assert!(first_cap.0 < 31.0, "capped at {} s", first_cap.0);
        assert!(first_cap.1.send_cap_kbps.unwrap() <= 860.0 * 1.1, "{:?}", first_cap.1);
        let at = |a: f64, b: f64| steps.iter().filter(move |(t, _)| (a..b).contains(t)).map(|(_, d)| d);
        assert!(at(31.3, 31.8).all(|d| d.stream_kbps < 860.0 * 0.75), "under the fade's link");
    }

    /// A free link where, in the first half second, packets pile up at home and in flight (an
    /// encoder's warm-up burst, a receiver's late ACKs), one packet lost and sent again every
    /// `lone_loss_every` steps if any: the stream rate at each step.
    fn free_link_with_a_burst(burst: i64, rtt_ms: f64, lone_loss_every: Option<u32>) -> Vec<(f64, RateDecision)> {
        let bounds = Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: 4200.0, start_kbps: 2100.0 };
        let mut law = Adaptive::new(bounds);
        let mut link = Bottleneck::new(rtt_ms, 250.0, 200.0);
        let mut rate = bounds.start_kbps;
        (0..300u32)
            .map(|i| {
                let mut s = link.step(rate, 50_000.0, STEP.as_secs_f64());
                if (4..10).contains(&i) {
                    s.send_buffer_packets += burst;
                    s.flight_packets += burst / 2;
                }
                if let Some(every) = lone_loss_every {
                    s.packets_lost += i64::from(i / every);
                    s.packets_retransmitted += i64::from(i / every);
                }
                let d = law.step(&s, STEP * i);
                rate = d.stream_kbps;
                (STEP.as_secs_f64() * f64::from(i), d)
            })
            .collect()
    }

    #[test]
    fn a_cut_the_link_never_confirms_is_undone_and_the_start_goes_on() {
        for (rtt, lone_loss_every) in [(40.0, None), (150.0, None), (40.0, Some(10))] {
            let steps = free_link_with_a_burst(80, rtt, lone_loss_every);
            let lowest = steps.iter().map(|(_, d)| d.stream_kbps).fold(f64::INFINITY, f64::min);
            assert!(lowest < 2100.0, "the burst cut nothing at {rtt} ms: the test reads no cut");
            // (A lone loss every half second, a radio link's, is no sign of the link's.)
            let undone = steps.iter().find(|(_, d)| matches!(d.why, Why::Undone { .. }));
            assert!(undone.is_some_and(|(t, _)| *t < 2.0), "not undone within 2 s at {rtt} ms: {undone:?}");
            // Back at the start's rises: at the maximum within 3 s, not 13.
            let top = steps.iter().find(|(_, d)| d.stream_kbps >= 4200.0);
            assert!(top.is_some_and(|(t, _)| *t < 3.0), "at the maximum only at {top:?} ({rtt} ms)");
        }
    }

    /// The burst's cuts on a link of `capacity(step)` with `queued_ms(step)` more round trip (a
    /// queue others' traffic built): each step's decision, and the packets given up.
    fn burst_then(capacity: impl Fn(u32) -> f64, queued_ms: impl Fn(u32) -> f64) -> (Vec<RateDecision>, i64) {
        let bounds = Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: 4200.0, start_kbps: 2100.0 };
        let mut law = Adaptive::new(bounds);
        let mut link = Bottleneck::new(40.0, 250.0, 200.0);
        let mut rate = bounds.start_kbps;
        let mut steps = Vec::new();
        for i in 0..200u32 {
            let mut s = link.step(rate, capacity(i), STEP.as_secs_f64());
            s.rtt_ms += queued_ms(i);
            if (4..10).contains(&i) {
                s.send_buffer_packets += 80;
                s.flight_packets += 40;
            }
            let d = law.step(&s, STEP * i);
            rate = d.stream_kbps;
            steps.push(d);
        }
        (steps, link.dropped)
    }

    fn undone(steps: &[RateDecision]) -> impl Iterator<Item = (u32, &RateDecision)> {
        (0u32..).zip(steps).filter(|(_, d)| matches!(d.why, Why::Undone { .. }))
    }

    #[test]
    fn a_cut_the_link_confirms_is_not_undone() {
        // On a link of 1.8 Mbit/s, under the start's rises: the queue they build confirms the
        // cuts over it, and an undo goes back to no rate over it. And where the link falls to
        // 1 Mbit/s while the burst's cut is watched, the queue confirms the cut.
        let falls = |i| if i < 12 { 50_000.0 } else { 1000.0 };
        for (name, capacity) in [("1.8", &(|_| 1800.0) as &dyn Fn(u32) -> f64), ("falls to 1", &falls)] {
            let (steps, dropped) = burst_then(capacity, |_| 0.0);
            let over = undone(&steps).find(|(i, d)| d.stream_kbps >= capacity(*i));
            assert_eq!(over, None, "undone over the link ({name} Mbit/s)");
            let rate = steps.last().unwrap().stream_kbps;
            assert!(rate <= capacity(199) * 1.05, "{rate} on {name} Mbit/s");
            // (The fall itself, 2.3 Mbit/s into 1, costs the few packets queued past the latency.)
            assert!(dropped <= 5, "{dropped} given up on {name} Mbit/s");
        }
        // A free link whose round trip grows by 60 ms while the cut is watched (others' traffic
        // queued on the way; the rate, under what the link carries, holds): a sign of the
        // link's, and the cut stays.
        let (steps, _) = burst_then(|_| 50_000.0, |i| if (15..25).contains(&i) { 60.0 } else { 0.0 });
        assert_eq!(undone(&steps).next(), None);
    }
}
