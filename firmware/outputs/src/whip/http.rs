//! Just enough HTTP/1.1 for WHIP's signalling (a POST of the offer, a DELETE to end), over
//! GIO's sockets: its TLS is the one RTMPS already uses (glib-networking), so the box carries no
//! second TLS stack. Blocking, one request a connection, bounded in time and size. Reading the
//! response is a pure function of its bytes.

use std::time::Duration;

use gio::prelude::*;

/// The largest response read (an SDP answer is a few KB).
const RESPONSE_MAX: usize = 256 * 1024;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Over TLS.
    pub secure: bool,
    /// Check the server's certificate.
    pub tls_verify: bool,
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path and query.
    pub path: String,
}

impl Target {
    /// Where `location` (a `Location` header: absolute, or a path on the same server) points,
    /// seen from `self`.
    pub fn resolve(&self, location: &str) -> Option<Target> {
        if location.starts_with('/') {
            return Some(Target { path: location.to_string(), ..self.clone() });
        }
        let (secure, rest) = match (location.strip_prefix("https://"), location.strip_prefix("http://")) {
            (Some(r), _) => (true, r),
            (_, Some(r)) => (false, r),
            _ => return None,
        };
        let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') => (h, p.parse().ok()?),
            _ => (authority, if secure { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        (!host.is_empty()).then(|| Target {
            secure,
            tls_verify: self.tls_verify,
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }
}

/// A response, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Location` header.
    pub location: Option<String>,
    /// The `Content-Type` header, lower case, without parameters.
    pub content_type: Option<String>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

/// Reads a whole response (the connection closed after it).
pub fn parse_response(bytes: &[u8]) -> Result<Response, String> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n").ok_or("the response has no end of headers")?;
    let head = std::str::from_utf8(&bytes[..end]).map_err(|_| "the response's headers are not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| format!("not an HTTP response: {:?}", status_line.chars().take(40).collect::<String>()))?;
    let (mut location, mut content_type, mut length, mut chunked) = (None, None, None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "location" => location = Some(value.to_string()),
            "content-type" => {
                content_type = Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
            }
            "content-length" => length = Some(value.parse::<usize>().map_err(|_| "a bad Content-Length")?),
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let rest = &bytes[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        rest.get(..n).ok_or("the response ended before its Content-Length")?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, location, content_type, body })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").ok_or("a chunk without its size line")?;
        let size = std::str::from_utf8(&rest[..eol]).ok().and_then(|s| s.split(';').next());
        let size = size.and_then(|s| usize::from_str_radix(s.trim(), 16).ok()).ok_or("a bad chunk size")?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("the response ended inside a chunk")?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or("the response ended inside a chunk")?;
    }
}

/// A request's bytes. `headers` are written as given (their values checked by the caller).
pub fn request_bytes(method: &str, to: &Target, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let host = if to.host.contains(':') { format!("[{}]", to.host) } else { to.host.clone() };
    let mut text = format!(
        "{method} {} HTTP/1.1\r\nHost: {host}:{}\r\nConnection: close\r\nUser-Agent: telebridge/{}\r\nContent-Length: {}\r\n",
        to.path,
        to.port,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Sends one request and reads its response, within `timeout` for the connection and each read.
pub fn send(to: &Target, request: &[u8], timeout: Duration) -> Result<Response, String> {
    let where_ = format!("{}:{}", to.host, to.port);
    let client = gio::SocketClient::new();
    client.set_timeout(timeout.as_secs().max(1) as u32);
    if to.secure {
        client.set_tls(true);
        if !to.tls_verify {
            client.set_tls_validation_flags(gio::TlsCertificateFlags::empty());
        }
    }
    let address = if to.host.contains(':') { format!("[{}]:{}", to.host, to.port) } else { where_.clone() };
    let conn = client
        .connect_to_host(&address, to.port, gio::Cancellable::NONE)
        .map_err(|e| {
            if e.kind::<gio::TlsError>().is_some() {
                format!(
                    "{where_}: TLS failed ({}); a server with a self-signed certificate (a test server only) needs tls_verify=0",
                    e.message()
                )
            } else {
                // GIO says "Could not connect to HOST: Connection refused": the cause is the last part.
                format!("cannot reach {where_}: {}", e.message().rsplit(": ").next().unwrap_or_default())
            }
        })?;
    conn.output_stream()
        .write_all(request, gio::Cancellable::NONE)
        .map_err(|e| format!("cannot send to {where_}: {}", e.message()))?;
    let input = conn.input_stream();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = input
            .read(&mut buf[..], gio::Cancellable::NONE)
            .map_err(|e| format!("no answer from {where_}: {}", e.message()))?;
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.len() > RESPONSE_MAX {
            return Err(format!("{where_} answered with over {} KB", RESPONSE_MAX / 1024));
        }
        // A whole response with a Content-Length need not wait for the server to close.
        if let Ok(r) = parse_response(&got) {
            if complete(&got, &r) {
                break;
            }
        }
    }
    let _ = conn.close(gio::Cancellable::NONE);
    parse_response(&got).map_err(|e| format!("{where_}: {e}"))
}

/// Whether `got` holds all of `r` (its Content-Length reached, or the last chunk read).
fn complete(got: &[u8], r: &Response) -> bool {
    let head = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
    let text = String::from_utf8_lossy(&got[..head]).to_ascii_lowercase();
    text.contains("content-length:") && got.len() >= head + 4 + r.body.len()
        || text.contains("chunked") && got.ends_with(b"0\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whip_answer_is_read() {
        let r = parse_response(
            b"HTTP/1.1 201 Created\r\nLocation: /whip/res/abc\r\nContent-Type: application/sdp; charset=utf-8\r\n\
              Content-Length: 5\r\n\r\nv=0\r\nextra",
        )
        .unwrap();
        assert_eq!(
            (r.status, r.location.as_deref(), r.content_type.as_deref()),
            (201, Some("/whip/res/abc"), Some("application/sdp"))
        );
        assert_eq!(r.body, b"v=0\r\n");
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nv=0\r\n2;x\r\n\r\n\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"v=0\r\n");
    }

    #[test]
    fn broken_responses_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"HTTP/1.1 201",
            b"SSH-2.0\r\n\r\n",
            b"HTTP/1.1 20x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            assert!(parse_response(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    proptest::proptest! {
        /// A server's answer is a stranger's bytes: any of them is read or refused, never a panic,
        /// and a body is never longer than what came.
        #[test]
        fn any_bytes_are_read_or_refused(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
                                         head in "HTTP/1\\.[01] [0-9]{3} [A-Za-z]{0,8}\r\n(Content-Length: [0-9]{1,3}\r\n|Transfer-Encoding: chunked\r\n)?\r\n") {
            let _ = parse_response(&bytes);
            let mut whole = head.into_bytes();
            whole.extend_from_slice(&bytes);
            if let Ok(r) = parse_response(&whole) {
                proptest::prop_assert!(r.body.len() <= bytes.len());
            }
        }
    }

    #[test]
    fn a_location_is_resolved_against_the_endpoint() {
        let at = Target { secure: true, tls_verify: true, host: "h".into(), port: 8443, path: "/whip".into() };
        assert_eq!(at.resolve("/whip/res/1").unwrap().path, "/whip/res/1");
        let other = at.resolve("http://[::1]:8080/r/2").unwrap();
        assert_eq!((other.secure, other.host.as_str(), other.port, other.path.as_str()), (false, "::1", 8080, "/r/2"));
        assert_eq!(at.resolve("https://x.example/r").unwrap().port, 443);
        assert!(at.resolve("ftp://x/r").is_none());
    }

    #[test]
    fn a_request_carries_its_headers_and_body() {
        let to = Target { secure: false, tls_verify: true, host: "::1".into(), port: 80, path: "/w".into() };
        let text =
            String::from_utf8(request_bytes("POST", &to, &[("Content-Type", "application/sdp")], b"v=0")).unwrap();
        assert!(text.starts_with("POST /w HTTP/1.1\r\nHost: [::1]:80\r\n"), "{text}");
        assert!(text.ends_with("Content-Type: application/sdp\r\n\r\nv=0"), "{text}");
    }
}
