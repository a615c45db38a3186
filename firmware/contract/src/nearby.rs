//! The boxes on the local network as the panel lists them: a box's id, where it stands on
//! pairing, a box found (discovery finds them; the API lists them), and what the API asks of
//! discovery ([`NearbyBoxes`]).

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use serde::{Serialize, Serializer};
use telebridge_config::Role;

/// A box's id on the network: 12 lowercase hex digits, stable while the box keeps its machine
/// and configuration (so a box that restarts without saying goodbye is not listed twice for
/// long), and not the machine id itself (derived from it, one way).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct BoxId(String);

/// Hex digits in a [`BoxId`].
pub const ID_LEN: usize = 12;

impl BoxId {
    /// The id derived from `seed` (the machine id and the configuration's path).
    pub fn from_seed(seed: &str) -> Self {
        let mut id = String::with_capacity(ID_LEN);
        for round in 0u8..2 {
            let mut h = DefaultHasher::new();
            ("telebridge-discovery", round, seed).hash(&mut h);
            id.push_str(&format!("{:016x}", h.finish())[..ID_LEN / 2]);
        }
        Self(id)
    }

    /// `text` as an id, if it is one (12 lowercase hex digits).
    pub fn parse(text: &str) -> Option<Self> {
        let ok = text.len() == ID_LEN && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(text.to_string()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BoxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a box stands on pairing, as it announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairingState {
    /// Not paired, no code shown.
    Unpaired,
    /// Showing a pairing code now: the box to pick.
    Open,
    /// Paired with a box.
    Paired,
}

impl PairingState {
    /// The state's word in the TXT record.
    pub fn name(self) -> &'static str {
        match self {
            PairingState::Unpaired => "unpaired",
            PairingState::Open => "open",
            PairingState::Paired => "paired",
        }
    }

    /// The state named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        [PairingState::Unpaired, PairingState::Open, PairingState::Paired].into_iter().find(|s| s.name() == name)
    }
}

/// A box found on the network, as the Pair page and `telebridge discover` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// Its id.
    pub id: BoxId,
    /// Its name.
    pub name: String,
    /// Its role.
    #[serde(serialize_with = "role_name")]
    pub role: Role,
    /// Where it stands on pairing.
    pub pairing: PairingState,
    /// Its panel, the address to pair with: an IPv4 address first (a link-local one last).
    pub panel: SocketAddr,
    /// Every address it announced, in the order tried.
    pub addresses: Vec<IpAddr>,
    /// Addresses that announced this box (its id, or its name under another id) besides the
    /// ones it was first seen at: someone else says they are it (issue 57, finding 2). The
    /// list keeps the first-seen record; the Pair page shows the conflict.
    pub conflict: Vec<IpAddr>,
    /// Whether its panel answered at the address announced (a record whose panel does not
    /// answer is the first to go when the list is full).
    pub answered: bool,
}

fn role_name<S: Serializer>(role: &Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(role.name())
}

/// What the API asks of discovery: the boxes found, whether an address is one a box announced,
/// and why discovery does not run.
pub trait NearbyBoxes: Send + Sync + fmt::Debug + 'static {
    /// The boxes found, by name (never this box).
    fn found(&self) -> Vec<Found>;
    /// Whether `ip` is an address a box on the network announced (a hint, not a proof).
    fn announced(&self, ip: IpAddr) -> bool;
    /// Why this box does not look for others nor announce itself, in words (`None`: it does).
    fn off(&self) -> Option<String>;
}
