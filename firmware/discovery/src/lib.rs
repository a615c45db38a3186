//! Boxes finding each other on the local network: each daemon announces itself by DNS-SD over
//! mDNS (RFC 6762/6763) as `_telebridge._udp` — its name, role, pairing state and panel port —
//! and browses for the others, so that the Pair page lists them and pairing one takes a click
//! and its code. The responder is the daemon's own (the mdns-sd crate: no Avahi needed); it
//! shares port 5353 with Avahi where the image runs it (both open it with `SO_REUSEPORT`).
//!
//! The decisions are pure and tested without a socket: what a box says about itself
//! ([`Announcement`], its TXT record), what a record heard from the network may claim
//! ([`Record::found`]: a stranger on the LAN can announce anything, so every field is
//! checked and bounded), and the list kept from the events ([`Neighbours`]). [`Discovery`] is
//! the thin part around mdns-sd's thread.
//!
//! What is announced is public on the LAN by nature; it holds no secret (no pairing code, no
//! address of the paired box). Pairing a box found here still takes the code it shows
//! (SPAKE2: a box that announces itself under another's name learns nothing from a try).

mod announce;
mod found;
mod io;
mod nearby;
mod neighbours;

pub use announce::{Announcement, BoxId, PairingState};
pub use found::{Found, Record, Refused};
pub use io::{browse_for, Discovery, DiscoveryError};
pub use nearby::Nearby;
pub use neighbours::{Neighbours, NotListed, MAX_BOXES, PER_ADDRESS};

/// The DNS-SD service type (RFC 6763 §7: `_name._udp` for a service that is not on TCP alone;
/// the panel is HTTP, the link SRT over UDP).
pub const SERVICE_TYPE: &str = "_telebridge._udp.local.";

/// The TXT record's version (`v=1`); a record of another version is not listed.
pub const TXT_VERSION: &str = "1";
