//! Where box B calls box A after pairing (issue 57, finding 2). The address B's owner typed, or
//! picked from the Pair page's list of boxes found by mDNS, is a hint: anyone on the LAN can
//! announce a box's name with its own address and relay the pairing's HTTP to the real box. So
//! A says, inside its welcome (tagged under the pair's key), the addresses it owns, and B calls
//! one of those: the one typed if it is among them, else the first of them that answers on A's
//! panel port. Only an address B's owner typed by hand (A's public address behind NAT, say)
//! that is none of A's and none of them answers is kept as it was typed; one the network
//! announced is not.

use std::net::IpAddr;

/// Addresses A names at most.
pub const MAX_OWN: usize = 8;

/// This machine's own addresses: IPv4 from the kernel's routing table (`/proc/net/fib_trie`;
/// a link-local one too: two boxes on one cable without DHCP reach each other there), global
/// IPv6 from `/proc/net/if_inet6` (a link-local one would need its interface named); never
/// loopback. At most [`MAX_OWN`], IPv4 first.
pub fn own_addresses() -> Vec<IpAddr> {
    let v4 = std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default();
    let v6 = std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default();
    parse_own(&v4, &v6)
}

/// [`own_addresses`] from the two files' text.
pub fn parse_own(fib_trie: &str, if_inet6: &str) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    let mut last: Option<&str> = None;
    for line in fib_trie.lines() {
        let t = line.trim();
        if let Some(ip) = t.strip_prefix("|-- ") {
            last = Some(ip);
        } else if t.contains("/32 host LOCAL") {
            if let Some(ip) = last.and_then(|ip| ip.parse::<std::net::Ipv4Addr>().ok()) {
                if !ip.is_loopback() && !out.contains(&IpAddr::V4(ip)) {
                    out.push(IpAddr::V4(ip));
                }
            }
        }
    }
    for line in if_inet6.lines() {
        let Some(hex) = line.split_whitespace().next().filter(|h| h.len() == 32) else { continue };
        let Ok(bits) = u128::from_str_radix(hex, 16) else { continue };
        let ip = std::net::Ipv6Addr::from(bits);
        let link_local = (ip.segments()[0] & 0xffc0) == 0xfe80;
        if !ip.is_loopback() && !link_local && !ip.is_unspecified() && !out.contains(&IpAddr::V6(ip)) {
            out.push(IpAddr::V6(ip));
        }
    }
    out.truncate(MAX_OWN);
    out
}

/// The addresses A named, as written in its welcome (`a,b,c`); what is not an address is left
/// out, and at most [`MAX_OWN`] are kept.
pub fn read_list(list: &[String]) -> Vec<IpAddr> {
    list.iter().filter_map(|a| a.parse().ok()).take(MAX_OWN).collect()
}

/// Where B calls A, decided from what it knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallAt {
    /// The address typed: one of A's (or typed by hand, and none of A's answered).
    Typed,
    /// Another of A's own addresses: the one typed is not A's.
    Own(IpAddr),
}

/// Why B does not keep the pairing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The address came from the network's announcements, is not one of A's, and none of A's
    /// answered.
    #[error(
        "{typed} is not one of the addresses the paired box says it has ({own}), and none of those answered: \
         another machine announced that box's name; type the box's address as its own panel shows it"
    )]
    NotTheBox {
        /// The address picked.
        typed: IpAddr,
        /// A's addresses, as it said them.
        own: String,
    },
}

/// Where B calls A. `typed`: the address B reached A's panel at (`None` for a name);
/// `own`: the addresses A said it has (empty from a box older than this rule);
/// `answers`: which of `own` answer on A's panel port, in their order (I/O, done by the caller
/// only when needed: it is called with each until one answers); `announced`: whether `typed`
/// was learnt from mDNS rather than typed by hand.
pub fn call_at(
    typed: Option<IpAddr>,
    own: &[IpAddr],
    mut answers: impl FnMut(IpAddr) -> bool,
    announced: bool,
) -> Result<CallAt, CallError> {
    if own.is_empty() || typed.is_some_and(|t| own.contains(&t)) {
        return Ok(CallAt::Typed);
    }
    if let Some(ip) = own.iter().copied().find(|ip| answers(*ip)) {
        return Ok(CallAt::Own(ip));
    }
    match typed {
        Some(t) if announced => Err(CallError::NotTheBox {
            typed: t,
            own: own.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        }),
        _ => Ok(CallAt::Typed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIB: &str = "Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.213.0.0/24 2 0 2
        |-- 10.213.0.0
           /24 link UNICAST
        |-- 10.213.0.2
           /32 host LOCAL
  +-- 127.0.0.0/8 2 0 2
     |-- 127.0.0.1
        /32 host LOCAL
  |-- 169.254.7.7
     /32 host LOCAL
Local:
  |-- 10.213.0.2
     /32 host LOCAL
";
    const INET6: &str = "00000000000000000000000000000001 01 80 10 80       lo
fe800000000000000000000000000001 02 40 20 80     eth0
20010db8000000000000000000000005 02 40 00 80     eth0
";

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn own_addresses_leave_out_loopback_and_ipv6_link_local() {
        assert_eq!(parse_own(FIB, INET6), vec![ip("10.213.0.2"), ip("169.254.7.7"), ip("2001:db8::5")]);
        assert_eq!(parse_own("", ""), Vec::<IpAddr>::new());
        let list = vec!["10.0.0.1".to_string(), "nonsense".into(), "2001:db8::1".into()];
        assert_eq!(read_list(&list), vec![ip("10.0.0.1"), ip("2001:db8::1")]);
    }

    #[test]
    fn b_calls_an_address_a_owns() {
        let own = [ip("10.213.0.2"), ip("192.168.7.2")];
        let never = |_| panic!("nothing to ask");
        // Typed (or picked) one of A's: called as it is.
        assert_eq!(call_at(Some(ip("10.213.0.2")), &own, never, true), Ok(CallAt::Typed));
        // A stranger's address from the list: one of A's own that answers, in A's order.
        let mut asked = Vec::new();
        let got = call_at(
            Some(ip("10.213.0.9")),
            &own,
            |a| {
                asked.push(a);
                a == ip("192.168.7.2")
            },
            true,
        );
        assert_eq!(got, Ok(CallAt::Own(ip("192.168.7.2"))));
        assert_eq!(asked, own.to_vec());
        // None answers: announced, refused naming both; typed by hand (A's public address
        // behind NAT), kept.
        let e = call_at(Some(ip("10.213.0.9")), &own, |_| false, true).expect_err("not the box");
        assert!(
            e.to_string().contains("10.213.0.9 is not one of") && e.to_string().contains("10.213.0.2, 192.168.7.2"),
            "{e}"
        );
        assert_eq!(call_at(Some(ip("198.51.100.7")), &own, |_| false, false), Ok(CallAt::Typed));
        // An older A says nothing: as before.
        assert_eq!(call_at(Some(ip("10.213.0.9")), &[], never, true), Ok(CallAt::Typed));
    }
}
