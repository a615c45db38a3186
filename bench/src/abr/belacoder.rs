//! The baseline: BELABOX's belacoder rate rule, written here from its description (the rule in
//! belacoder.c, `update_bitrate`, which runs every 20 ms), as a law for our encoder so both are
//! measured with the same encoder, link and receiver. Not shipped in the firmware.
//!
//! Each step it looks at the send buffer's size in packets (libsrt's `SRTO_SNDDATA`, our
//! `send_buffer_packets`) and the round trip, and keeps: a slow average of the buffer and a
//! decaying maximum of its rises (its jitter); a slow average of the round trip, a smoothed
//! change of it, a slowly rising minimum, and a decaying maximum of its rises; a slow average of
//! the send rate. From them, three buffer thresholds and two round-trip thresholds. Then, first
//! match wins:
//!
//! - the round trip at a third of the SRT latency or more, or the buffer over its third
//!   threshold: straight to the minimum;
//! - (not within 250 ms of the last cut) the round trip over a fifth of the latency, or the buffer
//!   over its second threshold: down by 100 kbit/s plus a tenth;
//! - (not within 200 ms) the round trip over its high threshold or the buffer over its first:
//!   down by 100 kbit/s;
//! - (not within 500 ms of the last rise) the round trip under its low threshold and not rising:
//!   up by 30 kbit/s plus a thirtieth.
//!
//! belacoder sets its encoder's bitrate rounded down to 100 kbit/s; rates here are the stream's
//! (the encoder's video is that less the sound and the TS), the difference is a few percent.

use std::time::Duration;

use telebridge_rate::{Bounds, LinkSample, RateDecision, RateLaw, Why, PACKET_BYTES};

/// belacoder's step (`BITRATE_UPDATE_INT`).
pub const STEP: Duration = Duration::from_millis(20);

/// belacoder's state.
#[derive(Debug, Clone)]
pub struct Belacoder {
    bounds: Bounds,
    /// The rate, bit/s (belacoder counts in bit/s).
    rate: f64,
    bs_avg: f64,
    bs_jitter: f64,
    prev_bs: i64,
    rtt_avg: f64,
    rtt_avg_delta: f64,
    prev_rtt: f64,
    rtt_min: f64,
    rtt_jitter: f64,
    throughput: f64,
    next_incr: Duration,
    next_decr: Duration,
}

impl Belacoder {
    /// Starting at `bounds.start_kbps`.
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            rate: bounds.start_kbps * 1000.0,
            bs_avg: 0.0,
            bs_jitter: 0.0,
            prev_bs: 0,
            rtt_avg: 0.0,
            rtt_avg_delta: 0.0,
            prev_rtt: 300.0,
            rtt_min: 200.0,
            rtt_jitter: 0.0,
            throughput: 0.0,
            next_incr: Duration::ZERO,
            next_decr: Duration::ZERO,
        }
    }
}

impl RateLaw for Belacoder {
    fn step(&mut self, s: &LinkSample, now: Duration) -> RateDecision {
        let bs = s.send_buffer_packets.max(0);
        self.bs_avg = self.bs_avg * 0.99 + bs as f64 * 0.01;
        self.bs_jitter *= 0.99;
        let delta_bs = (bs - self.prev_bs) as f64;
        if delta_bs > self.bs_jitter {
            self.bs_jitter = delta_bs;
        }
        self.prev_bs = bs;

        let rtt = s.rtt_ms.round();
        self.rtt_avg = if self.rtt_avg == 0.0 { rtt } else { self.rtt_avg * 0.99 + 0.01 * rtt };
        let delta_rtt = rtt - self.prev_rtt;
        self.rtt_avg_delta = self.rtt_avg_delta * 0.8 + delta_rtt * 0.2;
        self.prev_rtt = rtt;
        self.rtt_min *= 1.001;
        // belacoder skips 100 ms, libsrt's value before its first measurement.
        if rtt != 100.0 && rtt < self.rtt_min && self.rtt_avg_delta < 1.0 {
            self.rtt_min = rtt;
        }
        self.rtt_jitter *= 0.99;
        if delta_rtt > self.rtt_jitter {
            self.rtt_jitter = delta_rtt;
        }
        self.throughput = self.throughput * 0.97 + (s.send_rate_mbps * 1000.0 * 1000.0 / 1024.0) * 0.03;

        let latency = if s.latency_ms > 0.0 { s.latency_ms } else { 120.0 };
        // Packets the average throughput puts in flight over a time, in SRT packets.
        let rtt_to_bs = |ms: f64| (self.throughput / 8.0) * ms / PACKET_BYTES;
        let bs_th3 = (self.bs_avg + self.bs_jitter) * 4.0;
        let bs_th2 = (self.bs_avg + (self.bs_jitter * 3.0).max(self.bs_avg)).max(50.0).min(rtt_to_bs(latency / 2.0));
        let bs_th1 = (self.bs_avg + self.bs_jitter * 2.5).max(50.0);
        let rtt_th_max = self.rtt_avg + (self.rtt_jitter * 4.0).max(self.rtt_avg * 15.0 / 100.0);
        let rtt_th_min = self.rtt_min + (self.rtt_jitter * 2.0).max(1.0);
        let (min, max) = (self.bounds.min_kbps * 1000.0, self.bounds.max_kbps * 1000.0);
        let bs = bs as f64;
        let link_kbps = s.send_rate_mbps * 1000.0;

        let mut why = Why::Holding { link_kbps };
        if self.rate > min && (rtt >= latency / 3.0 || bs > bs_th3) {
            self.rate = min;
            self.next_decr = now + Duration::from_millis(200);
            why = Why::Overload { link_kbps, send_buffer_ms: s.send_buffer_ms };
        } else if now > self.next_decr && (rtt > latency / 5.0 || bs > bs_th2) {
            self.rate -= 100_000.0 + self.rate / 10.0;
            self.next_decr = now + Duration::from_millis(250);
            why = Why::Queueing { link_kbps, queue_ms: rtt - self.rtt_min };
        } else if now > self.next_decr && (rtt > rtt_th_max || bs > bs_th1) {
            self.rate -= 100_000.0;
            self.next_decr = now + Duration::from_millis(200);
            why = Why::Queueing { link_kbps, queue_ms: rtt - self.rtt_min };
        } else if now > self.next_incr && rtt < rtt_th_min && self.rtt_avg_delta < 0.01 {
            self.rate += 30_000.0 + self.rate / 30.0;
            self.next_incr = now + Duration::from_millis(500);
            why = Why::Rising { link_kbps };
        }
        self.rate = self.rate.clamp(min, max);
        if self.rate >= max && matches!(why, Why::Rising { .. } | Why::Holding { .. }) {
            why = Why::AtMaximum;
        }
        // Rounded down to 100 kbit/s, as belacoder sets its encoder.
        let set = (self.rate / 100_000.0).floor() * 100.0;
        RateDecision { stream_kbps: set.max(self.bounds.min_kbps), why, send_cap_kbps: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rtt: f64, bs: i64) -> LinkSample {
        LinkSample {
            rtt_ms: rtt,
            send_buffer_packets: bs,
            send_rate_mbps: 5.0,
            latency_ms: 900.0,
            ..LinkSample::default()
        }
    }

    #[test]
    fn a_round_trip_at_a_third_of_the_latency_drops_to_the_minimum() {
        let mut b = Belacoder::new(Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: 6000.0, start_kbps: 6000.0 });
        for i in 0..100u32 {
            b.step(&sample(60.0, 30), STEP * i);
        }
        let d = b.step(&sample(300.0, 30), STEP * 100);
        assert_eq!(d.stream_kbps, 500.0);
    }

    #[test]
    fn calm_rises_by_thirty_kbit_and_a_thirtieth_every_half_second() {
        let mut b = Belacoder::new(Bounds { min_kbps: 500.0, least_kbps: 500.0, max_kbps: 6000.0, start_kbps: 1000.0 });
        // Its slow average of the send rate starts at nothing, so the first steps see a send
        // buffer over what that rate carries in half the latency and cut once: a second to settle.
        for i in 0..50u32 {
            b.step(&sample(40.0, 20), STEP * i);
        }
        let start = b.rate;
        let mut rises = Vec::new();
        let mut last = start;
        for i in 50..300u32 {
            // 5 s of a steady 40 ms round trip.
            let d = b.step(&sample(40.0, 20), STEP * i);
            assert!(b.rate >= last, "a fall at {:?}: {last} -> {}", STEP * i, b.rate);
            if b.rate > last {
                rises.push(STEP * i);
            }
            last = b.rate;
            // The encoder is set rounded down to 100 kbit/s.
            assert_eq!(d.stream_kbps, (b.rate / 100_000.0).floor() * 100.0);
        }
        assert_eq!(rises.len(), 10, "{rises:?}");
        for w in rises.windows(2) {
            assert!(w[1] - w[0] >= Duration::from_millis(500), "{rises:?}");
        }
        let mut expected = start;
        for _ in 0..10 {
            expected += 30_000.0 + expected / 30.0;
        }
        assert!((b.rate - expected).abs() < 1.0, "{} after {start}, expected {expected}", b.rate);
    }
}
