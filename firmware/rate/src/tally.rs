//! libsrt's counters over time, for the rate law: running totals kept a point a step for the
//! last second (rates over windows of them), and what a packet carries lately.

use std::collections::VecDeque;
use std::time::Duration;

use super::PACKET_BYTES;

/// How long a tally keeps its points.
const KEEP: Duration = Duration::from_secs(1);
/// Packets over which the size of a packet is averaged.
const PACKET_MEMORY: f64 = 30.0;
/// The headers libsrt counts in a packet's bytes (SRT's 16, UDP's 8, IPv4's 20), kbit.
const HEADER_KBIT: f64 = 44.0 * 8.0 / 1000.0;

/// A running total of packets, a point a step over the last second.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    points: VecDeque<(Duration, i64)>,
}

impl Tally {
    /// Records the total at `now`.
    pub(super) fn record(&mut self, now: Duration, total: i64) {
        self.points.push_back((now, total));
        while self.points.front().is_some_and(|&(t, _)| now.saturating_sub(t) > KEEP) {
            self.points.pop_front();
        }
    }

    fn per_second(&self, from: Option<(Duration, i64)>, min_s: f64) -> Option<f64> {
        let (t1, total) = *self.points.back()?;
        let (t0, a0) = from?;
        Some((total - a0) as f64 / t1.saturating_sub(t0).as_secs_f64().max(min_s))
    }

    /// Packets a second since the newest point at least `span` old (none: no point is), over
    /// at least `min_s` seconds.
    pub(super) fn over_at_least(&self, span: Duration, min_s: f64) -> Option<f64> {
        let now = self.points.back()?.0;
        self.per_second(self.points.iter().rev().find(|&&(t, _)| now.saturating_sub(t) >= span).copied(), min_s)
    }

    /// Packets a second since the oldest point at most `window` old.
    pub(super) fn over_within(&self, window: Duration, min_s: f64) -> Option<f64> {
        let now = self.points.back()?.0;
        self.per_second(self.points.iter().find(|&&(t, _)| now.saturating_sub(t) <= window).copied(), min_s)
    }

    /// Packets a second over the whole second kept (none: a single point).
    pub(super) fn over_all(&self, min_s: f64) -> Option<f64> {
        let front = *self.points.front()?;
        (front.0 < self.points.back()?.0).then_some(())?;
        self.per_second(Some(front), min_s)
    }

    /// What the total gained over the second kept (0: a single point).
    pub(super) fn gained(&self) -> i64 {
        match (self.points.front(), self.points.back()) {
            (Some(&(_, a)), Some(&(_, b))) => b - a,
            _ => 0,
        }
    }

    /// Packets a second since the first point at `from` or later, over at least `span` seconds
    /// (none: not that long yet).
    pub(super) fn since(&self, from: Duration, span: f64) -> Option<f64> {
        let (t1, _) = *self.points.back()?;
        let first = self.points.iter().find(|&&(t, _)| t >= from).copied()?;
        (t1.saturating_sub(first.0).as_secs_f64() >= span).then_some(())?;
        self.per_second(Some(first), span).map(|r| r.max(0.0))
    }
}

/// How long the lowest round trip is remembered.
const BASE_WINDOW: Duration = Duration::from_secs(10);

/// What libsrt reports as the round trip before it has measured one, ms: its smoothed round
/// trip starts at `INITIAL_RTT` (ten 10 ms SYN intervals), exactly.
const LIBSRT_INITIAL_RTT_MS: f64 = 100.0;

/// The lowest round trip of the last 10 s: the link's own, without a queue.
#[derive(Debug, Clone, Default)]
pub(super) struct BaseRtt {
    /// (start of a second, lowest round trip in it), oldest first.
    seconds: VecDeque<(Duration, f64)>,
    /// A round trip other than libsrt's initial one has been seen.
    measured: bool,
}

impl BaseRtt {
    /// A round trip reported at `now`, ms. libsrt's initial value is no measurement: taken as
    /// the link's own, a 150 ms 4G link read as 50 ms of queue for the first 10 s (a rate trace:
    /// cut from 3.2 Mbit/s to the floor within 3 s of the start, on a link of 4-6).
    pub(super) fn note(&mut self, rtt: f64, now: Duration) {
        self.measured |= rtt != LIBSRT_INITIAL_RTT_MS;
        if !self.measured {
            return;
        }
        let second = Duration::from_secs(now.as_secs());
        match self.seconds.back_mut() {
            Some((t, r)) if *t == second => *r = r.min(rtt),
            _ => self.seconds.push_back((second, rtt)),
        }
        while self.seconds.front().is_some_and(|&(t, _)| now.saturating_sub(t) > BASE_WINDOW) {
            self.seconds.pop_front();
        }
    }

    /// The lowest, ms (infinite before any).
    pub(super) fn lowest(&self) -> f64 {
        self.seconds.iter().map(|&(_, r)| r).fold(f64::INFINITY, f64::min)
    }
}

/// What a packet sent for the first time carries lately, kbit, headers included: libsrt's bytes
/// over its packets. A frame's last packet is short, and at the floor most packets are a frame's
/// last: counted at 1316 bytes each, 0.66 Mbit/s read as 1.1.
#[derive(Debug, Clone, Copy)]
pub(super) struct PacketSize(f64);

impl Default for PacketSize {
    fn default() -> Self {
        Self(PACKET_BYTES * 8.0 / 1000.0)
    }
}

impl PacketSize {
    /// Takes `packets` sent for the first time with `bytes` (none known, in older traces: the
    /// size stays).
    pub(super) fn note(&mut self, packets: i64, bytes: i64) {
        if packets > 0 && bytes > 0 {
            let n = packets as f64;
            self.0 += (bytes as f64 * 8.0 / 1000.0 / n - self.0) * n / (n + PACKET_MEMORY);
        }
    }

    /// kbit a packet.
    pub(super) fn kbit(self) -> f64 {
        self.0
    }

    /// What the headers add to the stream's own bytes (5-8 % at the floor, where packets are
    /// short; 3 % in full ones).
    pub(super) fn header_factor(self) -> f64 {
        self.0 / (self.0 - HEADER_KBIT).max(HEADER_KBIT)
    }
}

/// How long what the link carried is remembered, for the bound on rises.
const PROVEN_WINDOW: Duration = Duration::from_secs(5);

/// What the link carried over the last [`PROVEN_WINDOW`]: a rise goes at most 25 % (plus 300
/// kbit/s) over the most of it.
#[derive(Debug, Clone, Default)]
pub(super) struct Proven(VecDeque<(Duration, f64)>);

impl Proven {
    /// What the link delivered at `now`, kbit/s.
    pub(super) fn note(&mut self, now: Duration, delivered: f64) {
        self.0.push_back((now, delivered));
        while self.0.front().is_some_and(|&(t, _)| now.saturating_sub(t) > PROVEN_WINDOW) {
            self.0.pop_front();
        }
    }

    /// The most a rise may reach, kbit/s.
    pub(super) fn bound(&self) -> f64 {
        self.0.iter().map(|&(_, d)| d).fold(0.0, f64::max) * 1.25 + 300.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn rates_over_windows_of_a_running_total() {
        let mut t = Tally::default();
        // 10 packets every 50 ms for 1.5 s: 200 a second; the first half second forgotten.
        for i in 0..=30u64 {
            t.record(ms(50 * i), 10 * i as i64);
        }
        assert_eq!(t.over_at_least(ms(100), 0.05), Some(200.0));
        assert_eq!(t.over_within(ms(300), 0.05), Some(200.0));
        assert_eq!(t.over_all(0.05), Some(200.0));
        assert_eq!(t.since(ms(1300), 0.2), Some(200.0));
        assert_eq!(t.since(ms(1400), 0.2), None, "only 100 ms since");
        assert_eq!(t.over_at_least(ms(2000), 0.05), None, "nothing kept that old");
    }

    #[test]
    fn the_base_round_trip_is_no_initial_guess() {
        let mut b = BaseRtt::default();
        b.note(100.0, ms(0));
        b.note(100.0, ms(50));
        assert_eq!(b.lowest(), f64::INFINITY, "libsrt's initial 100 ms is not measured");
        b.note(152.0, ms(100));
        b.note(100.0, ms(150));
        assert_eq!(b.lowest(), 100.0, "once measured, 100 ms is a round trip like any");
        b.note(160.0, ms(11_000));
        assert_eq!(b.lowest(), 160.0, "the last 10 s only");
    }

    #[test]
    fn a_packet_counts_what_it_carried() {
        let mut p = PacketSize::default();
        assert_eq!(p.kbit(), 1316.0 * 8.0 / 1000.0);
        p.note(10, 0);
        assert_eq!(p.kbit(), 1316.0 * 8.0 / 1000.0, "no bytes known: unchanged");
        for _ in 0..50 {
            p.note(10, 6500);
        }
        assert!((p.kbit() - 5.2).abs() < 0.01, "{}", p.kbit());
        assert!((p.header_factor() - 5.2 / (5.2 - 0.352)).abs() < 0.01);
    }
}
