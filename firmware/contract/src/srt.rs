//! What an SRT output (and the RTMP and recording outputs, which report the same way) tells the
//! box: its state, its counters as libsrt counts them, the latency it chose and the link it
//! measured. Made by srt and the outputs, read by the daemon, the panel and the metrics.

use serde::{Deserialize, Serialize};

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
    /// Bytes sent, retransmissions included, with their headers (libsrt counts SRT's, UDP's and
    /// IP's: what the link carries).
    pub bytes_sent: i64,
    /// The same, of the packets sent again.
    pub bytes_retransmitted: i64,
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
    /// Packets the receiver gave up on: lost and not recovered before their play time. What a
    /// viewer of this end sees.
    pub packets_received_dropped: i64,
    /// Packets that arrived but could not be decrypted (a key mismatch).
    pub packets_undecrypted: i64,
    /// Sent and not yet acknowledged: the send buffer, ms of stream.
    pub send_buffer_ms: i64,
    /// The same in packets.
    pub send_buffer_packets: i64,
    /// Received and not yet delivered (waiting for their play time or a gap), ms of stream.
    pub receive_buffer_ms: i64,
    /// The same in packets.
    pub receive_buffer_packets: i64,
    /// Packets in flight (sent, not acknowledged).
    pub flight_packets: i64,
}

impl SrtStats {
    /// Sums several connections (a listener's callers): counters add up, RTT is the worst.
    pub fn total<'a>(all: impl IntoIterator<Item = &'a SrtStats>) -> SrtStats {
        all.into_iter().fold(SrtStats::default(), |mut t, s| {
            t.rtt_ms = t.rtt_ms.max(s.rtt_ms);
            t.packets_sent += s.packets_sent;
            t.packets_lost += s.packets_lost;
            t.packets_retransmitted += s.packets_retransmitted;
            t.packets_dropped += s.packets_dropped;
            t.bytes_sent += s.bytes_sent;
            t.bytes_retransmitted += s.bytes_retransmitted;
            t.packets_received += s.packets_received;
            t.packets_received_lost += s.packets_received_lost;
            t.bytes_received += s.bytes_received;
            t.acks_received += s.acks_received;
            t.send_rate_mbps += s.send_rate_mbps;
            t.receive_rate_mbps += s.receive_rate_mbps;
            t.bandwidth_mbps = t.bandwidth_mbps.max(s.bandwidth_mbps);
            t.negotiated_latency_ms = t.negotiated_latency_ms.max(s.negotiated_latency_ms);
            t.packets_received_dropped += s.packets_received_dropped;
            t.packets_undecrypted += s.packets_undecrypted;
            t.send_buffer_ms = t.send_buffer_ms.max(s.send_buffer_ms);
            t.send_buffer_packets += s.send_buffer_packets;
            t.receive_buffer_ms = t.receive_buffer_ms.max(s.receive_buffer_ms);
            t.receive_buffer_packets += s.receive_buffer_packets;
            t.flight_packets += s.flight_packets;
            t
        })
    }
}

impl SrtStats {
    /// Adds `other`'s counters (not its rates, RTT or latency) to these.
    pub fn add_counters(&mut self, other: &SrtStats) {
        self.packets_sent += other.packets_sent;
        self.packets_lost += other.packets_lost;
        self.packets_retransmitted += other.packets_retransmitted;
        self.packets_dropped += other.packets_dropped;
        self.bytes_sent += other.bytes_sent;
        self.bytes_retransmitted += other.bytes_retransmitted;
        self.packets_received += other.packets_received;
        self.packets_received_lost += other.packets_received_lost;
        self.bytes_received += other.bytes_received;
        self.acks_received += other.acks_received;
        self.packets_received_dropped += other.packets_received_dropped;
        self.packets_undecrypted += other.packets_undecrypted;
    }
}

/// The link as a connection measured it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkReading {
    /// The round trip, ms (the median of libsrt's smoothed RTT over the window).
    pub rtt_ms: f64,
    /// Packets lost on the way, a fraction of those carried, the worse of the two directions.
    pub loss: f64,
    /// Packets the figure rests on (both directions).
    pub packets: i64,
}

/// The latency chosen for a connection, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyChoice {
    /// The latency asked for, ms.
    pub latency_ms: u64,
    /// Pinned by the owner (`latency=MS`), not chosen.
    pub pinned: bool,
    /// What it rests on: the reading, if any.
    pub reading: Option<LinkReading>,
    /// Why, in words ("RTT 21 ms, loss 0.2 %: 3 x RTT = 63 ms").
    pub reason: String,
}

/// Where an output is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputState {
    /// Calling the peer (caller, rendezvous).
    Connecting,
    /// Listening, no caller yet.
    Listening,
    /// Connected and sending (for a listener: at least one caller).
    Live,
    /// The last attempt failed; waiting before the next (see `reason`).
    Retrying,
    /// Stopped on request.
    Stopped,
    /// Given up until reconfigured (a full disk, a removed USB stick).
    Failed,
}

/// What an output reports: state, reason when not live, counters.
#[derive(Debug, Clone, Serialize)]
pub struct OutputStatus {
    /// The output's name.
    pub name: String,
    /// Its URL without secrets.
    pub url: String,
    /// Current state.
    pub state: OutputState,
    /// Why it is not live, in words (e.g. "passphrase rejected: ...").
    pub reason: Option<String>,
    /// Reconnects so far.
    pub reconnects: u32,
    /// Connected callers (listener) or 0/1.
    pub callers: usize,
    /// Counters summed over connections.
    pub srt: SrtStats,
    /// Per-caller counters in listener mode: (address, stats).
    pub per_caller: Vec<(String, SrtStats)>,
    /// The last rejected caller's reason, in listener mode.
    pub last_rejection: Option<String>,
    /// Buffers dropped at this output's queue because the link could not keep up.
    pub queue_dropped: u64,
    /// Bytes written to the network or the disk (RTMP and recording outputs).
    pub bytes_written: u64,
    /// `srt`, `rtmp`, `whip` or `file`.
    pub kind: &'static str,
    /// The SRT latency asked for on the current connection and why (SRT outputs).
    pub latency: Option<LatencyChoice>,
    /// The link as measured now: what the next connection's latency will rest on.
    pub link: Option<LinkReading>,
    /// A bonded output's uplinks (`bond=`): state, round trip, rate, share; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uplinks: Vec<crate::uplink::LinkStatus>,
}

impl OutputStatus {
    /// A fresh status for an output of `kind`.
    pub fn new(kind: &'static str, name: String, url: String, state: OutputState) -> Self {
        Self {
            name,
            url,
            state,
            reason: None,
            reconnects: 0,
            callers: 0,
            srt: SrtStats::default(),
            per_caller: Vec::new(),
            last_rejection: None,
            queue_dropped: 0,
            bytes_written: 0,
            kind,
            latency: None,
            link: None,
            uplinks: Vec::new(),
        }
    }
}

/// Where an input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputState {
    /// Listening; no caller yet (or the caller left).
    Listening,
    /// Calling the sender.
    Connecting,
    /// A stream is arriving.
    Receiving,
    /// The last attempt failed; waiting to retry.
    Retrying,
    /// Stopped on request.
    Stopped,
}

/// What an input reports.
#[derive(Debug, Clone, Serialize)]
pub struct InputStatus {
    /// The URL without secrets.
    pub url: String,
    /// Current state.
    pub state: InputState,
    /// Why no stream is arriving, in words.
    pub reason: Option<String>,
    /// Connections that ended so far.
    pub reconnects: u32,
    /// Receiver counters (packets received, lost in the network, RTT, rate, latency).
    pub srt: SrtStats,
    /// MPEG-TS packets missing from what arrived: lost for good.
    pub ts_continuity_errors: u64,
    /// 188-byte pieces received that were not MPEG-TS packets (no sync byte): the sender sends
    /// something else.
    pub not_ts_packets: u64,
    /// Bytes received since start.
    pub bytes: u64,
    /// Milliseconds since the last data (null before any).
    pub last_data_ms_ago: Option<u64>,
    /// The stream id the connected sender gave (`streamid=` in its URL), if any.
    pub stream_id: Option<String>,
    /// The sender's address (the caller that came in, or the listener this input calls), kept
    /// after it goes until another comes: who sent last.
    pub sender: Option<String>,
}
