//! The daemon under attack, as a stranger on its network would attack it (issue 17's hostile
//! test): the findings that need the real process (its memory, its open files) are checked
//! here; the rest are in the API's tests (firmware/web/tests/api.rs) and `scripts/attack`.

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

/// A status line field of /proc/PID/status, in kB.
fn proc_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// One login with `password`, as a script sends it; the answer's status.
fn login(port: u16, password: &str) -> u16 {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return 0 };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let body = format!(r#"{{"password": "{password}"}}"#);
    let req = format!(
        "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nX-Telebridge-Csrf: 1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return 0;
    }
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[test]
fn a_hundred_simultaneous_wrong_passwords_get_five_checks_and_the_box_stays_small() {
    let dir = scratch("security-burst");
    let port = free_tcp_port();
    let daemon = run_sim(&dir, "box", port, &[], &[]);
    let pid = daemon.child.id();
    let before = proc_kb(pid, "VmRSS:");
    let start = std::sync::Arc::new(std::sync::Barrier::new(100));
    let threads: Vec<_> = (0..100)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                login(port, "not the password")
            })
        })
        .collect();
    let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let count = |code: u16| statuses.iter().filter(|s| **s == code).count();
    let (checked, refused, busy, closed) = (count(401), count(429), count(503), count(0));
    // 503: the box is checking as many as it will, or the address holds as many connections as
    // it may; 0: closed before an answer could be read. Then one at a time: the address has
    // what is left of its five wrong attempts a minute, then it is locked.
    let mut more = 0;
    while more < 10 && login(port, "not the password") == 401 {
        more += 1;
    }
    let right = login(port, "a test password");
    let (rss, peak) = (proc_kb(pid, "VmRSS:"), proc_kb(pid, "VmHWM:"));
    eprintln!(
        "100 wrong passwords at once: {checked} checked (401), {refused} refused unchecked (429), {busy} busy (503), \
         {closed} closed unanswered; {more} more checked one by one; the right one then: {right}; \
         RSS {before} kB before, {rss} kB after, peak {peak} kB"
    );
    assert!(checked + more <= 5, "{checked} of 100 were checked, and {more} after them: {statuses:?}");
    assert_eq!(checked + refused + busy + closed, 100, "nothing else, and never 200: {statuses:?}");
    assert_eq!(right, 429, "the right password got in while the address was locked out");
    // The burst itself: under a third of one more argon2 buffer (19 MiB). `before` already holds
    // the one the setup's hash left (kept 30 s), on a process of some 45 MB; an absolute bound
    // of 64 MB measured that baseline more than the burst (65.0 MB before, 65.7 at the peak, seen).
    assert!(
        peak.saturating_sub(before) < 6 * 1024,
        "the burst grew the daemon from {before} kB to a peak of {peak} kB"
    );
    assert!(peak < 96 * 1024, "the daemon's memory peaked at {peak} kB under the burst");
}

/// Opens a connection to `port` from `from` (another loopback address: a second client).
async fn connect_from(from: &str, port: u16) -> std::io::Result<tokio::net::TcpStream> {
    let s = tokio::net::TcpSocket::new_v4()?;
    s.bind(format!("{from}:0").parse().unwrap())?;
    s.connect(format!("127.0.0.1:{port}").parse().unwrap()).await
}

/// Whether the server has closed `s` (a read returns end of file or an error within `wait`).
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_and_half_sent_connections_are_closed_and_a_flood_leaves_the_panel_reachable() {
    let dir = scratch("security-connections");
    let port = free_tcp_port();
    // The usual limit of open files, as a daemon started by hand has it.
    let mut wrapped = Command::new("prlimit");
    wrapped.args(["--nofile=1024:1024", "--"]).arg(env!("CARGO_BIN_EXE_telebridge")).env("RUST_LOG", "info");
    let daemon = run_sim_with(wrapped, &dir, "box", port, &[], &[]);
    let pid = daemon.child.id();
    // This test holds more connections than its own default limit allows.
    let me = std::process::id().to_string();
    let raised = Command::new("prlimit").args(["--pid", &me, "--nofile=8192:8192"]).status().unwrap();
    assert!(raised.success(), "prlimit on the test itself");

    let mut idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
    half.write_all(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
    let opened = Instant::now();

    // 1100 idle connections from a second address, held.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let flood: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..1100 {
            if let Ok(s) = connect_from("127.0.0.2", port).await {
                held.push(s);
            }
        }
        held
    });
    eprintln!("flood: {} connections opened from 127.0.0.2", flood.len());
    assert!(flood.len() >= 1000, "only {} flood connections were opened: the test proves nothing", flood.len());
    let (status, _) = http("GET", port, "/api/status", None);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    eprintln!("while the flood is held: /api/status answered {status}; the daemon has {fds} files open");
    assert_eq!(status, 200, "the panel was unreachable while 1100 idle connections were held");
    assert!(fds < 512, "the daemon holds {fds} files");

    let idle_closed = closed_within(&mut idle, Duration::from_secs(20));
    let half_closed = closed_within(&mut half, Duration::from_secs(5));
    eprintln!(
        "idle connection closed: {idle_closed}, half-sent headers closed: {half_closed}, after {:?}",
        opened.elapsed()
    );
    assert!(idle_closed, "an idle connection stayed open for {:?}", opened.elapsed());
    assert!(half_closed, "a connection with half-sent headers stayed open for {:?}", opened.elapsed());
    drop(flood);
    assert_eq!(http("GET", port, "/healthz", None).0, 200);
}
