//! The requests box B makes to box A while pairing: a small HTTP/1.1 client over one TCP
//! connection per request, with time and size limits. Each connection's TCP handshake takes
//! exactly one round trip, so its duration is the round trip between the boxes, measured
//! without the time either box spends on the exchange.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::CSRF_HEADER;

/// How long one request to the other box may take, all in.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer read.
const MAX_ANSWER: usize = 16 << 10;

/// An answer from the other box.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// `Retry-After`, seconds.
    pub retry_after: Option<u64>,
    /// The body.
    pub body: String,
    /// How long the TCP handshake took: one round trip.
    pub connect: Duration,
}

/// Why the other box could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No connection.
    #[error("cannot reach {0}: {1}")]
    Connect(String, String),
    /// No answer in time.
    #[error("{0} did not answer within 10 s")]
    Timeout(String),
    /// An answer that is not HTTP.
    #[error("{0} answered something that is not an HTTP answer")]
    Garbled(String),
}

/// `POST`s `body` (JSON) to `path` at `address` (`HOST:PORT`).
pub async fn post(address: &str, path: &str, body: &str) -> Result<Answer, ClientError> {
    tokio::time::timeout(REQUEST_TIMEOUT, post_inner(address, path, body))
        .await
        .map_err(|_| ClientError::Timeout(address.to_string()))?
}

async fn post_inner(address: &str, path: &str, body: &str) -> Result<Answer, ClientError> {
    let started = Instant::now();
    let mut stream =
        TcpStream::connect(address).await.map_err(|e| ClientError::Connect(address.to_string(), e.to_string()))?;
    let connect = started.elapsed();
    let _ = stream.set_nodelay(true);
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n{CSRF_HEADER}: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let io = |e: std::io::Error| ClientError::Connect(address.to_string(), e.to_string());
    stream.write_all(request.as_bytes()).await.map_err(io)?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.map_err(io)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        if raw.len() > MAX_ANSWER {
            return Err(ClientError::Garbled(address.to_string()));
        }
    }
    parse(&raw, connect).ok_or_else(|| ClientError::Garbled(address.to_string()))
}

/// Reads an HTTP/1.1 answer with a `Content-Length` body (axum's JSON answers): what the
/// other box, or whoever answers at the address typed, sent (fuzzed: fuzz/fuzz_targets).
pub fn parse(raw: &[u8], connect: Duration) -> Option<Answer> {
    let text = std::str::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let code = lines.next()?.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    // Three digits, 100 to 999: `+42` or ` 42` is no status (found by fuzz/pair_client).
    let status: u16 = code.bytes().all(|b| b.is_ascii_digit()).then(|| code.parse().ok()).flatten()?;
    if status < 100 {
        return None;
    }
    let mut retry_after = None;
    let mut length = None;
    for line in lines {
        let (k, v) = line.split_once(':')?;
        match k.trim().to_ascii_lowercase().as_str() {
            "retry-after" => retry_after = v.trim().parse().ok(),
            "content-length" => length = v.trim().parse::<usize>().ok(),
            _ => {}
        }
    }
    let body = match length {
        Some(n) => body.get(..n)?,
        None => body,
    };
    Some(Answer { status, retry_after, body: body.to_string(), connect })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_retry_after_and_the_body_by_its_length() {
        let raw = b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 5\r\ncontent-length: 11\r\n\r\n{\"error\":1}trailing";
        let a = parse(raw, Duration::from_millis(3)).unwrap();
        assert_eq!((a.status, a.retry_after, a.body.as_str()), (429, Some(5), "{\"error\":1}"));
        assert!(parse(b"SSH-2.0-OpenSSH\r\n\r\n", Duration::ZERO).is_none());
        assert!(parse(b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\nshort", Duration::ZERO).is_none());
        assert!(parse(b"HTTP/1.1 +429 Too Many\r\n\r\n", Duration::ZERO).is_none(), "a sign is no digit");
        assert!(parse(b"HTTP/1.1 042 x\r\n\r\n", Duration::ZERO).is_none());
    }
}
