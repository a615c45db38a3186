//! The code a box shows, and who may try it when. A pure state machine: the caller passes the
//! time, the address a try comes from and the fresh code; tests pass virtual time.
//!
//! Each try is one guess at 30 bits (the exchange gives nothing to test offline), so what
//! bounds guessing is how many tries there are, not how often the code changes:
//! - each address (an IPv6 /64 is one: the caller passes the key) has one try at a time and
//!   waits after a wrong one, [`FIRST_WAIT`] doubling to [`MAX_WAIT`]: its own wait, which no
//!   other address shares, so a stranger's guesses never hold the owner's box B back;
//! - [`MAX_EXCHANGES`] tries at once from different addresses, so one stranger cannot hold
//!   the only slot;
//! - a stranger's wrong try leaves the code as it is (burning it let anyone on the network
//!   void the code the owner was typing: issue 36, finding 4); after [`MAX_WRONG`] wrong tries
//!   from anywhere, the code is burnt and pairing closes until the owner opens it again (at
//!   most 30 guesses of 2^30 per opening);
//! - opening pairing again starts afresh: a new code, no waits, no count.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::code::PairingCode;

/// How long a shown code stays valid.
pub const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// An address's wait after its first wrong try; doubled after each further one, up to
/// [`MAX_WAIT`].
pub const FIRST_WAIT: Duration = Duration::from_secs(5);
/// The longest wait between an address's tries.
pub const MAX_WAIT: Duration = Duration::from_secs(5 * 60);
/// Wrong tries from all addresses together after which the code is burnt and pairing closes.
pub const MAX_WRONG: u32 = 30;
/// Tries under way at once (each from its own address).
pub const MAX_EXCHANGES: usize = 4;

/// Why a try is not allowed now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No code is shown (pairing not opened, or the last one was used).
    #[error("this box is not showing a pairing code: open pairing on it first")]
    NoCode,
    /// This address made a wrong try moments ago.
    #[error("too many pairing attempts from this address: try again in {} s", .0.as_secs().max(1))]
    Wait(Duration),
    /// The code is older than [`CODE_LIFETIME`].
    #[error("the pairing code expired: the box shows a new one")]
    Expired,
    /// Too many wrong tries burnt the code; the owner must open pairing again.
    #[error("pairing closed after {MAX_WRONG} wrong tries: open pairing on this box again")]
    Closed,
    /// This address has a try under way, or [`MAX_EXCHANGES`] are.
    #[error("another pairing attempt is under way")]
    Busy,
}

/// An address's wrong tries and how long it waits.
#[derive(Debug, Clone, Copy)]
struct Waits {
    wrong: u32,
    until: Instant,
}

/// The state of the code a box shows.
#[derive(Debug, Clone, Default)]
pub struct CodeGuard {
    shown: Option<(PairingCode, Instant)>,
    /// Wrong tries since the code was shown, from all addresses.
    wrong: u32,
    /// The code was burnt by [`MAX_WRONG`] wrong tries.
    closed: bool,
    waits: HashMap<IpAddr, Waits>,
    trying: Vec<IpAddr>,
}

impl CodeGuard {
    /// Shows `code` from `now` (opening pairing): every wait, count and try is forgotten.
    pub fn show(&mut self, code: PairingCode, now: Instant) {
        *self = Self { shown: Some((code, now)), ..Self::default() };
    }

    /// The code to show, if any and not expired at `now`.
    pub fn shown(&self, now: Instant) -> Option<&PairingCode> {
        self.shown.as_ref().filter(|(_, at)| now.duration_since(*at) < CODE_LIFETIME).map(|(c, _)| c)
    }

    /// Whether [`MAX_WRONG`] wrong tries burnt the code.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// A peer at `from` wants to try the code at `now`: the code to run the exchange with, or
    /// why not.
    pub fn begin(&mut self, from: IpAddr, now: Instant) -> Result<PairingCode, Refusal> {
        if let Some(w) = self.waits.get(&from).filter(|w| w.until > now) {
            return Err(Refusal::Wait(w.until - now));
        }
        if self.closed {
            return Err(Refusal::Closed);
        }
        let Some((code, at)) = &self.shown else { return Err(Refusal::NoCode) };
        if now.duration_since(*at) >= CODE_LIFETIME {
            return Err(Refusal::Expired);
        }
        if self.trying.contains(&from) || self.trying.len() >= MAX_EXCHANGES {
            return Err(Refusal::Busy);
        }
        self.trying.push(from);
        Ok(code.clone())
    }

    /// The try from `from` begun at [`CodeGuard::begin`] failed (a wrong code, or no
    /// confirmation in time): that address waits, and the wrong tries are counted; the
    /// [`MAX_WRONG`]th burns the code. `true` when this one burnt it.
    pub fn failed(&mut self, from: IpAddr, now: Instant) -> bool {
        self.trying.retain(|a| *a != from);
        let w = self.waits.entry(from).or_insert(Waits { wrong: 0, until: now });
        w.wrong += 1;
        w.until = now + FIRST_WAIT.saturating_mul(1 << (w.wrong - 1).min(16)).min(MAX_WAIT);
        self.wrong += 1;
        if self.wrong >= MAX_WRONG && !self.closed {
            self.closed = true;
            self.shown = None;
            return true;
        }
        false
    }

    /// The try succeeded: the code is used up and nothing is shown.
    pub fn succeeded(&mut self) {
        *self = Self::default();
    }

    /// The try from `from` ended before this box sent anything derived from the code (the
    /// peer's hello was no hello): nothing counts. Once this box has answered a hello, its
    /// confirmation lets the peer check one guess: end such a try with [`CodeGuard::failed`]
    /// unless it succeeded.
    pub fn abandoned(&mut self, from: IpAddr) {
        self.trying.retain(|a| *a != from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> PairingCode {
        PairingCode::parse(s).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_wrong_try_makes_its_address_wait_longer_each_time_and_no_other() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let (stranger, owner) = (ip("192.0.2.66"), ip("192.0.2.20"));
        let mut g = CodeGuard::default();
        assert_eq!(g.begin(stranger, t0), Err(Refusal::NoCode));
        g.show(code("AAA-111"), t0);
        assert_eq!(g.begin(stranger, s(1)), Ok(code("AAA-111")));
        assert_eq!(g.begin(stranger, s(1)), Err(Refusal::Busy), "one try at a time from an address");
        assert!(!g.failed(stranger, s(2)));
        assert_eq!(g.shown(s(2)), Some(&code("AAA-111")), "a stranger's wrong try leaves the owner's code");
        assert_eq!(g.begin(stranger, s(3)), Err(Refusal::Wait(Duration::from_secs(4))));
        assert_eq!(g.begin(owner, s(3)), Ok(code("AAA-111")), "the wait is the stranger's alone");
        g.abandoned(owner);
        assert_eq!(g.begin(stranger, s(7)), Ok(code("AAA-111")));
        g.failed(stranger, s(8));
        assert_eq!(g.begin(stranger, s(17)), Err(Refusal::Wait(Duration::from_secs(1))), "10 s after the second");
        assert_eq!(g.begin(stranger, s(18)), Ok(code("AAA-111")));
        g.succeeded();
        assert_eq!(g.begin(owner, s(19)), Err(Refusal::NoCode), "used up");
    }

    #[test]
    fn tries_run_side_by_side_from_different_addresses_up_to_a_bound() {
        let t0 = Instant::now();
        let mut g = CodeGuard::default();
        g.show(code("AAA-111"), t0);
        for k in 0..MAX_EXCHANGES {
            assert!(g.begin(ip(&format!("192.0.2.{}", k + 1)), t0).is_ok());
        }
        assert_eq!(g.begin(ip("192.0.2.99"), t0), Err(Refusal::Busy));
        g.abandoned(ip("192.0.2.1"));
        assert!(g.begin(ip("192.0.2.99"), t0).is_ok());
    }

    #[test]
    fn many_wrong_tries_burn_the_code_and_opening_again_starts_afresh() {
        let t0 = Instant::now();
        let mut g = CodeGuard::default();
        g.show(code("AAA-111"), t0);
        let mut burnt = 0;
        for k in 0..MAX_WRONG {
            let from = ip(&format!("198.51.100.{}", k + 1));
            assert!(g.begin(from, t0).is_ok(), "try {k}");
            burnt += u32::from(g.failed(from, t0));
        }
        assert_eq!(burnt, 1, "the last wrong try burnt it");
        assert!(g.closed());
        assert_eq!(g.shown(t0), None);
        assert_eq!(g.begin(ip("192.0.2.20"), t0), Err(Refusal::Closed));
        g.show(code("BBB-222"), t0 + Duration::from_secs(1));
        assert!(!g.closed());
        assert_eq!(g.begin(ip("198.51.100.1"), t0 + Duration::from_secs(1)), Ok(code("BBB-222")), "waits forgotten");
    }

    #[test]
    fn codes_expire_and_waits_stop_growing() {
        let t0 = Instant::now();
        let stranger = ip("192.0.2.66");
        let mut g = CodeGuard::default();
        g.show(code("AAA-111"), t0);
        assert_eq!(g.begin(stranger, t0 + CODE_LIFETIME), Err(Refusal::Expired));
        assert_eq!(g.shown(t0 + CODE_LIFETIME), None);
        let mut now = t0;
        for _ in 0..20 {
            now += Duration::from_secs(1000);
            g.shown = Some((code("AAA-111"), now));
            assert!(g.begin(stranger, now).is_ok());
            g.failed(stranger, now);
            g.wrong = 0;
        }
        assert_eq!(g.begin(stranger, now), Err(Refusal::Wait(MAX_WAIT)));
        assert_eq!(
            Refusal::Wait(Duration::from_millis(300)).to_string(),
            "too many pairing attempts from this address: try again in 1 s"
        );
    }
}
