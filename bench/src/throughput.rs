//! Benchmark 3: throughput against added delay, the VPN study's method: 0 to 40 ms added in 1 ms
//! steps, three 10 s transfers at each step, mean throughput; here for the kernel's TCP and for
//! SRT (libsrt's file mode through srt-live-transmit, its congestion-controlled bulk transfer),
//! each through the emulator's IP mode with the vpn-sweep profile (a 500 Mbit/s link). The delay
//! is added one way, A to B, as netem on one interface would.
//!
//! `tcp-send` and `sink` are this binary's own helpers, run inside the namespaces.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use linkemu::ip_mode::{self, ADDR_B};
use linkemu::{Impairment, Profiles};

use crate::plot::{self, Series};

/// `tcp-send ADDR --seconds N`: writes as fast as TCP takes it for N seconds.
pub fn tcp_send(addr: &str, seconds: f64) -> anyhow::Result<()> {
    let mut s = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    let buf = vec![0u8; 64 * 1024];
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        s.write_all(&buf)?;
    }
    Ok(())
}

/// `sink [--tcp ADDR]`: counts bytes (from one TCP connection, or stdin) and prints
/// `bytes seconds` measured from the first byte to the last.
pub fn sink(tcp: Option<&str>) -> anyhow::Result<()> {
    let mut input: Box<dyn Read> = match tcp {
        Some(addr) => {
            let l = TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?;
            println!("ready");
            std::io::stdout().flush()?;
            Box::new(l.accept()?.0)
        }
        None => Box::new(std::io::stdin().lock()),
    };
    let mut buf = vec![0u8; 256 * 1024];
    let (mut bytes, mut first, mut last) = (0u64, None, Instant::now());
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        bytes += n as u64;
        last = Instant::now();
    }
    let secs = first.map(|f| last.duration_since(f).as_secs_f64()).unwrap_or(0.0);
    println!("{bytes} {secs:.3}");
    Ok(())
}

fn parse_result(out: &[u8]) -> Option<f64> {
    let text = String::from_utf8_lossy(out);
    let line = text.lines().last()?;
    let mut it = line.split_whitespace();
    let (bytes, secs): (f64, f64) = (it.next()?.parse().ok()?, it.next()?.parse().ok()?);
    (secs > 0.5).then(|| bytes * 8.0 / secs / 1e6)
}

async fn one(profiles: &Path, delay_ms: f64, tcp: bool, seconds: u64, seed: u64) -> anyhow::Result<f64> {
    let p = Profiles::load(profiles)?.get("vpn-sweep")?.clone();
    let mut fwd = p.params();
    fwd.one_way_delay = Duration::from_secs_f64(delay_ms / 1000.0);
    let rev = p.params();
    let prefix = format!("tbt{}", std::process::id() % 10_000);
    let link = ip_mode::start(&prefix, Impairment::new(fwd, vec![], seed), Impairment::new(rev, vec![], seed + 1))
        .await
        .context("IP mode needs root and /dev/net/tun")?;
    let me = std::env::current_exe()?;
    let me = me.to_str().context("path")?;
    let addr = format!("{ADDR_B}:5001");
    let result = if tcp {
        let mut sink = link.in_b(me).args(["sink", "--tcp", &addr]).stdout(Stdio::piped()).spawn()?;
        let mut stdout = sink.stdout.take().context("stdout")?;
        let mut ready = [0u8; 6];
        stdout.read_exact(&mut ready)?;
        let status = link.in_a(me).args(["tcp-send", &addr, "--seconds", &seconds.to_string()]).status()?;
        anyhow::ensure!(status.success(), "tcp-send: {status}");
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest)?;
        let _ = sink.wait();
        parse_result(&rest)
    } else {
        let sink = link
            .in_b("sh")
            .args(["-c", &format!(
                "timeout -s INT {} srt-live-transmit -q 'srt://:5001?mode=listener&transtype=file' file://con | {me} sink",
                seconds + 4
            )])
            .stdout(Stdio::piped())
            .spawn()?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = link
            .in_a("sh")
            .args([
                "-c",
                &format!("cat /dev/zero | timeout -s INT {seconds} srt-live-transmit -q file://con 'srt://{addr}?transtype=file'"),
            ])
            .status()?;
        let out = tokio::task::spawn_blocking(move || sink.wait_with_output()).await??;
        parse_result(&out.stdout)
    };
    drop(link);
    result.with_context(|| format!("{} at {delay_ms} ms: no transfer measured", if tcp { "TCP" } else { "SRT" }))
}

/// Runs the sweep; prints the table and writes CSV and PNG.
pub async fn run(profiles: &Path, out: &Path, quick: bool, runs: u64) -> anyhow::Result<()> {
    let (delays, runs, seconds): (Vec<f64>, u64, u64) = if quick {
        (vec![0.0, 20.0, 40.0], 1, 4)
    } else {
        let p = Profiles::load(profiles)?.get("vpn-sweep")?.clone();
        (p.sweep(), runs.max(1), 10)
    };
    let mut rows: Vec<(f64, f64, f64)> = Vec::new();
    for &d in &delays {
        let mut mean = [0.0f64; 2];
        for (i, tcp) in [true, false].into_iter().enumerate() {
            for r in 0..runs {
                mean[i] += one(profiles, d, tcp, seconds, r + 1).await? / runs as f64;
            }
        }
        eprintln!("added delay {d:>4} ms: TCP {:7.1} Mbit/s, SRT {:7.1} Mbit/s", mean[0], mean[1]);
        rows.push((d, mean[0], mean[1]));
    }
    let mut csv = String::from("added_delay_ms,tcp_mbps,srt_mbps\n");
    for r in &rows {
        let _ = writeln!(csv, "{},{:.1},{:.1}", r.0, r.1, r.2);
    }
    std::fs::write(out.join("throughput-delay.csv"), csv)?;
    plot::lines(
        &out.join("throughput-delay.png"),
        &format!("Throughput against added one-way delay ({runs} x {seconds} s per point), vpn-sweep link"),
        "added delay, ms",
        "Mbit/s",
        &[
            Series { label: "TCP (kernel, cubic)".into(), points: rows.iter().map(|r| (r.0, r.1)).collect() },
            Series { label: "SRT (libsrt file mode)".into(), points: rows.iter().map(|r| (r.0, r.2)).collect() },
        ],
    )?;
    println!("| added delay | TCP | SRT |\n|---|---|---|");
    for r in rows.iter().filter(|r| (r.0 as u64).is_multiple_of(5)) {
        println!("| {} ms | {:.0} Mbit/s | {:.0} Mbit/s |", r.0, r.1, r.2);
    }
    println!("\nCSV: {0}/throughput-delay.csv (every step); plot: {0}/throughput-delay.png", out.display());
    if quick {
        for r in &rows {
            anyhow::ensure!(r.1 > 5.0 && r.2 > 5.0, "at {} ms a transfer barely moved: TCP {} SRT {}", r.0, r.1, r.2);
        }
        eprintln!("quick check passed: TCP and SRT transfers measured at 0, 20 and 40 ms");
    }
    Ok(())
}
