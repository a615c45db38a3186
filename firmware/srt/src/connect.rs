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
/// `send_only`: the connection will never receive (see [`Socket::set_send_only`]); `latency`:
/// the SRT latency chosen for this connection, over the URL's ([`Socket::tune`]).
pub fn dial(
    url: &SrtUrl,
    control: &Control,
    send_only: bool,
    latency: Option<&crate::latency::LatencyChoice>,
) -> Result<Option<(Socket, SocketAddr)>, String> {
    let host = url.host.as_deref().unwrap_or("127.0.0.1");
    let remote = resolve(host, url.port).map_err(|e| e.to_string())?;
    let sock = Socket::new().map_err(|e| e.to_string())?;
    sock.configure(url).map_err(|e| e.to_string())?;
    if let Some(c) = latency {
        sock.tune(c).map_err(|e| e.to_string())?;
    }
    if send_only {
        sock.set_send_only().map_err(|e| e.to_string())?;
    }
    let local = local_bind(url, Some(&remote)).map_err(|e| e.to_string())?;
    if let (SrtMode::Rendezvous, Some(token), Some(local)) = (url.mode, url.meet_token, local) {
        if say_hello(&local, &remote, &token, control) {
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

/// A confirmation is said this many times, 20 ms apart: one lost on the way would cost the slot.
const HELLOS: usize = 3;
/// How long a hello waits for the meeting point's cookie, said again each [`HELLO_AGAIN`].
const COOKIE_WAIT: Duration = Duration::from_millis(1500);
const HELLO_AGAIN: Duration = Duration::from_millis(250);

/// A rendezvous through a meeting point says the pair's token for this slot first, from the
/// port the rendezvous is about to bind, and confirms it with the cookie the relay answers
/// (the relay forwards only between two addresses that did so; a NAT on the way keeps that
/// port's mapping for the rendezvous that follows at once). See
/// [`telebridge_config::MeetToken`]. `true` when stopped meanwhile.
fn say_hello(local: &SocketAddr, relay: &SocketAddr, key: &telebridge_config::MeetToken, control: &Control) -> bool {
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
    let unix_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let hello = key.hello(telebridge_config::meet_slot(unix_ms));
    let said = bound.and_then(|s| {
        s.set_read_timeout(Some(Duration::from_millis(20)))?;
        let asked = Instant::now();
        let mut last_hello: Option<Instant> = None;
        let mut buf = [0u8; 64];
        let cookie = loop {
            if asked.elapsed() > COOKIE_WAIT {
                break None;
            }
            if last_hello.is_none_or(|t| t.elapsed() >= HELLO_AGAIN) {
                s.send_to(&hello.to_bytes(), relay)?;
                last_hello = Some(Instant::now());
            }
            match s.recv_from(&mut buf) {
                Ok((n, from)) if from == *relay => {
                    if let Some(c) = telebridge_config::MeetHello::cookie_from(&buf[..n]) {
                        break Some(c);
                    }
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                // An ICMP error from a relay not (yet) there: it is asked again.
                Err(_) => {}
            }
            if control.stop_within(Duration::ZERO) {
                return Ok(true);
            }
        };
        let Some(cookie) = cookie else {
            tracing::warn!(%relay, "the meeting point did not answer the pair's hello (not running, or older than this box)");
            return Ok(false);
        };
        let confirm = telebridge_config::MeetHello { cookie: Some(cookie), ..hello }.to_bytes();
        for k in 0..HELLOS {
            if k > 0 && control.stop_within(Duration::from_millis(20)) {
                return Ok(true);
            }
            s.send_to(&confirm, relay)?;
        }
        Ok(false)
    });
    match said {
        Ok(stopped) => stopped,
        Err(e) => {
            tracing::warn!(local = %local, relay = %relay, error = %e, "cannot say the pair's token to the meeting point");
            false
        }
    }
}

/// Why the peer refused, in words: libsrt's reject code, else what its log said.
fn refused(sock: &Socket, since: Instant) -> Option<String> {
    RejectReason::from_code(sock.reject_reason()).or_else(|| rejected_since(since)).map(|r| r.to_string())
}
