//! What a rate law is handed: one connection's counters at one instant ([`LinkSample`]).

use serde::Serialize;
use telebridge_srt::SrtStats;

/// One connection at one instant, as libsrt counts it (`srt_bistats`, instantaneous).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LinkSample {
    /// Round-trip time, ms (libsrt's smoothed value).
    pub rtt_ms: f64,
    /// Sent and not yet acknowledged, as ms of stream.
    pub send_buffer_ms: f64,
    /// The same in packets.
    pub send_buffer_packets: i64,
    /// Packets in flight.
    pub flight_packets: i64,
    /// Packets sent so far, retransmissions included.
    pub packets_sent: i64,
    /// Packets sent again so far.
    pub packets_retransmitted: i64,
    /// Bytes sent so far, retransmissions included, with their headers: what the link carried
    /// (a frame's last packet is short, and at a low rate most are: 1316 bytes each would
    /// count twice what is sent). 0 where unknown (older traces): then 1316 a packet.
    #[serde(default)]
    pub bytes_sent: i64,
    /// The same, of the packets sent again.
    #[serde(default)]
    pub bytes_retransmitted: i64,
    /// Packets the sender gave up on (too late to be played) so far.
    pub packets_dropped: i64,
    /// Packets the receiver reported lost so far (its NAKs; each counted once until it is sent
    /// again). 0 where unknown (older traces).
    #[serde(default)]
    pub packets_lost: i64,
    /// libsrt's estimate of the link's capacity, Mbit/s (packet pairs; noisy).
    pub bandwidth_mbps: f64,
    /// libsrt's current send rate, Mbit/s.
    pub send_rate_mbps: f64,
    /// ACK packets heard from the receiver so far. 0 where unknown (older traces).
    #[serde(default)]
    pub acks_received: i64,
    /// The latency both ends agreed on, ms.
    pub latency_ms: f64,
}

impl From<&SrtStats> for LinkSample {
    fn from(s: &SrtStats) -> Self {
        Self {
            rtt_ms: s.rtt_ms,
            send_buffer_ms: s.send_buffer_ms as f64,
            send_buffer_packets: s.send_buffer_packets,
            flight_packets: s.flight_packets,
            packets_sent: s.packets_sent,
            packets_retransmitted: s.packets_retransmitted,
            bytes_sent: s.bytes_sent,
            bytes_retransmitted: s.bytes_retransmitted,
            packets_dropped: s.packets_dropped,
            packets_lost: s.packets_lost,
            bandwidth_mbps: s.bandwidth_mbps,
            send_rate_mbps: s.send_rate_mbps,
            acks_received: s.acks_received,
            latency_ms: s.negotiated_latency_ms as f64,
        }
    }
}
