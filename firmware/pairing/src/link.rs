//! The pair's SRT connection as a URL: which end listens, which calls and where, with the
//! pairing's stream id and passphrase (AES-256), and its latency: chosen from the link before
//! each connection (`telebridge_srt::latency`), starting from the round trip measured while
//! pairing, or pinned by the owner. Pure: the record and the box's bridge settings in, the URL
//! out.

use std::time::Duration;

use telebridge_config::{BridgeSettings, KeyLength, Latency, MeetToken, SrtMode, SrtUrl};

use crate::store::{PairRecord, Reach};

/// The first connection's latency asks for this many of the round trips measured while pairing:
/// the loss is not known yet (the deployment guide's table asks 3 x up to 1 % loss, 4 x up to
/// 3 %); later connections choose from what the earlier ones measured.
pub const LATENCY_RTTS: u32 = 4;

/// Why a record gives no URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// A calling record without the address to call.
    #[error("the pairing says this box calls, but holds no address to call; unpair and pair again")]
    NoPeer,
    /// The address is not `HOST:PORT`.
    #[error("peer: {0:?} is not HOST:PORT; unpair and pair again")]
    BadPeer(String),
}

/// The latency for a measured round trip: [`LATENCY_RTTS`] x `rtt_ms`, at least `min`.
pub fn latency_for(rtt_ms: u32, min: Duration) -> Duration {
    min.max(Duration::from_millis(u64::from(rtt_ms) * u64::from(LATENCY_RTTS)))
}

pub use telebridge_contract::daemon::PeerRoute;

/// How long a rendezvous attempt waits for the other side: libsrt waits ten times
/// `SRTO_CONNTIMEO` in rendezvous.
pub const RENDEZVOUS_CONNTIMEO: Duration = Duration::from_millis(800);

/// The pair's ways on this box: [`link_url`]; then a rendezvous with the other's public address
/// if known, and one through the meeting point (`bridge.relay`, the port the pair id picks) if
/// set. Also after a port mapping: the router said it passes the port, which a router behind
/// another one, or a stranger's fake one, says too (issue 36, finding 5).
pub fn link_route(record: &PairRecord, bridge: &BridgeSettings) -> Result<PeerRoute, LinkError> {
    let first = link_url(record, bridge)?;
    let mut then = Vec::new();
    let rendezvous = |host: String, remote: u16, local: u16| {
        let mut r = listener(remote);
        r.mode = SrtMode::Rendezvous;
        r.host = Some(host);
        r.local_port = Some(local);
        r.latency = first.latency;
        r.connect_timeout = Some(RENDEZVOUS_CONNTIMEO);
        r.passphrase = Some(record.passphrase.clone());
        r.key_length = Some(KeyLength::Aes256);
        r
    };
    if let Some(other) = record.rendezvous.as_deref() {
        let (host, port) = host_port(other)?;
        then.push(rendezvous(host, port, port));
    }
    if let Some(relay) = &bridge.relay {
        let side = usize::from(record.side == crate::store::StoredSide::B);
        let port = crate::meet::port_for(&record.pair_id, side, relay.first, relay.last);
        let mut way = rendezvous(relay.host.clone(), port, bridge.port);
        way.meet_token = Some(meet_token(record));
        then.push(way);
    }
    let mut first = first;
    if first.mode == SrtMode::Listener && then.iter().any(|w| w.host.as_deref().is_some_and(|h| !h.contains(':'))) {
        // The rendezvous after it binds the same port on IPv4: libsrt reuses a port only with
        // the same settings, and the listener would otherwise hold it dual-stack (IPv6).
        first.local_address = Some("0.0.0.0".into());
    }
    Ok(PeerRoute { peer_name: Some(record.peer_id.clone()), first, then })
}

/// The pair's token at a meeting point: HMAC-SHA256 under the pair key of a label and the pair
/// id, its first 16 bytes. Both boxes make the same one; the relay learns nothing of the key.
pub fn meet_token(record: &PairRecord) -> MeetToken {
    use hmac::{Hmac, Mac};
    let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(record.pair_key.expose().as_bytes())
        .expect("HMAC takes a key of any length");
    m.update(b"telebridge meeting point token\0");
    m.update(record.pair_id.as_bytes());
    let mut t = [0u8; 16];
    t.copy_from_slice(&m.finalize().into_bytes()[..16]);
    MeetToken(t)
}

fn host_port(addr: &str) -> Result<(String, u16), LinkError> {
    let bad = || LinkError::BadPeer(addr.to_string());
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or_else(bad)?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// The URL of the pair's connection on this box.
pub fn link_url(record: &PairRecord, bridge: &BridgeSettings) -> Result<SrtUrl, LinkError> {
    let mut url = match record.reach {
        Reach::Listen => {
            // The calling box decides the first connection's latency (SRT takes the larger of
            // the two); both choose from what they measured for the next ones.
            let mut u = listener(bridge.port);
            u.latency = Some(match bridge.latency {
                Latency::Auto { floor, .. } => Latency::Auto { floor, start: floor },
                pinned => pinned,
            });
            u
        }
        Reach::Call => {
            let peer = record.peer.as_deref().ok_or(LinkError::NoPeer)?;
            let (host, port) = host_port(peer)?;
            let mut u = listener(port);
            u.mode = SrtMode::Caller;
            u.host = Some(host);
            u.latency = Some(match bridge.latency {
                Latency::Auto { floor, .. } => Latency::Auto { floor, start: latency_for(record.rtt_ms, floor) },
                pinned => pinned,
            });
            u.stream_id = Some(record.stream_id.clone());
            u
        }
    };
    url.passphrase = Some(record.passphrase.clone());
    url.key_length = Some(KeyLength::Aes256);
    Ok(url)
}

fn listener(port: u16) -> SrtUrl {
    SrtUrl::parse(&format!("srt://:{port}?mode=listener")).unwrap_or_else(|_| unreachable!("a valid listener URL"))
}

#[cfg(test)]
mod tests {
    use telebridge_config::{Config, Secret};

    use super::*;
    use crate::store::StoredSide;
    use crate::store::Via;

    fn record(reach: Reach, peer: Option<&str>, rtt_ms: u32) -> PairRecord {
        PairRecord {
            pair_id: "0123456789abcdef".into(),
            peer_id: "box-a".into(),
            side: StoredSide::B,
            reach,
            peer: peer.map(str::to_string),
            via: crate::store::Via::Direct,
            rendezvous: None,
            rtt_ms,
            stream_id: "telebridge/0123456789abcdef".into(),
            passphrase: Secret::new("7".repeat(64)),
            pair_key: Secret::new("k".repeat(64)),
            paired_at_unix: 0,
        }
    }

    fn bridge() -> BridgeSettings {
        Config::default().validate().unwrap().bridge
    }

    #[test]
    fn the_calling_box_starts_at_four_round_trips_the_listener_at_the_floor_and_both_choose_after() {
        let call = link_url(&record(Reach::Call, Some("192.0.2.7:7701"), 34), &bridge()).unwrap();
        assert_eq!(call.to_string(), "srt://192.0.2.7:7701?mode=caller&latency=auto&pbkeylen=32&streamid=telebridge/0123456789abcdef&passphrase=****");
        let ms = Duration::from_millis;
        assert_eq!(call.latency, Some(Latency::Auto { floor: ms(40), start: ms(136) }));
        assert_eq!(call.passphrase.as_ref().map(|p| p.expose().len()), Some(64));
        let listen = link_url(&record(Reach::Listen, None, 34), &bridge()).unwrap();
        assert_eq!(listen.to_string(), "srt://:7700?mode=listener&latency=auto&pbkeylen=32&passphrase=****");
        assert_eq!(listen.latency, Some(Latency::Auto { floor: ms(40), start: ms(40) }));
        // A short round trip: the least latency holds.
        let near = link_url(&record(Reach::Call, Some("[fd00::7]:7700"), 3), &bridge()).unwrap();
        assert_eq!(
            (near.host.as_deref(), near.latency),
            (Some("fd00::7"), Some(Latency::Auto { floor: ms(40), start: ms(40) }))
        );
        assert_eq!(latency_for(100, ms(80)), ms(400));
        // Pinned by the owner: the same on every connection, both ends.
        let mut pinned = bridge();
        pinned.latency = Latency::Fixed(ms(250));
        for reach in [Reach::Call, Reach::Listen] {
            let u = link_url(&record(reach, Some("192.0.2.7:7701"), 34), &pinned).unwrap();
            assert_eq!(u.latency, Some(Latency::Fixed(ms(250))));
        }
    }

    #[test]
    fn without_a_port_mapping_a_rendezvous_with_the_others_public_address_comes_next() {
        let mut r = record(Reach::Listen, None, 34);
        r.rendezvous = Some("198.20.0.2:7700".into());
        let route = link_route(&r, &bridge()).unwrap();
        assert_eq!(route.first.mode, SrtMode::Listener);
        assert_eq!(route.first.local_address.as_deref(), Some("0.0.0.0"), "the rendezvous can take the port over");
        assert_eq!(route.then.len(), 1);
        assert_eq!(
            route.then[0].to_string(),
            "srt://198.20.0.2:7700?mode=rendezvous&latency=auto&pbkeylen=32&conntimeo=800&localport=7700&passphrase=****"
        );
        // With a meeting point, a rendezvous through it comes last, on the pair's port.
        let mut with_relay = bridge();
        with_relay.relay = Some(telebridge_config::RelaySpec::parse("relay.example:7800-7815").unwrap());
        let route = link_route(&r, &with_relay).unwrap();
        let port = crate::meet::port_for(&r.pair_id, 1, 7800, 7815);
        assert_eq!(route.then.len(), 2);
        assert_eq!((route.then[1].host.as_deref(), route.then[1].port), (Some("relay.example"), port));
        assert_eq!(route.then[1].local_port, Some(7700));
        // Only the way through the meeting point says the pair's token; both boxes make the same
        // one from the pair key, and another pair key makes another.
        assert_eq!((route.first.meet_token, route.then[0].meet_token), (None, None));
        assert_eq!(route.then[1].meet_token, Some(meet_token(&r)));
        let mut other = r.clone();
        other.side = crate::store::StoredSide::A;
        assert_eq!(meet_token(&other), meet_token(&r), "the same on both boxes");
        other.pair_key = telebridge_config::Secret::new("another pair's key, as long as a real one");
        assert_ne!(meet_token(&other), meet_token(&r));
        r.via = Via::PortMapping;
        assert_eq!(
            link_route(&r, &bridge()).unwrap().then.len(),
            1,
            "a router's word is no proof: the rendezvous stays"
        );
        r.via = Via::Direct;
        r.rendezvous = None;
        let single = link_route(&r, &bridge()).unwrap();
        assert_eq!((single.peer_name.as_deref(), single.then.len()), (Some("box-a"), 0));
        assert_eq!(single.first, link_url(&r, &bridge()).unwrap());
    }

    #[test]
    fn a_record_without_a_usable_address_says_to_pair_again() {
        assert_eq!(link_url(&record(Reach::Call, None, 1), &bridge()).unwrap_err(), LinkError::NoPeer);
        for bad in ["host", "host:0", ":7700", "host:x"] {
            let e = link_url(&record(Reach::Call, Some(bad), 1), &bridge()).unwrap_err();
            assert_eq!(e, LinkError::BadPeer(bad.into()));
        }
    }
}
