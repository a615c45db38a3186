//! SRT statistics as libsrt reports them through `srtsink`/`srtsrc`'s `stats` property.

use gst::glib;
use serde::Serialize;

/// One connection's counters (totals since it opened) and current rates.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SrtStats {
    /// Round-trip time, ms.
    pub rtt_ms: f64,
    /// Packets sent (sender) .
    pub packets_sent: i64,
    /// Packets the receiver reported lost in the network (recovered by retransmission or not).
    pub packets_lost: i64,
    /// Packets sent again.
    pub packets_retransmitted: i64,
    /// Packets given up on: lost and not recovered in time. What a viewer sees.
    pub packets_dropped: i64,
    /// Payload bytes sent.
    pub bytes_sent: i64,
    /// Packets received (receiver).
    pub packets_received: i64,
    /// Packets lost on the way in (receiver).
    pub packets_received_lost: i64,
    /// Bytes received (receiver).
    pub bytes_received: i64,
    /// ACKs received from the peer: rises while the peer is alive.
    pub acks_received: i64,
    /// Current send rate, Mbit/s.
    pub send_rate_mbps: f64,
    /// Current receive rate, Mbit/s.
    pub receive_rate_mbps: f64,
    /// Estimated link bandwidth, Mbit/s.
    pub bandwidth_mbps: f64,
    /// Latency both ends agreed on, ms.
    pub negotiated_latency_ms: i64,
}

fn num(s: &gst::StructureRef, field: &str) -> Option<f64> {
    let v = s.value(field).ok()?;
    v.get::<i64>()
        .map(|x| x as f64)
        .or_else(|_| v.get::<i32>().map(f64::from))
        .or_else(|_| v.get::<u64>().map(|x| x as f64))
        .or_else(|_| v.get::<u32>().map(f64::from))
        .or_else(|_| v.get::<f64>())
        .ok()
}

impl SrtStats {
    /// Reads one connection's structure.
    pub fn from_structure(s: &gst::StructureRef) -> Self {
        let i = |f: &str| num(s, f).unwrap_or(0.0) as i64;
        let f = |f: &str| num(s, f).unwrap_or(0.0);
        Self {
            rtt_ms: f("rtt-ms"),
            packets_sent: i("packets-sent"),
            packets_lost: i("packets-sent-lost"),
            packets_retransmitted: i("packets-retransmitted"),
            packets_dropped: i("packets-sent-dropped"),
            bytes_sent: i("bytes-sent"),
            packets_received: i("packets-received"),
            packets_received_lost: i("packets-received-lost"),
            bytes_received: i("bytes-received"),
            acks_received: i("packet-ack-received"),
            send_rate_mbps: f("send-rate-mbps"),
            receive_rate_mbps: f("receive-rate-mbps"),
            bandwidth_mbps: f("bandwidth-mbps"),
            negotiated_latency_ms: i("negotiated-latency-ms"),
        }
    }

    /// Reads an element's `stats`: one structure per caller in listener mode (`callers`), else
    /// one for the single connection. Empty when nothing is connected.
    pub fn read(element: &gst::Element) -> Vec<(Option<String>, SrtStats)> {
        use gst::prelude::*;
        let Some(s) = element.property::<Option<gst::Structure>>("stats") else { return Vec::new() };
        if let Ok(callers) = s.get::<glib::ValueArray>("callers") {
            return callers
                .iter()
                .filter_map(|v| v.get::<gst::Structure>().ok())
                .map(|c| (c.get::<String>("caller-address").ok(), SrtStats::from_structure(&c)))
                .collect();
        }
        if s.has_field("packets-sent") || s.has_field("packets-received") {
            vec![(None, SrtStats::from_structure(&s))]
        } else {
            Vec::new()
        }
    }

    /// Sums several connections (a listener's callers): counters add up, RTT is the worst.
    pub fn total<'a>(all: impl IntoIterator<Item = &'a SrtStats>) -> SrtStats {
        all.into_iter().fold(SrtStats::default(), |mut t, s| {
            t.rtt_ms = t.rtt_ms.max(s.rtt_ms);
            t.packets_sent += s.packets_sent;
            t.packets_lost += s.packets_lost;
            t.packets_retransmitted += s.packets_retransmitted;
            t.packets_dropped += s.packets_dropped;
            t.bytes_sent += s.bytes_sent;
            t.packets_received += s.packets_received;
            t.packets_received_lost += s.packets_received_lost;
            t.bytes_received += s.bytes_received;
            t.acks_received += s.acks_received;
            t.send_rate_mbps += s.send_rate_mbps;
            t.receive_rate_mbps += s.receive_rate_mbps;
            t.bandwidth_mbps = t.bandwidth_mbps.max(s.bandwidth_mbps);
            t.negotiated_latency_ms = t.negotiated_latency_ms.max(s.negotiated_latency_ms);
            t
        })
    }
}

impl SrtStats {
    /// Adds `other`'s counters (not its rates, RTT or latency) to these.
    fn add_counters(&mut self, other: &SrtStats) {
        self.packets_sent += other.packets_sent;
        self.packets_lost += other.packets_lost;
        self.packets_retransmitted += other.packets_retransmitted;
        self.packets_dropped += other.packets_dropped;
        self.bytes_sent += other.bytes_sent;
        self.packets_received += other.packets_received;
        self.packets_received_lost += other.packets_received_lost;
        self.bytes_received += other.bytes_received;
        self.acks_received += other.acks_received;
    }
}

/// An output's counters over its whole life: libsrt's counters belong to one connection, so
/// a caller that leaves (or a connection that is made again) would take its packets with it.
/// The connections that ended keep counting here. Rates and RTT are the current connections'.
#[derive(Debug, Clone, Default)]
pub struct LifeTotals {
    present: std::collections::HashMap<String, SrtStats>,
    ended: SrtStats,
}

impl LifeTotals {
    /// Takes the connections now open (`(address, counters)`; no address: by position) and
    /// returns the totals since the output started.
    pub fn update(&mut self, conns: &[(Option<String>, SrtStats)]) -> SrtStats {
        let now: std::collections::HashMap<String, SrtStats> = conns
            .iter()
            .enumerate()
            .map(|(i, (a, st))| (a.clone().unwrap_or_else(|| format!("#{i}")), st.clone()))
            .collect();
        for (key, last) in &self.present {
            // Gone, or the same key with counters that went back: a connection that ended.
            let ended = now
                .get(key)
                .is_none_or(|n| n.packets_sent < last.packets_sent || n.bytes_received < last.bytes_received);
            if ended {
                self.ended.add_counters(last);
            }
        }
        self.present = now;
        let mut t = SrtStats::total(self.present.values());
        t.add_counters(&self.ended);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_that_leaves_keeps_counting() {
        let st = |sent: i64| SrtStats {
            packets_sent: sent,
            bytes_sent: sent * 1316,
            send_rate_mbps: 4.0,
            ..SrtStats::default()
        };
        let mut t = LifeTotals::default();
        assert_eq!(t.update(&[(Some("a:1".into()), st(1000)), (Some("b:2".into()), st(500))]).packets_sent, 1500);
        // b leaves: its 500 stay; a goes on.
        let now = t.update(&[(Some("a:1".into()), st(1281))]);
        assert_eq!((now.packets_sent, now.send_rate_mbps), (1781, 4.0));
        // Everyone leaves: nothing is lost, and no rate is left.
        let now = t.update(&[]);
        assert_eq!((now.packets_sent, now.bytes_sent, now.send_rate_mbps), (1781, 1781 * 1316, 0.0));
        // A connection made again under the same key starts from zero: the old one counts.
        t.update(&[(None, st(300))]);
        let now = t.update(&[(None, st(10))]);
        assert_eq!(now.packets_sent, 1781 + 300 + 10);
    }

    #[test]
    fn reads_libsrt_fields_of_any_integer_type() {
        gst::init().unwrap();
        let s = gst::Structure::builder("application/x-srt-statistics")
            .field("packets-sent", 1000i64)
            .field("packets-sent-lost", 7i64)
            .field("packets-retransmitted", 9i64)
            .field("packets-sent-dropped", 2i64)
            .field("packet-ack-received", 55i64)
            .field("rtt-ms", 17.5f64)
            .field("negotiated-latency-ms", 120i32)
            .field("send-rate-mbps", 4.2f64)
            .build();
        let st = SrtStats::from_structure(&s);
        assert_eq!((st.packets_sent, st.packets_lost, st.packets_retransmitted, st.packets_dropped), (1000, 7, 9, 2));
        assert_eq!(st.acks_received, 55);
        assert_eq!(st.negotiated_latency_ms, 120);
        assert!((st.rtt_ms - 17.5).abs() < 1e-9);
        let total = SrtStats::total([&st, &st]);
        assert_eq!(total.packets_sent, 2000);
        assert!((total.rtt_ms - 17.5).abs() < 1e-9);
    }
}
