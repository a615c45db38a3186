//! One direction of an emulated link, as a pure function of (state, packet, now) -> verdict.
//!
//! In order: the link's parameters at `now` (base, or an active event's overrides), burst loss
//! (Gilbert-Elliott), random loss, the bottleneck (serialisation at `rate_kbps` behind a queue
//! of `queue` worth of traffic; tail drop when full), then propagation delay with jitter. Unless
//! `reorder` is set the link is FIFO: a packet never overtakes the one before it, so when a
//! delay spike ends the held-back packets arrive in a rush, as the 4G study saw.

use std::time::Duration;

use serde::Deserialize;

use crate::rng::Rng;

/// Gilbert-Elliott burst loss: a two-state chain stepped once per packet.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstLoss {
    /// Probability per packet of entering the bad state.
    pub p_enter_bad: f64,
    /// Probability per packet of leaving it.
    pub p_leave_bad: f64,
    /// Loss while in the bad state, percent.
    pub loss_in_bad_pct: f64,
}

/// What one direction of the link does.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    /// Mean one-way delay (half the RTT).
    pub one_way_delay: Duration,
    /// Standard deviation of the one-way delay.
    pub jitter: Duration,
    /// Whether jitter may reorder packets.
    pub reorder: bool,
    /// Independent random loss, percent.
    pub loss_pct: f64,
    /// Burst loss on top.
    pub burst_loss: Option<BurstLoss>,
    /// Bottleneck rate, kbit/s; 0 = unlimited.
    pub rate_kbps: f64,
    /// Bottleneck buffer, as time at `rate_kbps`.
    pub queue: Duration,
}

impl Default for LinkParams {
    fn default() -> Self {
        Self {
            one_way_delay: Duration::ZERO,
            jitter: Duration::ZERO,
            reorder: false,
            loss_pct: 0.0,
            burst_loss: None,
            rate_kbps: 0.0,
            queue: Duration::from_millis(100),
        }
    }
}

/// A timed change: from `at_s` for `for_s` seconds the given fields replace the base ones.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEvent {
    /// Start, seconds after the link starts.
    pub at_s: f64,
    /// Length, seconds.
    pub for_s: f64,
    /// New RTT, ms.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    /// New jitter, ms.
    #[serde(default)]
    pub jitter_ms: Option<f64>,
    /// New random loss, percent.
    #[serde(default)]
    pub loss_pct: Option<f64>,
    /// New rate, kbit/s.
    #[serde(default)]
    pub rate_kbps: Option<f64>,
}

impl LinkEvent {
    fn active(&self, now: Duration) -> bool {
        let t = now.as_secs_f64();
        t >= self.at_s && t < self.at_s + self.for_s
    }

    fn apply(&self, p: &mut LinkParams) {
        if let Some(rtt) = self.rtt_ms {
            p.one_way_delay = Duration::from_secs_f64(rtt.max(0.0) / 2000.0);
        }
        if let Some(j) = self.jitter_ms {
            p.jitter = Duration::from_secs_f64(j.max(0.0) / 1000.0);
        }
        if let Some(l) = self.loss_pct {
            p.loss_pct = l;
        }
        if let Some(r) = self.rate_kbps {
            p.rate_kbps = r;
        }
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Independent random loss.
    Random,
    /// Lost in a Gilbert-Elliott bad period.
    Burst,
    /// The bottleneck's queue was full (tail drop).
    QueueFull,
}

/// What happens to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver at this time (since the link started).
    Deliver(Duration),
    /// Dropped.
    Drop(DropReason),
}

/// The state of one direction of a link.
#[derive(Debug, Clone)]
pub struct Impairment {
    base: LinkParams,
    events: Vec<LinkEvent>,
    trace: Option<crate::trace::CapacityTrace>,
    rng: Rng,
    in_bad_state: bool,
    link_free_at: Duration,
    last_delivery: Duration,
}

impl Impairment {
    /// A direction with `base` parameters, timed `events`, and a seed.
    pub fn new(base: LinkParams, events: Vec<LinkEvent>, seed: u64) -> Self {
        Self {
            base,
            events,
            trace: None,
            rng: Rng::new(seed),
            in_bad_state: false,
            link_free_at: Duration::ZERO,
            last_delivery: Duration::ZERO,
        }
    }

    /// The bottleneck follows `trace` (its rate in force overrides the base one; an event that
    /// names a rate overrides both).
    pub fn with_trace(mut self, trace: crate::trace::CapacityTrace) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The parameters in force at `now`.
    pub fn params_at(&self, now: Duration) -> LinkParams {
        let mut p = self.base.clone();
        if let Some(r) = self.trace.as_ref().and_then(|t| t.rate_at(now)) {
            p.rate_kbps = r;
        }
        for e in self.events.iter().filter(|e| e.active(now)) {
            e.apply(&mut p);
        }
        p
    }

    /// Decides the fate of a packet of `len` bytes offered at `now` (time since the link started;
    /// calls must come in non-decreasing `now`).
    pub fn on_packet(&mut self, now: Duration, len: usize) -> Verdict {
        let p = self.params_at(now);
        if let Some(b) = p.burst_loss {
            let flip = if self.in_bad_state { b.p_leave_bad } else { b.p_enter_bad };
            if self.rng.unit() < flip {
                self.in_bad_state = !self.in_bad_state;
            }
            if self.in_bad_state && self.rng.chance_pct(b.loss_in_bad_pct) {
                return Verdict::Drop(DropReason::Burst);
            }
        }
        if self.rng.chance_pct(p.loss_pct) {
            return Verdict::Drop(DropReason::Random);
        }
        let departure = if p.rate_kbps > 0.0 {
            let start = self.link_free_at.max(now);
            if start - now > p.queue {
                return Verdict::Drop(DropReason::QueueFull);
            }
            let serialise = Duration::from_secs_f64(len as f64 * 8.0 / (p.rate_kbps * 1000.0));
            self.link_free_at = start + serialise;
            self.link_free_at
        } else {
            now
        };
        let jitter = p.jitter.as_secs_f64() * self.rng.normal();
        let delay = (p.one_way_delay.as_secs_f64() + jitter).max(0.0);
        let mut at = departure + Duration::from_secs_f64(delay);
        if !p.reorder {
            at = at.max(self.last_delivery);
        }
        self.last_delivery = self.last_delivery.max(at);
        Verdict::Deliver(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// Offers `n` packets of `len` bytes every `gap`, returns the verdicts.
    fn run(imp: &mut Impairment, n: usize, len: usize, gap: Duration) -> Vec<(Duration, Verdict)> {
        (0..n).map(|i| gap * i as u32).map(|t| (t, imp.on_packet(t, len))).collect()
    }

    fn delays(v: &[(Duration, Verdict)]) -> Vec<f64> {
        v.iter()
            .filter_map(|(t, v)| match v {
                Verdict::Deliver(at) => Some((*at - *t).as_secs_f64() * 1000.0),
                Verdict::Drop(_) => None,
            })
            .collect()
    }

    fn mean_sd(x: &[f64]) -> (f64, f64) {
        let m = x.iter().sum::<f64>() / x.len() as f64;
        let v = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / x.len() as f64;
        (m, v.sqrt())
    }

    #[test]
    fn delay_and_jitter_match_the_parameters() {
        let p = LinkParams { one_way_delay: ms(50), jitter: ms(5), reorder: true, ..Default::default() };
        let v = run(&mut Impairment::new(p, vec![], 1), 5000, 1316, ms(2));
        let (m, sd) = mean_sd(&delays(&v));
        assert!((m - 50.0).abs() < 0.5, "mean {m}");
        assert!((sd - 5.0).abs() < 0.3, "sd {sd}");
    }

    #[test]
    fn fifo_link_never_reorders() {
        let p = LinkParams { one_way_delay: ms(50), jitter: ms(20), ..Default::default() };
        let v = run(&mut Impairment::new(p, vec![], 2), 3000, 1316, ms(1));
        let ats: Vec<Duration> =
            v.iter().filter_map(|(_, v)| if let Verdict::Deliver(a) = v { Some(*a) } else { None }).collect();
        assert!(ats.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn random_loss_rate() {
        let p = LinkParams { loss_pct: 2.0, ..Default::default() };
        let v = run(&mut Impairment::new(p, vec![], 3), 20_000, 1316, ms(1));
        let lost = v.iter().filter(|(_, v)| matches!(v, Verdict::Drop(DropReason::Random))).count();
        let pct = lost as f64 / 200.0;
        assert!((pct - 2.0).abs() < 0.3, "{pct} %");
    }

    #[test]
    fn burst_loss_comes_in_bursts() {
        // Mean bad period 1/0.25 = 4 packets, entered every 1/0.01 = 100 packets: about 3.8 %
        // loss in runs averaging about 4.
        let b = BurstLoss { p_enter_bad: 0.01, p_leave_bad: 0.25, loss_in_bad_pct: 100.0 };
        let p = LinkParams { burst_loss: Some(b), ..Default::default() };
        let v = run(&mut Impairment::new(p, vec![], 4), 50_000, 1316, ms(1));
        let lost: Vec<bool> = v.iter().map(|(_, v)| matches!(v, Verdict::Drop(_))).collect();
        let total = lost.iter().filter(|x| **x).count() as f64;
        let runs = lost.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let pct = total / 500.0;
        assert!((2.5..5.5).contains(&pct), "{pct} %");
        assert!((3.0..5.5).contains(&(total / runs)), "mean burst {}", total / runs);
    }

    #[test]
    fn bottleneck_delivers_its_rate_and_tail_drops() {
        // 8 Mbit/s offered into 4 Mbit/s with 100 ms of buffer: half gets through, the queue
        // delay stays at or under 100 ms.
        let p = LinkParams { rate_kbps: 4000.0, queue: ms(100), ..Default::default() };
        let v = run(&mut Impairment::new(p, vec![], 5), 8000, 1000, ms(1)); // 1000 B/ms = 8 Mbit/s, 8 s
        let delivered = v.iter().filter(|(_, v)| matches!(v, Verdict::Deliver(_))).count();
        let dropped = v.iter().filter(|(_, v)| matches!(v, Verdict::Drop(DropReason::QueueFull))).count();
        let kbps = delivered as f64 * 8.0 / 8.0; // bytes*8/1000 per second over 8 s
        assert!((kbps - 4000.0).abs() < 100.0, "{kbps} kbit/s");
        assert_eq!(delivered + dropped, 8000);
        assert!(delays(&v).iter().all(|d| *d <= 102.0));
    }

    #[test]
    fn same_seed_same_fate() {
        let p = LinkParams { one_way_delay: ms(20), jitter: ms(4), loss_pct: 5.0, ..Default::default() };
        let a = run(&mut Impairment::new(p.clone(), vec![], 42), 2000, 1316, ms(1));
        let b = run(&mut Impairment::new(p.clone(), vec![], 42), 2000, 1316, ms(1));
        let c = run(&mut Impairment::new(p, vec![], 43), 2000, 1316, ms(1));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_trace_sets_the_bottleneck_over_time() {
        // 8 Mbit/s offered: 4 Mbit/s for 2 s, then 2 Mbit/s for 2 s.
        let p = LinkParams { rate_kbps: 20_000.0, queue: ms(50), ..Default::default() };
        let trace = crate::trace::CapacityTrace::parse("steps:4000@0,2000@2").unwrap();
        let v = run(&mut Impairment::new(p, vec![], 7).with_trace(trace), 4000, 1000, ms(1));
        let through = |from: u64, to: u64| {
            v.iter().filter(|(t, v)| *t >= ms(from) && *t < ms(to) && matches!(v, Verdict::Deliver(_))).count() as f64
                * 8.0
                / ((to - from) as f64 / 1000.0)
        };
        assert!((through(200, 2000) - 4000.0).abs() < 200.0, "{}", through(200, 2000));
        assert!((through(2200, 4000) - 2000.0).abs() < 200.0, "{}", through(2200, 4000));
    }

    #[test]
    fn events_change_the_link_for_their_window_only() {
        let p = LinkParams { one_way_delay: ms(75), ..Default::default() };
        let e = LinkEvent {
            at_s: 2.0,
            for_s: 1.0,
            rtt_ms: Some(1200.0),
            jitter_ms: None,
            loss_pct: Some(100.0),
            rate_kbps: None,
        };
        let mut imp = Impairment::new(p, vec![e], 6);
        assert_eq!(imp.on_packet(Duration::from_millis(1000), 100), Verdict::Deliver(ms(1075)));
        assert_eq!(imp.on_packet(Duration::from_millis(2500), 100), Verdict::Drop(DropReason::Random));
        assert_eq!(imp.params_at(Duration::from_millis(2500)).one_way_delay, ms(600));
        assert_eq!(imp.on_packet(Duration::from_millis(3000), 100), Verdict::Deliver(ms(3075)));
    }
}
