//! The uplinks of a bonded SRT output (`srt://HOST:PORT?bond=eth0,wwan0,wwan1`): each an
//! interface name (its socket bound to the device, whatever address the modem was given) or a
//! local address.

use std::fmt;
use std::net::IpAddr;

/// Most uplinks in one bond (srtla receivers take 8 connections per group).
pub const MAX_UPLINKS: usize = 8;

/// One uplink of a bond.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uplink {
    /// A network interface, e.g. `wwan0`.
    Interface(String),
    /// A local source address, e.g. `192.168.8.100`.
    Address(IpAddr),
}

impl fmt::Display for Uplink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uplink::Interface(name) => f.write_str(name),
            Uplink::Address(a) => write!(f, "{a}"),
        }
    }
}

/// Why a `bond=` list was refused; each message names the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UplinkError {
    /// Neither an address nor an interface name.
    #[error("bond: {0:?} is neither an IP address nor an interface name (1-15 letters, digits, '.', '-', '_')")]
    BadName(String),
    /// Nothing listed.
    #[error("bond= lists no uplink; write bond=eth0,wwan0 (interface names or local addresses)")]
    Empty,
    /// Too many.
    #[error("bond lists {0} uplinks; at most {MAX_UPLINKS} are allowed")]
    TooMany(usize),
    /// The same uplink twice.
    #[error("bond lists {0} twice")]
    Twice(String),
    /// Bonding calls out; a listener or rendezvous cannot bond.
    #[error("bond needs mode=caller (a bonded output calls a bonding receiver such as `telebridge relay --bond-listen` or srtla_rec)")]
    NotCaller,
}

/// Parses `eth0,wwan0,192.168.8.100`.
pub fn parse_uplinks(list: &str) -> Result<Vec<Uplink>, UplinkError> {
    let mut out: Vec<Uplink> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let uplink = match item.parse::<IpAddr>() {
            Ok(a) => Uplink::Address(a),
            Err(_) if is_interface_name(item) => Uplink::Interface(item.to_string()),
            Err(_) => return Err(UplinkError::BadName(item.to_string())),
        };
        if out.contains(&uplink) {
            return Err(UplinkError::Twice(item.to_string()));
        }
        out.push(uplink);
    }
    match out.len() {
        0 => Err(UplinkError::Empty),
        n if n > MAX_UPLINKS => Err(UplinkError::TooMany(n)),
        _ => Ok(out),
    }
}

/// Linux's rule (IFNAMSIZ less the NUL), kept to the characters interface names use.
fn is_interface_name(s: &str) -> bool {
    (1..=15).contains(&s.len())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        && s != "."
        && s != ".."
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        assert_eq!(
            parse_uplinks("eth0, wwan0,192.168.8.100,::1").unwrap(),
            vec![
                Uplink::Interface("eth0".into()),
                Uplink::Interface("wwan0".into()),
                Uplink::Address("192.168.8.100".parse().unwrap()),
                Uplink::Address("::1".parse().unwrap()),
            ]
        );
        assert_eq!(Uplink::Interface("wwan1".into()).to_string(), "wwan1");
    }

    #[test]
    fn refusals_name_the_value() {
        assert_eq!(parse_uplinks(""), Err(UplinkError::Empty));
        assert_eq!(parse_uplinks("eth0,eth0"), Err(UplinkError::Twice("eth0".into())));
        assert_eq!(parse_uplinks("a/b"), Err(UplinkError::BadName("a/b".into())));
        assert_eq!(parse_uplinks("averyveryverylongname"), Err(UplinkError::BadName("averyveryverylongname".into())));
        assert_eq!(parse_uplinks(".."), Err(UplinkError::BadName("..".into())));
        assert_eq!(parse_uplinks("a,b,c,d,e,f,g,h,i"), Err(UplinkError::TooMany(9)));
        assert!(UplinkError::BadName("a/b".into()).to_string().contains("\"a/b\""));
    }
}
