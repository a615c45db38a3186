//! The two ends of a pairing as pure state machines, carried over two HTTP requests from B to A:
//!
//! ```text
//!   B (typed the code)                              A (shows the code)
//!   Typer::begin(code) ── POST hello ─────────────► Shower::on_hello: starts SPAKE2, answers
//!                      ◄─ {hello, confirm} ───────  its hello and confirmation
//!   Typer::on_answer: checks A's confirmation
//!                      ── POST confirm ───────────► Shower::on_confirm: paired (or burnt)
//! ```
//! A burns its code on any wrong confirmation, and on none within [`CONFIRM_WITHIN`] of its
//! answer (its answer let the caller check one guess). Time is passed in; nothing waits.

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

/// The box that shows the code (side A).
#[derive(Debug)]
pub struct Shower {
    box_id: String,
    guard: CodeGuard,
    waiting: Option<(Confirming, Instant)>,
}

impl Shower {
    /// A box named `box_id`, not showing a code yet.
    pub fn new(box_id: &str) -> Self {
        Self { box_id: box_id.to_string(), guard: CodeGuard::default(), waiting: None }
    }

    /// Opens pairing: shows `code` from `now`.
    pub fn open(&mut self, code: PairingCode, now: Instant) {
        self.waiting = None;
        self.guard.show(code, now);
    }

    /// The code to show at `now` (`7Q4-KM2`), if any.
    pub fn code(&self, now: Instant) -> Option<String> {
        self.guard.shown(now).map(PairingCode::display)
    }

    /// B's hello (JSON): answers A's hello and confirmation (JSON), or refuses.
    pub fn on_hello(&mut self, text: &str, now: Instant) -> Result<String, ShowerError> {
        let hello = wire::hello_from_json(text)?;
        let code = self.guard.begin(now)?;
        let answered = Pending::start(Side::A, &code, &self.box_id).and_then(|(pending, mine)| {
            let (confirming, confirm) = pending.receive(&hello)?;
            Ok((confirming, mine, confirm))
        });
        match answered {
            Ok((confirming, mine, confirm)) => {
                self.waiting = Some((confirming, now));
                Ok(wire::answer_to_json(&mine, &confirm))
            }
            Err(e) => {
                // Nothing derived from the code went out: the code stays.
                self.guard.abandoned();
                Err(e.into())
            }
        }
    }

    /// B's confirmation (JSON): the pair's secrets, or the code burnt (`fresh` is shown next).
    pub fn on_confirm(&mut self, text: &str, fresh: PairingCode, now: Instant) -> Result<PairSecrets, ShowerError> {
        self.expire(fresh.clone(), now);
        let Some((confirming, _)) = self.waiting.take() else { return Err(ShowerError::Unexpected) };
        let verdict = wire::confirm_from_json(text).map_err(ShowerError::from).and_then(|c| Ok(confirming.verify(&c)?));
        match verdict {
            Ok(secrets) => {
                self.guard.succeeded();
                Ok(secrets)
            }
            Err(e) => {
                self.guard.failed(fresh, now);
                Err(e)
            }
        }
    }

    /// Burns the code when an answered hello got no confirmation in time; call now and then.
    /// `true` when it did (show the new code).
    pub fn expire(&mut self, fresh: PairingCode, now: Instant) -> bool {
        let late = self.waiting.as_ref().is_some_and(|(_, at)| now.duration_since(*at) > CONFIRM_WITHIN);
        if late {
            self.waiting = None;
            self.guard.failed(fresh, now);
        }
        late
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

    #[test]
    fn pairing_through_the_two_requests() {
        let t0 = Instant::now();
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        assert_eq!(a.code(t0).as_deref(), Some("7Q4-KM2"));
        let (b, hello) = Typer::begin("7q4 km2", "box-b").unwrap();
        let answer = a.on_hello(&hello, t0).unwrap();
        let (b_secrets, confirm) = b.on_answer(&answer);
        let (b_secrets, confirm) = (b_secrets.unwrap(), confirm.unwrap());
        let a_secrets = a.on_confirm(&confirm, code("AAA-AAA"), t0 + Duration::from_secs(1)).unwrap();
        assert_eq!((a_secrets.pair_id, a_secrets.link), (b_secrets.pair_id, b_secrets.link));
        assert_eq!((a_secrets.peer_id.as_str(), b_secrets.peer_id.as_str()), ("box-b", "box-a"));
        assert_eq!(a.code(t0), None, "the code is used up");
    }

    #[test]
    fn a_wrong_code_is_found_by_b_and_burnt_by_a_when_no_confirmation_comes() {
        let t0 = Instant::now();
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (b, hello) = Typer::begin("7Q4-KM3", "box-b").unwrap();
        let answer = a.on_hello(&hello, t0).unwrap();
        let (verdict, confirm) = b.on_answer(&answer);
        assert_eq!(verdict.unwrap_err(), TyperError::Pair(PairError::WrongCode));
        assert!(confirm.is_some(), "B has a confirmation to send, so that A burns the code at once");
        // If B sends nothing more, A burns the code when the confirmation is late.
        assert!(!a.expire(code("NEW-111"), t0 + CONFIRM_WITHIN));
        assert!(a.expire(code("NEW-111"), t0 + CONFIRM_WITHIN + Duration::from_millis(1)));
        assert_eq!(a.code(t0 + CONFIRM_WITHIN).as_deref(), Some("NEW-111"));
        // The next try within the wait is refused, in words.
        let (_, hello) = Typer::begin("NEW-111", "box-b").unwrap();
        let e = a.on_hello(&hello, t0 + CONFIRM_WITHIN + Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, ShowerError::Refused(Refusal::Wait(_))), "{e}");
    }

    #[test]
    fn b_s_confirmation_after_a_wrong_code_burns_it_at_once() {
        let t0 = Instant::now();
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (b, hello) = Typer::begin("7Q4-KM3", "box-b").unwrap();
        let answer = a.on_hello(&hello, t0).unwrap();
        let (_, confirm) = b.on_answer(&answer);
        let e = a.on_confirm(&confirm.unwrap(), code("NEW-444"), t0).unwrap_err();
        assert_eq!(e, ShowerError::Pair(PairError::WrongCode));
        assert_eq!(a.code(t0).as_deref(), Some("NEW-444"));
    }

    #[test]
    fn a_forged_confirmation_burns_the_code() {
        let t0 = Instant::now();
        let mut a = Shower::new("box-a");
        a.open(code("7Q4-KM2"), t0);
        let (_, hello) = Typer::begin("7Q4-KM9", "mallory").unwrap();
        a.on_hello(&hello, t0).unwrap();
        let forged = format!(r#"{{"mac":"{}"}}"#, "00".repeat(32));
        assert_eq!(a.on_confirm(&forged, code("NEW-222"), t0).unwrap_err(), ShowerError::Pair(PairError::WrongCode));
        assert_eq!(a.code(t0).as_deref(), Some("NEW-222"));
        assert_eq!(
            a.on_confirm(&forged, code("NEW-333"), t0).unwrap_err(),
            ShowerError::Unexpected,
            "no second guess on the same exchange"
        );
        let e = a.on_hello("{}", t0).unwrap_err();
        assert!(matches!(e, ShowerError::Wire(_)), "{e}");
    }
}
