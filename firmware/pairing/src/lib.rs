//! Pairing two boxes with a short code (issue 13): the code a box shows ([`code`]), the guard
//! that burns a code after one wrong guess and rate-limits the next ([`guard`]), and the
//! password-authenticated key exchange that turns the code into full-strength keys both boxes
//! share ([`exchange`]). Pure: no network, no clock of its own, no files; the bridge role
//! carries the messages and stores the result.
//!
//! Why not use the code as the SRT passphrase: SRT derives its key with PBKDF2 from a salt carried
//! in the handshake, so a 30-bit code could be found offline from one captured handshake. SPAKE2
//! gives a passive listener nothing and an active attacker one guess per run; the keys it yields
//! are 256-bit, and the SRT passphrases derived from them are 43 characters of that entropy.

pub mod addresses;
pub mod code;
pub mod control;
pub mod exchange;
pub mod guard;
pub mod link;
pub mod meet;
pub mod session;
pub mod store;
pub mod upnp;
pub mod wire;

pub use code::{CodeError, PairingCode};
pub use exchange::{Confirm, Hello, PairError, PairSecrets, Pending, Side, StreamKeys};
pub use guard::{CodeGuard, Refusal};
pub use link::{latency_for, link_route, link_url, LinkError, PeerRoute};
pub use session::{Expired, Shower, ShowerError, Typer, TyperError};
pub use store::{PairRecord, Reach, StoreError, Via};
