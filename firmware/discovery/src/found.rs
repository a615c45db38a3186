//! What a record heard from the network may claim: every field checked and bounded, since any
//! stranger on the LAN can announce anything.

use std::net::{IpAddr, SocketAddr};

use telebridge_config::{is_box_name, Role};

use crate::announce::{BoxId, PairingState};
use crate::TXT_VERSION;

/// Addresses kept of one box (a box has an address per interface; a record with hundreds is a
/// stranger's).
pub const MAX_ADDRESSES: usize = 8;

/// One resolved `_telebridge._udp` instance as heard, before it is believed: what the I/O takes
/// out of mdns-sd's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The instance's full name (`studio-a 3f9c._telebridge._udp.local.`).
    pub fullname: String,
    /// The SRV record's port: the panel's.
    pub port: u16,
    /// The address records.
    pub addresses: Vec<IpAddr>,
    /// The TXT record's keys and values.
    pub txt: Vec<(String, String)>,
}

pub use telebridge_contract::nearby::Found;

/// Why a record is not listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A TXT key is missing.
    #[error("its TXT record has no {0}")]
    Missing(&'static str),
    /// A TXT value is not what the key allows.
    #[error("its TXT {key} is {value:?}; allowed: {allowed}")]
    Bad {
        /// The key.
        key: &'static str,
        /// The value heard (shortened).
        value: String,
        /// What the key allows.
        allowed: &'static str,
    },
    /// No address a panel can be reached on.
    #[error("it announced no usable address")]
    NoAddress,
    /// Port 0.
    #[error("it announced port 0")]
    NoPort,
}

impl Record {
    /// The box this record describes, if its claims hold.
    pub fn found(&self) -> Result<Found, Refused> {
        let record = self;
        let get = |key: &'static str| {
            record
                .txt
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
                .ok_or(Refused::Missing(key))
        };
        let bad = |key: &'static str, value: &str, allowed: &'static str| Refused::Bad {
            key,
            value: value.chars().take(64).collect(),
            allowed,
        };
        let version = get("v")?;
        if version != TXT_VERSION {
            return Err(bad("v", version, "1"));
        }
        let id = get("id")?;
        let id = BoxId::parse(id).ok_or_else(|| bad("id", id, "12 lowercase hex digits"))?;
        let name = get("name")?;
        if !is_box_name(name) {
            return Err(bad("name", name, "1-63 letters, digits, '-' and '_'"));
        }
        let role = get("role")?;
        let role = Role::from_name(role).ok_or_else(|| bad("role", role, "encoder, decoder, bridge"))?;
        let pairing = get("pairing")?;
        let pairing =
            PairingState::from_name(pairing).ok_or_else(|| bad("pairing", pairing, "unpaired, open, paired"))?;
        if record.port == 0 {
            return Err(Refused::NoPort);
        }
        let addresses = usable(&record.addresses);
        let first = *addresses.first().ok_or(Refused::NoAddress)?;
        Ok(Found {
            id,
            name: name.to_string(),
            role,
            pairing,
            panel: SocketAddr::new(first, record.port),
            addresses,
            conflict: Vec::new(),
            answered: false,
        })
    }
}

/// The addresses a panel can be reached on, best first: IPv4 (routable before link-local),
/// then global IPv6 (a link-local IPv6 address needs the asker's interface, which a browser's
/// address bar cannot carry). At most [`MAX_ADDRESSES`].
fn usable(addresses: &[IpAddr]) -> Vec<IpAddr> {
    let rank = |ip: &IpAddr| match ip {
        IpAddr::V4(v4) if v4.is_loopback() || v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast() => None,
        IpAddr::V4(v4) if v4.is_link_local() => Some(1),
        IpAddr::V4(_) => Some(0),
        IpAddr::V6(v6) if v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() => None,
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => None,
        IpAddr::V6(_) => Some(2),
    };
    let mut ranked: Vec<(u8, IpAddr)> = addresses.iter().filter_map(|ip| rank(ip).map(|r| (r, *ip))).collect();
    ranked.sort();
    ranked.dedup();
    ranked.into_iter().take(MAX_ADDRESSES).map(|(_, ip)| ip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(txt: &[(&str, &str)], addresses: &[&str]) -> Record {
        Record {
            fullname: "studio-a 3f9c._telebridge._udp.local.".into(),
            port: 8080,
            addresses: addresses.iter().map(|a| a.parse().expect("address")).collect(),
            txt: txt.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    const GOOD: [(&str, &str); 5] =
        [("v", "1"), ("id", "3f9c00112233"), ("name", "studio-a"), ("role", "bridge"), ("pairing", "open")];

    #[test]
    fn a_good_record_is_a_box_whose_panel_is_its_best_address() {
        let f = record(&GOOD, &["fe80::1", "169.254.3.4", "2001:db8::5", "192.168.1.20", "127.0.0.1"])
            .found()
            .expect("a good record");
        assert_eq!(f.name, "studio-a");
        assert_eq!(f.role, Role::Bridge);
        assert_eq!(f.pairing, PairingState::Open);
        assert_eq!(f.panel, "192.168.1.20:8080".parse().expect("addr"));
        let shown: Vec<String> = f.addresses.iter().map(|a| a.to_string()).collect();
        assert_eq!(shown, ["192.168.1.20", "169.254.3.4", "2001:db8::5"]);
        let json = serde_json::to_value(&f).expect("json");
        assert_eq!(json["role"], "bridge");
        assert_eq!(json["pairing"], "open");
        assert_eq!(json["panel"], "192.168.1.20:8080");
    }

    #[test]
    fn a_record_that_claims_too_much_or_too_little_is_refused_naming_the_field() {
        let with = |key: &str, value: &str| -> Vec<(String, String)> {
            GOOD.iter()
                .map(|(k, v)| (k.to_string(), if *k == key { value.to_string() } else { v.to_string() }))
                .collect()
        };
        let cases = [
            ("v", "2", "v"),
            ("id", "xyz", "id"),
            ("name", "<script>", "name"),
            ("name", &"a".repeat(64), "name"),
            ("role", "root", "role"),
            ("pairing", "yes", "pairing"),
        ];
        for (key, value, named) in cases {
            let r = Record { txt: with(key, value), ..record(&GOOD, &["192.168.1.20"]) };
            let e = r.found().expect_err(value);
            assert!(e.to_string().contains(named), "{e}");
            assert!(e.to_string().len() < 200, "the value heard is shortened: {e}");
        }
        let missing = Record {
            txt: with("role", "x").into_iter().filter(|(k, _)| k != "role").collect(),
            ..record(&GOOD, &["192.168.1.20"])
        };
        assert_eq!(missing.found(), Err(Refused::Missing("role")));
        assert_eq!(record(&GOOD, &["127.0.0.1", "fe80::1", "224.0.0.251"]).found(), Err(Refused::NoAddress));
        assert_eq!(Record { port: 0, ..record(&GOOD, &["10.0.0.1"]) }.found(), Err(Refused::NoPort));
        let many: Vec<String> = (0..300).map(|i| format!("10.0.{}.{}", i / 250, i % 250 + 1)).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(record(&GOOD, &many).found().expect("many").addresses.len(), MAX_ADDRESSES);
    }
}
