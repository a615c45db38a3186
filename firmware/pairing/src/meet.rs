//! The meeting point of two paired boxes that cannot reach each other (both behind NATs that do
//! not keep ports, no port mapping): `telebridge relay --meet FIRST-LAST` on a public host. It
//! forwards UDP datagrams between the first two addresses that send to one of its ports; the
//! boxes run their SRT rendezvous through it, end to end. So the relay sees the two boxes'
//! public addresses, the size and timing of their packets and SRT's headers (sequence numbers,
//! acknowledgements); it cannot see the picture or the sound, encrypted with the pair's AES-256
//! passphrase, which it never has. Each pair uses the port its pair id picks in the range.
//! Pure: (slots, datagram, now) -> where to forward.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A box that sent nothing for this long gives its place up.
pub const IDLE: Duration = Duration::from_secs(10);

/// Two ports of the relay for one pair: box A talks to the first, box B to the second (each box
/// must see its peer at an address of its own: SRT's rendezvous cookie is made from it, and two
/// boxes seeing the same address collide). What arrives on one port leaves by the other.
#[derive(Debug, Clone, Default)]
pub struct MeetPair {
    holders: [Option<(SocketAddr, Instant)>; 2],
}

impl MeetPair {
    /// A datagram on port `side` (0 or 1) from `from` at `now`: the address to send it to from
    /// the other port, if that port has a box. A second address on a port whose box is fresh
    /// is dropped.
    pub fn on_datagram(&mut self, side: usize, from: SocketAddr, now: Instant) -> Option<SocketAddr> {
        let side = side.min(1);
        for h in &mut self.holders {
            if h.is_some_and(|(_, at)| now.saturating_duration_since(at) > IDLE) {
                *h = None;
            }
        }
        match self.holders[side] {
            Some((a, _)) if a != from => return None,
            _ => self.holders[side] = Some((from, now)),
        }
        self.holders[1 - side].map(|(a, _)| a)
    }

    /// The boxes holding the two ports.
    pub fn holders(&self) -> [Option<SocketAddr>; 2] {
        [self.holders[0].map(|(a, _)| a), self.holders[1].map(|(a, _)| a)]
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

    #[test]
    fn each_box_holds_its_port_a_stranger_is_dropped_and_an_idle_box_gives_its_place_up() {
        let t0 = Instant::now();
        let mut p = MeetPair::default();
        assert_eq!(p.on_datagram(0, a("198.20.0.1:7700"), t0), None, "alone: nowhere to go yet");
        assert_eq!(p.on_datagram(1, a("198.20.0.2:40001"), t0), Some(a("198.20.0.1:7700")));
        assert_eq!(p.on_datagram(0, a("198.20.0.1:7700"), t0), Some(a("198.20.0.2:40001")));
        assert_eq!(p.on_datagram(1, a("203.0.113.9:5"), t0), None, "a stranger on B's port gets nowhere");
        assert_eq!(p.holders(), [Some(a("198.20.0.1:7700")), Some(a("198.20.0.2:40001"))]);
        // B goes quiet; after IDLE its port is free for whoever comes (B again, from a new port).
        let later = t0 + IDLE + Duration::from_millis(1);
        assert_eq!(p.on_datagram(0, a("198.20.0.1:7700"), t0 + IDLE), Some(a("198.20.0.2:40001")));
        assert_eq!(p.on_datagram(1, a("198.20.0.2:40777"), later), Some(a("198.20.0.1:7700")));
        assert_eq!(p.on_datagram(0, a("198.20.0.1:7700"), later), Some(a("198.20.0.2:40777")));
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
