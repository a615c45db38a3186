//! The link's history: one row a second for 24 hours in a fixed ring (24 bytes a row, about
//! 2 MB), exported as CSV like the Makito's graph export and drawn by the panel's graphs.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Mutex;
use telebridge_sync::Locked;

use telebridge_contract::machine::State;
use telebridge_contract::sample::MediaSample;

/// Rows kept: 24 h at one a second.
pub const CAPACITY: usize = 24 * 3600;

/// One second of the link, packed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct Row {
    /// Unix time, s.
    pub unix_s: u32,
    /// Round-trip time, 0.1 ms.
    pub rtt_100us: u16,
    /// Send rate, 10 kbit/s.
    pub send_10k: u16,
    /// Receive rate, 10 kbit/s.
    pub recv_10k: u16,
    /// Packets lost in this second.
    pub lost: u16,
    /// Packets retransmitted in this second.
    pub retransmitted: u16,
    /// Packets dropped in this second.
    pub dropped: u16,
    /// The SRT buffer (negotiated latency), ms.
    pub buffer_ms: u16,
    /// Encoded or decoded frames per second, 0.1 fps.
    pub fps_10: u16,
    /// State code: the index in [`State::ALL`].
    pub state: u8,
}

fn sat16(v: f64) -> u16 {
    v.round().clamp(0.0, f64::from(u16::MAX)) as u16
}

/// Cumulative counters of the previous sample, to turn them into per-second figures.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    lost: i64,
    retransmitted: i64,
    dropped: i64,
}

/// The ring.
#[derive(Debug, Default)]
pub struct History {
    rows: Mutex<(VecDeque<Row>, Option<Totals>)>,
}

impl History {
    /// Records one second from the daemon's state and its latest media sample (its main SRT
    /// link: an encoder's first SRT output, or a decoder's input).
    pub fn record(&self, unix_s: u64, state: State, media: Option<&MediaSample>) {
        let mut row = Row {
            unix_s: unix_s as u32,
            state: State::ALL.iter().position(|s| *s == state).unwrap_or(0) as u8,
            ..Row::default()
        };
        let mut guard = self.rows.locked();
        let (rows, last) = &mut *guard;
        if let Some((m, s)) = media.and_then(|m| m.main_srt().map(|s| (m, s))) {
            let totals = Totals {
                lost: s.packets_lost.max(s.packets_received_lost),
                retransmitted: s.packets_retransmitted,
                dropped: s.packets_dropped,
            };
            let prev = last.unwrap_or(totals);
            let delta = |now: i64, before: i64| sat16((now - before).max(0) as f64);
            row.rtt_100us = sat16(s.rtt_ms * 10.0);
            row.send_10k = sat16(s.send_rate_mbps * 100.0);
            row.recv_10k = sat16(s.receive_rate_mbps * 100.0);
            row.lost = delta(totals.lost, prev.lost);
            row.retransmitted = delta(totals.retransmitted, prev.retransmitted);
            row.dropped = delta(totals.dropped, prev.dropped);
            row.buffer_ms = sat16(s.negotiated_latency_ms as f64);
            row.fps_10 = sat16(m.fps() * 10.0);
            *last = Some(totals);
        } else {
            *last = None;
        }
        if rows.len() == CAPACITY {
            rows.pop_front();
        }
        rows.push_back(row);
    }

    /// Rows from the last `minutes`.
    pub fn last(&self, minutes: u32) -> Vec<Row> {
        let guard = self.rows.locked();
        let n = (minutes as usize * 60).min(guard.0.len());
        guard.0.iter().skip(guard.0.len() - n).copied().collect()
    }

    /// The last `minutes` as CSV.
    pub fn csv(&self, minutes: u32) -> String {
        let mut out =
            String::from("unix_time,state,rtt_ms,send_mbps,receive_mbps,lost,retransmitted,dropped,buffer_ms,fps\n");
        for r in self.last(minutes) {
            let _ = writeln!(out, "{}", line(&r));
        }
        out
    }

    /// The newest row as a CSV line (the panel's graphs add it live, as they read the CSV).
    pub fn latest_line(&self) -> Option<String> {
        self.rows.locked().0.back().map(line)
    }
}

/// One row as a CSV line.
fn line(r: &Row) -> String {
    format!(
        "{},{},{:.1},{:.2},{:.2},{},{},{},{},{:.1}",
        r.unix_s,
        State::ALL[r.state as usize % State::ALL.len()].name(),
        f64::from(r.rtt_100us) / 10.0,
        f64::from(r.send_10k) / 100.0,
        f64::from(r.recv_10k) / 100.0,
        r.lost,
        r.retransmitted,
        r.dropped,
        r.buffer_ms,
        f64::from(r.fps_10) / 10.0
    )
}

#[cfg(test)]
mod tests {
    use telebridge_contract::roles::{EncoderStats, StatsSample};
    use telebridge_contract::srt::{OutputState, OutputStatus};

    use super::*;

    fn sample(lost: i64, retrans: i64) -> MediaSample {
        let mut o = OutputStatus::new("srt", "studio".into(), "srt://h:1".into(), OutputState::Live);
        o.srt.rtt_ms = 42.34;
        o.srt.send_rate_mbps = 4.12;
        o.srt.packets_lost = lost;
        o.srt.packets_retransmitted = retrans;
        o.srt.negotiated_latency_ms = 200;
        let encoder = EncoderStats { fps: 29.97, ..EncoderStats::default() };
        MediaSample::Encoder(Box::new(StatsSample {
            t: 1.0,
            signal: Some(true),
            encoder,
            outputs: vec![o],
            rate: None,
        }))
    }

    #[test]
    fn a_row_is_small_and_a_day_fits_in_about_two_megabytes() {
        assert_eq!(std::mem::size_of::<Row>(), 24);
        assert!(CAPACITY * std::mem::size_of::<Row>() <= 2_100_000);
    }

    #[test]
    fn counters_become_per_second_figures_and_csv() {
        let h = History::default();
        h.record(1000, State::Live, Some(&sample(10, 8)));
        h.record(1001, State::Live, Some(&sample(13, 12)));
        h.record(1002, State::Ready, None);
        let csv = h.csv(60);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "unix_time,state,rtt_ms,send_mbps,receive_mbps,lost,retransmitted,dropped,buffer_ms,fps");
        assert_eq!(lines[1], "1000,live,42.3,4.12,0.00,0,0,0,200,30.0");
        assert_eq!(lines[2], "1001,live,42.3,4.12,0.00,3,4,0,200,30.0");
        assert_eq!(lines[3], "1002,ready,0.0,0.00,0.00,0,0,0,0,0.0");
        assert_eq!(h.latest_line().as_deref(), Some(lines[3]));
    }

    #[test]
    fn the_ring_keeps_the_last_day_only() {
        let h = History::default();
        for t in 0..(CAPACITY as u64 + 10) {
            h.record(t, State::Ready, None);
        }
        let all = h.last(24 * 60 + 100);
        assert_eq!(all.len(), CAPACITY);
        assert_eq!(all[0].unix_s, 10);
        assert_eq!(h.last(1).len(), 60);
    }
}
