//! Calling a peer (caller and rendezvous), shared by outputs and inputs: non-blocking, so a
//! stop is heard while libsrt waits for the handshake, and a refusal is put in words.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use telebridge_config::{SrtMode, SrtUrl};

use crate::reject::{rejected_since, RejectReason};
use crate::socket::{local_bind, resolve, SockState, Socket};
use crate::supervisor::Control;

/// `host:port` of the peer (or `*:port` for a listener), for messages.
pub fn peer_label(url: &SrtUrl) -> String {
    format!("{}:{}", url.host.as_deref().unwrap_or("*"), url.port)
}

/// Calls (or meets, in rendezvous) the peer `url` names. `Ok(None)` when stopped while calling;
/// `Err` says why not in words: the peer's refusal, or that nobody answered.
/// `send_only`: the connection will never receive (see [`Socket::set_send_only`]).
pub fn dial(url: &SrtUrl, control: &Control, send_only: bool) -> Result<Option<(Socket, SocketAddr)>, String> {
    let host = url.host.as_deref().unwrap_or("127.0.0.1");
    let remote = resolve(host, url.port).map_err(|e| e.to_string())?;
    let sock = Socket::new().map_err(|e| e.to_string())?;
    sock.configure(url).map_err(|e| e.to_string())?;
    if send_only {
        sock.set_send_only().map_err(|e| e.to_string())?;
    }
    let local = local_bind(url, Some(&remote)).map_err(|e| e.to_string())?;
    let since = Instant::now();
    let called = match (url.mode, local) {
        (SrtMode::Rendezvous, Some(local)) => sock.rendezvous(&local, &remote),
        (_, Some(local)) => sock.bind(&local).and_then(|_| sock.connect(&remote)),
        (_, None) => sock.connect(&remote),
    };
    let no_answer = || format!("no answer from {} (is the other end running?)", peer_label(url));
    if let Err(e) = called {
        return Err(refused(&sock, since).unwrap_or_else(|| format!("cannot call {}: {e}", peer_label(url))));
    }
    // libsrt gives up after SRTO_CONNTIMEO (3 s; ten times that in rendezvous); a backstop.
    let limit = url.connect_timeout.unwrap_or(Duration::from_secs(3))
        * if url.mode == SrtMode::Rendezvous { 10 } else { 1 }
        + Duration::from_secs(2);
    loop {
        match sock.state() {
            SockState::Connected => return Ok(Some((sock, remote))),
            SockState::Broken => return Err(refused(&sock, since).unwrap_or_else(no_answer)),
            SockState::Setup | SockState::Connecting => {}
        }
        if since.elapsed() > limit {
            return Err(no_answer());
        }
        if control.stop_within(Duration::from_millis(20)) {
            return Ok(None);
        }
    }
}

/// Why the peer refused, in words: libsrt's reject code, else what its log said.
fn refused(sock: &Socket, since: Instant) -> Option<String> {
    RejectReason::from_code(sock.reject_reason()).or_else(|| rejected_since(since)).map(|r| r.to_string())
}
