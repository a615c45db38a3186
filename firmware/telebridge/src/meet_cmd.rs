//! `telebridge relay --meet FIRST-LAST`: the meeting point of paired boxes that cannot reach
//! each other (see `telebridge_pairing::meet`). One thread per port forwards datagrams between
//! the two addresses holding the port's places.

use std::net::UdpSocket;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use telebridge_pairing::meet::{parse_ports, MeetPair};
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
        let pair = Arc::new(Mutex::new(MeetPair::default()));
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

/// Port `port` (`side` of its pair): what arrives leaves by the other port to the other box.
fn serve(port: u16, side: usize, mine: &UdpSocket, other: &UdpSocket, pair: &Mutex<MeetPair>, stop: &AtomicBool) {
    let mut met = [None, None];
    let mut buf = vec![0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match mine.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => {
                warn!(port, error = %e, "meeting point: receive failed");
                continue;
            }
        };
        let (to, holders) = {
            let mut p = pair.lock().unwrap_or_else(|p| p.into_inner());
            (p.on_datagram(side, from, Instant::now()), p.holders())
        };
        if let [Some(a), Some(b)] = holders {
            if holders != met {
                info!(port, a = %a, b = %b, "meeting point: two boxes met");
                met = holders;
            }
        }
        if let Some(to) = to {
            let _ = other.send_to(&buf[..n], to);
        }
    }
}
