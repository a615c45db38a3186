//! The two ends of a pairing as pure state machines, carried over two HTTP requests from B to A:
//!
//! ```text
//!   B (typed the code)                              A (shows the code)
//!   Typer::begin(code) ── POST hello ─────────────► Shower::on_hello: starts SPAKE2, answers
//!                      ◄─ {hello, confirm} ───────  its hello and confirmation
//!   Typer::on_answer: checks A's confirmation
//!                      ── POST confirm ───────────► Shower::on_confirm: paired (or burnt)
//! ```
//! A counts a wrong try against the address it came from on any wrong confirmation, and on none
//! within [`CONFIRM_WITHIN`] of its answer (its answer let the caller check one guess); the
//! [`crate::guard`] says what that costs. B's confirmation is matched to its exchange by the
//! address it comes from: tries from several addresses run side by side. Time is passed in;
//! nothing waits.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::code::{CodeError, PairingCode};
use crate::exchange::{Confirming, PairError, PairSecrets, Pending, Side};
use crate::guard::{CodeGuard, Refusal};
use crate::wire::{self, WireError};

/// How long A waits for B's confirmation after answering B's hello.
pub const CONFIRM_WITHIN: Duration = Duration::from_secs(10);

/// Why A refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShowerError {
    /// Not now (no code, wait, expired, busy).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The request is not a pairing message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The exchange failed (a wrong code burns it).
    #[error(transparent)]
    Pair(#[from] PairError),
    /// A confirmation with no exchange waiting for it.
    #[error("no pairing attempt is waiting for a confirmation")]
    Unexpected,
}

/// What [`Shower::expire`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expired {
    /// Answered hellos whose confirmation did not come in time (each a wrong try).
    pub late: usize,
    /// Those wrong tries burnt the code: pairing is closed until opened again.
    pub closed: bool,
}

/// The box that shows the code (side A).
#[derive(Debug)]
pub struct Shower {
    box_id: String,
    guard: CodeGuard,
    /// Exchanges answered and waiting for their confirmation: from where, since when.
    waiting: Vec<(IpAddr, Confirming, Instant)>,
}

impl Shower {
    /// A box named `box_id`, not showing a code yet.
    pub fn new(box_id: &str) -> Self {
        Self { box_id: box_id.to_string(), guard: CodeGuard::default(), waiting: Vec::new() }
    }

    /// Opens pairing: shows `code` from `now`, forgetting every try and wait.
    pub fn open(&mut self, code: PairingCode, now: Instant) {
        self.waiting.clear();
        self.guard.show(code, now);
    }

    /// Whether too many wrong tries closed pairing.
    pub fn closed(&self) -> bool {
        self.guard.closed()
    }

    /// The code to show at `now` (`7Q4-KM2`), if any.
    pub fn code(&self, now: Instant) -> Option<String> {
        self.guard.shown(now).map(PairingCode::display)
    }

    /// B's hello (JSON) from `from`: answers A's hello and confirmation (JSON), or refuses.
    pub fn on_hello(&mut self, text: &str, from: IpAddr, now: Instant) -> Result<String, ShowerError> {
        self.expire(now);
        let hello = wire::hello_from_json(text)?;
        let code = self.guard.begin(from, now)?;
        let answered = Pending::start(Side::A, &code, &self.box_id).and_then(|(pending, mine)| {
            let (confirming, confirm) = pending.receive(&hello)?;
            Ok((confirming, mine, confirm))
        });
        match answered {
            Ok((confirming, mine, confirm)) => {
                self.waiting.push((from, confirming, now));
                Ok(wire::answer_to_json(&mine, &confirm))
            }
            Err(e) => {
                // Nothing derived from the code went out: nothing counts.
                self.guard.abandoned(from);
                Err(e.into())
            }
        }
    }

    /// B's confirmation (JSON) from `from`: the pair's secrets and when A answered B's hello,
    /// or a wrong try counted against `from`.
    pub fn on_confirm(
        &mut self,
        text: &str,
        from: IpAddr,
        now: Instant,
    ) -> Result<(PairSecrets, Instant), ShowerError> {
        self.expire(now);
        let Some(k) = self.waiting.iter().position(|(a, _, _)| *a == from) else {
            return Err(ShowerError::Unexpected);
        };
        let (_, confirming, answered) = self.waiting.swap_remove(k);
        let verdict = wire::confirm_from_json(text).map_err(ShowerError::from).and_then(|c| Ok(confirming.verify(&c)?));
        match verdict {
            Ok(secrets) => {
                self.guard.succeeded();
                self.waiting.clear();
                Ok((secrets, answered))
            }
            Err(e) => {
                if self.guard.failed(from, now) {
                    self.waiting.clear();
                }
                Err(e)
            }
        }
    }

    /// Counts each answered hello whose confirmation is late as a wrong try; call now and then.
    pub fn expire(&mut self, now: Instant) -> Expired {
        let mut out = Expired::default();
        let guard = &mut self.guard;
        self.waiting.retain(|(from, _, at)| {
            let late = now.duration_since(*at) > CONFIRM_WITHIN;
            if late {
                out.late += 1;
                out.closed |= guard.failed(*from, now);
            }
            !late
        });
        if out.closed {
            self.waiting.clear();
        }
        out
    }
}

/// Why B could not pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TyperError {
    /// What the user typed is not a code.
    #[error(transparent)]
    Code(#[from] CodeError),
    /// A's answer is not a pairing message.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The exchange failed: the code was wrong (A shows a new one).
    #[error(transparent)]
    Pair(#[from] PairError),
}

/// The box the code was typed into (side B), between its hello and A's answer.
#[derive(Debug)]
pub struct Typer {
    pending: Pending,
}

impl Typer {
    /// Starts with what the user typed; send the returned hello (JSON) to A.
    pub fn begin(typed: &str, box_id: &str) -> Result<(Self, String), TyperError> {
        let code = PairingCode::parse(typed)?;
        let (pending, hello) = Pending::start(Side::B, &code, box_id)?;
        Ok((Self { pending }, wire::hello_to_json(&hello)))
    }

    /// A's answer (JSON): the pair's secrets, and the confirmation (JSON) to send to A. The
    /// confirmation comes also when the code was wrong: sent, it makes A burn its code at once
    /// rather than after [`CONFIRM_WITHIN`] (it tells A nothing it could test another code with).
    pub fn on_answer(self, text: &str) -> (Result<PairSecrets, TyperError>, Option<String>) {
        let (hello, confirm_a) = match wire::answer_from_json(text) {
            Ok(a) => a,
            Err(e) => return (Err(e.into()), None),
        };
        let (confirming, confirm_b) = match self.pending.receive(&hello) {
            Ok(c) => c,
            Err(e) => return (Err(e.into()), None),
        };
        (confirming.verify(&confirm_a).map_err(TyperError::from), Some(wire::confirm_to_json(&confirm_b)))
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
    fn pairing_through_the_two_requests() {
        let t0 = Instant::now();
        let b_at = ip("192.0.2.20");
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        assert_eq!(a.code(t0).as_deref(), Some("7Q4-KM2"));
        let (b, hello) = Typer::begin("7q4 km2", "box-b").unwrap();
        let answer = a.on_hello(&hello, b_at, t0).unwrap();
        let (b_secrets, confirm) = b.on_answer(&answer);
        let (b_secrets, confirm) = (b_secrets.unwrap(), confirm.unwrap());
        let (a_secrets, answered) = a.on_confirm(&confirm, b_at, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(answered, t0);
        assert_eq!((a_secrets.pair_id, a_secrets.link), (b_secrets.pair_id, b_secrets.link));
        assert_eq!((a_secrets.peer_id.as_str(), b_secrets.peer_id.as_str()), ("box-b", "box-a"));
        assert_eq!(a.code(t0), None, "the code is used up");
    }

    #[test]
    fn a_wrong_code_is_found_by_b_and_counted_by_a_when_no_confirmation_comes() {
        let t0 = Instant::now();
        let b_at = ip("192.0.2.20");
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (b, hello) = Typer::begin("7Q4-KM3", "box-b").unwrap();
        let answer = a.on_hello(&hello, b_at, t0).unwrap();
        let (verdict, confirm) = b.on_answer(&answer);
        assert_eq!(verdict.unwrap_err(), TyperError::Pair(PairError::WrongCode));
        assert!(confirm.is_some(), "B has a confirmation to send, so that A counts the try at once");
        // If B sends nothing more, A counts the try when the confirmation is late.
        assert_eq!(a.expire(t0 + CONFIRM_WITHIN).late, 0);
        assert_eq!(a.expire(t0 + CONFIRM_WITHIN + Duration::from_millis(1)).late, 1);
        assert_eq!(a.code(t0 + CONFIRM_WITHIN).as_deref(), Some("7Q4-KM2"), "the code stays");
        // The next try from that address within its wait is refused, in words.
        let (_, hello) = Typer::begin("7Q4-KM2", "box-b").unwrap();
        let e = a.on_hello(&hello, b_at, t0 + CONFIRM_WITHIN + Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, ShowerError::Refused(Refusal::Wait(_))), "{e}");
    }

    #[test]
    fn b_s_confirmation_after_a_wrong_code_counts_at_once() {
        let t0 = Instant::now();
        let b_at = ip("192.0.2.20");
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (b, hello) = Typer::begin("7Q4-KM3", "box-b").unwrap();
        let answer = a.on_hello(&hello, b_at, t0).unwrap();
        let (_, confirm) = b.on_answer(&answer);
        let e = a.on_confirm(&confirm.unwrap(), b_at, t0).unwrap_err();
        assert_eq!(e, ShowerError::Pair(PairError::WrongCode));
        // The owner types it again, right, once the address's wait is over.
        let later = t0 + crate::guard::FIRST_WAIT;
        let (b, hello) = Typer::begin("7Q4-KM2", "box-b").unwrap();
        let answer = a.on_hello(&hello, b_at, later).unwrap();
        let (verdict, confirm) = b.on_answer(&answer);
        assert!(verdict.is_ok());
        assert!(a.on_confirm(&confirm.unwrap(), b_at, later).is_ok());
    }

    #[test]
    fn a_stranger_s_hellos_never_stop_the_owner_s_box_b() {
        let t0 = Instant::now();
        let (stranger, b_at) = (ip("192.0.2.66"), ip("192.0.2.20"));
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        // One hello a second from the stranger, never confirmed, for 70 s; the owner's box B
        // joins every 3 s. Each of B's joins pairs.
        let mut owner_joins = 0;
        for sec in 0..70u64 {
            let now = t0 + Duration::from_secs(sec);
            let (_, hello) = Typer::begin("AAA-AAA", "mallory").unwrap();
            let _ = a.on_hello(&hello, stranger, now);
            if sec % 3 == 2 {
                let (b, hello) = Typer::begin("7Q4-KM2", "box-b").unwrap();
                let answer = a.on_hello(&hello, b_at, now).expect("the owner's hello is answered");
                let (verdict, confirm) = b.on_answer(&answer);
                assert!(verdict.is_ok());
                assert!(a.on_confirm(&confirm.unwrap(), b_at, now).is_ok(), "paired at {sec} s");
                owner_joins += 1;
                a.open(code("7Q4-KM2"), now);
            }
        }
        assert_eq!(owner_joins, 23);
    }

    #[test]
    fn a_forged_confirmation_is_a_wrong_try_and_only_one() {
        let t0 = Instant::now();
        let from = ip("192.0.2.66");
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (_, hello) = Typer::begin("7Q4-KM9", "mallory").unwrap();
        a.on_hello(&hello, from, t0).unwrap();
        let forged = format!(r#"{{"mac":"{}"}}"#, "00".repeat(32));
        assert_eq!(a.on_confirm(&forged, from, t0).unwrap_err(), ShowerError::Pair(PairError::WrongCode));
        assert_eq!(
            a.on_confirm(&forged, from, t0).unwrap_err(),
            ShowerError::Unexpected,
            "no second guess on the same exchange"
        );
        assert_eq!(
            a.on_confirm(&forged, ip("192.0.2.67"), t0).unwrap_err(),
            ShowerError::Unexpected,
            "nor from another address"
        );
        let e = a.on_hello("{}", ip("192.0.2.68"), t0).unwrap_err();
        assert!(matches!(e, ShowerError::Wire(_)), "{e}");
    }
}
