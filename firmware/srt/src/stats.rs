//! SRT statistics as libsrt reports them (`srt_bistats`), per connection and over an output's
//! whole life.

pub use telebridge_contract::srt::SrtStats;

/// One connection's counters as libsrt reports them (`srt_bistats`).
pub fn from_perf(p: &crate::ffi::SRT_TRACEBSTATS) -> SrtStats {
    SrtStats {
        rtt_ms: p.msRTT,
        packets_sent: p.pktSentTotal,
        packets_lost: i64::from(p.pktSndLossTotal),
        packets_retransmitted: i64::from(p.pktRetransTotal),
        packets_dropped: i64::from(p.pktSndDropTotal),
        bytes_sent: p.byteSentTotal as i64,
        bytes_retransmitted: p.byteRetransTotal as i64,
        packets_received: p.pktRecvTotal,
        packets_received_lost: i64::from(p.pktRcvLossTotal),
        packets_received_dropped: i64::from(p.pktRcvDropTotal),
        packets_undecrypted: i64::from(p.pktRcvUndecryptTotal),
        bytes_received: p.byteRecvTotal as i64,
        acks_received: i64::from(p.pktRecvACKTotal),
        send_rate_mbps: p.mbpsSendRate,
        receive_rate_mbps: p.mbpsRecvRate,
        bandwidth_mbps: p.mbpsBandwidth,
        negotiated_latency_ms: i64::from(p.msSndTsbPdDelay.max(p.msRcvTsbPdDelay)),
        send_buffer_ms: i64::from(p.msSndBuf),
        send_buffer_packets: i64::from(p.pktSndBuf),
        receive_buffer_ms: i64::from(p.msRcvBuf),
        receive_buffer_packets: i64::from(p.pktRcvBuf),
        flight_packets: i64::from(p.pktFlightSize),
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
    fn reads_libsrt_counters_and_sums_connections() {
        let p = crate::ffi::SRT_TRACEBSTATS {
            pktSentTotal: 1000,
            pktSndLossTotal: 7,
            pktRetransTotal: 9,
            pktSndDropTotal: 2,
            pktRecvACKTotal: 55,
            pktRcvDropTotal: 3,
            msRTT: 17.5,
            msSndTsbPdDelay: 120,
            msRcvTsbPdDelay: 200,
            msRcvBuf: 180,
            pktRcvBuf: 140,
            msSndBuf: 40,
            mbpsSendRate: 4.2,
            ..Default::default()
        };
        let st = crate::stats::from_perf(&p);
        assert_eq!((st.packets_sent, st.packets_lost, st.packets_retransmitted, st.packets_dropped), (1000, 7, 9, 2));
        assert_eq!((st.acks_received, st.packets_received_dropped), (55, 3));
        assert_eq!(st.negotiated_latency_ms, 200, "the larger of the two directions");
        assert_eq!((st.receive_buffer_ms, st.receive_buffer_packets, st.send_buffer_ms), (180, 140, 40));
        let total = SrtStats::total([&st, &st]);
        assert_eq!((total.packets_sent, total.packets_received_dropped, total.receive_buffer_ms), (2000, 6, 180));
        assert!((total.rtt_ms - 17.5).abs() < 1e-9);
        assert!((total.send_rate_mbps - 8.4).abs() < 1e-9);
    }
}
