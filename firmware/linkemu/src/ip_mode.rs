//! IP mode: two network namespaces joined through TUN devices that this process serves, so that
//! TCP (RTMP) meets the emulated delay, loss and bottleneck in the kernel's own TCP stack.
//!
//! ```text
//!  netns A: tb..a (198.18.0.1 peer 198.18.0.2) ─fd─► forward Impairment ─fd─► tb..b :netns B (198.18.0.2)
//!                                             ◄─fd─ reverse Impairment ◄─fd─
//! ```
//! The addresses come from 198.18.0.0/15, the range set aside for benchmarking (RFC 2544); they
//! exist only inside the two namespaces, which are deleted when the link is dropped. Needs root
//! and /dev/net/tun.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use telebridge_sync::Locked;

use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::impairment::{Impairment, Verdict};
use crate::relay::{deliver, DirectionCounters, Out, Pending};

/// The address of side A inside its namespace.
pub const ADDR_A: &str = "198.18.0.1";
/// The address of side B inside its namespace.
pub const ADDR_B: &str = "198.18.0.2";

/// A running link between two namespaces. Dropping it deletes both.
#[derive(Debug)]
pub struct NetnsLink {
    /// Namespace of side A (run the sender here with `ip netns exec`).
    pub ns_a: String,
    /// Namespace of side B (run the receiver or server here).
    pub ns_b: String,
    /// A to B.
    pub forward: Arc<DirectionCounters>,
    /// B to A.
    pub reverse: Arc<DirectionCounters>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl NetnsLink {
    /// A command that runs `program` inside namespace A.
    pub fn in_a(&self, program: &str) -> Command {
        in_ns(&self.ns_a, program)
    }

    /// A command that runs `program` inside namespace B.
    pub fn in_b(&self, program: &str) -> Command {
        in_ns(&self.ns_b, program)
    }
}

fn in_ns(ns: &str, program: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, program]);
    c
}

impl Drop for NetnsLink {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// Opens a TUN device (layer 3, no packet information header) and makes it non-blocking.
fn open_tun(name: &str) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/net/tun: {e} (IP mode needs root)")))?;
    crate::sys::tun_set_iff(&file, name)?;
    crate::sys::set_nonblocking(&file)?;
    Ok(file)
}

fn register(file: File) -> io::Result<AsyncFd<File>> {
    crate::sys::register(file)
}

/// Creates namespaces `{prefix}-a` and `{prefix}-b` joined through the emulated link.
/// `prefix` must be short (interface names are at most 15 characters).
pub async fn start(prefix: &str, forward: Impairment, reverse: Impairment) -> io::Result<NetnsLink> {
    let (ns_a, ns_b) = (format!("{prefix}-a"), format!("{prefix}-b"));
    let (dev_a, dev_b) = (format!("{prefix}a"), format!("{prefix}b"));
    for ns in [&ns_a, &ns_b] {
        let _ = Command::new("ip").args(["netns", "del", ns]).output();
        ip(&["netns", "add", ns])?;
    }
    let tun_a = open_tun(&dev_a)?;
    let tun_b = open_tun(&dev_b)?;
    for (dev, ns, local, peer) in [(&dev_a, &ns_a, ADDR_A, ADDR_B), (&dev_b, &ns_b, ADDR_B, ADDR_A)] {
        ip(&["link", "set", dev, "netns", ns])?;
        ip(&["-n", ns, "addr", "add", local, "peer", peer, "dev", dev])?;
        ip(&["-n", ns, "link", "set", dev, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    let tun_a = Arc::new(register(tun_a)?);
    let tun_b = Arc::new(register(tun_b)?);
    let (fc, rc) = (Arc::new(DirectionCounters::default()), Arc::new(DirectionCounters::default()));
    let start = Instant::now();
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (from, to, imp, counters) in
        [(tun_a.clone(), tun_b.clone(), forward, fc.clone()), (tun_b.clone(), tun_a.clone(), reverse, rc.clone())]
    {
        let (tx, rx) = mpsc::unbounded_channel();
        tasks.push(tokio::spawn(deliver(rx, counters.clone())));
        let imp = Arc::new(Mutex::new(imp));
        let seq = seq.clone();
        let out: Out = Arc::new(move |d: &[u8]| to.get_ref().write(d));
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            loop {
                let Ok(mut guard) = from.readable().await else { break };
                match guard.try_io(|f| f.get_ref().read(&mut buf)) {
                    Ok(Ok(n)) if n > 0 => {
                        counters.offered.fetch_add(1, Ordering::Relaxed);
                        let v = imp.locked().on_packet(Instant::now() - start, n);
                        counters.count(&v);
                        if let Verdict::Deliver(at) = v {
                            let p = Pending {
                                at: start + at,
                                seq: seq.fetch_add(1, Ordering::Relaxed),
                                data: buf[..n].to_vec(),
                                out: out.clone(),
                            };
                            if tx.send(p).is_err() {
                                break;
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(_would_block) => continue,
                }
            }
        }));
    }
    Ok(NetnsLink { ns_a, ns_b, forward: fc, reverse: rc, tasks })
}
