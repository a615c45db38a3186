//! The receiver's sockets: one UDP socket for every sender's uplinks, and per group one socket
//! connected to the SRT peer (as srtla_rec: the peer sees one caller per bonded sender). A
//! thread reads the bonding socket and one per group reads its SRT peer; the decisions are
//! [`Receiver`]'s.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use crate::proto::SENDER_ID_LEN;
use crate::receiver::{Action, Cookie, GroupStatus, GroupToken, Limits, Receiver};

const POLL: Duration = Duration::from_millis(100);
const MTU: usize = 1500;

struct Shared {
    core: Mutex<Receiver>,
    stop: AtomicBool,
    socket: UdpSocket,
    srt_peer: SocketAddr,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Receiver> {
        self.core.locked()
    }
}

/// A running bonding receiver.
pub struct BondReceiver {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    local: SocketAddr,
}

impl std::fmt::Debug for BondReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BondReceiver").field("local", &self.local).finish_non_exhaustive()
    }
}

impl BondReceiver {
    /// Listens for bonded senders on `listen` and hands each group's SRT to `srt_peer`,
    /// holding packets that come after a gap at most `reorder_max` (see [`crate::reorder`]).
    pub fn start(listen: SocketAddr, srt_peer: SocketAddr, reorder_max: Duration) -> io::Result<Self> {
        let socket = UdpSocket::bind(listen)?;
        socket.set_read_timeout(Some(POLL))?;
        let _ = socket2::SockRef::from(&socket).set_recv_buffer_size(8 << 20);
        let local = socket.local_addr()?;
        let shared = Arc::new(Shared {
            core: Mutex::new(Receiver::new(Limits { reorder_max, ..Limits::default() }, Cookie::new(random_key()))),
            stop: AtomicBool::new(false),
            socket,
            srt_peer,
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new().name("bond-receive".into()).spawn(move || receive_loop(&s))?;
        tracing::info!(listen = %local, srt = %srt_peer, "bonding receiver listening");
        Ok(BondReceiver { shared, thread: Some(thread), local })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Every group and its connections.
    pub fn status(&self) -> Vec<GroupStatus> {
        self.shared.core().status(Instant::now())
    }

    /// Stops it and joins its threads.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BondReceiver {
    fn drop(&mut self) {
        self.halt();
    }
}

struct Peer {
    socket: Arc<UdpSocket>,
    thread: JoinHandle<()>,
    closed: Arc<AtomicBool>,
}

fn receive_loop(shared: &Arc<Shared>) {
    let mut peers: HashMap<GroupToken, Peer> = HashMap::new();
    let mut buf = [0u8; MTU];
    let mut last_tick = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now.duration_since(last_tick) >= Duration::from_secs(1) {
            last_tick = now;
            for token in shared.core().on_tick(now) {
                if let Some(p) = peers.remove(&token) {
                    close(p);
                }
            }
        }
        // Wake for the reorder buffer's next deadline.
        let deadline = shared.core().deadline();
        let wait = deadline.map_or(POLL, |d| d.saturating_duration_since(now).clamp(Duration::from_millis(1), POLL));
        let _ = shared.socket.set_read_timeout(Some(wait));
        let due = shared.core().due(Instant::now());
        forward(shared, &mut peers, due);
        let (n, from) = match shared.socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "bonding socket");
                std::thread::sleep(POLL);
                continue;
            }
        };
        let actions = shared.core().on_datagram(from, &buf[..n], Instant::now());
        forward(shared, &mut peers, actions);
    }
    for (_, p) in peers {
        close(p);
    }
}

fn forward(shared: &Arc<Shared>, peers: &mut HashMap<GroupToken, Peer>, actions: Vec<Action>) {
    for action in actions {
        match action {
            Action::Reply(to, data) => {
                let _ = shared.socket.send_to(&data, to);
            }
            Action::Forward(token, data) => {
                if let std::collections::hash_map::Entry::Vacant(slot) = peers.entry(token) {
                    match open_peer(shared, token) {
                        Ok(p) => {
                            slot.insert(p);
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot reach the SRT peer"),
                    }
                }
                if let Some(p) = peers.get(&token) {
                    let _ = p.socket.send(&data);
                }
            }
        }
    }
}

fn close(p: Peer) {
    p.closed.store(true, Ordering::Relaxed);
    let _ = p.thread.join();
}

fn open_peer(shared: &Arc<Shared>, token: GroupToken) -> io::Result<Peer> {
    let any: SocketAddr =
        if shared.srt_peer.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().map_err(io::Error::other)?;
    let socket = UdpSocket::bind(any)?;
    socket.connect(shared.srt_peer)?;
    socket.set_read_timeout(Some(POLL))?;
    let _ = socket2::SockRef::from(&socket).set_recv_buffer_size(4 << 20);
    let socket = Arc::new(socket);
    let closed = Arc::new(AtomicBool::new(false));
    let (s, sock, c) = (shared.clone(), socket.clone(), closed.clone());
    let thread = std::thread::Builder::new().name("bond-srt-peer".into()).spawn(move || {
        let mut buf = [0u8; MTU];
        while !c.load(Ordering::Relaxed) && !s.stop.load(Ordering::Relaxed) {
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
                // The SRT peer is not there (ICMP refused): its packets will come when it is.
                Err(_) => continue,
            };
            let to = s.core().on_srt(token, &buf[..n]);
            for addr in to {
                let _ = s.socket.send_to(&buf[..n], addr);
            }
        }
    })?;
    Ok(Peer { socket, thread, closed })
}

/// The key of the receiver's cookies: 32 random bytes from the kernel.
fn random_key() -> [u8; 32] {
    let half = random_half();
    let mut key = [0u8; 32];
    key.copy_from_slice(&half[..32]);
    key
}

/// 128 random bytes from the kernel for a group's half of its id.
pub(crate) fn random_half() -> [u8; SENDER_ID_LEN] {
    use std::io::Read;
    let mut out = [0u8; SENDER_ID_LEN];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(&mut out).is_ok() {
            return out;
        }
    }
    // Without the kernel's randomness the id falls back to the clock and the stack address:
    // weak, and said so.
    tracing::warn!("no /dev/urandom: the bonded group's id is guessable");
    let seed = Instant::now().elapsed().as_nanos() ^ (&out as *const _ as u128);
    for (i, b) in out.iter_mut().enumerate() {
        *b = (seed >> (i % 16 * 8)) as u8;
    }
    out
}
