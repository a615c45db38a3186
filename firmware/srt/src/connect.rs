//! Calling a peer (caller and rendezvous), shared by outputs and inputs: non-blocking, so a
//! stop is heard while libsrt waits for the handshake, and a refusal is put in words.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use telebridge_config::{SrtMode, SrtUrl};

use crate::addr::{local_bind, resolve};
use crate::reject::{rejected_since, RejectReason};
use crate::socket::{SockState, Socket};
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
    if let (SrtMode::Rendezvous, Some(token), Some(local)) = (url.mode, url.meet_token, local) {
        if say_hello(&local, &remote, &token.hello(), control) {
            return Ok(None);
        }
    }
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

/// How long a hello waits for its port: a listener on it that just closed keeps it 4-5 s, until
/// libsrt's collector lets its UDP socket go (the listener gives it up [`crate::ways::MEET_LEAD`]
/// before the slot for this; the wait is the backstop, inside the rendezvous' 8 s).
const HELLO_PORT_WAIT: Duration = Duration::from_secs(6);

/// A hello is said this many times, 20 ms apart: one lost on the way would cost the slot.
const HELLOS: usize = 3;

/// A rendezvous through a meeting point says the pair's token first, from the port the
/// rendezvous is about to bind (the relay forwards only between two addresses that said it; a
/// NAT on the way keeps that port's mapping for the rendezvous that follows at once). `true`
/// when stopped meanwhile.
fn say_hello(local: &SocketAddr, relay: &SocketAddr, hello: &[u8], control: &Control) -> bool {
    let since = Instant::now();
    let bound = loop {
        match std::net::UdpSocket::bind(local) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && since.elapsed() < HELLO_PORT_WAIT => {
                if control.stop_within(Duration::from_millis(20)) {
                    return true;
                }
            }
            bound => break bound,
        }
    };
    let said = match bound {
        Ok(s) => {
            let mut sent = Ok(0);
            for k in 0..HELLOS {
                if k > 0 && control.stop_within(Duration::from_millis(20)) {
                    return true;
                }
                sent = s.send_to(hello, relay);
            }
            sent
        }
        Err(e) => Err(e),
    };
    if let Err(e) = said {
        tracing::warn!(local = %local, relay = %relay, error = %e, "cannot say the pair's token to the meeting point");
    }
    false
}

/// Why the peer refused, in words: libsrt's reject code, else what its log said.
fn refused(sock: &Socket, since: Instant) -> Option<String> {
    RejectReason::from_code(sock.reject_reason()).or_else(|| rejected_since(since)).map(|r| r.to_string())
}
