//! UDP relay mode: listen on one port, forward each datagram to a target through the forward
//! [`Impairment`], and relay the target's replies back to the sender through the reverse one.
//! Each sender gets its own upstream socket, so a listener behind the relay sees several callers
//! as several peers (as SRT needs).

use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    let socket = Arc::new(UdpSocket::bind(listen).await?);
    let listen = socket.local_addr()?;
    let fwd_counters = Arc::new(DirectionCounters::default());
    let rev_counters = Arc::new(DirectionCounters::default());
    let (fwd_tx, fwd_rx) = mpsc::unbounded_channel();
    let (rev_tx, rev_rx) = mpsc::unbounded_channel();
    tokio::spawn(deliver(fwd_rx, fwd_counters.clone()));
    tokio::spawn(deliver(rev_rx, rev_counters.clone()));
    let start = Instant::now();
    let forward = Arc::new(std::sync::Mutex::new(forward));
    let reverse = Arc::new(std::sync::Mutex::new(reverse));
    let seq = Arc::new(AtomicU64::new(0));
    let (fc, rc) = (fwd_counters.clone(), rev_counters.clone());
    let task = tokio::spawn(async move {
        let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
        let mut buf = vec![0u8; 65536];
        loop {
            let Ok((n, from)) = socket.recv_from(&mut buf).await else { continue };
            let up = match upstreams.get(&from) {
                Some(u) => u.clone(),
                None => {
                    let bind: SocketAddr =
                        if target.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("literal");
                    let Ok(u) = UdpSocket::bind(bind).await else { continue };
                    if u.connect(target).await.is_err() {
                        continue;
                    }
                    let u = Arc::new(u);
                    // Replies from the target go back to this client through the reverse link.
                    let (u2, listen_socket, rev, rev_tx, rc, seq) =
                        (u.clone(), socket.clone(), reverse.clone(), rev_tx.clone(), rc.clone(), seq.clone());
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 65536];
                        while let Ok(n) = u2.recv(&mut buf).await {
                            rc.offered.fetch_add(1, Ordering::Relaxed);
                            let now = Instant::now();
                            let v = rev.lock().unwrap_or_else(|p| p.into_inner()).on_packet(now - start, n);
                            rc.count(&v);
                            if let Verdict::Deliver(at) = v {
                                let sock = listen_socket.clone();
                                let out: Out = Arc::new(move |d: &[u8]| sock.try_send_to(d, from));
                                let p = Pending {
                                    at: start + at,
                                    seq: seq.fetch_add(1, Ordering::Relaxed),
                                    data: buf[..n].to_vec(),
                                    out,
                                };
                                if rev_tx.send(p).is_err() {
                                    break;
                                }
                            }
                        }
                    });
                    upstreams.insert(from, u.clone());
                    u
                }
            };
            fc.offered.fetch_add(1, Ordering::Relaxed);
            let now = Instant::now();
            let v = forward.lock().unwrap_or_else(|p| p.into_inner()).on_packet(now - start, n);
            fc.count(&v);
            if let Verdict::Deliver(at) = v {
                let out: Out = Arc::new(move |d: &[u8]| up.try_send(d));
                let p =
                    Pending { at: start + at, seq: seq.fetch_add(1, Ordering::Relaxed), data: buf[..n].to_vec(), out };
                if fwd_tx.send(p).is_err() {
                    break;
                }
            }
        }
    });
    Ok(Relay { listen, forward: fwd_counters, reverse: rev_counters, task })
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
