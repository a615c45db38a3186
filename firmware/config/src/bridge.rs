//! The bridge role's settings, checked: its port, latency floor, a link made by hand, the
//! recording of what arrives and the meeting point.

use std::time::Duration;

use crate::output_url::FileSpec;
use crate::SrtUrl;

/// The bridge role's settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeSettings {
    /// The UDP port of the connection.
    pub port: u16,
    /// The least SRT latency.
    pub min_latency: Duration,
    /// A link made by hand, instead of the pairing's.
    pub link: Option<SrtUrl>,
    /// Where what arrives from the peer is recorded.
    pub record: Option<FileSpec>,
    /// The meeting point: host and port range.
    pub relay: Option<RelaySpec>,
}

/// A meeting point for paired boxes (`bridge.relay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaySpec {
    /// Its host name or address.
    pub host: String,
    /// The first port of its range.
    pub first: u16,
    /// The last port of its range.
    pub last: u16,
}

impl RelaySpec {
    /// Reads `HOST:FIRST-LAST` (or `HOST:PORT`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("{s:?} is not HOST:FIRST-LAST with an even number of ports, two per pair (e.g. relay.example.org:7800-7815)")
        };
        let (host, ports) = s.rsplit_once(':').ok_or_else(bad)?;
        let bracketed = host.starts_with('[') && host.ends_with(']');
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let (a, b) = ports.split_once('-').unwrap_or((ports, ports));
        let (first, last): (u16, u16) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if host.is_empty() || first == 0 || last <= first || last - first > 1023 || (last - first) % 2 == 0 {
            return Err(bad());
        }
        crate::check_host("relay", host, bracketed).map_err(|e| format!("{s:?}: {e}"))?;
        Ok(Self { host: host.to_string(), first, last })
    }
}
