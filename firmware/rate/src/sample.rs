//! What a rate law is handed: one connection's counters at one instant ([`LinkSample`]).

use serde::Serialize;

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
    /// Packets libsrt counted in flight (and in its send buffer) that had in fact arrived, and
    /// that the two counts above are already less: a bonded output learns of each packet's
    /// arrival on its uplink, while SRT's cumulative ACK waits for the one a slow uplink holds
    /// ([`LinkSample::bonded`]). 0 for a plain SRT connection.
    #[serde(default)]
    pub delivered_ahead: i64,
    /// Over a bond, what the bond reads beside libsrt (set by [`Self::bonded()`]); `None` on a
    /// plain SRT connection.
    #[serde(default)]
    pub bond: Option<BondView>,
}

/// What a bond adds to a sample of its SRT connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct BondView {
    /// The queue on the least queued uplink that carries the stream, ms: the law reads it
    /// instead of libsrt's round trip over its lowest (SRT's round trip is the fastest
    /// uplink's, whose queue the scheduler moves the stream away from).
    pub queue_ms: Option<f64>,
    /// The share of its sending lost to uplinks found dead so far, summed at each death
    /// (`telebridge_bond::Sender::lost_share`): a rise cuts the rate by as much at once.
    pub lost_share: f64,
}

impl LinkSample {
    /// Over a bond: this sample less `delivered_ahead` packets that arrived past SRT's
    /// cumulative ACK (what is really on the way and waiting), with the bond's queue. (In the
    /// bonding bench a packet on the uplink whose round trip swung to a second held SRT's ACK
    /// back: the link seemed to carry half of what it did, and the law cut 1.65 Mbit/s to 0.66
    /// on three uplinks of 6.5 Mbit/s between them.)
    pub fn bonded(self, delivered_ahead: usize, view: BondView) -> Self {
        Self { bond: Some(view), ..self.less_delivered(delivered_ahead) }
    }

    /// This sample less `n` packets that arrived past SRT's cumulative ACK ([`Self::bonded`]).
    fn less_delivered(mut self, n: usize) -> Self {
        let n = (n as i64).min(self.flight_packets.max(0));
        self.flight_packets -= n;
        self.send_buffer_packets = (self.send_buffer_packets - n).max(0);
        self.delivered_ahead = n;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_that_arrived_ahead_leave_the_flight_and_the_send_buffer() {
        let s = LinkSample { flight_packets: 40, send_buffer_packets: 45, ..LinkSample::default() };
        let c = s.less_delivered(30);
        assert_eq!((c.flight_packets, c.send_buffer_packets, c.delivered_ahead), (10, 15, 30));
        // Never below nothing in flight (the two counts are read a moment apart).
        let c = s.less_delivered(50);
        assert_eq!((c.flight_packets, c.send_buffer_packets, c.delivered_ahead), (0, 5, 40));
        assert_eq!(s.less_delivered(0), s);
    }
}
