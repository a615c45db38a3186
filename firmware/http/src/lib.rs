//! Just enough HTTP/1.1 for WHIP's signalling (a POST of the offer, a DELETE to end) and
//! hawkBit's device API (JSON both ways, a bundle downloaded with resume), over GIO's sockets:
//! its TLS is the one RTMPS already uses (glib-networking), with the system's CA store, so the
//! box carries no second TLS stack. Blocking, one request a connection, bounded in time and
//! size. Reading a response is a pure function of its bytes.

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

/// A response's status line and the headers this client acts on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// The `Location` header.
    pub location: Option<String>,
    /// The `Content-Type` header, lower case, without parameters.
    pub content_type: Option<String>,
    /// The `Content-Length` header.
    pub length: Option<u64>,
    /// `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// A 206's `Content-Range: bytes START-END/TOTAL`: its start and total (`None`: `*`).
    pub range: Option<(u64, Option<u64>)>,
}

/// Reads a response's head from its first bytes: the head and where the body starts, `None`
/// while the head has not all come.
pub fn parse_head(bytes: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes[..end]).map_err(|_| "the response's headers are not text")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| format!("not an HTTP response: {:?}", status_line.chars().take(40).collect::<String>()))?;
    let mut head = Head { status, ..Head::default() };
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "location" => head.location = Some(value.to_string()),
            "content-type" => {
                head.content_type = Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
            }
            "content-length" => head.length = Some(value.parse::<u64>().map_err(|_| "a bad Content-Length")?),
            "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
            "content-range" => head.range = Some(content_range(value).ok_or("a bad Content-Range")?),
            _ => {}
        }
    }
    Ok(Some((head, end + 4)))
}

/// `bytes START-END/TOTAL` (or `/*`): the start and the total.
fn content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let (span, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let (start, end) = span.split_once('-')?;
    let (start, end) = (start.trim().parse::<u64>().ok()?, end.trim().parse::<u64>().ok()?);
    let total = if total.trim() == "*" { None } else { Some(total.trim().parse::<u64>().ok()?) };
    (start <= end && total.is_none_or(|t| end < t)).then_some((start, total))
}

/// Reads a whole response (the connection closed after it).
pub fn parse_response(bytes: &[u8]) -> Result<Response, String> {
    let (head, start) = parse_head(bytes)?.ok_or("the response has no end of headers")?;
    let rest = &bytes[start..];
    let body = if head.chunked {
        dechunk(rest)?
    } else if let Some(n) = head.length {
        let n = usize::try_from(n).map_err(|_| "a bad Content-Length")?;
        rest.get(..n).ok_or("the response ended before its Content-Length")?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status: head.status, location: head.location, content_type: head.content_type, body })
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

/// Opens a connection to `to` (TLS when it is secure, the certificate checked against the
/// system's CA store unless `tls_verify` is off), within `timeout`.
fn connect(to: &Target, timeout: Duration) -> Result<gio::SocketConnection, String> {
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
    client.connect_to_host(&address, to.port, gio::Cancellable::NONE).map_err(|e| {
        if e.kind::<gio::TlsError>().is_some() {
            format!(
                "{where_}: TLS failed ({}); a server with a self-signed certificate (a test server only) needs tls_verify=0",
                e.message()
            )
        } else {
            // GIO says "Could not connect to HOST: Connection refused": the cause is the last part.
            format!("cannot reach {where_}: {}", e.message().rsplit(": ").next().unwrap_or_default())
        }
    })
}

/// Connects to `to` and writes `request`: the connection, and `host:port` for the errors.
fn sent(to: &Target, request: &[u8], timeout: Duration) -> Result<(gio::SocketConnection, String), String> {
    let where_ = format!("{}:{}", to.host, to.port);
    let conn = connect(to, timeout)?;
    conn.output_stream()
        .write_all(request, gio::Cancellable::NONE)
        .map_err(|e| format!("cannot send to {where_}: {}", e.message()))?;
    Ok((conn, where_))
}

/// Sends one request and reads its response, within `timeout` for the connection and each read.
pub fn send(to: &Target, request: &[u8], timeout: Duration) -> Result<Response, String> {
    let (conn, where_) = sent(to, request, timeout)?;
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

/// Where a download's answer goes: a 2xx's head first (a resumed download learns whether the
/// server took its range), then its body, piece by piece.
pub trait Sink {
    /// The head of a 2xx answer, before its body.
    fn head(&mut self, head: &Head) -> Result<(), String>;
    /// The body's next bytes.
    fn body(&mut self, bytes: &[u8]) -> Result<(), String>;
}

/// Sends a GET (`request`, made by [`request_bytes`]) and streams a 2xx answer into `sink` as
/// it comes, within `timeout` for the connection and each read; `stop` is asked between reads
/// (a cancelled download). The head is returned whatever the status: only a 2xx reaches the
/// sink, and its body must be whole (its Content-Length reached; a chunked one is refused, the
/// downloads this serves all say their length).
pub fn download(
    to: &Target,
    request: &[u8],
    timeout: Duration,
    stop: &dyn Fn() -> bool,
    sink: &mut dyn Sink,
) -> Result<Head, String> {
    let (conn, where_) = sent(to, request, timeout)?;
    let input = conn.input_stream();
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = Vec::new();
    let read = |buf: &mut [u8]| {
        input.read(buf, gio::Cancellable::NONE).map_err(|e| format!("{where_} stopped sending: {}", e.message()))
    };
    let (head, start) = loop {
        let n = read(&mut buf[..])?;
        if n == 0 {
            return Err(format!("{where_} closed the connection before its answer's head"));
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(h) = parse_head(&got).map_err(|e| format!("{where_}: {e}"))? {
            break h;
        }
        if got.len() > RESPONSE_MAX {
            return Err(format!("{where_} sent a head of over {} KB", RESPONSE_MAX / 1024));
        }
    };
    if !(200..300).contains(&head.status) {
        let _ = conn.close(gio::Cancellable::NONE);
        return Ok(head);
    }
    if head.chunked {
        return Err(format!("{where_} sent the file chunked, without its length"));
    }
    let length = head.length.ok_or_else(|| format!("{where_} did not say the file's length"))?;
    sink.head(&head)?;
    let first = &got[start..];
    let mut left = length;
    let take = first.len().min(usize::try_from(left).unwrap_or(usize::MAX));
    sink.body(&first[..take])?;
    left -= take as u64;
    while left > 0 {
        if stop() {
            return Err("stopped".into());
        }
        let n = read(&mut buf[..])?;
        if n == 0 {
            return Err(format!("{where_} closed the connection with {left} bytes still to come"));
        }
        let take = n.min(usize::try_from(left).unwrap_or(usize::MAX));
        sink.body(&buf[..take])?;
        left -= take as u64;
    }
    let _ = conn.close(gio::Cancellable::NONE);
    Ok(head)
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
    fn a_partial_answer_says_where_it_starts() {
        let (h, start) = parse_head(
            b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-199/1000\r\nContent-Length: 100\r\n\r\nxy",
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.status, h.range, h.length), (206, Some((100, Some(1000))), Some(100)));
        assert_eq!(start, 88, "the body starts after the blank line");
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-").unwrap(), None, "not all of the head yet");
        for bad in ["bytes 5-4/10", "bytes 0-10/10", "bytes a-b/c", "items 0-1/2"] {
            let text = format!("HTTP/1.1 206 P\r\nContent-Range: {bad}\r\n\r\n");
            assert!(parse_head(text.as_bytes()).is_err(), "{bad}");
        }
        let ok = parse_head(b"HTTP/1.1 206 P\r\nContent-Range: bytes 0-9/*\r\n\r\n").unwrap().unwrap();
        assert_eq!(ok.0.range, Some((0, None)));
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
