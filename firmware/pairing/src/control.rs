//! Messages between two paired boxes on their SRT connection itself (the one path that is known
//! to exist between them, NAT or not), beside the stream: today the farewell of a box that
//! unpairs, so that the other stops and says why rather than calling a box that no longer
//! answers. A message starts with [`MAGIC`] (never the 0x47 of an MPEG-TS packet) and carries an
//! HMAC-SHA256 under the pair's key (SRT encrypts but does not authenticate).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::store::PairRecord;

/// How a control message starts.
pub const MAGIC: &[u8] = b"\0telebridge-control\0";

/// How far a farewell's clock may be from the receiver's (it names its time; a replay later
/// than this is refused).
pub const CLOCK_SLACK_S: u64 = 300;

/// Whether `data` is a control message (else: the stream).
pub fn is_control(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

fn mac(record: &PairRecord, what: &str, unix: u64) -> Option<Hmac<Sha256>> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(record.pair_key.expose().as_bytes()).ok()?;
    m.update(format!("{what}\0{}\0{unix}", record.pair_id).as_bytes());
    Some(m)
}

/// An HMAC-SHA256 tag written as 64 hex characters, as bytes; `None` for anything else.
fn tag_bytes(tag: &str) -> Option<Vec<u8>> {
    if tag.len() != 64 || !tag.is_ascii() {
        return None;
    }
    (0..32).map(|i| u8::from_str_radix(&tag[2 * i..2 * i + 2], 16).ok()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What box A's welcome says: where B is to call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WelcomeFacts<'a> {
    /// A's bridge port.
    pub srt_port: u16,
    /// The public address A's router passes to A, if it said so.
    pub srt_address: Option<&'a str>,
    /// The addresses A owns (issue 57, finding 2: B calls one of these, not an address a
    /// stranger announced for A). Empty from a box older than that rule, and tagged as before.
    pub addresses: &'a [String],
}

fn welcome_mac(pair_key: &str, pair_id: &str, w: &WelcomeFacts<'_>) -> Option<Hmac<Sha256>> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(pair_key.as_bytes()).ok()?;
    m.update(format!("welcome\0{pair_id}\0{}\0{}", w.srt_port, w.srt_address.unwrap_or("")).as_bytes());
    if !w.addresses.is_empty() {
        m.update(format!("\0own\0{}", w.addresses.join(",")).as_bytes());
    }
    Some(m)
}

/// The tag box A puts on its welcome (the port, public address and own addresses B is to
/// call), under the pair's key: the welcome travels over plain HTTP after the exchange, and a
/// stranger on the way (or a fake router's claimed address) must not choose where B calls
/// (issue 36, finding 5; issue 57, finding 2).
pub fn welcome_tag(pair_key: &str, pair_id: &str, w: &WelcomeFacts<'_>) -> String {
    welcome_mac(pair_key, pair_id, w).map(|m| hex(&m.finalize().into_bytes())).unwrap_or_default()
}

/// Whether `tag` is A's tag on this welcome.
pub fn welcome_genuine(pair_key: &str, pair_id: &str, w: &WelcomeFacts<'_>, tag: &str) -> bool {
    let Some(tag) = tag_bytes(tag) else { return false };
    welcome_mac(pair_key, pair_id, w).is_some_and(|m| m.verify_slice(&tag).is_ok())
}

/// The farewell of a box that unpairs, at `unix` seconds.
pub fn farewell(record: &PairRecord, unix: u64) -> Vec<u8> {
    let tag = mac(record, "unpair", unix).map(|m| hex(&m.finalize().into_bytes())).unwrap_or_default();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(format!("unpair {} {unix} {tag}", record.pair_id).as_bytes());
    out
}

/// Whether `data` is a genuine farewell of the pair `record` holds, near `now_unix`.
pub fn is_farewell(record: &PairRecord, data: &[u8], now_unix: u64) -> bool {
    let Some(body) = data.strip_prefix(MAGIC).and_then(|b| std::str::from_utf8(b).ok()) else { return false };
    let mut words = body.split(' ');
    let (Some("unpair"), Some(pair), Some(unix), Some(tag), None) =
        (words.next(), words.next(), words.next(), words.next(), words.next())
    else {
        return false;
    };
    let Ok(unix) = unix.parse::<u64>() else { return false };
    if pair != record.pair_id || unix.abs_diff(now_unix) > CLOCK_SLACK_S {
        return false;
    }
    let Some(tag) = tag_bytes(tag) else { return false };
    mac(record, "unpair", unix).is_some_and(|m| m.verify_slice(&tag).is_ok())
}

/// This box's on-air state for the paired box's tally light, at `unix` seconds: sent four times
/// a second while the connection is up, so the far tally follows within half a second and goes
/// out soon after the messages stop.
pub fn on_air(record: &PairRecord, live: bool, unix: u64) -> Vec<u8> {
    let word = if live { "on" } else { "off" };
    let tag = mac(record, &format!("tally {word}"), unix).map(|m| hex(&m.finalize().into_bytes())).unwrap_or_default();
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(format!("tally {word} {} {unix} {tag}", record.pair_id).as_bytes());
    out
}

/// The paired box's on-air state, when `data` is its genuine tally message near `now_unix`.
pub fn read_on_air(record: &PairRecord, data: &[u8], now_unix: u64) -> Option<bool> {
    let body = data.strip_prefix(MAGIC).and_then(|b| std::str::from_utf8(b).ok())?;
    let mut words = body.split(' ');
    let (Some("tally"), Some(word), Some(pair), Some(unix), Some(tag), None) =
        (words.next(), words.next(), words.next(), words.next(), words.next(), words.next())
    else {
        return None;
    };
    let live = match word {
        "on" => true,
        "off" => false,
        _ => return None,
    };
    let unix = unix.parse::<u64>().ok()?;
    if pair != record.pair_id || unix.abs_diff(now_unix) > CLOCK_SLACK_S {
        return None;
    }
    let tag = tag_bytes(tag)?;
    mac(record, &format!("tally {word}"), unix).is_some_and(|m| m.verify_slice(&tag).is_ok()).then_some(live)
}

#[cfg(test)]
mod tests {
    use telebridge_config::Secret;

    use super::*;
    use crate::store::{Reach, StoredSide};

    #[test]
    fn a_welcome_is_genuine_only_as_a_sent_it() {
        let key = "ab".repeat(32);
        let own = ["10.213.0.2".to_string(), "2001:db8::5".to_string()];
        let w = |port, address, addresses| WelcomeFacts { srt_port: port, srt_address: address, addresses };
        let sent = w(7700, Some("198.20.0.1:7700"), &own[..]);
        let tag = welcome_tag(&key, "0123456789abcdef", &sent);
        assert!(welcome_genuine(&key, "0123456789abcdef", &sent, &tag));
        let id = "0123456789abcdef";
        assert!(!welcome_genuine(&key, id, &w(7700, Some("203.0.113.66:7700"), &own[..]), &tag), "address changed");
        assert!(!welcome_genuine(&key, id, &w(7701, Some("198.20.0.1:7700"), &own[..]), &tag), "port changed");
        assert!(!welcome_genuine(&key, id, &w(7700, None, &own[..]), &tag), "address removed");
        let swapped = ["10.213.0.9".to_string(), "2001:db8::5".to_string()];
        assert!(
            !welcome_genuine(&key, id, &w(7700, Some("198.20.0.1:7700"), &swapped[..]), &tag),
            "own address swapped"
        );
        assert!(!welcome_genuine(&key, id, &w(7700, Some("198.20.0.1:7700"), &[]), &tag), "own addresses removed");
        assert!(!welcome_genuine(&"cd".repeat(32), id, &sent, &tag));
        assert!(!welcome_genuine(&key, id, &sent, "00"));
    }

    fn record(key: &str) -> PairRecord {
        PairRecord {
            pair_id: "0123456789abcdef".into(),
            peer_id: "box-a".into(),
            side: StoredSide::B,
            reach: Reach::Call,
            peer: Some("192.0.2.7:7700".into()),
            via: crate::store::Via::Direct,
            rendezvous: None,
            rtt_ms: 3,
            stream_id: "telebridge/0123456789abcdef".into(),
            passphrase: Secret::new("7".repeat(64)),
            pair_key: Secret::new(key.repeat(64)),
            paired_at_unix: 0,
        }
    }

    #[test]
    fn the_far_boxs_on_air_state_is_read_only_from_its_own_fresh_signed_message() {
        let t = 1_796_000_000;
        assert_eq!(read_on_air(&record("k"), &on_air(&record("k"), true, t), t + 1), Some(true));
        assert_eq!(read_on_air(&record("k"), &on_air(&record("k"), false, t), t), Some(false));
        assert_eq!(read_on_air(&record("j"), &on_air(&record("k"), true, t), t), None, "another pair's key");
        assert_eq!(read_on_air(&record("k"), &on_air(&record("k"), true, t), t + CLOCK_SLACK_S + 1), None);
        // "off" signed, "on" written: the tag covers the word.
        let flipped = String::from_utf8(on_air(&record("k"), false, t)).unwrap().replace("tally off", "tally on");
        assert_eq!(read_on_air(&record("k"), flipped.as_bytes(), t), None);
        // A farewell is no tally, a tally no farewell.
        assert_eq!(read_on_air(&record("k"), &farewell(&record("k"), t), t), None);
        assert!(!is_farewell(&record("k"), &on_air(&record("k"), true, t), t));
        assert_eq!(read_on_air(&record("k"), b"\0telebridge-control\0tally on", t), None);
    }

    #[test]
    fn only_the_pairs_own_fresh_farewell_counts() {
        let t = 1_796_000_000;
        let ours = farewell(&record("k"), t);
        assert!(is_control(&ours) && !is_control(&[0x47, 0, 0, 0]));
        assert!(is_farewell(&record("k"), &ours, t + 2));
        assert!(!is_farewell(&record("j"), &ours, t), "another pair's key");
        assert!(!is_farewell(&record("k"), &ours, t + CLOCK_SLACK_S + 1), "a replay much later");
        let mut forged = ours.clone();
        let last = forged.len() - 1;
        forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
        assert!(!is_farewell(&record("k"), &forged, t));
        let other_time =
            String::from_utf8(ours[MAGIC.len()..].to_vec()).unwrap().replace(&t.to_string(), &(t + 1).to_string());
        assert!(!is_farewell(&record("k"), &[MAGIC, other_time.as_bytes()].concat(), t));
        assert!(!is_farewell(&record("k"), b"\0telebridge-control\0unpair", t));
        assert!(!is_farewell(&record("k"), &[MAGIC, "unpair ä ß ü".as_bytes()].concat(), t));
        let wide = format!("unpair 0123456789abcdef {t} {}", "é".repeat(32));
        assert!(
            !is_farewell(&record("k"), &[MAGIC, wide.as_bytes()].concat(), t),
            "no panic on a 64-byte tag of wide characters"
        );
    }
}
