//! `telebridge relay --meet FIRST-LAST`: the meeting point of paired boxes that cannot reach
//! each other (see `telebridge_pairing::meet`). One thread per port forwards datagrams between
//! the two boxes of a pair, each of which said the pair's token in a hello.

use std::net::UdpSocket;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_pairing::meet::{parse_ports, Drop as Dropped, Meet, Meeting};
use tracing::{info, warn};

use crate::exit::bad_input;

/// How often a port's thread looks at the stop flag when nothing arrives.
const WAKE: Duration = Duration::from_millis(200);

pub(crate) fn meet(ports: &str) -> ExitCode {
    let (first, last) = match parse_ports(ports) {
        Ok(r) => r,
        Err(e) => return bad_input(format!("--meet: {e}")),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for base in (first..=last).step_by(2) {
        let mut sockets = Vec::new();
        for port in [base, base + 1] {
            match UdpSocket::bind(("0.0.0.0", port)) {
                Ok(s) => {
                    let _ = s.set_read_timeout(Some(WAKE));
                    sockets.push(Arc::new(s));
                }
                Err(e) => return bad_input(format!("--meet: cannot listen on UDP {port}: {e}")),
            }
        }
        let key = match random_key() {
            Ok(k) => k,
            Err(e) => return bad_input(format!("--meet: no randomness for the cookies' key (/dev/urandom): {e}")),
        };
        let pair = Arc::new(Mutex::new(Meeting::new(key)));
        for side in 0..2 {
            let (mine, other) = (sockets[side].clone(), sockets[1 - side].clone());
            let (pair, stop) = (pair.clone(), stop.clone());
            let port = base + side as u16;
            let spawned = std::thread::Builder::new()
                .name(format!("meet-{port}"))
                .spawn(move || serve(port, side, &mine, &other, &pair, &stop));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => return bad_input(format!("--meet: cannot start a thread: {e}")),
            }
        }
    }
    info!(first, last, "meeting point for paired boxes: two ports a pair, forwarding between them");
    println!("meeting point on UDP {first}-{last}");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    match runtime {
        Ok(rt) => rt.block_on(crate::exit::shutdown_signal()),
        Err(e) => warn!(error = %e, "no runtime to wait for a signal on; stopping"),
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    ExitCode::SUCCESS
}

/// 32 bytes from the kernel: the key of a port pair's cookies.
fn random_key() -> std::io::Result<[u8; 32]> {
    use std::io::Read;
    let mut k = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut k)?;
    Ok(k)
}

/// The Unix clock in ms (the hellos name their rendezvous slot by it).
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// How often a port says how many datagrams it dropped.
const DROPS_EVERY: Duration = Duration::from_secs(60);

/// Port `port` (`side` of its pair): what a box sends leaves by the other port to the other box
/// of its pair.
fn serve(port: u16, side: usize, mine: &UdpSocket, other: &UdpSocket, pair: &Mutex<Meeting>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 2048];
    let mut drops = [0u64; 7];
    let mut said = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if drops.iter().any(|n| *n > 0) && said.elapsed() >= DROPS_EVERY {
            info!(
                port,
                no_place = drops[0],
                hellos_over_rate = drops[1],
                source_full = drops[2],
                stale = drops[3],
                bad_cookie = drops[4],
                taken = drops[5],
                old_version = drops[6],
                "meeting point: datagrams dropped (from addresses that said no pair's token, hellos over a source's rate or places, \
                 for another slot, with a cookie not ours, for a pair already flowing, or from boxes older than this relay)"
            );
            drops = [0; 7];
            said = Instant::now();
        }
        let (n, from) = match mine.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => {
                warn!(port, error = %e, "meeting point: receive failed");
                continue;
            }
        };
        let meet = pair.locked().on_datagram(side, from, &buf[..n], Instant::now(), unix_ms());
        match meet {
            Meet::Cookie(c) => {
                let _ = mine.send_to(&c, from);
            }
            Meet::Forward(to) => {
                let _ = other.send_to(&buf[..n], to);
            }
            // A box says its confirmation up to three times: the first is news.
            Meet::Welcomed { again: true, .. } => {}
            Meet::Welcomed { peer: Some(peer), .. } => {
                info!(port, this = %from, other = %peer, "meeting point: two boxes met")
            }
            Meet::Welcomed { peer: None, .. } => {
                info!(port, this = %from, "meeting point: a box waits for the other of its pair")
            }
            Meet::Waiting => {}
            Meet::Dropped(why) => {
                drops[match why {
                    Dropped::NoPlace => 0,
                    Dropped::TooManyHellos => 1,
                    Dropped::SourceFull => 2,
                    Dropped::Stale => 3,
                    Dropped::BadCookie => 4,
                    Dropped::Taken => 5,
                    Dropped::OldHello => 6,
                }] += 1
            }
        }
    }
}
