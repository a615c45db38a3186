//! Press to first packet: how long after "Go live" the receiver gets its first byte. The
//! appliance daemon (`telebridge run --sim`, the test source at 720p30) calls an
//! srt-live-transmit listener; the benchmark presses Go live through the API, times the first
//! byte the listener writes, stops, and presses again. The first press of a daemon's life is
//! shown apart from the later ones.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::panel::http;

fn state(port: u16, cookie: &str) -> String {
    let body = http(port, "GET", "/api/status", cookie, "").body;
    serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["machine"]["state"].as_str().map(String::from))
        .unwrap_or_default()
}

pub fn run(quick: bool, binary: Option<PathBuf>) -> anyhow::Result<()> {
    let bin = match binary {
        Some(b) => b,
        None => crate::telebridge()?,
    };
    let presses = if quick { 3 } else { 8 };
    let dir = std::env::temp_dir().join(format!("telebridge-golive-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let port = crate::free_udp_port()?;
    let started = crate::panel::start(&bin, &dir, &["--output".into(), format!("srt://127.0.0.1:{port}")])?;
    let (mut daemon, http_port, cookie) = (started.child, started.port, started.cookie);
    // What a box does between its start and the first press (a person is not that fast).
    std::thread::sleep(Duration::from_secs(3));

    let mut times = Vec::new();
    for press in 0..presses {
        let mut rx = Command::new("srt-live-transmit")
            .args(["-q", &format!("srt://:{port}?mode=listener"), "file://con"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("srt-live-transmit (srt-tools)")?;
        let mut out = rx.stdout.take().context("no stdout")?;
        std::thread::sleep(Duration::from_millis(500));
        let (tx, first) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut b = [0u8; 188];
            if out.read(&mut b).is_ok_and(|n| n > 0) {
                let _ = tx.send(Instant::now());
            }
        });
        let pressed = Instant::now();
        let status = http(http_port, "POST", "/api/live", &cookie, r#"{"live":true}"#).status;
        anyhow::ensure!(status == 202, "go live answered {status}");
        let got = first.recv_timeout(Duration::from_secs(15)).context("no packet within 15 s of the press")?;
        let ms = got.duration_since(pressed).as_secs_f64() * 1000.0;
        eprintln!("press {}: first packet after {ms:.0} ms", press + 1);
        times.push(ms);
        http(http_port, "POST", "/api/live", &cookie, r#"{"live":false}"#);
        for _ in 0..100 {
            if state(http_port, &cookie) == "ready" {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = rx.kill();
        let _ = rx.wait();
        let _ = reader.join();
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let mut later = times[1..].to_vec();
    later.sort_by(f64::total_cmp);
    let median = later.get(later.len() / 2).copied().unwrap_or(0.0);
    println!(
        "| press to first packet ({}) | first press | later presses, median | later presses, range |",
        bin.display()
    );
    println!("|---|---|---|---|");
    println!(
        "| 720p30 x264, SRT caller to srt-live-transmit | {:.0} ms | {median:.0} ms | {:.0}-{:.0} ms |",
        times[0],
        later.first().copied().unwrap_or(0.0),
        later.last().copied().unwrap_or(0.0)
    );
    if quick {
        anyhow::ensure!(times.iter().all(|t| *t > 0.0 && *t < 15_000.0), "a press took no time or too long");
        eprintln!("quick check passed: every press reached the receiver");
    }
    Ok(())
}
