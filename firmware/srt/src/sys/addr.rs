//! Socket addresses for libsrt: conversion both ways, name resolution, and the local address a
//! socket for an [`SrtUrl`] binds to.

use std::net::{SocketAddr, ToSocketAddrs};

use libc::{c_int, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage};
use telebridge_config::{SrtMode, SrtUrl};

use crate::error::SrtError;

/// Converts an address for libsrt.
pub(crate) fn to_raw(addr: &SocketAddr) -> (sockaddr_storage, c_int) {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut storage: sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<sockaddr_in>(), sin) };
            std::mem::size_of::<sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<sockaddr_in6>(), sin6) };
            std::mem::size_of::<sockaddr_in6>()
        }
    };
    (storage, len as c_int)
}

/// Reads an address libsrt wrote; `None` for a family other than IPv4/IPv6.
///
/// # Safety
/// `raw` must point at a valid `sockaddr` of its family's size.
pub(crate) unsafe fn from_raw(raw: *const sockaddr) -> Option<SocketAddr> {
    if raw.is_null() {
        return None;
    }
    match c_int::from((*raw).sa_family) {
        libc::AF_INET => {
            let a = &*raw.cast::<sockaddr_in>();
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            let a = &*raw.cast::<sockaddr_in6>();
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            if let Some(v4) = ip.to_ipv4_mapped() {
                // A dual-stack listener's IPv4 caller: show it as the IPv4 address it is.
                return Some(SocketAddr::from((v4, u16::from_be(a.sin6_port))));
            }
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Resolves `host:port` (a name, an IPv4 or an IPv6 address).
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, SrtError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| SrtError::ours(format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| SrtError::ours(format!("{host} has no address")))
}

/// The local address a socket for `url` binds to: the listener's port (and adapter), a
/// rendezvous' own port (the peer's when not given), a caller's fixed port if asked.
pub fn local_bind(url: &SrtUrl, remote: Option<&SocketAddr>) -> Result<Option<SocketAddr>, SrtError> {
    let v6 = remote.is_some_and(|r| r.is_ipv6());
    let any = if v6 { "::" } else { "0.0.0.0" };
    let adapter = url.local_address.as_deref();
    match url.mode {
        SrtMode::Listener => {
            let host = adapter.or(url.host.as_deref()).unwrap_or("::");
            Ok(Some(resolve(host, url.port)?))
        }
        SrtMode::Rendezvous => Ok(Some(resolve(adapter.unwrap_or(any), url.local_port.unwrap_or(url.port))?)),
        SrtMode::Caller => match (adapter, url.local_port) {
            (None, None) => Ok(None),
            (a, p) => Ok(Some(resolve(a.unwrap_or(any), p.unwrap_or(0))?)),
        },
    }
}
