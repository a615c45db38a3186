//! SRT latency chosen from the link: the round trip and loss measured on a connection, and the
//! SRT deployment guide's table (Haivision, "SRT Deployment Guide", configuring latency; quoted
//! in Epiphan's Pearl manual): the latency is a multiple of the RTT set by the packet loss, 3 x
//! up to 1 %, 4 x up to 3 %, 5 x up to 7 %, 6 x up to 10 % (over 10 % the guide advises against
//! the link; 6 x is kept). Each lost packet can then be asked for again a few times before its
//! time to be shown.
//!
//! Pure: [`LinkMeter`] takes a connection's counters at each tick with the time, and
//! [`choose`] turns its reading into a [`LatencyChoice`] with the reason in words. The output's
//! thread asks before each connection (a latency is fixed for a connection's life).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use telebridge_config::{Latency, LATENCY_RANGE_MS};

use crate::SrtStats;

/// The guide's table: up to this loss (a fraction), this many round trips.
pub const TABLE: [(f64, u32); 4] = [(0.01, 3), (0.03, 4), (0.07, 5), (0.10, 6)];

/// Round trips for loss over the table's last row.
const BEYOND_TABLE_RTTS: u32 = 6;

pub use telebridge_contract::srt::{LatencyChoice, LinkReading};

/// The round trips for a loss (a fraction).
pub fn rtts_for_loss(loss: f64) -> u32 {
    TABLE.iter().find(|(most, _)| loss <= *most).map_or(BEYOND_TABLE_RTTS, |(_, n)| *n)
}

/// The latency for the next connection: as `latency` pins it, or from `reading` (the last
/// connection's), or the start before any reading; a listener (`listens`) starts at the floor
/// and leaves the first figure to its caller (SRT takes the larger of the two).
pub fn choose(latency: Latency, reading: Option<LinkReading>, listens: bool) -> LatencyChoice {
    let (floor, start) = match latency {
        Latency::Fixed(l) => {
            let ms = l.as_millis() as u64;
            return LatencyChoice { latency_ms: ms, pinned: true, reading, reason: format!("pinned at {ms} ms") };
        }
        Latency::Auto { floor, start } => (floor.as_millis() as u64, start.as_millis() as u64),
    };
    let Some(r) = reading else {
        let (ms, whose) = if listens { (floor, ": the caller's, if more") } else { (start, "") };
        return LatencyChoice {
            latency_ms: ms,
            pinned: false,
            reading,
            reason: format!("{ms} ms until the link is measured{whose}"),
        };
    };
    let n = rtts_for_loss(r.loss);
    let raw = (r.rtt_ms * f64::from(n)).round().max(0.0) as u64;
    let ms = raw.clamp(floor.max(LATENCY_RANGE_MS.0), LATENCY_RANGE_MS.1);
    let mut reason = format!("RTT {:.0} ms, loss {:.1} %: {n} x RTT = {raw} ms", r.rtt_ms, r.loss * 100.0);
    if r.loss > TABLE[TABLE.len() - 1].0 {
        reason.push_str(" (loss over the table's 10 %: the link is not fit for live video)");
    }
    if ms > raw {
        reason.push_str(&format!(", raised to the {ms} ms floor"));
    } else if ms < raw {
        reason.push_str(&format!(", held at SRT's {ms} ms most"));
    }
    LatencyChoice { latency_ms: ms, pinned: false, reading, reason }
}

/// How long a reading looks back.
pub const WINDOW: Duration = Duration::from_secs(30);
/// A connection's first moments are not read: libsrt reports 100 ms of RTT until it measured one.
pub const SETTLE: Duration = Duration::from_secs(1);
/// The least a reading rests on: fewer packets say nothing of a loss of 1 %.
pub const MIN_PACKETS: i64 = 300;

/// One tick's counters of a connection.
#[derive(Debug, Clone, Copy)]
struct Tick {
    at: Instant,
    rtt_ms: f64,
    sent: i64,
    resent: i64,
    received: i64,
    received_lost: i64,
}

/// Measures a link from its connection's counters: the round trip and the loss over the last
/// [`WINDOW`]; what the last connection measured when the current one has not enough yet.
#[derive(Debug, Default)]
pub struct LinkMeter {
    started: Option<Instant>,
    ticks: VecDeque<Tick>,
    last: Option<LinkReading>,
}

impl LinkMeter {
    /// A new connection (its counters start from zero): what the one before measured stays the
    /// reading until this one has its own.
    pub fn new_connection(&mut self, now: Instant) {
        if let Some(r) = self.window() {
            self.last = Some(r);
        }
        self.ticks.clear();
        self.started = Some(now);
    }

    /// The connection's counters at `now`.
    pub fn observe(&mut self, st: &SrtStats, now: Instant) {
        let started = *self.started.get_or_insert(now);
        if now.duration_since(started) < SETTLE {
            return;
        }
        if self.ticks.back().is_some_and(|t| st.packets_sent < t.sent || st.packets_received < t.received) {
            // Counters went back: another connection, unannounced.
            self.new_connection(now);
            return;
        }
        self.ticks.push_back(Tick {
            at: now,
            rtt_ms: st.rtt_ms,
            sent: st.packets_sent,
            resent: st.packets_retransmitted,
            received: st.packets_received,
            received_lost: st.packets_received_lost,
        });
        while self.ticks.front().is_some_and(|t| now.duration_since(t.at) > WINDOW) {
            self.ticks.pop_front();
        }
    }

    /// The link now: the current connection's window if it rests on enough packets, else the
    /// last connection's.
    pub fn reading(&self) -> Option<LinkReading> {
        self.window().or(self.last)
    }

    fn window(&self) -> Option<LinkReading> {
        let (first, last) = (self.ticks.front()?, self.ticks.back()?);
        let (sent, resent) = (last.sent - first.sent, last.resent - first.resent);
        let (received, received_lost) = (last.received - first.received, last.received_lost - first.received_lost);
        if sent + received < MIN_PACKETS {
            return None;
        }
        let share = |lost: i64, of: i64| if of > 0 { lost.max(0) as f64 / of as f64 } else { 0.0 };
        // The sender's packets sent again, against the new ones it sent (libsrt's own count of
        // packets reported lost counts each about twice at 5 % loss: reported again before the
        // resend arrives; the resends read 4.6 % through linkemu's 5 %); the receiver's count
        // of holes, against what arrived and what did not.
        let loss = share(resent, sent - resent).max(share(received_lost, received + received_lost));
        let mut rtts: Vec<f64> = self.ticks.iter().map(|t| t.rtt_ms).collect();
        rtts.sort_by(f64::total_cmp);
        Some(LinkReading { rtt_ms: rtts[rtts.len() / 2], loss, packets: sent + received })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(floor: u64) -> Latency {
        Latency::Auto { floor: Duration::from_millis(floor), start: Duration::from_millis(120) }
    }

    fn reading(rtt_ms: f64, loss: f64) -> Option<LinkReading> {
        Some(LinkReading { rtt_ms, loss, packets: 10_000 })
    }

    #[test]
    fn the_guides_table_sets_the_round_trips_by_loss() {
        let at = |loss| choose(auto(20), reading(100.0, loss), false).latency_ms;
        assert_eq!((at(0.0), at(0.01), at(0.0101)), (300, 300, 400));
        assert_eq!((at(0.03), at(0.05), at(0.07)), (400, 500, 500));
        assert_eq!((at(0.08), at(0.10), at(0.25)), (600, 600, 600));
    }

    #[test]
    fn the_reason_says_what_the_choice_rests_on() {
        let c = choose(auto(40), reading(21.0, 0.002), false);
        assert_eq!((c.latency_ms, c.reason.as_str()), (63, "RTT 21 ms, loss 0.2 %: 3 x RTT = 63 ms"));
        let c = choose(auto(40), reading(2.0, 0.0), false);
        assert_eq!(
            (c.latency_ms, c.reason.as_str()),
            (40, "RTT 2 ms, loss 0.0 %: 3 x RTT = 6 ms, raised to the 40 ms floor")
        );
        let c = choose(auto(40), reading(1900.0, 0.12), false);
        assert_eq!(c.latency_ms, 8000);
        assert!(c.reason.ends_with("not fit for live video), held at SRT's 8000 ms most"), "{}", c.reason);
        let c = choose(auto(40), None, false);
        assert_eq!((c.latency_ms, c.reason.as_str(), c.pinned), (120, "120 ms until the link is measured", false));
        let c = choose(auto(40), None, true);
        assert_eq!(c.reason, "40 ms until the link is measured: the caller's, if more");
        let c = choose(Latency::Fixed(Duration::from_millis(250)), reading(21.0, 0.05), false);
        assert_eq!((c.latency_ms, c.reason.as_str(), c.pinned), (250, "pinned at 250 ms", true));
    }

    fn stats(rtt_ms: f64, sent: i64, resent: i64, received: i64, received_lost: i64) -> SrtStats {
        SrtStats {
            rtt_ms,
            packets_sent: sent,
            packets_retransmitted: resent,
            packets_received: received,
            packets_received_lost: received_lost,
            ..SrtStats::default()
        }
    }

    /// Feeds a connection of `seconds` at 400 packets a second each way, `loss` of them lost
    /// on the way in, at `rtt_ms`, from `t0`.
    fn connection(m: &mut LinkMeter, t0: Instant, seconds: u64, rtt_ms: f64, loss: f64) -> Instant {
        m.new_connection(t0);
        for tick in 0..=seconds * 5 {
            let n = tick as i64 * 80;
            let at = t0 + Duration::from_millis(tick * 200);
            m.observe(&stats(rtt_ms, n, 0, n, (n as f64 * loss / (1.0 - loss)) as i64), at);
        }
        t0 + Duration::from_secs(seconds)
    }

    #[test]
    fn a_meter_reads_the_window_then_keeps_the_last_connections_reading() {
        let t0 = Instant::now();
        let mut m = LinkMeter::default();
        assert_eq!(m.reading(), None);
        let t = connection(&mut m, t0, 20, 21.0, 0.005);
        let r = m.reading().unwrap();
        assert_eq!(r.rtt_ms, 21.0);
        assert!((r.loss - 0.005).abs() < 0.0005, "{r:?}");
        assert_eq!(choose(auto(40), Some(r), false).latency_ms, 63);
        // A worse link on the next connection: until it has its own window, the last reading.
        m.new_connection(t);
        m.observe(&stats(100.0, 0, 0, 0, 0), t);
        m.observe(&stats(100.0, 10, 0, 10, 0), t + Duration::from_millis(1500));
        assert_eq!(m.reading(), Some(r), "a young connection has no reading of its own");
        let t = connection(&mut m, t + Duration::from_secs(2), 20, 21.0, 0.05);
        assert_eq!(choose(auto(40), m.reading(), false).latency_ms, 105, "5 x RTT at 5 % loss");
        // The window forgets what is older than 30 s: a link that got better reads better.
        let mut counters = (0i64, 0i64);
        m.new_connection(t);
        for tick in 0..=300u64 {
            let loss = if tick < 100 { 0.05 } else { 0.0 };
            counters.0 += 80;
            counters.1 += (80.0 * loss) as i64;
            m.observe(&stats(21.0, counters.0, 0, counters.0, counters.1), t + Duration::from_millis(tick * 200));
        }
        assert_eq!(m.reading().unwrap().loss, 0.0);
    }

    #[test]
    fn a_sender_reads_the_loss_from_its_resends() {
        let t0 = Instant::now();
        let mut m = LinkMeter::default();
        m.new_connection(t0);
        for tick in 0..=100i64 {
            let at = t0 + Duration::from_millis(tick as u64 * 200);
            m.observe(&stats(40.0, tick * 105, tick * 5, 0, 0), at);
        }
        let r = m.reading().unwrap();
        assert!((r.loss - 0.05).abs() < 1e-9, "5 resent for 100 new: {r:?}");
        assert_eq!(choose(auto(40), Some(r), false).latency_ms, 200);
    }

    #[test]
    fn counters_that_go_back_start_a_new_window() {
        let t0 = Instant::now();
        let mut m = LinkMeter::default();
        let t = connection(&mut m, t0, 20, 30.0, 0.0);
        m.observe(&stats(30.0, 5, 0, 5, 0), t + Duration::from_secs(1));
        assert_eq!(m.reading().map(|r| r.rtt_ms), Some(30.0), "the earlier connection's reading stays");
    }
}
