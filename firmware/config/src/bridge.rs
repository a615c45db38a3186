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

/// A pair's key at a meeting point, derived from the pair's key (see
/// `telebridge_pairing::link::meet_token`). Each box says the token of the rendezvous slot
/// under way ([`Self::for_slot`]) from the port its rendezvous will use, and the relay
/// forwards only between two addresses that said the same token, one on each of the pair's
/// ports. A stranger who does not have it can hold no place (issue 36, finding 8); one who saw
/// a box's hello has a token worth that slot alone (issue 57, finding 6: it had no time in it,
/// and a copy took the box's place later, from anywhere).
///
/// The exchange, each datagram from the box's rendezvous port:
///
/// ```text
///   box ── hello (slot, token) ──────────────────►  relay (keeps nothing)
///   box ◄─ cookie (keyed hash of address, port side, slot, token) ──
///   box ── confirm (slot, token, cookie) ────────►  relay: a place, if the cookie is its own
/// ```
///
/// So a place is only had by an address that receives there (issue 57, finding 3: hellos
/// from spoofed sources evicted a real pair). The token tells nothing of the key; someone who
/// sees the boxes' traffic to the relay sees it too, and could as well stop that traffic.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MeetToken(pub [u8; 16]);

/// A rendezvous slot's length (the pair's boxes start rendezvous on its boundaries).
pub const MEET_SLOT_SECS: u64 = 40;

/// The slot a hello said at `unix_ms` is for: the nearest boundary's (a box says its hello a
/// few seconds before its slot starts; both boxes' clocks are set by NTP).
pub fn meet_slot(unix_ms: u64) -> u64 {
    let slot_ms = MEET_SLOT_SECS * 1000;
    (unix_ms + slot_ms / 2) / slot_ms
}

/// What a box said to a meeting point: the slot, its token, and the relay's cookie once it
/// has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeetHello {
    /// The slot it is for.
    pub slot: u64,
    /// The pair's token for that slot.
    pub token: [u8; 16],
    /// The relay's cookie, in a confirmation.
    pub cookie: Option<[u8; 16]>,
}

const HELLO_MAGIC: [u8; 8] = *b"TBMEET\x02\x00";
const CONFIRM_MAGIC: [u8; 8] = *b"TBMEET\x02\x01";
const COOKIE_MAGIC: [u8; 8] = *b"TBCOOK\x02\x00";
/// The first hellos (no time, no cookie): from a box older than the relay.
const OLD_MAGIC: [u8; 8] = *b"TBMEET\x01\x00";

impl MeetHello {
    /// A hello's length.
    pub const HELLO_LEN: usize = 32;
    /// A confirmation's length.
    pub const CONFIRM_LEN: usize = 48;
    /// The relay's answer's length (shorter than the hello: the relay amplifies nothing).
    pub const COOKIE_LEN: usize = 24;

    /// The datagram that says it: a hello, or a confirmation with the cookie.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut d = Vec::with_capacity(Self::CONFIRM_LEN);
        d.extend_from_slice(if self.cookie.is_some() { &CONFIRM_MAGIC } else { &HELLO_MAGIC });
        d.extend_from_slice(&self.slot.to_be_bytes());
        d.extend_from_slice(&self.token);
        if let Some(c) = self.cookie {
            d.extend_from_slice(&c);
        }
        d
    }

    /// What a datagram says, if it is a hello or a confirmation (an SRT packet is never one:
    /// its first bytes are a sequence number or a control type, and these magics are neither).
    pub fn read(datagram: &[u8]) -> Option<Self> {
        let magic = datagram.get(..8)?;
        let cookie = match (magic, datagram.len()) {
            (m, Self::HELLO_LEN) if m == HELLO_MAGIC => None,
            (m, Self::CONFIRM_LEN) if m == CONFIRM_MAGIC => Some(datagram[32..48].try_into().ok()?),
            _ => return None,
        };
        Some(MeetHello {
            slot: u64::from_be_bytes(datagram[8..16].try_into().ok()?),
            token: datagram[16..32].try_into().ok()?,
            cookie,
        })
    }

    /// Whether a datagram is a hello of the first version (no slot, no cookie).
    pub fn is_old(datagram: &[u8]) -> bool {
        datagram.len() == 24 && datagram[..8] == OLD_MAGIC
    }

    /// The relay's answer carrying `cookie`.
    pub fn cookie_datagram(cookie: &[u8; 16]) -> [u8; Self::COOKIE_LEN] {
        let mut d = [0u8; Self::COOKIE_LEN];
        d[..8].copy_from_slice(&COOKIE_MAGIC);
        d[8..].copy_from_slice(cookie);
        d
    }

    /// The cookie in the relay's answer.
    pub fn cookie_from(datagram: &[u8]) -> Option<[u8; 16]> {
        if datagram.len() != Self::COOKIE_LEN || datagram[..8] != COOKIE_MAGIC {
            return None;
        }
        datagram[8..].try_into().ok()
    }
}

impl MeetToken {
    /// The token of slot `slot`: HMAC-SHA256 under this key of a label and the slot, its first
    /// 16 bytes. Both boxes of the pair make the same one.
    pub fn for_slot(&self, slot: u64) -> [u8; 16] {
        use hmac::{Hmac, Mac};
        let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        m.update(b"telebridge meeting point slot\0");
        m.update(&slot.to_be_bytes());
        let mut t = [0u8; 16];
        t.copy_from_slice(&m.finalize().into_bytes()[..16]);
        t
    }

    /// The hello of slot `slot`.
    pub fn hello(&self, slot: u64) -> MeetHello {
        MeetHello { slot, token: self.for_slot(slot), cookie: None }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_confirmations_and_cookies_read_back_and_nothing_else_does() {
        let key = MeetToken([4; 16]);
        let h = key.hello(7);
        assert_eq!(h.token, key.for_slot(7));
        assert_ne!(key.for_slot(7), key.for_slot(8), "a slot's token is worth that slot");
        assert_ne!(MeetToken([5; 16]).for_slot(7), key.for_slot(7));
        let d = h.to_bytes();
        assert_eq!(d.len(), MeetHello::HELLO_LEN);
        assert_eq!(MeetHello::read(&d), Some(h));
        let c = MeetHello { cookie: Some([9; 16]), ..h };
        let d = c.to_bytes();
        assert_eq!(d.len(), MeetHello::CONFIRM_LEN);
        assert_eq!(MeetHello::read(&d), Some(c));
        let answer = MeetHello::cookie_datagram(&[9; 16]);
        assert!(answer.len() < MeetHello::HELLO_LEN, "the relay's answer is shorter than what asks for it");
        assert_eq!(MeetHello::cookie_from(&answer), Some([9; 16]));
        assert_eq!(MeetHello::read(&answer), None);
        assert_eq!(MeetHello::cookie_from(&d), None);
        // Truncated, padded, an SRT packet, the first version's hello.
        for bad in [&d[..40], &[d.as_slice(), &[0]].concat()[..], &[0x80, 0, 0, 0, 0, 0, 0, 0][..]] {
            assert_eq!(MeetHello::read(bad), None);
        }
        let mut old = b"TBMEET\x01\x00".to_vec();
        old.extend_from_slice(&[1; 16]);
        assert!(MeetHello::is_old(&old) && MeetHello::read(&old).is_none());
        // The slot is the nearest boundary's: a hello said 5.5 s before a slot is for it.
        assert_eq!(meet_slot(80_000 - 5_500), 2);
        assert_eq!(meet_slot(80_000 + 3_000), 2);
        assert_eq!(meet_slot(80_000 + 20_000), 3);
    }
}
