//! Asking the router to pass the bridge's UDP port to this box (UPnP Internet Gateway Device):
//! so that the box that listens can be reached from the internet without anyone opening a port
//! by hand. SSDP finds the router on the LAN, its description names the WAN connection's
//! control URL, and two SOAP calls ask for the public address and add the mapping (with a
//! lease the box renews). Blocking I/O with short timeouts (call it off the async runtime); the
//! parsing is pure and tested against a real router's words (miniupnpd, in the NAT test).
//!
//! Anyone on the LAN can answer an SSDP search, so nothing in an answer is taken on trust
//! (issue 36, finding 5): only the default gateway's answer counts, its description must be on
//! the gateway itself and name a control URL there, the service type and URL must be what a
//! router writes (no control characters, spaces or quotes to split a request with), each
//! request has a deadline a dripping answer cannot stretch, and a public address the router
//! claims must look like one.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// Where SSDP searches go.
pub const SSDP: &str = "239.255.255.250:1900";
/// How long to wait for a router to answer the search.
pub const SEARCH_WAIT: Duration = Duration::from_secs(2);
/// How long one request to the router may take, from connecting to the answer's last byte.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// The most of an answer read.
const MAX_ANSWER: usize = 64 << 10;

/// Why the router could not be asked, or said no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpnpError {
    /// Nothing answered the search.
    #[error("no UPnP router answered on this network (it may have UPnP switched off)")]
    NoRouter,
    /// A router answered, but offers no WAN connection to map ports on.
    #[error("the router at {0} offers no WAN IP connection service")]
    NoService(String),
    /// The router could not be reached or answered garbage.
    #[error("the router at {0}: {1}")]
    Io(String, String),
    /// The router refused (its UPnP error words).
    #[error("the router refused: {0}")]
    Refused(String),
    /// An answer that no router of ours would give: ignored.
    #[error("ignored a UPnP answer: {0}")]
    Untrusted(String),
}

/// The default IPv4 gateway in the kernel's routing table (`/proc/net/route`'s text).
pub fn default_gateway(route_table: &str) -> Option<Ipv4Addr> {
    route_table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (dest, gw, flags) = (f.get(1)?, f.get(2)?, u32::from_str_radix(f.get(3)?, 16).ok()?);
        // RTF_UP | RTF_GATEWAY, to 0.0.0.0; the kernel writes addresses in host (little-endian) order.
        (*dest == "00000000" && flags & 0x3 == 0x3)
            .then(|| u32::from_str_radix(gw, 16).ok())
            .flatten()
            .map(|g| Ipv4Addr::from(g.swap_bytes()))
    })
}

/// Whether `ip` could be a router's public address: a global unicast address, not a private,
/// shared (carrier-grade NAT), loopback, link-local, documentation, benchmarking, multicast or
/// reserved one. A router behind another one reports its private side, which no other box can
/// call; a stranger's fake router may report anything.
pub fn plausible_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0 && c == 0))
        }
        IpAddr::V6(v6) => (v6.segments()[0] & 0xe000) == 0x2000 && v6.segments()[0..2] != [0x2001, 0x0db8],
    }
}

/// Whether `s` can go into a request line or a header as it is: printable ASCII without
/// spaces, quotes or angle brackets.
fn clean(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'<' | b'>' | b'\\'))
}

/// The host (an IP address) of an `http://` URL.
fn url_ip(url: &str) -> Option<IpAddr> {
    let (host, _) = split_url(url)?;
    host.parse::<SocketAddr>().ok().map(|a| a.ip())
}

/// The search for an Internet Gateway Device.
pub fn search_request() -> String {
    format!(
        "M-SEARCH * HTTP/1.1\r\nHOST: {SSDP}\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\r\n"
    )
}

/// The `LOCATION` of an SSDP answer (the router's description).
pub fn location(answer: &str) -> Option<String> {
    answer.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("location").then(|| v.trim().to_string())
    })
}

/// The text of the first `<tag>` at or after `from`, and where it ends.
fn element<'a>(xml: &'a str, tag: &str, from: usize) -> Option<(&'a str, usize)> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.get(from..)?.find(&open)? + from + open.len();
    let end = xml.get(start..)?.find(&close)? + start;
    Some((xml[start..end].trim(), end + close.len()))
}

/// The WAN connection's service type and absolute control URL from a description.
pub fn control_url(description: &str, location: &str) -> Option<(String, String)> {
    let mut at = 0;
    while let Some((service, end)) = element(description, "service", at) {
        at = end;
        let kind = element(service, "serviceType", 0).map(|(t, _)| t)?;
        let version = kind
            .strip_prefix("urn:schemas-upnp-org:service:WANIPConnection:")
            .or_else(|| kind.strip_prefix("urn:schemas-upnp-org:service:WANPPPConnection:"));
        if !version.is_some_and(|v| !v.is_empty() && v.len() <= 3 && v.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let url = element(service, "controlURL", 0).map(|(u, _)| u)?;
        if !clean(url) {
            return None;
        }
        let absolute = if url.starts_with("http://") {
            url.to_string()
        } else {
            let base = element(description, "URLBase", 0).map(|(b, _)| b.to_string()).unwrap_or_else(|| {
                // scheme://host:port of the location
                let rest = location.strip_prefix("http://").unwrap_or(location);
                format!("http://{}", rest.split('/').next().unwrap_or(""))
            });
            format!("{}/{}", base.trim_end_matches('/'), url.trim_start_matches('/'))
        };
        // The control URL is on the host that described it, or it is not followed.
        if !clean(&absolute) || url_ip(&absolute).is_none() || url_ip(&absolute) != url_ip(location) {
            return None;
        }
        return Some((kind.to_string(), absolute));
    }
    None
}

/// A SOAP call's body.
pub fn soap_body(service: &str, action: &str, args: &[(&str, String)]) -> String {
    let args: String = args.iter().map(|(k, v)| format!("<{k}>{v}</{k}>")).collect();
    format!(
        "<?xml version=\"1.0\"?>\r\n<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body><u:{action} xmlns:u=\"{service}\">{args}</u:{action}></s:Body></s:Envelope>\r\n"
    )
}

/// A value from a SOAP answer (the tag without namespace prefix).
pub fn soap_value(answer: &str, tag: &str) -> Option<String> {
    element(answer, tag, 0).map(|(v, _)| v.to_string())
}

/// An `http://host:port/path` URL's (host:port, path).
fn split_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let host = if host.contains(':') { host.to_string() } else { format!("{host}:80") };
    Some((host, path))
}

/// One HTTP/1.1 request; (status, body, the local address of the connection).
fn http(url: &str, soap_action: Option<&str>, body: &str) -> Result<(u16, String, IpAddr), UpnpError> {
    let io = |e: String| UpnpError::Io(url.to_string(), e);
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let (host, path) = split_url(url).ok_or_else(|| io("not an http:// URL".into()))?;
    if !clean(&host) || !clean(&path) || soap_action.is_some_and(|a| !clean(a)) {
        return Err(UpnpError::Untrusted(format!("{url}: characters no router's URL has")));
    }
    // An address, never a name to resolve: the router is the default gateway.
    let addr: SocketAddr = host.parse().map_err(|_| io("not an IP address and port".into()))?;
    let mut s = TcpStream::connect_timeout(&addr, REQUEST_DEADLINE).map_err(|e| io(e.to_string()))?;
    let _ = s.set_write_timeout(Some(REQUEST_DEADLINE));
    let local = s.local_addr().map_err(|e| io(e.to_string()))?.ip();
    let request = match soap_action {
        Some(action) => format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/xml; charset=\"utf-8\"\r\nSOAPAction: \"{action}\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
        None => format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    };
    s.write_all(request.as_bytes()).map_err(|e| io(e.to_string()))?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io(format!("no whole answer within {} s", REQUEST_DEADLINE.as_secs())));
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(io(format!("no whole answer within {} s", REQUEST_DEADLINE.as_secs())))
            }
            Err(e) => return Err(io(e.to_string())),
        }
        if raw.len() > MAX_ANSWER {
            return Err(io("answer too large".into()));
        }
    }
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| io("not an HTTP answer".into()))?;
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| io("no status".into()))?;
    Ok((status, body.to_string(), local))
}

/// A router that maps ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    /// The WAN connection service's type.
    pub service: String,
    /// Its control URL.
    pub control: String,
    /// This box's address towards the router (what the mapping points at).
    pub local: IpAddr,
}

impl Gateway {
    /// Finds the router on the LAN (waits at most [`SEARCH_WAIT`] for it): the default
    /// gateway's answer, and no other host's.
    pub fn discover() -> Result<Self, UpnpError> {
        let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
        let gateway = default_gateway(&routes).ok_or(UpnpError::NoRouter)?;
        Self::discover_at(IpAddr::V4(gateway))
    }

    /// Finds the router at `gateway` (answers from other hosts are ignored).
    pub fn discover_at(gateway: IpAddr) -> Result<Self, UpnpError> {
        let io = |e: std::io::Error| UpnpError::Io(SSDP.into(), e.to_string());
        let socket = UdpSocket::bind("0.0.0.0:0").map_err(io)?;
        socket.set_multicast_ttl_v4(2).map_err(io)?;
        socket.send_to(search_request().as_bytes(), SSDP).map_err(io)?;
        let deadline = Instant::now() + SEARCH_WAIT;
        let mut buf = [0u8; 2048];
        let found = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(UpnpError::NoRouter);
            }
            socket.set_read_timeout(Some(left)).map_err(io)?;
            match socket.recv_from(&mut buf) {
                Ok((n, from)) if from.ip() == gateway => {
                    if let Some(l) = location(&String::from_utf8_lossy(&buf[..n])) {
                        if url_ip(&l) == Some(gateway) && clean(&l) {
                            break l;
                        }
                    }
                }
                Ok(_) => {} // another host on the LAN: not the router
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    return Err(UpnpError::NoRouter)
                }
                Err(e) => return Err(io(e)),
            }
        };
        let (status, description, local) = http(&found, None, "")?;
        if status != 200 {
            return Err(UpnpError::Io(found, format!("description answered {status}")));
        }
        let (service, control) = control_url(&description, &found).ok_or(UpnpError::NoService(found))?;
        Ok(Self { service, control, local })
    }

    fn call(&self, action: &str, args: &[(&str, String)]) -> Result<String, UpnpError> {
        let body = soap_body(&self.service, action, args);
        let (status, answer, _) = http(&self.control, Some(&format!("{}#{action}", self.service)), &body)?;
        if status != 200 {
            let words = soap_value(&answer, "errorDescription").unwrap_or_else(|| format!("HTTP {status}"));
            let code = soap_value(&answer, "errorCode").map(|c| format!(" ({c})")).unwrap_or_default();
            return Err(UpnpError::Refused(format!("{action}: {words}{code}")));
        }
        Ok(answer)
    }

    /// The router's public address: refused unless it is one ([`plausible_public`]).
    pub fn external_ip(&self) -> Result<IpAddr, UpnpError> {
        let answer = self.call("GetExternalIPAddress", &[])?;
        let ip: IpAddr = soap_value(&answer, "NewExternalIPAddress")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| UpnpError::Refused("GetExternalIPAddress: no address in the answer".into()))?;
        if !plausible_public(ip) {
            return Err(UpnpError::Untrusted(format!(
                "the router says its public address is {ip}, which is not a public address (a second router in between?)"
            )));
        }
        Ok(ip)
    }

    /// Maps the router's UDP `port` to this box's same port for `lease`.
    pub fn map_udp(&self, port: u16, lease: Duration, what: &str) -> Result<(), UpnpError> {
        self.call(
            "AddPortMapping",
            &[
                ("NewRemoteHost", String::new()),
                ("NewExternalPort", port.to_string()),
                ("NewProtocol", "UDP".into()),
                ("NewInternalPort", port.to_string()),
                ("NewInternalClient", self.local.to_string()),
                ("NewEnabled", "1".into()),
                ("NewPortMappingDescription", what.into()),
                ("NewLeaseDuration", lease.as_secs().to_string()),
            ],
        )
        .map(|_| ())
    }

    /// Removes the mapping of UDP `port`.
    pub fn unmap_udp(&self, port: u16) -> Result<(), UpnpError> {
        self.call(
            "DeletePortMapping",
            &[("NewRemoteHost", String::new()), ("NewExternalPort", port.to_string()), ("NewProtocol", "UDP".into())],
        )
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // As miniupnpd 2.3.1 answers (abridged).
    const DESCRIPTION: &str = "<?xml version=\"1.0\"?><root><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:Layer3Forwarding:1</serviceType><controlURL>/ctl/L3F</controlURL></service></serviceList><deviceList><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANCommonInterfaceConfig:1</serviceType><controlURL>/ctl/CmnIfCfg</controlURL></service></serviceList><deviceList><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:2</serviceType><serviceId>urn:upnp-org:serviceId:WANIPConn1</serviceId><SCPDURL>/WANIPCn.xml</SCPDURL><controlURL>/ctl/IPConn</controlURL></service></serviceList></device></deviceList></device></deviceList></device></root>";

    #[test]
    fn the_search_answer_and_the_description_lead_to_the_control_url() {
        let answer = "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=120\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\nLOCATION: http://10.0.1.1:5000/rootDesc.xml\r\n\r\n";
        let loc = location(answer).unwrap();
        assert_eq!(loc, "http://10.0.1.1:5000/rootDesc.xml");
        assert_eq!(
            control_url(DESCRIPTION, &loc),
            Some(("urn:schemas-upnp-org:service:WANIPConnection:2".into(), "http://10.0.1.1:5000/ctl/IPConn".into()))
        );
        let based = DESCRIPTION.replace("<root>", "<root><URLBase>http://10.0.1.1:49152/</URLBase>");
        assert_eq!(control_url(&based, &loc).unwrap().1, "http://10.0.1.1:49152/ctl/IPConn");
        assert_eq!(control_url("<root><service><serviceType>x</serviceType></service></root>", &loc), None);
        assert_eq!(location("HTTP/1.1 200 OK\r\n\r\n"), None);
    }

    #[test]
    fn a_description_cannot_send_the_box_elsewhere_or_split_its_requests() {
        let loc = "http://10.0.1.1:5000/rootDesc.xml";
        let with = |service: &str, url: &str| {
            format!(
                "<root><service><serviceType>{service}</serviceType><controlURL>{url}</controlURL></service></root>"
            )
        };
        let ok = "urn:schemas-upnp-org:service:WANIPConnection:1";
        assert!(control_url(&with(ok, "/ctl/IPConn"), loc).is_some());
        assert_eq!(control_url(&with(ok, "http://203.0.113.9/ctl"), loc), None, "another host");
        let based = with(ok, "/ctl").replace("<root>", "<root><URLBase>http://10.0.1.66:80/</URLBase>");
        assert_eq!(control_url(&based, loc), None, "a URLBase on another host");
        assert_eq!(control_url(&with(ok, "/ctl HTTP/1.1\r\nX-Evil: 1\r\n\r\nGET /x"), loc), None);
        assert_eq!(control_url(&with(ok, "/ctl\"x"), loc), None);
        let split = "urn:schemas-upnp-org:service:WANIPConnection:1\"\r\nX-Evil: 1";
        assert_eq!(control_url(&with(split, "/ctl"), loc), None, "a service type that splits SOAPAction");
        assert_eq!(control_url(&with("urn:schemas-upnp-org:service:WANIPConnection:", "/ctl"), loc), None);
    }

    #[test]
    fn the_default_gateway_and_plausible_public_addresses() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                     eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
        assert_eq!(default_gateway(table), Some(Ipv4Addr::new(192, 168, 1, 1)));
        assert_eq!(default_gateway("Iface\tDestination\n"), None);
        for ok in ["198.20.0.1", "81.2.69.142", "2a00:1450:4001::1"] {
            assert!(plausible_public(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "10.0.0.1",
            "192.168.1.1",
            "172.16.5.4",
            "100.64.1.1",
            "127.0.0.1",
            "169.254.1.1",
            "0.0.0.0",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "fd00::1",
            "fe80::1",
            "2001:db8::1",
            "::1",
        ] {
            assert!(!plausible_public(bad.parse().unwrap()), "{bad}");
        }
    }

    #[test]
    fn soap_calls_and_answers() {
        let body = soap_body(
            "urn:schemas-upnp-org:service:WANIPConnection:2",
            "AddPortMapping",
            &[("NewExternalPort", "7700".into())],
        );
        assert!(body.contains("<u:AddPortMapping xmlns:u=\"urn:schemas-upnp-org:service:WANIPConnection:2\"><NewExternalPort>7700</NewExternalPort></u:AddPortMapping>"), "{body}");
        let answer = "<s:Envelope><s:Body><u:GetExternalIPAddressResponse><NewExternalIPAddress>198.20.0.1</NewExternalIPAddress></u:GetExternalIPAddressResponse></s:Body></s:Envelope>";
        assert_eq!(soap_value(answer, "NewExternalIPAddress").as_deref(), Some("198.20.0.1"));
        let fault = "<s:Fault><detail><UPnPError><errorCode>718</errorCode><errorDescription>ConflictInMappingEntry</errorDescription></UPnPError></detail></s:Fault>";
        assert_eq!(soap_value(fault, "errorDescription").as_deref(), Some("ConflictInMappingEntry"));
        assert_eq!(split_url("http://10.0.1.1:5000/ctl/IPConn"), Some(("10.0.1.1:5000".into(), "/ctl/IPConn".into())));
        assert_eq!(split_url("http://router/x"), Some(("router:80".into(), "/x".into())));
    }
}
