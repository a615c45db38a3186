//! What a box says about itself on the network.

use telebridge_config::Role;

use crate::TXT_VERSION;

pub use telebridge_contract::nearby::{BoxId, PairingState};

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
