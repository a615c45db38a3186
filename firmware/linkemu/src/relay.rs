//! UDP relay mode: listen on one port, forward each datagram to a target through the forward
//! [`Impairment`], and relay the target's replies back to the sender through the reverse one.
//! Each sender gets its own upstream socket, so a listener behind the relay sees several callers
//! as several peers (as SRT needs).

use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use telebridge_sync::Locked;

use serde::Serialize;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::impairment::{DropReason, Impairment, Verdict};

/// Counters of one direction.
#[derive(Debug, Default)]
pub struct DirectionCounters {
    /// Datagrams offered to the link.
    pub offered: AtomicU64,
    /// Delivered.
    pub delivered: AtomicU64,
    /// Bytes delivered.
    pub bytes_delivered: AtomicU64,
    /// Dropped by random loss.
    pub dropped_random: AtomicU64,
    /// Dropped in a burst.
    pub dropped_burst: AtomicU64,
    /// Dropped because the bottleneck queue was full.
    pub dropped_queue: AtomicU64,
}

/// A snapshot of one direction's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirectionStats {
    /// Datagrams offered.
    pub offered: u64,
    /// Delivered.
    pub delivered: u64,
    /// Bytes delivered.
    pub bytes_delivered: u64,
    /// Random losses.
    pub dropped_random: u64,
    /// Burst losses.
    pub dropped_burst: u64,
    /// Tail drops.
    pub dropped_queue: u64,
}

impl DirectionCounters {
    /// Reads the counters.
    pub fn snapshot(&self) -> DirectionStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DirectionStats {
            offered: l(&self.offered),
            delivered: l(&self.delivered),
            bytes_delivered: l(&self.bytes_delivered),
            dropped_random: l(&self.dropped_random),
            dropped_burst: l(&self.dropped_burst),
            dropped_queue: l(&self.dropped_queue),
        }
    }

    pub(crate) fn count(&self, v: &Verdict) {
        let c = match v {
            Verdict::Deliver(_) => return,
            Verdict::Drop(DropReason::Random) => &self.dropped_random,
            Verdict::Drop(DropReason::Burst) => &self.dropped_burst,
            Verdict::Drop(DropReason::QueueFull) => &self.dropped_queue,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running relay.
#[derive(Debug)]
pub struct Relay {
    /// The address it listens on.
    pub listen: SocketAddr,
    /// Client to target.
    pub forward: Arc<DirectionCounters>,
    /// Target to client.
    pub reverse: Arc<DirectionCounters>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where a delayed packet goes when it is due.
pub(crate) type Out = Arc<dyn Fn(&[u8]) -> std::io::Result<usize> + Send + Sync>;

pub(crate) struct Pending {
    pub(crate) at: Instant,
    pub(crate) seq: u64,
    pub(crate) data: Vec<u8>,
    pub(crate) out: Out,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// Earliest first in a max-heap.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Delivers packets at their due time.
pub(crate) async fn deliver(mut rx: mpsc::UnboundedReceiver<Pending>, counters: Arc<DirectionCounters>) {
    let mut heap = BinaryHeap::new();
    loop {
        let next = heap.peek().map(|p: &Pending| p.at);
        tokio::select! {
            item = rx.recv() => match item {
                Some(p) => heap.push(p),
                None => break,
            },
            _ = async { match next { Some(at) => tokio::time::sleep_until(at).await, None => std::future::pending().await } } => {
                while heap.peek().is_some_and(|p| p.at <= Instant::now()) {
                    let Some(p) = heap.pop() else { break };
                    if (p.out)(&p.data).is_ok() {
                        counters.delivered.fetch_add(1, Ordering::Relaxed);
                        counters.bytes_delivered.fetch_add(p.data.len() as u64, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

/// Starts a relay on `listen` (port 0 picks one) towards `target`.
pub async fn start(
    listen: SocketAddr,
    target: SocketAddr,
    forward: Impairment,
    reverse: Impairment,
) -> std::io::Result<Relay> {
    let (listen, mut links, task) = start_links(listen, target, vec![(None, forward, reverse)]).await?;
    let link = links.remove(0);
    Ok(Relay { listen, forward: link.forward, reverse: link.reverse, task })
}

/// One of several links through one relay: the senders from one address take it.
#[derive(Debug, Clone)]
pub struct LinkCounters {
    /// The senders' address this link carries.
    pub from: std::net::IpAddr,
    /// Sender to target.
    pub forward: Arc<DirectionCounters>,
    /// Target to sender.
    pub reverse: Arc<DirectionCounters>,
}

/// A relay of several links at once, told apart by the sender's address (a bonding sender's
/// uplinks bound to 127.0.0.2, 127.0.0.3, ...): each its own impairments, one start for all, so
/// the same scenario replays identically for every sender. Datagrams from other addresses are
/// dropped.
#[derive(Debug)]
pub struct MultiRelay {
    /// The address it listens on.
    pub listen: SocketAddr,
    /// Each link's counters, in the order given.
    pub links: Vec<LinkCounters>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MultiRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a [`MultiRelay`]: `links` are (sender address, forward, reverse).
pub async fn start_multi(
    listen: SocketAddr,
    target: SocketAddr,
    links: Vec<(std::net::IpAddr, Impairment, Impairment)>,
) -> std::io::Result<MultiRelay> {
    let links = links.into_iter().map(|(a, f, r)| (Some(a), f, r)).collect();
    let (listen, counters, task) = start_links(listen, target, links).await?;
    let links = counters.into_iter().map(LinkCounters::from).collect();
    Ok(MultiRelay { listen, links, task })
}

struct Counted {
    from: Option<std::net::IpAddr>,
    forward: Arc<DirectionCounters>,
    reverse: Arc<DirectionCounters>,
}

impl From<Counted> for LinkCounters {
    fn from(c: Counted) -> Self {
        LinkCounters {
            from: c.from.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into()),
            forward: c.forward,
            reverse: c.reverse,
        }
    }
}

type Shared<T> = Arc<std::sync::Mutex<T>>;

/// One link's state inside the relay.
struct LinkState {
    from: Option<std::net::IpAddr>,
    forward: Shared<Impairment>,
    reverse: Shared<Impairment>,
    fc: Arc<DirectionCounters>,
    rc: Arc<DirectionCounters>,
    fwd_tx: mpsc::UnboundedSender<Pending>,
    rev_tx: mpsc::UnboundedSender<Pending>,
}

async fn start_links(
    listen: SocketAddr,
    target: SocketAddr,
    links: Vec<(Option<std::net::IpAddr>, Impairment, Impairment)>,
) -> std::io::Result<(SocketAddr, Vec<Counted>, tokio::task::JoinHandle<()>)> {
    let socket = Arc::new(UdpSocket::bind(listen).await?);
    let listen = socket.local_addr()?;
    let mut states = Vec::new();
    let mut counted = Vec::new();
    for (from, forward, reverse) in links {
        let (fc, rc) = (Arc::new(DirectionCounters::default()), Arc::new(DirectionCounters::default()));
        let (fwd_tx, fwd_rx) = mpsc::unbounded_channel();
        let (rev_tx, rev_rx) = mpsc::unbounded_channel();
        tokio::spawn(deliver(fwd_rx, fc.clone()));
        tokio::spawn(deliver(rev_rx, rc.clone()));
        counted.push(Counted { from, forward: fc.clone(), reverse: rc.clone() });
        let (forward, reverse) = (Arc::new(std::sync::Mutex::new(forward)), Arc::new(std::sync::Mutex::new(reverse)));
        states.push(Arc::new(LinkState { from, forward, reverse, fc, rc, fwd_tx, rev_tx }));
    }
    let start = Instant::now();
    let seq = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(async move {
        let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = socket.recv_from(&mut buf).await else { continue };
            let Some(link) = states.iter().find(|l| l.from.is_none_or(|a| a == from.ip())).cloned() else { continue };
            let up = match upstreams.get(&from) {
                Some(u) => u.clone(),
                None => {
                    let Some(u) = upstream(target, from, &socket, &link, start, &seq).await else { continue };
                    upstreams.insert(from, u.clone());
                    u
                }
            };
            link.fc.offered.fetch_add(1, Ordering::Relaxed);
            let now = Instant::now();
            let v = link.forward.locked().on_packet(now - start, n);
            link.fc.count(&v);
            if let Verdict::Deliver(at) = v {
                let out: Out = Arc::new(move |d: &[u8]| up.try_send(d));
                let p =
                    Pending { at: start + at, seq: seq.fetch_add(1, Ordering::Relaxed), data: buf[..n].to_vec(), out };
                if link.fwd_tx.send(p).is_err() {
                    break;
                }
            }
        }
    });
    Ok((listen, counted, task))
}

/// A sender's own socket toward the target; its replies go back through the link's reverse
/// direction.
async fn upstream(
    target: SocketAddr,
    from: SocketAddr,
    listen_socket: &Arc<UdpSocket>,
    link: &Arc<LinkState>,
    start: Instant,
    seq: &Arc<AtomicU64>,
) -> Option<Arc<UdpSocket>> {
    let bind: SocketAddr = if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().ok()?;
    let u = UdpSocket::bind(bind).await.ok()?;
    u.connect(target).await.ok()?;
    let u = Arc::new(u);
    let (u2, listen_socket, link, seq) = (u.clone(), listen_socket.clone(), link.clone(), seq.clone());
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = u2.recv(&mut buf).await {
            link.rc.offered.fetch_add(1, Ordering::Relaxed);
            let now = Instant::now();
            let v = link.reverse.locked().on_packet(now - start, n);
            link.rc.count(&v);
            if let Verdict::Deliver(at) = v {
                let sock = listen_socket.clone();
                let out: Out = Arc::new(move |d: &[u8]| sock.try_send_to(d, from));
                let p =
                    Pending { at: start + at, seq: seq.fetch_add(1, Ordering::Relaxed), data: buf[..n].to_vec(), out };
                if link.rev_tx.send(p).is_err() {
                    break;
                }
            }
        }
    });
    Some(u)
}

/// The counters of both directions.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RelayStats {
    /// Client to target.
    pub forward: DirectionStats,
    /// Target to client.
    pub reverse: DirectionStats,
}

impl Relay {
    /// Reads both directions' counters.
    pub fn stats(&self) -> RelayStats {
        RelayStats { forward: self.forward.snapshot(), reverse: self.reverse.snapshot() }
    }
}

#[cfg(test)]
mod multi_tests {
    use super::*;
    use crate::LinkParams;

    fn link(loss_pct: f64) -> Impairment {
        Impairment::new(LinkParams { loss_pct, ..LinkParams::default() }, Vec::new(), 1)
    }

    #[tokio::test]
    async fn each_sender_address_takes_its_own_link() {
        let target = UdpSocket::bind("127.0.0.1:0").await.expect("target");
        let relay = start_multi(
            "127.0.0.1:0".parse().expect("addr"),
            target.local_addr().expect("addr"),
            vec![
                ("127.0.0.2".parse().expect("ip"), link(0.0), link(0.0)),
                ("127.0.0.3".parse().expect("ip"), link(100.0), link(0.0)),
            ],
        )
        .await
        .expect("relay");
        for from in ["127.0.0.2:0", "127.0.0.3:0", "127.0.0.4:0"] {
            let s = UdpSocket::bind(from).await.expect("sender");
            for _ in 0..10 {
                s.send_to(b"hello", relay.listen).await.expect("send");
            }
        }
        let mut buf = [0u8; 16];
        for _ in 0..10 {
            let (n, _) = tokio::time::timeout(std::time::Duration::from_secs(2), target.recv_from(&mut buf))
                .await
                .expect("delivered")
                .expect("recv");
            assert_eq!(&buf[..n], b"hello");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let s: Vec<DirectionStats> = relay.links.iter().map(|l| l.forward.snapshot()).collect();
        assert_eq!((s[0].offered, s[0].delivered), (10, 10));
        assert_eq!((s[1].offered, s[1].delivered, s[1].dropped_random), (10, 0, 10));
        // 127.0.0.4 has no link: nothing of it reached the target.
        assert!(tokio::time::timeout(std::time::Duration::from_millis(200), target.recv_from(&mut buf)).await.is_err());
    }
}
