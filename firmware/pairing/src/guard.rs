//! The code a box shows, and who may try it when: one try per code (a wrong one burns it and a
//! new one is shown), a growing wait after each wrong try, codes that expire. A pure state
//! machine: the caller passes the time and the fresh code, tests pass virtual time.

use std::time::{Duration, Instant};

use crate::code::PairingCode;

/// How long a shown code stays valid.
pub const CODE_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// The wait after the first wrong try; doubled after each further one, up to [`MAX_WAIT`].
pub const FIRST_WAIT: Duration = Duration::from_secs(5);
/// The longest wait between tries.
pub const MAX_WAIT: Duration = Duration::from_secs(5 * 60);

/// Why a try is not allowed now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No code is shown (pairing not opened, or the last one was used).
    #[error("this box is not showing a pairing code: open pairing on it first")]
    NoCode,
    /// A wrong try was made moments ago.
    #[error("too many pairing attempts: try again in {} s", .0.as_secs().max(1))]
    Wait(Duration),
    /// The code is older than [`CODE_LIFETIME`].
    #[error("the pairing code expired: the box shows a new one")]
    Expired,
    /// Another try is under way.
    #[error("another pairing attempt is under way")]
    Busy,
}

/// The state of the code a box shows.
#[derive(Debug, Clone, Default)]
pub struct CodeGuard {
    shown: Option<(PairingCode, Instant)>,
    wrong_tries: u32,
    blocked_until: Option<Instant>,
    trying: bool,
}

impl CodeGuard {
    /// Shows `code` from `now` (opening pairing, or replacing an expired code).
    pub fn show(&mut self, code: PairingCode, now: Instant) {
        self.shown = Some((code, now));
        self.trying = false;
    }

    /// The code to show, if any and not expired at `now`.
    pub fn shown(&self, now: Instant) -> Option<&PairingCode> {
        self.shown.as_ref().filter(|(_, at)| now.duration_since(*at) < CODE_LIFETIME).map(|(c, _)| c)
    }

    /// A peer wants to try the code at `now`: the code to run the exchange with, or why not.
    pub fn begin(&mut self, now: Instant) -> Result<PairingCode, Refusal> {
        if let Some(until) = self.blocked_until.filter(|u| *u > now) {
            return Err(Refusal::Wait(until - now));
        }
        let Some((code, at)) = &self.shown else { return Err(Refusal::NoCode) };
        if now.duration_since(*at) >= CODE_LIFETIME {
            return Err(Refusal::Expired);
        }
        if self.trying {
            return Err(Refusal::Busy);
        }
        self.trying = true;
        Ok(code.clone())
    }

    /// The try begun at [`CodeGuard::begin`] failed: the code is burnt, `fresh` is shown, and
    /// the next try waits.
    pub fn failed(&mut self, fresh: PairingCode, now: Instant) {
        self.wrong_tries += 1;
        let wait = FIRST_WAIT.saturating_mul(1 << (self.wrong_tries - 1).min(16)).min(MAX_WAIT);
        self.blocked_until = Some(now + wait);
        self.show(fresh, now);
    }

    /// The try succeeded: the code is used up and nothing is shown.
    pub fn succeeded(&mut self) {
        self.shown = None;
        self.trying = false;
        self.wrong_tries = 0;
        self.blocked_until = None;
    }

    /// The try ended before this box sent anything derived from the code (the connection
    /// dropped before the peer's hello): the code stays. Once this box has answered a hello, its
    /// confirmation lets the peer check one guess: end such a try with [`CodeGuard::failed`]
    /// unless it succeeded.
    pub fn abandoned(&mut self) {
        self.trying = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> PairingCode {
        PairingCode::parse(s).unwrap()
    }

    #[test]
    fn one_try_per_code_and_growing_waits() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut g = CodeGuard::default();
        assert_eq!(g.begin(t0), Err(Refusal::NoCode));
        g.show(code("AAA-111"), t0);
        assert_eq!(g.begin(s(1)), Ok(code("AAA-111")));
        assert_eq!(g.begin(s(1)), Err(Refusal::Busy), "one try at a time");
        g.failed(code("BBB-222"), s(2));
        assert_eq!(g.shown(s(2)), Some(&code("BBB-222")), "the wrong try burnt the code");
        assert_eq!(g.begin(s(3)), Err(Refusal::Wait(Duration::from_secs(4))));
        assert_eq!(g.begin(s(7)), Ok(code("BBB-222")));
        g.failed(code("CCC-333"), s(8));
        assert_eq!(g.begin(s(17)), Err(Refusal::Wait(Duration::from_secs(1))), "10 s after the second");
        assert_eq!(g.begin(s(18)), Ok(code("CCC-333")));
        g.succeeded();
        assert_eq!(g.begin(s(19)), Err(Refusal::NoCode), "used up");
    }

    #[test]
    fn codes_expire_and_waits_stop_growing() {
        let t0 = Instant::now();
        let mut g = CodeGuard::default();
        g.show(code("AAA-111"), t0);
        assert_eq!(g.begin(t0 + CODE_LIFETIME), Err(Refusal::Expired));
        assert_eq!(g.shown(t0 + CODE_LIFETIME), None);
        let mut now = t0;
        for _ in 0..20 {
            now += Duration::from_secs(1000);
            g.show(code("AAA-111"), now);
            assert!(g.begin(now).is_ok());
            g.failed(code("AAA-111"), now);
        }
        assert_eq!(g.begin(now), Err(Refusal::Wait(MAX_WAIT)));
        assert_eq!(
            Refusal::Wait(Duration::from_millis(300)).to_string(),
            "too many pairing attempts: try again in 1 s"
        );
    }
}
