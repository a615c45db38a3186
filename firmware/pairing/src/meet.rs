//! The meeting point of two paired boxes that cannot reach each other (both behind NATs that do
//! not keep ports, no port mapping): `telebridge relay --meet FIRST-LAST` on a public host. It
//! forwards UDP datagrams between two boxes of one pair; the boxes run their SRT rendezvous
//! through it, end to end. So the relay sees the two boxes' public addresses, the size and
//! timing of their packets and SRT's headers (sequence numbers, acknowledgements); it cannot see
//! the picture or the sound, encrypted with the pair's AES-256 passphrase, which it never has.
//!
//! Each pair uses two ports its pair id picks in the range (box A talks to the first, box B to
//! the second: each box must see its peer at an address of its own, since SRT's rendezvous
//! cookie is made from it). A box takes a place by a hello saying the pair's token
//! ([`MeetToken`], derived from the pair key); the relay forwards only between the two places of
//! one token, so a stranger who sends to every port first holds nothing (issue 36, finding 8:
//! before, the first two addresses to send held a port pair). Hellos are rate-limited per
//! source address (IPv6 per /64), a source holds at most [`PER_SOURCE`] places, and a full
//! table gives up the oldest place of the source holding most.
//! Pure: (places, datagram, now) -> what to do with it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

pub use telebridge_config::MeetToken;

/// A box that sent nothing for this long gives its place up.
pub const IDLE: Duration = Duration::from_secs(10);
/// Places one source address (an IPv6 /64) may hold at once: boxes of several pairs behind one
/// NAT, each holding one place.
pub const PER_SOURCE: usize = 8;
/// Places on one port pair at once (pairs whose ids pick the same ports share them).
pub const MAX_PLACES: usize = 512;
/// Hellos a source may send at once; then one each [`HELLO_EVERY`] (a box says one per
/// rendezvous attempt, one each 40 s slot).
pub const HELLO_BURST: f64 = 6.0;
/// The rate hellos come back at, per source.
pub const HELLO_EVERY: Duration = Duration::from_secs(2);
/// Sources whose hellos are counted at once; a hello of another source beyond them waits until
/// some are forgotten (each is forgotten once its count is full again, within 12 s).
pub const MAX_SOURCES: usize = 4096;

/// What to do with a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meet {
    /// Send it from the other port of the pair to this address.
    Forward(SocketAddr),
    /// A hello took or renewed a place (`again`: the same address said the same token on the
    /// same port before); `peer` is the other box of the pair, if it has its place.
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
    /// A hello over its source's rate.
    TooManyHellos,
    /// A hello from a source holding [`PER_SOURCE`] places.
    SourceFull,
}

#[derive(Debug, Clone, Copy)]
struct Place {
    token: MeetToken,
    side: usize,
    last: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    hellos: f64,
    at: Instant,
}

/// The places of one port pair.
#[derive(Debug, Default)]
pub struct Meeting {
    places: HashMap<SocketAddr, Place>,
    by_token: HashMap<(MeetToken, usize), SocketAddr>,
    buckets: HashMap<IpAddr, Bucket>,
}

/// Who counts as one source: an IPv4 address, an IPv6 /64.
fn source(a: &SocketAddr) -> IpAddr {
    match a.ip() {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED)),
        v4 => v4,
    }
}

impl Meeting {
    /// A datagram `d` on port `side` (0 or 1) from `from` at `now`.
    pub fn on_datagram(&mut self, side: usize, from: SocketAddr, d: &[u8], now: Instant) -> Meet {
        let side = side.min(1);
        if let Some(token) = MeetToken::from_hello(d) {
            return self.hello(side, from, token, now);
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
            Some(to) => Meet::Forward(to),
            None => Meet::Waiting,
        }
    }

    /// The fresh place of the other box of `token`'s pair.
    fn peer(&self, token: MeetToken, side: usize, now: Instant) -> Option<SocketAddr> {
        let to = *self.by_token.get(&(token, 1 - side))?;
        self.places.get(&to).filter(|p| now.saturating_duration_since(p.last) <= IDLE).map(|_| to)
    }

    fn hello(&mut self, side: usize, from: SocketAddr, token: MeetToken, now: Instant) -> Meet {
        let src = source(&from);
        if self.buckets.len() >= MAX_SOURCES && !self.buckets.contains_key(&src) {
            self.forget_idle(now);
            if self.buckets.len() >= MAX_SOURCES {
                return Meet::Dropped(Drop::TooManyHellos);
            }
        }
        let b = self.buckets.entry(src).or_insert(Bucket { hellos: HELLO_BURST, at: now });
        let back = now.saturating_duration_since(b.at).as_secs_f64() / HELLO_EVERY.as_secs_f64();
        *b = Bucket { hellos: (b.hellos + back).min(HELLO_BURST), at: now };
        if b.hellos < 1.0 {
            return Meet::Dropped(Drop::TooManyHellos);
        }
        b.hellos -= 1.0;
        self.forget_idle(now);
        let again = self.places.get(&from).is_some_and(|p| p.token == token && p.side == side);
        // This address's old place (another token or port) and the token's old holder (the box
        // again, from a new public port) give way.
        self.leave(&from);
        if let Some(old) = self.by_token.get(&(token, side)).copied() {
            self.leave(&old);
        }
        let held = self.places.keys().filter(|a| source(a) == src).count();
        if held >= PER_SOURCE {
            return Meet::Dropped(Drop::SourceFull);
        }
        if self.places.len() >= MAX_PLACES {
            self.shed_heaviest();
        }
        self.places.insert(from, Place { token, side, last: now });
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
        self.buckets.retain(|_, b| {
            let back = now.saturating_duration_since(b.at).as_secs_f64() / HELLO_EVERY.as_secs_f64();
            b.hellos + back < HELLO_BURST
        });
    }

    /// The table is full: the source holding most gives up its oldest place.
    fn shed_heaviest(&mut self) {
        let mut count: HashMap<IpAddr, usize> = HashMap::new();
        for a in self.places.keys() {
            *count.entry(source(a)).or_default() += 1;
        }
        let Some((heaviest, _)) = count.into_iter().max_by_key(|(_, n)| *n) else {
            return;
        };
        let oldest =
            self.places.iter().filter(|(a, _)| source(a) == heaviest).min_by_key(|(_, p)| p.last).map(|(a, _)| *a);
        if let Some(a) = oldest {
            self.leave(&a);
        }
    }

    /// How many places are held.
    pub fn places(&self) -> usize {
        self.places.len()
    }
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

    #[test]
    fn the_relay_forwards_only_between_the_two_places_of_one_token() {
        let t0 = Instant::now();
        let (box_a, box_b, stranger) = (a("198.20.0.1:7700"), a("198.20.0.2:40001"), a("203.0.113.9:5"));
        let mut m = Meeting::default();
        // A stranger who sends first holds nothing, on either port.
        assert_eq!(m.on_datagram(0, stranger, b"hold", t0), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(1, stranger, b"hold", t0), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(0, box_a, &t(1).hello(), t0), Meet::Welcomed { peer: None, again: false });
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0), Meet::Waiting, "alone: nowhere to go yet");
        assert_eq!(m.on_datagram(0, box_a, &t(1).hello(), t0), Meet::Welcomed { peer: None, again: true });
        assert_eq!(m.on_datagram(1, box_b, &t(1).hello(), t0), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(1, box_b, b"srt", t0), Meet::Forward(box_a));
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0), Meet::Forward(box_b));
        // The stranger's hello of another token takes a place of its own, and gets nothing of theirs.
        assert_eq!(m.on_datagram(1, stranger, &t(9).hello(), t0), Meet::Welcomed { peer: None, again: false });
        assert_eq!(m.on_datagram(1, stranger, b"x", t0), Meet::Waiting);
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0), Meet::Forward(box_b), "B keeps its place");
        // A box's datagram on the wrong port is not its own.
        assert_eq!(m.on_datagram(1, box_a, b"srt", t0), Meet::Dropped(Drop::NoPlace));
        // B goes quiet; after IDLE it has no place, and comes back from a new port with a hello.
        let later = t0 + IDLE + Duration::from_millis(1);
        assert_eq!(m.on_datagram(0, box_a, b"srt", t0 + IDLE), Meet::Forward(box_b));
        assert_eq!(m.on_datagram(1, box_b, b"srt", later), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(0, box_a, b"srt", later), Meet::Waiting);
        let b2 = a("198.20.0.2:40777");
        assert_eq!(m.on_datagram(1, b2, &t(1).hello(), later), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(0, box_a, b"srt", later), Meet::Forward(b2));
        // The token's holder moving to a new port takes its place from the old one at once.
        let b3 = a("198.20.0.2:40999");
        assert_eq!(m.on_datagram(1, b3, &t(1).hello(), later), Meet::Welcomed { peer: Some(box_a), again: false });
        assert_eq!(m.on_datagram(1, b2, b"srt", later), Meet::Dropped(Drop::NoPlace));
        assert_eq!(m.on_datagram(0, box_a, b"srt", later), Meet::Forward(b3));
    }

    #[test]
    fn a_source_that_floods_hellos_is_held_to_its_rate_and_its_share_of_places() {
        let t0 = Instant::now();
        let mut m = Meeting::default();
        let answers: Vec<Meet> = (0..100u8)
            .map(|i| m.on_datagram(0, a(&format!("203.0.113.9:{}", 1000 + u16::from(i))), &t(i).hello(), t0))
            .collect();
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
                m.on_datagram(0, a(&format!("203.0.113.9:{}", 1000 + u16::from(k))), b"keep", at);
            }
            last = m.on_datagram(0, a(&format!("203.0.113.9:{}", 1000 + u16::from(i))), &t(i).hello(), at);
        }
        assert_eq!((m.places(), last), (PER_SOURCE, Meet::Dropped(Drop::SourceFull)));
        assert_eq!(
            m.on_datagram(0, a("198.20.0.1:7700"), &t(200).hello(), at),
            Meet::Welcomed { peer: None, again: false }
        );
        assert_eq!(
            m.on_datagram(1, a("198.20.0.2:7700"), &t(200).hello(), at),
            Meet::Welcomed { peer: Some(a("198.20.0.1:7700")), again: false }
        );
        // IPv6 counts per /64: another address of the same /64 is the same source.
        let mut m = Meeting::default();
        for i in 0..HELLO_BURST as u16 {
            m.on_datagram(0, a(&format!("[2001:db8:1:2::{i:x}]:9")), &t(i as u8).hello(), t0);
        }
        assert_eq!(m.on_datagram(0, a("[2001:db8:1:2::ff]:9"), &t(99).hello(), t0), Meet::Dropped(Drop::TooManyHellos));
        assert!(matches!(m.on_datagram(0, a("[2001:db8:1:3::1]:9"), &t(99).hello(), t0), Meet::Welcomed { .. }));
    }

    #[test]
    fn a_full_table_gives_up_the_oldest_place_of_the_source_holding_most() {
        let t0 = Instant::now();
        let mut m = Meeting::default();
        // MAX_PLACES sources of one place each, then one with PER_SOURCE - 1 more places.
        let mut i = 0u32;
        let addr = |i: u32| a(&format!("10.{}.{}.{}:9", (i >> 16) & 255, (i >> 8) & 255, i & 255));
        while m.places() < MAX_PLACES - (PER_SOURCE - 1) {
            m.on_datagram(0, addr(i), &MeetToken(i.to_be_bytes().repeat(4).try_into().unwrap()).hello(), t0);
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
            m.on_datagram(1, heavy(k), &t(k as u8).hello(), at);
        }
        assert_eq!(m.places(), MAX_PLACES);
        let at = t0 + HELLO_EVERY * 2;
        assert!(matches!(m.on_datagram(0, a("198.20.0.1:7700"), &t(250).hello(), at), Meet::Welcomed { .. }));
        assert_eq!(m.places(), MAX_PLACES);
        assert_eq!(
            m.on_datagram(1, heavy(0), b"x", at),
            Meet::Dropped(Drop::NoPlace),
            "the heaviest's oldest gave way"
        );
        assert_eq!(m.on_datagram(1, heavy(1), b"x", at), Meet::Waiting);
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
            let mut m = Meeting::default();
            let mut said: HashMap<SocketAddr, (MeetToken, usize)> = HashMap::new();
            for (side, who, token, step_ms) in ops {
                now += Duration::from_millis(step_ms);
                // Forty addresses on five sources.
                let from = a(&format!("198.51.100.{}:{}", who % 5, 1000 + who));
                let d = match token { Some(k) => t(k).hello().to_vec(), None => b"srt".to_vec() };
                let got = m.on_datagram(side, from, &d, now);
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
