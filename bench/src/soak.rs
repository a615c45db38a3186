//! The soak: the appliance daemon (`telebridge run --sim`, live from start, 720p30 at 4 Mbit/s)
//! sends SRT through the link emulator (the 4g-fixed profile without its timed outages: 150 ms
//! RTT, 4 ms jitter, 0.3 % loss, an 11 Mbit/s bottleneck) to `telebridge decode` for an hour,
//! while a client polls the daemon's panel as the browser does (the event stream held open, the
//! preview each second, the status every 5 s, `/metrics` every 15 s, the CSV each minute).
//! Each minute: resident memory and open files of both processes. At the end: their growth
//! after the first minutes, the longest gap in the picture (seconds with no frame decoded), the
//! TS packets lost for good, and how the panel's requests went.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use linkemu::{Impairment, Profiles};

use crate::panel::http;

/// SRT latency: 4 x the profile's RTT.
const LATENCY_MS: u32 = 600;
/// Memory is compared from this minute on: the first fill their caches and buffers.
const WARM_UP_MIN: usize = 2;

/// Open files of a process.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

struct Minute {
    minute: usize,
    daemon_rss_kb: u64,
    daemon_fds: usize,
    decoder_rss_kb: u64,
    decoder_fds: usize,
}

/// The panel's traffic, counted.
#[derive(Default)]
struct Panel {
    ok: AtomicU64,
    failed: AtomicU64,
    events: AtomicU64,
}

fn poll_panel(port: u16, cookie: String, panel: Arc<Panel>, stop: Arc<AtomicBool>) {
    // The event stream, held open the whole time, as the panel holds it.
    let (p, c, s, panel_events) = (port, cookie.clone(), stop.clone(), panel.clone());
    let events = std::thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            let Ok(mut sock) = TcpStream::connect(("127.0.0.1", p)) else {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            };
            let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
            let req = format!("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nCookie: {c}\r\n\r\n");
            if sock.write_all(req.as_bytes()).is_err() {
                continue;
            }
            let mut buf = [0u8; 8192];
            while !s.load(Ordering::Relaxed) {
                match sock.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let k = buf[..n].windows(6).filter(|w| w == b"event:").count();
                        panel_events.events.fetch_add(k as u64, Ordering::Relaxed);
                    }
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
        }
    });
    let mut tick = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut paths = vec!["/api/preview.jpg"];
        if tick.is_multiple_of(5) {
            paths.push("/api/status");
        }
        if tick.is_multiple_of(15) {
            paths.push("/metrics");
        }
        if tick.is_multiple_of(60) {
            paths.push("/api/stats.csv?minutes=5");
        }
        for path in paths {
            let status = http(port, "GET", path, &cookie, "").status;
            let counter = if status == 200 { &panel.ok } else { &panel.failed };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        tick += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
    let _ = events.join();
}

pub async fn run(profiles: &Path, out: &Path, quick: bool, minutes: u64) -> anyhow::Result<()> {
    let minutes = if quick { 1 } else { minutes };
    let mut profile = Profiles::load(profiles)?.get("4g-fixed")?.clone();
    profile.events.clear();
    let bin = crate::telebridge()?;
    let dir = out.join("soak");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;

    let decoder_port = crate::free_udp_port()?;
    let dec_out = dir.join("decoder.jsonl");
    let mut decoder = crate::spawn_to(
        Command::new(&bin)
            .args(["-q", "decode", "--sink", "fake", "--stats", "json", "--input"])
            .arg(format!("srt://:{decoder_port}?mode=listener&latency={LATENCY_MS}")),
        &dec_out,
    )?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse()?,
        format!("127.0.0.1:{decoder_port}").parse()?,
        Impairment::new(profile.params(), Vec::new(), 1),
        Impairment::new(profile.params(), Vec::new(), 2),
    )
    .await?;

    let output = format!("srt://127.0.0.1:{}?latency={LATENCY_MS}", relay.listen.port());
    let started = crate::panel::start(&bin, &dir, &["--start-live".into(), "--output".into(), output])?;
    let (mut daemon, http_port, cookie) = (started.child, started.port, started.cookie);

    let panel = Arc::new(Panel::default());
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (panel, stop) = (panel.clone(), stop.clone());
        std::thread::spawn(move || poll_panel(http_port, cookie, panel, stop))
    };

    eprintln!("soak: {minutes} min, daemon -> linkemu (4g-fixed without outages) -> decoder, panel polled");
    let started = Instant::now();
    let mut samples = Vec::new();
    for minute in 0..=minutes as usize {
        let due = started + Duration::from_secs(60 * minute as u64);
        tokio::time::sleep(due.saturating_duration_since(Instant::now())).await;
        let m = Minute {
            minute,
            daemon_rss_kb: crate::rss_kb(daemon.id()),
            daemon_fds: fds(daemon.id()),
            decoder_rss_kb: crate::rss_kb(decoder.id()),
            decoder_fds: fds(decoder.id()),
        };
        eprintln!(
            "  minute {minute}: daemon {:.1} MB, {} files; decoder {:.1} MB, {} files",
            m.daemon_rss_kb as f64 / 1024.0,
            m.daemon_fds,
            m.decoder_rss_kb as f64 / 1024.0,
            m.decoder_fds
        );
        samples.push(m);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = poller.join();
    let alive = matches!(daemon.try_wait(), Ok(None)) && matches!(decoder.try_wait(), Ok(None));
    for p in [&mut daemon, &mut decoder] {
        let _ = Command::new("kill").args(["-INT", &p.id().to_string()]).status();
    }
    let _ = tokio::task::spawn_blocking(move || (daemon.wait(), decoder.wait())).await;

    // The picture: seconds in which no frame was decoded, after the first picture.
    let lines: Vec<serde_json::Value> =
        crate::json_lines(&dec_out).into_iter().filter(|l| l.get("t").is_some()).collect();
    let first = lines.iter().position(|l| l["decoder"]["frames_decoded"].as_u64().unwrap_or(0) > 0);
    let (mut longest, mut run, mut gaps) = (0u32, 0u32, 0u32);
    for l in first.map_or(&[][..], |f| &lines[f..]) {
        if l["decoder"]["fps"].as_f64().unwrap_or(0.0) == 0.0 {
            run += 1;
            longest = longest.max(run);
        } else {
            if run > 0 {
                gaps += 1;
            }
            run = 0;
        }
    }
    let last = lines.last().cloned().unwrap_or_default();
    let frames = last["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    let missing = last["decoder"]["frames_missing"].as_u64().unwrap_or(0);
    let ts_lost = last["input"]["ts_continuity_errors"].as_u64().unwrap_or(0);
    let srt = &last["input"]["srt"];

    let mut csv = String::from("minute,daemon_rss_kb,daemon_fds,decoder_rss_kb,decoder_fds\n");
    for m in &samples {
        let _ =
            writeln!(csv, "{},{},{},{},{}", m.minute, m.daemon_rss_kb, m.daemon_fds, m.decoder_rss_kb, m.decoder_fds);
    }
    std::fs::write(out.join("soak.csv"), csv)?;
    let from = samples.get(WARM_UP_MIN.min(samples.len().saturating_sub(1))).context("no samples")?;
    let to = samples.last().context("no samples")?;
    let growth = |a: u64, b: u64| (b as f64 - a as f64) / 1024.0;
    let daemon_growth = growth(from.daemon_rss_kb, to.daemon_rss_kb);
    let decoder_growth = growth(from.decoder_rss_kb, to.decoder_rss_kb);
    println!("| soak, {minutes} min | from minute {} to {} | |", from.minute, to.minute);
    println!("|---|---|---|");
    println!(
        "| daemon (encoder, panel) RSS | {:.1} -> {:.1} MB | growth {daemon_growth:+.1} MB |",
        from.daemon_rss_kb as f64 / 1024.0,
        to.daemon_rss_kb as f64 / 1024.0
    );
    println!("| daemon open files | {} -> {} | |", from.daemon_fds, to.daemon_fds);
    println!(
        "| decoder RSS | {:.1} -> {:.1} MB | growth {decoder_growth:+.1} MB |",
        from.decoder_rss_kb as f64 / 1024.0,
        to.decoder_rss_kb as f64 / 1024.0
    );
    println!("| decoder open files | {} -> {} | |", from.decoder_fds, to.decoder_fds);
    println!("| picture | {frames} frames decoded, {missing} missing | longest gap {longest} s ({gaps} gaps) |");
    println!(
        "| SRT at the decoder | {} received, {} lost and {} dropped | {ts_lost} TS packets lost for good |",
        srt["packets_received"], srt["packets_received_lost"], srt["packets_dropped"]
    );
    println!(
        "| panel | {} requests answered, {} failed | {} events received |",
        panel.ok.load(Ordering::Relaxed),
        panel.failed.load(Ordering::Relaxed),
        panel.events.load(Ordering::Relaxed)
    );
    println!("\nCSV: {}/soak.csv; logs in {}", out.display(), dir.display());
    anyhow::ensure!(alive, "a process died during the soak; see {}", dir.display());
    if quick {
        anyhow::ensure!(frames > 1000, "the decoder showed {frames} frames in a minute");
        anyhow::ensure!(panel.ok.load(Ordering::Relaxed) > 50, "the panel answered too few requests");
        eprintln!("quick check passed: the soak runs and measures");
    }
    Ok(())
}
