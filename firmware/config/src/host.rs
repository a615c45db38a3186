//! The host part of an `srt://` or `rtmp://` URL: a DNS name, an IPv4 address, or an IPv6
//! address in brackets. A host that cannot work (a user part, a space, an IPv6 address without
//! brackets, `999.1.1.1`) is refused with the words to fix it, before anything calls it.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Checks `host` as it stood in `scheme://...`; `bracketed`: it was written `[...]`. The error
/// says what is wrong and what to write instead.
pub fn check_host(scheme: &str, host: &str, bracketed: bool) -> Result<(), String> {
    if bracketed {
        return host
            .parse::<Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| format!("[{host}] is not an IPv6 address; brackets are for IPv6 addresses only"));
    }
    if let Some((user, _)) = host.rsplit_once('@') {
        return Err(format!(
            "host {host:?} has a user part ({user:?}@): {scheme} URLs have none; write {scheme}://HOST:PORT"
        ));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("host {host:?} has a space or a control character in it"));
    }
    if host.contains(':') {
        return Err(format!(
            "host {host:?} looks like an IPv6 address: put it in brackets, e.g. {scheme}://[{host}]:PORT"
        ));
    }
    if host.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())) {
        return host.parse::<Ipv4Addr>().map(|_| ()).map_err(|_| format!("host {host:?} is not an IPv4 address"));
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!(
            "host {host:?} is not a host name (letters, digits and '-', in dot-separated parts of 1-63) \
             or an IP address"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_work_pass() {
        for h in ["127.0.0.1", "decoder.example", "studio-b.local", "a", "live.twitch.tv.", "my_box"] {
            assert_eq!(check_host("srt", h, false), Ok(()), "{h}");
        }
        assert_eq!(check_host("srt", "::1", true), Ok(()));
        assert_eq!(check_host("srt", "fe80::1", true), Ok(()));
    }

    #[test]
    fn hosts_that_cannot_work_say_what_to_write() {
        let e = check_host("srt", "127.0.0.1@127.0.0.1", false).unwrap_err();
        assert!(e.contains("has a user part") && e.contains("srt://HOST:PORT"), "{e}");
        let e = check_host("srt", " ", false).unwrap_err();
        assert!(e.contains("space"), "{e}");
        let e = check_host("rtmp", "::1", false).unwrap_err();
        assert!(e.contains("put it in brackets, e.g. rtmp://[::1]:PORT"), "{e}");
        assert!(check_host("srt", "999.1.1.1", false).unwrap_err().contains("not an IPv4 address"));
        assert!(check_host("srt", "bad..name", false).unwrap_err().contains("not a host name"));
        assert!(check_host("srt", "-x.example", false).is_err());
        assert!(check_host("srt", "not-v6", true).unwrap_err().contains("not an IPv6 address"));
    }
}
