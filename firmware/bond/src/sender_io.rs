//! The sender's sockets: a local UDP port that libsrt calls as if it were the receiver, and one
//! socket per uplink, bound to its interface (`SO_BINDTODEVICE`) or its address and connected
//! to the receiver. A thread reads libsrt's packets and ticks the state machine; one thread per
//! uplink (re)opens its socket and reads the receiver's answers. The decisions are
//! [`Sender`]'s.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use telebridge_sync::{Locked, RwLocked};

use socket2::{Domain, Protocol, Socket, Type};
use telebridge_config::Uplink;

use crate::sender::{LinkStatus, Out, Sender};

const MTU: usize = 1500;
/// How often the state machine looks at the clock (dead uplinks, keepalives).
const TICK: Duration = Duration::from_millis(10);
/// How soon an uplink whose socket cannot be opened (its modem unplugged) is tried again.
const REOPEN: Duration = Duration::from_secs(1);
/// How often the uplinks' trace gets a line.
const TRACE_EVERY: Duration = Duration::from_millis(100);

/// One line of the uplinks' trace: every uplink's state at `t` s from the sender's start.
#[derive(serde::Serialize)]
struct TraceLine<'a> {
    t: f64,
    links: &'a [LinkStatus],
}

struct Shared {
    core: Mutex<Sender>,
    stop: AtomicBool,
    local: UdpSocket,
    srt_peer: Mutex<Option<SocketAddr>>,
    uplinks: Vec<RwLock<Option<Arc<UdpSocket>>>>,
    /// Why each uplink cannot be opened, while it cannot.
    problems: Vec<Mutex<Option<String>>>,
    /// Every uplink's state each [`TRACE_EVERY`], as JSON lines, to read a loss burst against
    /// what each uplink did ([`BondSender::start`]'s `trace`).
    trace: Option<Mutex<io::BufWriter<std::fs::File>>>,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Sender> {
        self.core.locked()
    }

    fn uplink(&self, n: usize) -> Option<Arc<UdpSocket>> {
        self.uplinks.get(n)?.reading().clone()
    }

    /// Carries out what the state machine asked; a send that fails kills its uplink at once.
    fn carry_out(&self, outs: Vec<Out>) {
        let mut pending = outs;
        // A death's rescue can fail too: bounded, each uplink dies once.
        for _ in 0..=self.uplinks.len() {
            let mut next = Vec::new();
            for out in pending {
                match out {
                    Out::Link(n, data) => {
                        if let Err(e) = self.send_on(n, &data) {
                            tracing::debug!(link = n, error = %e, "send failed");
                            next.extend(self.core().on_send_error(n));
                        }
                    }
                    Out::Srt(data) => {
                        let peer = *self.srt_peer.locked();
                        if let Some(peer) = peer {
                            let _ = self.local.send_to(&data, peer);
                        }
                    }
                }
            }
            if next.is_empty() {
                return;
            }
            pending = next;
        }
    }

    fn send_on(&self, n: usize, data: &[u8]) -> io::Result<()> {
        let socket = self.uplink(n).ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        match socket.send(data) {
            Ok(_) => Ok(()),
            // A full send buffer is congestion, not death: the window handles it.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A running bonding sender.
pub struct BondSender {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    local: SocketAddr,
}

impl std::fmt::Debug for BondSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BondSender").field("local", &self.local).finish_non_exhaustive()
    }
}

impl BondSender {
    /// Bonds `uplinks` toward the receiver at `receiver`; libsrt calls [`Self::local_addr`].
    /// With `trace`, every uplink's state goes there every 100 ms as JSON lines (a file that
    /// cannot be made is warned about and left out).
    pub fn start(uplinks: &[Uplink], receiver: SocketAddr, trace: Option<&std::path::Path>) -> io::Result<Self> {
        let loopback =
            if receiver.is_ipv4() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { IpAddr::V6(Ipv6Addr::LOCALHOST) };
        let local = UdpSocket::bind(SocketAddr::new(loopback, 0))?;
        local.set_read_timeout(Some(TICK))?;
        let _ = socket2::SockRef::from(&local).set_recv_buffer_size(4 << 20);
        let local_addr = local.local_addr()?;
        let names = uplinks.iter().map(ToString::to_string).collect();
        let trace = trace.and_then(|path| match std::fs::File::create(path) {
            Ok(f) => Some(Mutex::new(io::BufWriter::new(f))),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot write the bond trace");
                None
            }
        });
        let shared = Arc::new(Shared {
            core: Mutex::new(Sender::new(names, crate::receiver_io::random_half(), Instant::now())),
            stop: AtomicBool::new(false),
            local,
            srt_peer: Mutex::new(None),
            uplinks: uplinks.iter().map(|_| RwLock::new(None)).collect(),
            problems: uplinks.iter().map(|_| Mutex::new(None)).collect(),
            trace,
        });
        let mut threads = Vec::new();
        for (n, uplink) in uplinks.iter().enumerate() {
            let (s, u) = (shared.clone(), uplink.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("bond-{u}"))
                    .spawn(move || uplink_loop(&s, n, &u, receiver))?,
            );
        }
        let s = shared.clone();
        threads.push(std::thread::Builder::new().name("bond-send".into()).spawn(move || local_loop(&s))?);
        tracing::info!(local = %local_addr, %receiver, uplinks = uplinks.len(), "bonding sender started");
        Ok(BondSender { shared, threads, local: local_addr })
    }

    /// Where libsrt should call.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Every uplink's state.
    pub fn status(&self) -> Vec<LinkStatus> {
        let mut links = self.shared.core().status();
        for (l, p) in links.iter_mut().zip(&self.shared.problems) {
            l.problem.clone_from(&p.locked());
        }
        links
    }

    /// What the rate law reads of the bond ([`Sender::reading`]).
    pub fn reading(&self) -> crate::sender::BondReading {
        self.shared.core().reading()
    }

    /// Stops it and joins its threads.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for BondSender {
    fn drop(&mut self) {
        self.halt();
    }
}

fn local_loop(shared: &Shared) {
    let mut buf = [0u8; MTU];
    let started = Instant::now();
    let mut last_tick = started;
    let mut last_trace = started;
    while !shared.stop.load(Ordering::Relaxed) {
        match shared.local.recv_from(&mut buf) {
            Ok((n, from)) => {
                *shared.srt_peer.locked() = Some(from);
                let link = shared.core().on_srt(&buf[..n]);
                if let Some(link) = link {
                    shared.carry_out(vec![Out::Link(link, buf[..n].to_vec())]);
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) => tracing::debug!(error = %e, "local socket"),
        }
        let now = Instant::now();
        if now.duration_since(last_tick) >= TICK {
            last_tick = now;
            let outs = shared.core().on_tick(now);
            shared.carry_out(outs);
        }
        if let Some(trace) = &shared.trace {
            if now.duration_since(last_trace) >= TRACE_EVERY {
                last_trace = now;
                let links = shared.core().status();
                let line = TraceLine { t: now.duration_since(started).as_secs_f64(), links: &links };
                if let Ok(text) = serde_json::to_string(&line) {
                    use std::io::Write;
                    let mut w = trace.locked();
                    let _ = writeln!(w, "{text}");
                    let _ = w.flush();
                }
            }
        }
    }
}

fn uplink_loop(shared: &Shared, n: usize, uplink: &Uplink, receiver: SocketAddr) {
    let mut buf = [0u8; MTU];
    let mut warned = false;
    while !shared.stop.load(Ordering::Relaxed) {
        let Some(socket) = shared.uplink(n) else {
            match open_uplink(uplink, receiver) {
                Ok(s) => {
                    tracing::info!(%uplink, local = ?s.local_addr().ok(), "uplink open");
                    *shared.uplinks[n].writing() = Some(Arc::new(s));
                    *shared.problems[n].locked() = None;
                    warned = false;
                }
                Err(e) => {
                    *shared.problems[n].locked() = Some(open_problem(uplink, &e));
                    if !warned {
                        tracing::warn!(%uplink, error = %e, "cannot open the uplink; trying again every second");
                        warned = true;
                    }
                    sleep_unless_stopped(shared, REOPEN);
                }
            }
            continue;
        };
        match socket.recv(&mut buf) {
            Ok(len) => {
                // Read before the lock: what is left under it is bounded by the packets in flight.
                let heard = crate::sender::Heard::read(&buf[..len]);
                let outs = shared.core().on_heard(n, heard, &buf[..len], Instant::now());
                shared.carry_out(outs);
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            // ICMP errors (port unreachable, network down) come back here: the silence check
            // and the failed sends say what they mean.
            Err(_) => sleep_unless_stopped(shared, Duration::from_millis(50)),
        }
    }
}

fn sleep_unless_stopped(shared: &Shared, total: Duration) {
    let until = Instant::now() + total;
    while !shared.stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Why an uplink cannot be opened, in words: a missing interface is named as such (the kernel
/// says "No such device").
fn open_problem(uplink: &Uplink, e: &io::Error) -> String {
    // ENODEV and EADDRNOTAVAIL on Linux.
    match (uplink, e.raw_os_error()) {
        (Uplink::Interface(_), Some(19)) => "no such network interface".into(),
        (Uplink::Address(_), Some(99)) => "no interface has this address".into(),
        _ => format!("cannot be opened: {e}"),
    }
}

fn open_uplink(uplink: &Uplink, receiver: SocketAddr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(receiver), Type::DGRAM, Some(Protocol::UDP))?;
    match uplink {
        Uplink::Interface(name) => socket.bind_device(Some(name.as_bytes()))?,
        Uplink::Address(a) => socket.bind(&SocketAddr::new(*a, 0).into())?,
    }
    let _ = socket.set_send_buffer_size(4 << 20);
    let _ = socket.set_recv_buffer_size(1 << 20);
    socket.connect(&receiver.into())?;
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receiver_io::BondReceiver;

    /// One line of the trace as a reader of the file sees it.
    #[derive(serde::Deserialize)]
    struct Line {
        t: f64,
        links: Vec<Link>,
    }

    #[derive(serde::Deserialize)]
    struct Link {
        name: String,
        state: String,
    }

    /// The whole lines written so far (the sender may be midway through the next).
    fn read(path: &std::path::Path) -> Vec<Line> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        whole.lines().map(|l| serde_json::from_str(l).expect("a trace line is JSON")).collect()
    }

    fn ups(lines: &[Line]) -> usize {
        lines.iter().filter(|l| l.links.first().is_some_and(|k| k.state == "up")).count()
    }

    #[test]
    fn the_trace_has_each_uplinks_state_every_100_ms() {
        let loopback = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        let srt = UdpSocket::bind(loopback).unwrap();
        let receiver = BondReceiver::start(loopback, srt.local_addr().unwrap(), Duration::from_millis(50)).unwrap();
        let path = std::env::temp_dir().join(format!("telebridge-bond-trace-{}.jsonl", std::process::id()));
        let uplinks = [Uplink::Address(IpAddr::V4(Ipv4Addr::LOCALHOST))];
        let sender = BondSender::start(&uplinks, receiver.local_addr(), Some(&path)).unwrap();
        // Until the uplink has registered with the receiver and a few lines more.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut lines = read(&path);
        while Instant::now() < deadline && ups(&lines) < 3 {
            std::thread::sleep(Duration::from_millis(50));
            lines = read(&path);
        }
        drop(sender);
        let _ = std::fs::remove_file(&path);
        assert!(ups(&lines) >= 3, "the uplink never came up in {} lines", lines.len());
        assert!(lines.iter().all(|l| l.links.len() == 1 && l.links[0].name == "127.0.0.1"));
        // A line each 100 ms, not more often.
        for pair in lines.windows(2) {
            let gap = pair[1].t - pair[0].t;
            assert!(gap >= 0.099, "lines {gap:.3} s apart");
        }
    }

    #[test]
    fn an_uplink_on_a_missing_interface_says_so() {
        let receiver = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9);
        let uplinks = [Uplink::Interface("lo".into()), Uplink::Interface("nosuch9".into())];
        let bond = BondSender::start(&uplinks, receiver, None).unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        let problem = loop {
            let st = bond.status();
            if let Some(p) = st[1].problem.clone() {
                assert_eq!(st[0].problem, None, "lo opens: {st:?}");
                break p;
            }
            assert!(Instant::now() < end, "no problem said: {st:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(problem, "no such network interface");
        assert_eq!(bond.status()[1].to_string(), "nosuch9: no such network interface");
    }
}
