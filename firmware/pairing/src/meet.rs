//! The meeting point of two paired boxes that cannot reach each other (both behind NATs that do
//! not keep ports, no port mapping): `telebridge relay --meet FIRST-LAST` on a public host. It
//! forwards UDP datagrams between two boxes of one pair; the boxes run their SRT rendezvous
//! through it, end to end. So the relay sees the two boxes' public addresses, the size and
//! timing of their packets and SRT's headers (sequence numbers, acknowledgements); it cannot see
//! the picture or the sound, encrypted with the pair's AES-256 passphrase, which it never has.
//!
//! Each pair uses two ports its pair id picks in the range (box A talks to the first, box B to
//! the second: each box must see its peer at an address of its own, since SRT's rendezvous
//! cookie is made from it). A box takes a place by saying the token of the pair and the
//! rendezvous slot ([`MeetHello`]); the relay forwards only between the two places of one
//! token, so a stranger who sends to every port first holds nothing (issue 36, finding 8).
//!
//! Against strangers (issue 57, findings 3 and 6):
//! - a hello is answered with a cookie (a keyed hash of the address, the port and the hello),
//!   and only a confirmation carrying it takes a place: an address that does not receive there
//!   (a spoofed one) takes none, and nothing is kept or counted for a hello;
//! - a hello names its slot, and one more than a slot away from the relay's clock is refused: a
//!   hello seen once is worth its slot alone;
//! - a pair whose two places are filled with traffic flowing between them is never evicted
//!   (not by a newcomer saying its token, nor to make room);
//! - confirmations are rate-limited per address (IPv6 per /64) and per /24, places are bounded
//!   per address and per /24, and a full table gives up the oldest idle place of the /24 (or
//!   /64) holding most.
//!
//! Pure: (places, datagram, now, the Unix clock) -> what to do with it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

pub use telebridge_config::{MeetHello, MeetToken};

/// A box that sent nothing for this long gives its place up.
pub const IDLE: Duration = Duration::from_secs(10);
/// Places one address (an IPv6 /64) may hold at once: boxes of several pairs behind one NAT,
/// each holding one place.
pub const PER_SOURCE: usize = 8;
/// Places one /24 (an IPv6 /64) may hold at once.
pub const PER_PREFIX: usize = 32;
/// Places on one port pair at once (pairs whose ids pick the same ports share them).
pub const MAX_PLACES: usize = 512;
/// Confirmations an address may send at once; then one each [`HELLO_EVERY`] (a box says one
/// per rendezvous attempt, one each 40 s slot).
pub const HELLO_BURST: f64 = 6.0;
/// The rate confirmations come back at, per address.
pub const HELLO_EVERY: Duration = Duration::from_secs(2);
/// Confirmations a /24 may send at once; then one each [`PREFIX_EVERY`].
pub const PREFIX_BURST: f64 = 48.0;
/// The rate they come back at, per /24.
pub const PREFIX_EVERY: Duration = Duration::from_millis(250);
/// Addresses and prefixes whose confirmations are counted at once; one beyond them waits until
/// some are forgotten (each is forgotten once its count is full again).
pub const MAX_SOURCES: usize = 4096;
/// Traffic between a pair's two places within this long: the pair is flowing, and keeps its
/// places whatever newcomers say.
pub const FLOWING: Duration = Duration::from_secs(2);
/// Slots a hello may be away from the relay's clock (clocks set by NTP; a hello is said a few
/// seconds before its slot).
pub const SLOT_SKEW: u64 = 1;

/// A slot's token: the pair's, for one rendezvous slot.
type SlotToken = [u8; 16];

/// What to do with a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meet {
    /// Send it from the other port of the pair to this address.
    Forward(SocketAddr),
    /// A hello: answer the sender this cookie, from the port it came to.
    Cookie([u8; MeetHello::COOKIE_LEN]),
    /// A confirmation took or renewed a place (`again`: the same address said the same token on
    /// the same port before); `peer` is the other box of the pair, if it has its place.
    Welcomed { peer: Option<SocketAddr>, again: bool },
    /// A box's datagram while the other box of its pair has no place yet.
    Waiting,
    /// Dropped, and why.
    Dropped(Drop),
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// From an address that said no token (or whose place lapsed).
    NoPlace,
    /// A confirmation over its address's or its /24's rate.
    TooManyHellos,
    /// A confirmation from an address or /24 holding its most places.
    SourceFull,
    /// A hello for a slot too far from the relay's clock.
    Stale,
    /// A confirmation whose cookie is not the relay's for its address.
    BadCookie,
    /// The token's place is held by a pair with traffic flowing.
    Taken,
    /// A hello of the first version (no slot, no cookie): a box older than the relay.
    OldHello,
}

#[derive(Debug, Clone, Copy)]
struct Place {
    token: SlotToken,
    side: usize,
    last: Instant,
    /// When it last had a datagram forwarded to the other place.
    forwarded: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    hellos: f64,
    at: Instant,
}

impl Bucket {
    /// Refills at one per `every` up to `burst`, then takes one if it has it.
    fn take(&mut self, now: Instant, burst: f64, every: Duration) -> bool {
        let back = now.saturating_duration_since(self.at).as_secs_f64() / every.as_secs_f64();
        *self = Bucket { hellos: (self.hellos + back).min(burst), at: now };
        if self.hellos < 1.0 {
            return false;
        }
        self.hellos -= 1.0;
        true
    }

    fn full(&self, now: Instant, burst: f64, every: Duration) -> bool {
        self.hellos + now.saturating_duration_since(self.at).as_secs_f64() / every.as_secs_f64() >= burst
    }
}

/// The places of one port pair.
#[derive(Debug)]
pub struct Meeting {
    key: [u8; 32],
    places: HashMap<SocketAddr, Place>,
    by_token: HashMap<(SlotToken, usize), SocketAddr>,
    by_address: HashMap<IpAddr, Bucket>,
    by_prefix: HashMap<IpAddr, Bucket>,
}

/// Who counts as one address: an IPv4 address, an IPv6 /64.
fn source(a: &SocketAddr) -> IpAddr {
    match a.ip() {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED)),
        v4 => v4,
    }
}

/// Who counts as one network: an IPv4 /24, an IPv6 /64.
fn prefix(a: &SocketAddr) -> IpAddr {
    match source(a) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], 0))
        }
        v6 => v6,
    }
}

impl Meeting {
    /// An empty meeting whose cookies are keyed by `key` (random, made at the relay's start).
    pub fn new(key: [u8; 32]) -> Self {
        Meeting {
            key,
            places: HashMap::new(),
            by_token: HashMap::new(),
            by_address: HashMap::new(),
            by_prefix: HashMap::new(),
        }
    }

    /// A datagram `d` on port `side` (0 or 1) from `from` at `now`, `unix_ms` on the Unix clock.
    pub fn on_datagram(&mut self, side: usize, from: SocketAddr, d: &[u8], now: Instant, unix_ms: u64) -> Meet {
        let side = side.min(1);
        if let Some(hello) = MeetHello::read(d) {
            return self.on_hello(side, from, hello, now, unix_ms);
        }
        if MeetHello::is_old(d) {
            return Meet::Dropped(Drop::OldHello);
        }
        let Some(place) = self.places.get_mut(&from).filter(|p| p.side == side) else {
            return Meet::Dropped(Drop::NoPlace);
        };
        if now.saturating_duration_since(place.last) > IDLE {
            return Meet::Dropped(Drop::NoPlace);
        }
        place.last = now;
        let token = place.token;
        match self.peer(token, side, now) {
            Some(to) => {
                if let Some(p) = self.places.get_mut(&from) {
                    p.forwarded = Some(now);
                }
                Meet::Forward(to)
            }
            None => Meet::Waiting,
        }
    }

    fn on_hello(&mut self, side: usize, from: SocketAddr, hello: MeetHello, now: Instant, unix_ms: u64) -> Meet {
        if hello.slot.abs_diff(telebridge_config::meet_slot(unix_ms)) > SLOT_SKEW {
            return Meet::Dropped(Drop::Stale);
        }
        let cookie = self.cookie(side, from, &hello);
        match hello.cookie {
            None => Meet::Cookie(MeetHello::cookie_datagram(&cookie)),
            Some(c) if ct_eq(&c, &cookie) => self.confirmed(side, from, hello.token, now),
            Some(_) => Meet::Dropped(Drop::BadCookie),
        }
    }

    /// The cookie for a hello from `from` on port `side`: HMAC-SHA256 under the relay's key.
    fn cookie(&self, side: usize, from: SocketAddr, hello: &MeetHello) -> [u8; 16] {
        use hmac::{Hmac, Mac};
        let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        m.update(b"telebridge meeting point cookie\0");
        match from.ip() {
            IpAddr::V4(v4) => m.update(&v4.octets()),
            IpAddr::V6(v6) => m.update(&v6.octets()),
        }
        m.update(&from.port().to_be_bytes());
        m.update(&[side as u8]);
        m.update(&hello.slot.to_be_bytes());
        m.update(&hello.token);
        let mut c = [0u8; 16];
        c.copy_from_slice(&m.finalize().into_bytes()[..16]);
        c
    }

    /// The fresh place of the other box of `token`'s pair.
    fn peer(&self, token: SlotToken, side: usize, now: Instant) -> Option<SocketAddr> {
        let to = *self.by_token.get(&(token, 1 - side))?;
        self.places.get(&to).filter(|p| now.saturating_duration_since(p.last) <= IDLE).map(|_| to)
    }

    /// Whether the place at `addr` belongs to a pair with traffic flowing both ways.
    fn flowing(&self, addr: &SocketAddr, now: Instant) -> bool {
        let fresh = |p: &Place| p.forwarded.is_some_and(|t| now.saturating_duration_since(t) <= FLOWING);
        let Some(p) = self.places.get(addr) else { return false };
        let other = self.by_token.get(&(p.token, 1 - p.side)).and_then(|a| self.places.get(a));
        fresh(p) && other.is_some_and(fresh)
    }

    fn confirmed(&mut self, side: usize, from: SocketAddr, token: SlotToken, now: Instant) -> Meet {
        let (src, net) = (source(&from), prefix(&from));
        let counted = |m: &HashMap<IpAddr, Bucket>, k: &IpAddr| m.contains_key(k) || m.len() < MAX_SOURCES;
        if !counted(&self.by_address, &src) || !counted(&self.by_prefix, &net) {
            self.forget_idle(now);
            if !counted(&self.by_address, &src) || !counted(&self.by_prefix, &net) {
                return Meet::Dropped(Drop::TooManyHellos);
            }
        }
        let fresh = Bucket { hellos: HELLO_BURST, at: now };
        let by_address = self.by_address.entry(src).or_insert(fresh).take(now, HELLO_BURST, HELLO_EVERY);
        let fresh = Bucket { hellos: PREFIX_BURST, at: now };
        if !by_address || !self.by_prefix.entry(net).or_insert(fresh).take(now, PREFIX_BURST, PREFIX_EVERY) {
            return Meet::Dropped(Drop::TooManyHellos);
        }
        self.forget_idle(now);
        let again = self.places.get(&from).is_some_and(|p| p.token == token && p.side == side);
        // The token's holder at another address gives way (the box again, from a new public
        // port), unless its pair is flowing: then the newcomer is not the box.
        if let Some(old) = self.by_token.get(&(token, side)).copied().filter(|a| *a != from) {
            if self.flowing(&old, now) {
                return Meet::Dropped(Drop::Taken);
            }
            self.leave(&old);
        }
        // This address's old place (another token or port) gives way.
        if !again {
            self.leave(&from);
        }
        if !again {
            let held = |f: fn(&SocketAddr) -> IpAddr, k: IpAddr| self.places.keys().filter(|a| f(a) == k).count();
            if held(source, src) >= PER_SOURCE || held(prefix, net) >= PER_PREFIX {
                return Meet::Dropped(Drop::SourceFull);
            }
            if self.places.len() >= MAX_PLACES && !self.shed_heaviest(now) {
                return Meet::Dropped(Drop::SourceFull);
            }
        }
        let forwarded = self.places.get(&from).and_then(|p| p.forwarded).filter(|_| again);
        self.places.insert(from, Place { token, side, last: now, forwarded });
        self.by_token.insert((token, side), from);
        Meet::Welcomed { peer: self.peer(token, side, now), again }
    }

    fn leave(&mut self, addr: &SocketAddr) {
        if let Some(p) = self.places.remove(addr) {
            if self.by_token.get(&(p.token, p.side)) == Some(addr) {
                self.by_token.remove(&(p.token, p.side));
            }
        }
    }

    fn forget_idle(&mut self, now: Instant) {
        let idle: Vec<SocketAddr> =
            self.places.iter().filter(|(_, p)| now.saturating_duration_since(p.last) > IDLE).map(|(a, _)| *a).collect();
        for a in idle {
            self.leave(&a);
        }
        // A bucket full again is as good as none.
        self.by_address.retain(|_, b| !b.full(now, HELLO_BURST, HELLO_EVERY));
        self.by_prefix.retain(|_, b| !b.full(now, PREFIX_BURST, PREFIX_EVERY));
    }

    /// The table is full: the /24 (or /64) holding most gives up its oldest place of a pair
    /// that is not flowing. `false` when every place is a flowing pair's.
    fn shed_heaviest(&mut self, now: Instant) -> bool {
        let movable: Vec<(SocketAddr, Instant)> =
            self.places.iter().filter(|(a, _)| !self.flowing(a, now)).map(|(a, p)| (*a, p.last)).collect();
        let mut count: HashMap<IpAddr, usize> = HashMap::new();
        for (a, _) in &movable {
            *count.entry(prefix(a)).or_default() += 1;
        }
        let Some((heaviest, _)) = count.into_iter().max_by_key(|(_, n)| *n) else {
            return false;
        };
        let oldest =
            movable.iter().filter(|(a, _)| prefix(a) == heaviest).min_by_key(|(_, last)| *last).map(|(a, _)| *a);
        match oldest {
            Some(a) => {
                self.leave(&a);
                true
            }
            None => false,
        }
    }

    /// How many places are held.
    pub fn places(&self) -> usize {
        self.places.len()
    }
}

fn ct_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A port range `FIRST-LAST` with an even number of ports (two per pair).
pub fn parse_ports(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("{s:?} is not FIRST-LAST with an even number of ports, two per pair (e.g. 7800-7815)");
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let (a, b): (u16, u16) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a == 0 || b <= a || b - a > 1023 || (b - a) % 2 == 0 {
        return Err(bad());
    }
    Ok((a, b))
}

/// The relay port box `side` (0: the box that showed the code, 1: the other) of pair `pair_id`
/// talks to, in `first..=last`.
pub fn port_for(pair_id: &str, side: usize, first: u16, last: u16) -> u16 {
    let pairs = u64::from(last - first).div_ceil(2);
    let h = pair_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    first + 2 * (h % pairs.max(1)) as u16 + side.min(1) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn t(n: u8) -> MeetToken {
        MeetToken([n; 16])
    }

    /// The Unix clock in the tests (ms).
    const UNIX: u64 = 1_765_000_000_000;
    const MEET_SLOT_MS: u64 = telebridge_config::MEET_SLOT_SECS * 1000;

    fn meeting() -> Meeting {
        Meeting::new([1; 32])
    }

    /// A box's whole exchange: its hello, the relay's cookie, its confirmation; the answer to
    /// that (or to the hello, if it was not a cookie).
    fn say(m: &mut Meeting, side: usize, from: SocketAddr, key: MeetToken, now: Instant) -> Meet {
        let hello = key.hello(telebridge_config::meet_slot(UNIX));
        let answer = m.on_datagram(side, from, &hello.to_bytes(), now, UNIX);
        let Meet::Cookie(c) = answer else { return answer };
        let cookie = MeetHello::cookie_from(&c).expect("a cookie");
        m.on_datagram(side, from, &MeetHello { cookie: Some(cookie), ..hello }.to_bytes(), now, UNIX)
    }

    #[test]
    fn the_relay_forwards_only_between_the_two_places_of_one_token() {
        let t0 = Instant::now();
        let (box_a, box_b, stranger) = (a("198.20.0.1:7700"), a("198.20.0.2:40001"), a("203.0.113.9:5"));
        let mut m = meeting();
        // A stranger who sends first holds nothing, on either port.
        assert_eq!(m.on_datagram(0, stranger, b"hold", t0, UNIX), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(1, stranger, b"hold", t0, UNIX), Meet::Dropped(Drop::NoPlace));
        assert_eq!(say(&mut m, 0, box_a, t(1), t0), Meet::Welcomed { peer: None, again: false });
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0, UNIX), Meet::Waiting, "alone: nowhere to go yet");
        assert_eq!(say(&mut m, 0, box_a, t(1), t0), Meet::Welcomed { peer: None, again: true });
        assert_eq!(say(&mut m, 1, box_b, t(1), t0), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(1, box_b, b"srt", t0, UNIX), Meet::Forward(box_a));
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0, UNIX), Meet::Forward(box_b));
        // The stranger's hello of another token takes a place of its own, and gets nothing of theirs.
        assert_eq!(say(&mut m, 1, stranger, t(9), t0), Meet::Welcomed { peer: None, again: false });
        assert_eq!(m.on_datagram(1, stranger, b"x", t0, UNIX), Meet::Waiting);
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0, UNIX), Meet::Forward(box_b), "B keeps its place");
        // A box's datagram on the wrong port is not its own.
        assert_eq!(m.on_datagram(1, box_a, b"srt", t0, UNIX), Meet::Dropped(Drop::NoPlace));
        // B goes quiet; after IDLE it has no place, and comes back from a new port with a hello.
        let later = t0 + IDLE + Duration::from_millis(1);
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0 + IDLE, UNIX), Meet::Forward(box_b));
        assert_eq!(m.on_datagram(1, box_b, b"srt", later, UNIX), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(0, box_a, b"srt", later, UNIX), Meet::Waiting);
        let b2 = a("198.20.0.2:40777");
        assert_eq!(say(&mut m, 1, b2, t(1), later), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(0, box_a, b"srt", later, UNIX), Meet::Forward(b2));
        // The token's holder moving to a new port takes its place from the old one at once.
        let b3 = a("198.20.0.2:40999");
        assert_eq!(say(&mut m, 1, b3, t(1), later), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(1, b2, b"srt", later, UNIX), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(0, box_a, b"srt", later, UNIX), Meet::Forward(b3));
        // Once traffic flows both ways, a newcomer saying the token (a copy of the hello) takes
        // nothing; when it stops flowing, the box from a new port is believed again.
        assert_eq!(m.on_datagram(1, b3, b"srt", later, UNIX), Meet::Forward(box_a));
        let copy = a("203.0.113.66:1");
        assert_eq!(say(&mut m, 1, copy, t(1), later), Meet::Dropped(Drop::Taken));
        assert_eq!(m.on_datagram(0, box_a, b"srt", later, UNIX), Meet::Forward(b3));
        let quiet = later + FLOWING + Duration::from_millis(1);
        assert_eq!(say(&mut m, 1, copy, t(1), quiet), Meet::Welcomed { peer: Some(box_a), again: false });
    }

    #[test]
    fn a_hello_takes_no_place_until_its_address_answers_the_cookie() {
        // Issue 57, finding 3: 4100 addresses, six hellos each, that never read the answer (as
        // spoofed sources): nothing kept, nothing counted; the real pair meets.
        let t0 = Instant::now();
        let mut m = meeting();
        let slot = telebridge_config::meet_slot(UNIX);
        for i in 0..4100u32 {
            let from = a(&format!("10.{}.{}.{}:4000", (i >> 16) & 255, (i >> 8) & 255, i & 255));
            for _ in 0..6 {
                let got = m.on_datagram(0, from, &t((i % 250) as u8).hello(slot).to_bytes(), t0, UNIX);
                assert!(matches!(got, Meet::Cookie(_)), "{got:?}");
            }
        }
        assert_eq!((m.places(), m.by_address.len(), m.by_prefix.len()), (0, 0, 0));
        let (box_a, box_b) = (a("198.20.0.1:7700"), a("198.20.0.2:40001"));
        assert_eq!(say(&mut m, 0, box_a, t(251), t0), Meet::Welcomed { peer: None, again: false });
        assert_eq!(say(&mut m, 1, box_b, t(251), t0), Meet::Welcomed { peer: Some(box_a), again: false });
        // A confirmation from another address than the cookie's, or with another slot's cookie,
        // is refused.
        let hello = t(7).hello(slot);
        let Meet::Cookie(c) = m.on_datagram(0, box_a, &hello.to_bytes(), t0, UNIX) else { panic!() };
        let confirm = MeetHello { cookie: MeetHello::cookie_from(&c), ..hello };
        assert_eq!(
            m.on_datagram(0, a("203.0.113.5:7700"), &confirm.to_bytes(), t0, UNIX),
            Meet::Dropped(Drop::BadCookie)
        );
        assert_eq!(m.on_datagram(1, box_a, &confirm.to_bytes(), t0, UNIX), Meet::Dropped(Drop::BadCookie));
        let next = MeetHello { slot: slot + 1, token: t(7).for_slot(slot + 1), ..confirm };
        assert_eq!(m.on_datagram(0, box_a, &next.to_bytes(), t0, UNIX), Meet::Dropped(Drop::BadCookie));
    }

    #[test]
    fn a_hello_is_worth_its_slot_alone() {
        // Issue 57, finding 6: a hello seen once was the box's token for good.
        let t0 = Instant::now();
        let mut m = meeting();
        let slot = telebridge_config::meet_slot(UNIX);
        let copy = t(3).hello(slot);
        let later = UNIX + 2 * MEET_SLOT_MS;
        assert_eq!(m.on_datagram(0, a("203.0.113.66:1"), &copy.to_bytes(), t0, later), Meet::Dropped(Drop::Stale));
        let early = UNIX - 2 * MEET_SLOT_MS;
        assert_eq!(m.on_datagram(0, a("203.0.113.66:1"), &copy.to_bytes(), t0, early), Meet::Dropped(Drop::Stale));
        // Within a slot of the relay's clock either way, it is answered.
        for unix in [UNIX - MEET_SLOT_MS, UNIX, UNIX + MEET_SLOT_MS] {
            assert!(matches!(m.on_datagram(0, a("198.20.0.1:1"), &copy.to_bytes(), t0, unix), Meet::Cookie(_)));
        }
        // The first version's hello (no slot, no cookie) is not one.
        let mut old = b"TBMEET\x01\x00".to_vec();
        old.extend_from_slice(&[3; 16]);
        assert_eq!(m.on_datagram(0, a("198.20.0.1:1"), &old, t0, UNIX), Meet::Dropped(Drop::OldHello));
    }

    #[test]
    fn a_flowing_pair_keeps_its_places_when_the_table_fills() {
        // Issue 57, finding 3: each of 1000 addresses holding one place, so "the heaviest gives
        // way" picked at random, and evicted the real pair. Now they answer their cookies, and
        // still do not.
        let t0 = Instant::now();
        let mut m = meeting();
        let (box_a, box_b) = (a("198.20.0.1:7700"), a("198.20.0.2:40001"));
        say(&mut m, 0, box_a, t(251), t0);
        say(&mut m, 1, box_b, t(251), t0);
        let mut at = t0;
        for i in 0..1000u32 {
            at = t0 + Duration::from_millis(u64::from(i));
            let from = a(&format!("10.{}.{}.1:4000", i / 250, i % 250));
            say(&mut m, (i % 2) as usize, from, MeetToken(i.to_be_bytes().repeat(4).try_into().unwrap()), at);
            if i % 100 == 0 {
                assert_eq!(m.on_datagram(0, box_a, b"srt", at, UNIX), Meet::Forward(box_b));
                assert_eq!(m.on_datagram(1, box_b, b"srt", at, UNIX), Meet::Forward(box_a));
            }
        }
        assert!(m.places() <= MAX_PLACES);
        assert_eq!(m.on_datagram(0, box_a, b"srt", at, UNIX), Meet::Forward(box_b));
        assert_eq!(m.on_datagram(1, box_b, b"srt", at, UNIX), Meet::Forward(box_a));
    }

    #[test]
    fn a_source_that_floods_hellos_is_held_to_its_rate_and_its_share_of_places() {
        let t0 = Instant::now();
        let mut m = meeting();
        let answers: Vec<Meet> =
            (0..100u8).map(|i| say(&mut m, 0, a(&format!("203.0.113.9:{}", 1000 + u16::from(i))), t(i), t0)).collect();
        let welcomed = answers.iter().filter(|x| matches!(x, Meet::Welcomed { .. })).count();
        assert_eq!(welcomed, HELLO_BURST as usize, "{answers:?}");
        assert!(answers[HELLO_BURST as usize..].iter().all(|x| *x == Meet::Dropped(Drop::TooManyHellos)));
        // Over time, one hello each HELLO_EVERY, up to PER_SOURCE places; the owner still meets.
        // Places last while their boxes send.
        let mut at = t0;
        let mut last = Meet::Waiting;
        for i in 100..120u8 {
            at += HELLO_EVERY;
            for k in 0..i {
                m.on_datagram(0, a(&format!("203.0.113.9:{}", 1000 + u16::from(k))), b"keep", at, UNIX);
            }
            last = say(&mut m, 0, a(&format!("203.0.113.9:{}", 1000 + u16::from(i))), t(i), at);
        }
        assert_eq!((m.places(), last), (PER_SOURCE, Meet::Dropped(Drop::SourceFull)));
        assert_eq!(say(&mut m, 0, a("198.20.0.1:7700"), t(200), at), Meet::Welcomed { peer: None, again: false });
        assert_eq!(
            say(&mut m, 1, a("198.20.0.2:7700"), t(200), at),
            Meet::Welcomed { peer: Some(a("198.20.0.1:7700")), again: false }
        );
        // IPv6 counts per /64: another address of the same /64 is the same source.
        let mut m = meeting();
        for i in 0..HELLO_BURST as u16 {
            say(&mut m, 0, a(&format!("[2001:db8:1:2::{i:x}]:9")), t(i as u8), t0);
        }
        assert_eq!(say(&mut m, 0, a("[2001:db8:1:2::ff]:9"), t(99), t0), Meet::Dropped(Drop::TooManyHellos));
        assert!(matches!(say(&mut m, 0, a("[2001:db8:1:3::1]:9"), t(99), t0), Meet::Welcomed { .. }));
    }

    #[test]
    fn a_full_table_gives_up_the_oldest_place_of_the_source_holding_most() {
        let t0 = Instant::now();
        let mut m = meeting();
        // MAX_PLACES sources of one place each, then one with PER_SOURCE - 1 more places.
        let mut i = 0u32;
        let addr = |i: u32| a(&format!("10.{}.{}.1:9", (i >> 8) & 255, i & 255));
        while m.places() < MAX_PLACES - (PER_SOURCE - 1) {
            say(&mut m, 0, addr(i), MeetToken(i.to_be_bytes().repeat(4).try_into().unwrap()), t0);
            i += 1;
        }
        let heavy = |k: u16| a(&format!("203.0.113.9:{}", 2000 + k));
        for k in 0..(PER_SOURCE - 1) as u16 {
            // The burst, then one more a HELLO_EVERY later; all within IDLE.
            let at = if k < HELLO_BURST as u16 {
                t0 + Duration::from_millis(u64::from(k))
            } else {
                t0 + HELLO_EVERY + Duration::from_millis(10)
            };
            say(&mut m, 1, heavy(k), t(k as u8), at);
        }
        assert_eq!(m.places(), MAX_PLACES);
        let at = t0 + HELLO_EVERY * 2;
        assert!(matches!(say(&mut m, 0, a("198.20.0.1:7700"), t(250), at), Meet::Welcomed { .. }));
        assert_eq!(m.places(), MAX_PLACES);
        assert_eq!(
            m.on_datagram(1, heavy(0), b"x", at, UNIX),
            Meet::Dropped(Drop::NoPlace),
            "the heaviest's oldest gave way"
        );
        assert_eq!(m.on_datagram(1, heavy(1), b"x", at, UNIX), Meet::Waiting);
    }

    proptest::proptest! {
        /// Whatever strangers send, in any order: a datagram goes only to an address whose last
        /// hello said the sender's token on the other port, and the places stay within bounds.
        #[test]
        fn a_datagram_goes_only_to_the_other_box_of_its_token(
            ops in proptest::collection::vec((0usize..2, 0u16..40, proptest::option::of(0u8..4), 0u64..3000), 1..400)
        ) {
            let t0 = Instant::now();
            let mut now = t0;
            let mut m = meeting();
            let mut said: HashMap<SocketAddr, (MeetToken, usize)> = HashMap::new();
            for (side, who, token, step_ms) in ops {
                now += Duration::from_millis(step_ms);
                // Forty addresses on five sources.
                let from = a(&format!("198.51.100.{}:{}", who % 5, 1000 + who));
                let got = match token {
                    Some(k) => say(&mut m, side, from, t(k), now),
                    None => m.on_datagram(side, from, b"srt", now, UNIX),
                };
                if let Some(k) = token {
                    if matches!(got, Meet::Welcomed { .. }) {
                        said.insert(from, (t(k), side));
                    }
                }
                if let Meet::Forward(to) | Meet::Welcomed { peer: Some(to), .. } = got {
                    let (mine, theirs) = (said.get(&from), said.get(&to));
                    proptest::prop_assert!(
                        mine.zip(theirs).is_some_and(|((tm, sm), (tt, st))| tm == tt && sm == &side && st == &(1 - side)),
                        "{from} (said {mine:?}) to {to} (said {theirs:?})"
                    );
                }
                proptest::prop_assert!(m.places() <= MAX_PLACES);
                let mut per: HashMap<IpAddr, usize> = HashMap::new();
                for p in m.places.keys() {
                    *per.entry(source(p)).or_default() += 1;
                }
                proptest::prop_assert!(per.values().all(|n| *n <= PER_SOURCE), "{per:?}");
            }
        }
    }

    #[test]
    fn ports_and_ranges() {
        assert_eq!(parse_ports("7800-7815"), Ok((7800, 7815)));
        for bad in ["", "x", "7800", "7815-7800", "0-9", "7800-7802", "1-2000"] {
            assert!(parse_ports(bad).unwrap_err().contains("is not FIRST-LAST"), "{bad}");
        }
        let (pa, pb) = (port_for("8f44878c6147d320", 0, 7800, 7815), port_for("8f44878c6147d320", 1, 7800, 7815));
        assert!((7800..=7815).contains(&pa) && pa % 2 == 0 && pb == pa + 1, "{pa} {pb}");
        assert_eq!(port_for("anything", 1, 7800, 7801), 7801);
    }
}
