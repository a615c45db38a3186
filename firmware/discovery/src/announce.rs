//! What a box says about itself on the network.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::Serialize;
use telebridge_config::Role;

use crate::TXT_VERSION;

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

/// What one box announces: one `_telebridge._udp` instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// The box's id.
    pub id: BoxId,
    /// Its name (the configuration's `name`).
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Where it stands on pairing.
    pub pairing: PairingState,
    /// The port its panel (and pairing) answers on.
    pub panel_port: u16,
}

impl Announcement {
    /// The DNS-SD instance name: the box's name and the start of its id, so that two boxes
    /// left with the default name are two instances (RFC 6763 §4.1: a user-visible name).
    pub fn instance(&self) -> String {
        format!("{} {}", self.name, &self.id.as_str()[..4])
    }

    /// The mDNS host name its address records go under: of its own, so that it never claims
    /// the name Avahi publishes for the machine.
    pub fn host(&self) -> String {
        format!("telebridge-{}.local.", self.id)
    }

    /// The TXT record's keys and values (RFC 6763 §6: short keys, one string each).
    pub fn txt(&self) -> Vec<(&'static str, String)> {
        vec![
            ("v", TXT_VERSION.to_string()),
            ("id", self.id.to_string()),
            ("name", self.name.clone()),
            ("role", self.role.name().to_string()),
            ("pairing", self.pairing.name().to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_stable_for_its_seed_distinct_across_seeds_and_reads_back() {
        let a = BoxId::from_seed("machine-1 /etc/telebridge.toml");
        assert_eq!(a, BoxId::from_seed("machine-1 /etc/telebridge.toml"));
        assert_ne!(a, BoxId::from_seed("machine-1 /tmp/b/telebridge.toml"));
        assert_eq!(BoxId::parse(a.as_str()), Some(a.clone()));
        assert!(!a.as_str().contains("machine"));
        for bad in ["", "0123456789a", "0123456789abc", "0123456789aB", "0123456789ag"] {
            assert_eq!(BoxId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_txt_record_says_version_id_name_role_and_pairing() {
        let a = Announcement {
            id: BoxId::from_seed("x"),
            name: "studio-a".into(),
            role: Role::Bridge,
            pairing: PairingState::Open,
            panel_port: 8080,
        };
        let txt = a.txt();
        let get = |k: &str| txt.iter().find(|(key, _)| *key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("v"), Some("1"));
        assert_eq!(get("id"), Some(a.id.as_str()));
        assert_eq!(get("name"), Some("studio-a"));
        assert_eq!(get("role"), Some("bridge"));
        assert_eq!(get("pairing"), Some("open"));
        assert!(a.instance().starts_with("studio-a "));
        assert!(a.host().ends_with(".local.") && a.host().contains(a.id.as_str()));
        for s in [PairingState::Unpaired, PairingState::Open, PairingState::Paired] {
            assert_eq!(PairingState::from_name(s.name()), Some(s));
        }
        assert_eq!(PairingState::from_name("maybe"), None);
    }
}
