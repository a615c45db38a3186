//! What every output reports (SRT, RTMP, recording): its state and counters, one type for all.

use serde::Serialize;

use crate::SrtStats;

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
    /// `srt`, `rtmp` or `file`.
    pub kind: &'static str,
    /// The SRT latency asked for on the current connection and why (SRT outputs).
    pub latency: Option<crate::latency::LatencyChoice>,
    /// The link as measured now: what the next connection's latency will rest on.
    pub link: Option<crate::latency::LinkReading>,
    /// A bonded output's uplinks (`bond=`): state, round trip, rate, share; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uplinks: Vec<telebridge_contract::uplink::LinkStatus>,
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
