//! The output's own thread, one attempt at a time: a listener serving its callers, or one
//! caller or rendezvous connection; each reads what the peer sends back and publishes the
//! status.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::SrtMode;
use tracing::{info, warn};

use super::{Conn, OutputState, Worker, LISTEN_BACKLOG};
use crate::addr::local_bind;
use crate::connect::{dial, peer_label};
use crate::epoll::{Epoll, Ready};
use crate::error::SrtError;
use crate::listen_hook::{Admit, Listener};
use crate::peer::{ack_timeout, Peer, PeerWatch};
use crate::reject::rejected_since;
use crate::socket::{SockState, Socket};
use crate::supervisor::Control;
use crate::SrtStats;

/// How often the status is refreshed and the peer checked.
const TICK: Duration = Duration::from_millis(200);
/// How long the thread waits on its sockets (when it has to) before looking at the time and
/// at a stop: a caller arriving, data from a peer or a broken connection wake it at once.
const WAIT: Duration = TICK;
/// How often a listener that only sends looks for new callers.
const POLL: Duration = Duration::from_millis(20);
pub(super) fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Waits for the next thing to do: on `epoll` when there is one (a duplex output), else only
/// for a stop, up to `idle`. `ready` is emptied or filled. `true` when the output must stop.
fn stop_or_wait(control: &Control, epoll: Option<&Epoll>, idle: Duration, ready: &mut Vec<Ready>) -> bool {
    ready.clear();
    match epoll {
        Some(e) => {
            if control.stop_within(Duration::ZERO) {
                return true;
            }
            e.wait(WAIT, ready);
            false
        }
        None => control.stop_within(idle),
    }
}

impl Worker {
    /// A listener: any number of callers, each added to the fan-out when its handshake
    /// completes. `None` when stopped, else why it ended.
    pub(super) fn listen(&mut self, control: &Control, attempt: &mut u32) -> Option<String> {
        let started = Instant::now();
        // With rendezvous ways after it, a listener that no caller reached gives the port up
        // for the next rendezvous slot (early enough for a meeting point's hello to have it).
        let lead =
            if self.ways.iter().any(|w| w.meet_token.is_some()) { crate::ways::MEET_LEAD } else { crate::ways::LEAD };
        let listen_until = started + crate::ways::listen_for(unix_ms(), lead);
        self.status.send_modify(|s| s.state = OutputState::Listening);
        let duplex = self.on_receive.is_some();
        let setup = || -> Result<(Listener, Option<Epoll>), SrtError> {
            let sock = Socket::new()?;
            sock.configure(&self.url)?;
            if let Some(c) = &self.latency {
                sock.tune(c)?;
            }
            if !duplex {
                // Accepted sockets take the listener's options.
                sock.set_send_only()?;
            }
            let sock = Listener::new(sock, Arc::new(|_: &str, _| Admit::Accept(None)))?;
            let addr = local_bind(&self.url, None)?.ok_or_else(|| SrtError { code: -1, text: "no port".into() })?;
            sock.bind_listener(&addr)?;
            sock.listen(LISTEN_BACKLOG)?;
            // Only a listener whose callers send back needs to wait on their sockets; one that
            // only sends looks for new callers every POLL (libsrt's epoll wakes its waiters at
            // every packet of the process, which a sender pays for nothing).
            let epoll = if duplex {
                let e = Epoll::new()?;
                e.add(&sock)?;
                Some(e)
            } else {
                None
            };
            Ok((sock, epoll))
        };
        let (listener, epoll) = match setup() {
            Ok(x) => x,
            Err(e) => return Some(format!("cannot listen on port {}: {e}", self.url.port)),
        };
        let mut sockets: Vec<Arc<Conn>> = Vec::new();
        let mut watches: std::collections::HashMap<i32, PeerWatch> = std::collections::HashMap::new();
        let mut last_tick = started;
        let mut last_reject_check = started;
        let mut buf = vec![0u8; 1500];
        let mut ready = Vec::new();
        loop {
            if stop_or_wait(control, epoll.as_ref(), POLL, &mut ready) {
                return None;
            }
            while let Ok(Some((sock, addr))) = listener.accept() {
                let addr = addr.map(|a| a.to_string());
                info!(output = %self.url.label(), caller = addr.as_deref().unwrap_or("?"), "SRT caller connected");
                if epoll.as_ref().is_some_and(|e| e.add(&sock).is_err()) {
                    continue;
                }
                let conn = Arc::new(Conn { socket: sock, addr });
                sockets.push(conn.clone());
                self.shared.add(conn);
                *attempt = 0;
                self.connected = true;
                (self.on_peer_joined)();
                // A caller got in: an earlier rejection (a wrong passphrase, a stranger's
                // handshake) is no longer what the user needs to see.
                self.status.send_modify(|s| s.last_rejection = None);
                last_reject_check = Instant::now();
            }
            for r in ready.iter().filter(|r| r.readable && r.socket != listener.id()) {
                if let Some(c) = sockets.iter().find(|c| c.socket.id() == r.socket) {
                    self.drain(&c.socket, &mut buf);
                }
            }
            let tick = last_tick.elapsed() >= TICK;
            if !tick {
                continue;
            }
            if !self.connected && self.ways.len() > 1 && Instant::now() >= listen_until {
                return Some(format!("no caller for {} s", listen_until.duration_since(started).as_secs()));
            }
            let mut conns: Vec<(Option<String>, SrtStats)> = Vec::new();
            // Callers that left: closed, broken, or no longer acknowledging (gone without a word).
            sockets.retain(|c| {
                let now = Instant::now();
                let gone = if c.socket.state() != SockState::Connected {
                    Some("left".to_string())
                } else if let Some(st) = c.socket.stats().map(|p| crate::stats::from_perf(&p)) {
                    let timeout = ack_timeout(&self.url, Duration::from_secs_f64(st.rtt_ms / 1000.0));
                    let watch = watches.entry(c.socket.id()).or_insert_with(|| PeerWatch::new(now));
                    let verdict = watch.observe(st.acks_received, st.packets_sent, now, timeout);
                    conns.push((c.addr.clone(), st));
                    match verdict {
                        Peer::Gone(silent) => Some(format!("stopped acknowledging for {:.1} s", silent.as_secs_f64())),
                        Peer::Heard | Peer::Quiet => None,
                    }
                } else {
                    None
                };
                let Some(how) = gone else { return true };
                info!(output = %self.url.label(), caller = c.addr.as_deref().unwrap_or("?"), %how, "SRT caller left");
                if let Some(e) = &epoll {
                    e.remove(&c.socket);
                }
                self.shared.remove(c.socket.id());
                watches.remove(&c.socket.id());
                conns.retain(|(a, _)| a != &c.addr);
                false
            });
            last_tick = Instant::now();
            let rejection = rejected_since(last_reject_check);
            last_reject_check = Instant::now();
            if let Some(r) = &rejection {
                if let Some(unlogged) = self.reject_log.rejected(Instant::now()) {
                    warn!(output = %self.url.label(), reason = %r, not_logged_since_last = unlogged, "SRT caller rejected");
                }
            }
            self.publish(&conns, rejection.map(|r| r.to_string()));
        }
    }

    /// A caller or a rendezvous: one connection. `None` when stopped, else why it ended.
    pub(super) fn call(&mut self, control: &Control, attempt: &mut u32) -> Option<String> {
        let started = Instant::now();
        self.status.send_modify(|s| s.state = OutputState::Connecting);
        let conn = match dial(&self.url, control, self.on_receive.is_none(), self.latency.as_ref()) {
            Ok(Some((socket, remote))) => Arc::new(Conn { socket, addr: Some(remote.to_string()) }),
            Ok(None) => return None,
            Err(reason) => return Some(reason),
        };
        info!(output = %self.url.label(), "SRT output connected");
        *attempt = 0;
        self.connected = true;
        // Only a connection that carries the peer's stream back needs waiting on; one that only
        // sends is looked at every TICK (see `listen`).
        let epoll = match self.on_receive.is_some().then(|| Epoll::new().and_then(|e| e.add(&conn.socket).map(|_| e))) {
            Some(Ok(e)) => Some(e),
            Some(Err(e)) => return Some(format!("cannot watch the connection: {e}")),
            None => None,
        };
        self.shared.add(conn.clone());
        (self.on_peer_joined)();
        let mut peer = PeerWatch::new(started);
        let mut last_tick = Instant::now();
        let mut buf = vec![0u8; 1500];
        let mut ready = Vec::new();
        loop {
            if stop_or_wait(control, epoll.as_ref(), TICK, &mut ready) {
                return None;
            }
            if ready.iter().any(|r| r.readable) {
                self.drain(&conn.socket, &mut buf);
            }
            if conn.socket.state() != SockState::Connected {
                return Some(format!("connection lost: {} closed the connection or stopped answering", self.peer()));
            }
            if last_tick.elapsed() < TICK {
                continue;
            }
            last_tick = Instant::now();
            let Some(perf) = conn.socket.stats() else { continue };
            let st = crate::stats::from_perf(&perf);
            let timeout = ack_timeout(&self.url, Duration::from_secs_f64(st.rtt_ms / 1000.0));
            if let Peer::Gone(silent) = peer.observe(st.acks_received, st.packets_sent, Instant::now(), timeout) {
                return Some(format!(
                    "connection lost: {} stopped acknowledging for {:.1} s",
                    self.peer(),
                    silent.as_secs_f64()
                ));
            }
            self.publish(&[(None, st)], None);
        }
    }

    /// Reads everything the peer sent on `sock`, handing it to the receiver (or dropping it).
    fn drain(&self, sock: &Socket, buf: &mut [u8]) {
        while let Ok(Some(n)) = sock.recv(buf) {
            if let Some(rx) = &self.on_receive {
                rx(&buf[..n]);
            }
        }
    }

    fn publish(&mut self, conns: &[(Option<String>, SrtStats)], rejection: Option<String>) {
        let listener = self.url.mode == SrtMode::Listener;
        // The link is read on one connection (a caller's, a bridge's one caller); a listener
        // with several callers negotiates each one's latency with it.
        if let [(_, st)] = conns {
            self.meter.observe(st, Instant::now());
        }
        let reading = self.meter.reading();
        let live = !conns.is_empty();
        let q = self.shared.dropped.load(Ordering::Relaxed);
        let life = self.totals.update(conns);
        self.status.send_modify(|s| {
            s.state = match (live, listener) {
                (true, _) => OutputState::Live,
                (false, true) => OutputState::Listening,
                (false, false) => OutputState::Connecting,
            };
            if live {
                s.reason = None;
            } else if listener {
                s.reason = Some(format!("no caller yet on port {}", self.url.port));
            }
            s.callers = conns.len();
            s.srt = life;
            s.per_caller = if listener {
                conns.iter().map(|(a, st)| (a.clone().unwrap_or_default(), st.clone())).collect()
            } else {
                Vec::new()
            };
            if let Some(r) = rejection {
                s.last_rejection = Some(r);
            }
            s.queue_dropped = q;
            s.link = reading;
        });
    }

    fn peer(&self) -> String {
        peer_label(&self.url)
    }
}
