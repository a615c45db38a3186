//! The key exchange: SPAKE2 on the code, then key confirmation, then the keys of the pair.
//!
//! ```text
//!   A (shows the code)                         B (the user typed it)
//!   Pending::start(A, code, id_a) ── Hello ──►
//!                                 ◄── Hello ── Pending::start(B, code, id_b)
//!   receive(B's hello) ─────────── Confirm ──►  receive(A's hello)
//!                                 ◄── Confirm ─
//!   verify(B's confirm) -> PairSecrets          verify(A's confirm) -> PairSecrets (the same)
//! ```
//! A wrong code makes both confirmations fail: each side learns only that the code was wrong,
//! and an active attacker has made one guess. The confirmation covers both SPAKE2 messages and
//! both box ids, so nothing in the hellos can be swapped unnoticed; its labels differ by side, so
//! a side's own confirmation reflected back is refused.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use spake2::{Ed25519Group, Identity, Password, Spake2};
use telebridge_config::Secret;

use crate::code::PairingCode;

/// Which end of the pairing a box is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The box that shows the code.
    A,
    /// The box the code was typed into.
    B,
}

impl Side {
    fn label(self) -> &'static [u8] {
        match self {
            Side::A => b"A",
            Side::B => b"B",
        }
    }
}

/// The first message each side sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The sender's side.
    pub side: Side,
    /// The sender's box id.
    pub box_id: String,
    /// Its SPAKE2 message (33 bytes).
    pub message: Vec<u8>,
}

/// The second message: proof of the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    /// HMAC-SHA256 over the transcript, keyed from the exchanged key, labelled by side.
    pub mac: [u8; 32],
}

/// Why pairing failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    /// The two ends did not hold the same code (or somebody in between guessed).
    #[error("the pairing code was wrong: it is used up, and the other box shows a new one")]
    WrongCode,
    /// Both claim the same side: one must show the code, the other type it.
    #[error("both boxes are {0:?}: one must show the code and the other be given it")]
    SameSide(Side),
    /// The peer's message is not a SPAKE2 message.
    #[error("the other box sent a malformed pairing message")]
    Malformed,
    /// A box id that is empty, too long or not printable.
    #[error("box id {0:?} is not 1-64 printable characters")]
    BadBoxId(String),
}

/// The keys of the pair's SRT connection (both directions travel on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamKeys {
    /// The SRT stream id the calling box gives (the listening box admits only it).
    pub stream_id: String,
    /// The SRT passphrase (AES-256 with `pbkeylen=32`): 64 hex characters, 256 bits.
    pub passphrase: Secret,
}

/// What both boxes hold after pairing, the same on each (except `peer_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairSecrets {
    /// Names the pair (16 hex characters); not secret.
    pub pair_id: String,
    /// The other box's id.
    pub peer_id: String,
    /// The connection's stream id and passphrase.
    pub link: StreamKeys,
    /// A key for later proof between the two (reconnecting, unpairing), 64 hex characters.
    pub pair_key: Secret,
}

/// A side that sent its hello and waits for the other's.
pub struct Pending {
    side: Side,
    box_id: String,
    message: Vec<u8>,
    spake: Spake2<Ed25519Group>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("side", &self.side).field("box_id", &self.box_id).finish_non_exhaustive()
    }
}

/// A side that has the key and waits for the other's confirmation.
pub struct Confirming {
    side: Side,
    key: Vec<u8>,
    transcript: Vec<u8>,
    peer_id: String,
}

impl std::fmt::Debug for Confirming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirming").field("side", &self.side).field("peer_id", &self.peer_id).finish_non_exhaustive()
    }
}

fn check_id(id: &str) -> Result<(), PairError> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_graphic()) {
        return Err(PairError::BadBoxId(id.to_string()));
    }
    Ok(())
}

/// Length-prefixed concatenation: no two different lists give the same bytes.
fn framed(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_be_bytes());
        out.extend_from_slice(p);
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Pending {
    /// Starts pairing on `side` with `code`, as box `box_id`; send the returned hello.
    pub fn start(side: Side, code: &PairingCode, box_id: &str) -> Result<(Self, Hello), PairError> {
        check_id(box_id)?;
        let (pw, a, b) = (Password::new(code.secret()), Identity::new(b"telebridge A"), Identity::new(b"telebridge B"));
        let (spake, message) = match side {
            Side::A => Spake2::<Ed25519Group>::start_a(&pw, &a, &b),
            Side::B => Spake2::<Ed25519Group>::start_b(&pw, &a, &b),
        };
        let hello = Hello { side, box_id: box_id.to_string(), message: message.clone() };
        Ok((Self { side, box_id: box_id.to_string(), message, spake }, hello))
    }

    /// Takes the other side's hello; send the returned confirmation.
    pub fn receive(self, peer: &Hello) -> Result<(Confirming, Confirm), PairError> {
        if peer.side == self.side {
            return Err(PairError::SameSide(self.side));
        }
        check_id(&peer.box_id)?;
        let key = self.spake.finish(&peer.message).map_err(|_| PairError::Malformed)?;
        let ((msg_a, id_a), (msg_b, id_b)) = match self.side {
            Side::A => ((&self.message, &self.box_id), (&peer.message, &peer.box_id)),
            Side::B => ((&peer.message, &peer.box_id), (&self.message, &self.box_id)),
        };
        let transcript = framed(&[b"telebridge pairing v1", msg_a, msg_b, id_a.as_bytes(), id_b.as_bytes()]);
        let confirming = Confirming { side: self.side, key, transcript, peer_id: peer.box_id.clone() };
        let mac = confirming.mac(self.side);
        Ok((confirming, Confirm { mac }))
    }
}

impl Confirming {
    fn mac(&self, side: Side) -> [u8; 32] {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.derive(b"confirm")).unwrap_or_else(|_| unreachable!());
        m.update(side.label());
        m.update(&self.transcript);
        m.finalize().into_bytes().into()
    }

    fn derive(&self, what: &[u8]) -> [u8; 32] {
        let hk = Hkdf::<Sha256>::new(Some(b"telebridge pairing v1"), &self.key);
        let mut out = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit: expand cannot fail.
        let _ = hk.expand(&framed(&[what, &self.transcript]), &mut out);
        out
    }

    /// Checks the other side's confirmation; the pair's keys when it holds.
    pub fn verify(self, peer: &Confirm) -> Result<PairSecrets, PairError> {
        let other = match self.side {
            Side::A => Side::B,
            Side::B => Side::A,
        };
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.derive(b"confirm")).unwrap_or_else(|_| unreachable!());
        m.update(other.label());
        m.update(&self.transcript);
        m.verify_slice(&peer.mac).map_err(|_| PairError::WrongCode)?;
        let pair_id = hex(&self.derive(b"pair id")[..8]);
        Ok(PairSecrets {
            link: StreamKeys {
                stream_id: format!("telebridge/{pair_id}"),
                passphrase: Secret::new(hex(&self.derive(b"link passphrase"))),
            },
            pair_key: Secret::new(hex(&self.derive(b"pair key"))),
            peer_id: self.peer_id.clone(),
            pair_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> PairingCode {
        PairingCode::parse(s).unwrap()
    }

    /// Runs both sides through; (A's result, B's result).
    fn pair(code_a: &str, code_b: &str) -> (Result<PairSecrets, PairError>, Result<PairSecrets, PairError>) {
        let (a, hello_a) = Pending::start(Side::A, &code(code_a), "box-a").unwrap();
        let (b, hello_b) = Pending::start(Side::B, &code(code_b), "box-b").unwrap();
        let (a, confirm_a) = a.receive(&hello_b).unwrap();
        let (b, confirm_b) = b.receive(&hello_a).unwrap();
        (a.verify(&confirm_b), b.verify(&confirm_a))
    }

    #[test]
    fn the_same_code_gives_both_boxes_the_same_full_strength_keys() {
        let (a, b) = pair("7Q4-KM2", "7q4km2");
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.peer_id.as_str(), b.peer_id.as_str()), ("box-b", "box-a"));
        assert_eq!((&a.link, &a.pair_id, &a.pair_key), (&b.link, &b.pair_id, &b.pair_key));
        assert_ne!(a.link.passphrase, a.pair_key, "each purpose has its own key");
        assert_eq!(a.link.passphrase.expose().len(), 64, "256 bits, within SRT's 10-79 characters");
        assert_eq!(a.link.stream_id, format!("telebridge/{}", a.pair_id));
        // A new run with the same code gives new keys (SPAKE2's random scalars).
        let (again, _) = pair("7Q4-KM2", "7Q4-KM2");
        assert_ne!(again.unwrap().link.passphrase, a.link.passphrase);
        assert!(!format!("{a:?}").contains(a.link.passphrase.expose()), "keys never in Debug");
    }

    #[test]
    fn a_wrong_code_fails_on_both_sides() {
        let (a, b) = pair("7Q4-KM2", "7Q4-KM3");
        assert_eq!((a, b), (Err(PairError::WrongCode), Err(PairError::WrongCode)));
    }

    #[test]
    fn tampering_and_reflection_are_refused() {
        let c = code("ABC-123");
        // A hello with a swapped box id: the transcripts differ, the confirmations fail.
        let (a, hello_a) = Pending::start(Side::A, &c, "box-a").unwrap();
        let (b, hello_b) = Pending::start(Side::B, &c, "box-b").unwrap();
        let forged = Hello { box_id: "mallory".into(), ..hello_a.clone() };
        let (a, confirm_a) = a.receive(&hello_b).unwrap();
        let (b, confirm_b) = b.receive(&forged).unwrap();
        assert_eq!(b.verify(&confirm_a), Err(PairError::WrongCode));
        assert_eq!(a.verify(&confirm_b), Err(PairError::WrongCode));
        // A's own confirmation sent back to it.
        let (a, _) = Pending::start(Side::A, &c, "box-a").unwrap();
        let (_, hello_b) = Pending::start(Side::B, &c, "box-b").unwrap();
        let (a, confirm_a) = a.receive(&hello_b).unwrap();
        assert_eq!(a.verify(&confirm_a), Err(PairError::WrongCode));
        // Two A's, a garbage message, a bad id.
        let (a1, _) = Pending::start(Side::A, &c, "box-a").unwrap();
        let (_, hello_a2) = Pending::start(Side::A, &c, "box-c").unwrap();
        assert_eq!(a1.receive(&hello_a2).unwrap_err(), PairError::SameSide(Side::A));
        let (a1, _) = Pending::start(Side::A, &c, "box-a").unwrap();
        let junk = Hello { side: Side::B, box_id: "box-b".into(), message: vec![0; 5] };
        assert_eq!(a1.receive(&junk).unwrap_err(), PairError::Malformed);
        assert_eq!(Pending::start(Side::A, &c, "has space").unwrap_err(), PairError::BadBoxId("has space".into()));
    }
}
