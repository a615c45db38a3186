//! A bonded output's uplinks, as the bonding sender reports them (`telebridge-bond`), an SRT
//! output carries them in its status and the panel and the metrics read them.

use serde::Serialize;

/// Where an uplink stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Not yet registered with the receiver.
    Connecting,
    /// Carrying the stream.
    Up,
    /// Silent for longer than its round trip explains; probed until it answers.
    Dead,
}

/// One uplink, for status and metrics.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkStatus {
    /// Interface or address.
    pub name: String,
    /// Its state.
    pub state: LinkState,
    /// Smoothed round trip, ms.
    pub rtt_ms: Option<f64>,
    /// Congestion window, packets.
    pub window: f64,
    /// Packets sent and not yet acknowledged.
    pub in_flight: usize,
    /// Packets sent over it.
    pub sent: u64,
    /// Packets sent over it again because another uplink died.
    pub rescued: u64,
    /// Its packets the receiver reported lost.
    pub naks: u64,
    /// Times it was found dead.
    pub deaths: u64,
    /// What it sent over the last second, kbit/s.
    pub rate_kbps: f64,
    /// Its share of what the bond sent over the last second, percent.
    pub share_pct: f64,
    /// Why it cannot be opened ("no such network interface"), while that lasts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl std::fmt::Display for LinkStatus {
    /// "wwan0: up, RTT 62 ms, 1.8 Mbit/s, 45 %" (or "dead, found so 2 times").
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            LinkState::Connecting => "connecting",
            LinkState::Up => "up",
            LinkState::Dead => "dead",
        };
        if let Some(p) = &self.problem {
            return write!(f, "{}: {p}", self.name);
        }
        write!(f, "{}: {state}", self.name)?;
        if let Some(rtt) = self.rtt_ms {
            write!(f, ", RTT {rtt:.0} ms")?;
        }
        write!(f, ", {:.1} Mbit/s, {:.0} %", self.rate_kbps / 1000.0, self.share_pct)?;
        if self.deaths > 0 {
            write!(f, " (dead {} times so far)", self.deaths)?;
        }
        Ok(())
    }
}
