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
    /// The least SRT latency the box chooses.
    pub min_latency: Duration,
    /// The SRT latency: chosen from the link at each connection (`auto`, at least
    /// `min_latency`), or pinned by the owner.
    pub latency: crate::Latency,
    /// A link made by hand, instead of the pairing's.
    pub link: Option<SrtUrl>,
    /// Where what arrives from the peer is recorded.
    pub record: Option<FileSpec>,
    /// The meeting point: host and port range.
    pub relay: Option<RelaySpec>,
    /// Ask the router (UPnP) to pass the port to this box when it listens.
    pub port_mapping: bool,
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

/// A pair's token at a meeting point, derived from the pair's key (see
/// `telebridge_pairing::link::meet_token`): each box says it in a hello, its first datagram to
/// the relay from the port its rendezvous will use, and the relay forwards only between two
/// addresses that said the same token, one on each of the pair's ports. A stranger who does not
/// have it can hold no place (issue 36, finding 8). It tells nothing of the key; someone who
/// sees the boxes' traffic to the relay sees it too, and could as well stop that traffic.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MeetToken(pub [u8; 16]);

impl MeetToken {
    /// The length of a hello: 8 bytes of magic, then the token.
    pub const HELLO_LEN: usize = 24;
    const MAGIC: [u8; 8] = *b"TBMEET\x01\x00";

    /// The hello that says this token.
    pub fn hello(&self) -> [u8; Self::HELLO_LEN] {
        let mut d = [0u8; Self::HELLO_LEN];
        d[..8].copy_from_slice(&Self::MAGIC);
        d[8..].copy_from_slice(&self.0);
        d
    }

    /// The token a datagram says, if it is a hello (an SRT packet is never one: its first four
    /// bytes would be a data packet's sequence number or a control type, and it is never exactly
    /// 24 bytes with this magic).
    pub fn from_hello(datagram: &[u8]) -> Option<Self> {
        if datagram.len() != Self::HELLO_LEN || datagram[..8] != Self::MAGIC {
            return None;
        }
        let mut t = [0u8; 16];
        t.copy_from_slice(&datagram[8..]);
        Some(Self(t))
    }
}

impl std::fmt::Debug for MeetToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MeetToken(****)")
    }
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
