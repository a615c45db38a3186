//! Benchmark 5: our SRT transport against srt-live-transmit (libsrt's own tool), the same job on
//! the same link at the same time. One encoder listens; two chains call it side by side:
//!
//! ```text
//! encoder ─► srt-live-transmit ─► link (profile, seed 1) ─► srt-live-transmit ─► file
//!         ─► telebridge relay   ─► link (profile, seed 1) ─► telebridge relay   ─► file
//! ```
//! Each sender receives SRT on loopback and sends SRT over the link; each receiver receives SRT
//! and writes the TS to a file. Per process: CPU seconds per GB carried and peak RSS; per chain:
//! TS packets missing in the file (unrecovered loss) and the link's losses.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use anyhow::Context;
use linkemu::{Impairment, Profiles};
use telebridge_srt::ts_check::ContinuityCheck;

struct Proc {
    label: &'static str,
    child: Child,
}

struct Measured {
    label: &'static str,
    cpu_s: f64,
    peak_rss_mb: f64,
}

struct Chain {
    tool: &'static str,
    bytes: u64,
    ts_missing: u64,
    link_lost: u64,
    link_packets: u64,
    sender: Measured,
    receiver: Measured,
}

fn measure(p: &Proc) -> Measured {
    let pid = p.child.id();
    Measured {
        label: p.label,
        cpu_s: crate::ticks(pid).unwrap_or(0) as f64 / 100.0,
        peak_rss_mb: crate::proc_status_kb(pid, "VmHWM") as f64 / 1024.0,
    }
}

fn stop(mut p: Proc) {
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a child we spawned and have not reaped; no memory is involved.
    unsafe {
        libc::kill(p.child.id() as libc::pid_t, libc::SIGINT);
    }
    for _ in 0..50 {
        if matches!(p.child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = p.child.kill();
    let _ = p.child.wait();
}

fn missing_in(path: &Path) -> anyhow::Result<(u64, u64)> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut cc = ContinuityCheck::default();
    cc.feed(&data);
    Ok((data.len() as u64, cc.errors))
}

/// Runs both chains for `seconds` over `profile` at `bitrate_kbps`.
pub async fn run(profiles: &Path, out: &Path, quick: bool) -> anyhow::Result<()> {
    let (profile_name, bitrate_kbps, seconds) = ("transatlantic-100ms", 8000u32, if quick { 15 } else { 60 });
    let profile = Profiles::load(profiles)?.get(profile_name)?.clone();
    let latency = ((profile.rtt_ms * 4.0) as u32).max(120);
    let bin = crate::telebridge()?;
    let bin = bin.to_str().context("path")?;
    let enc_port = crate::free_udp_port()?;
    eprintln!(
        "transport: {profile_name}, {} Mbit/s, SRT latency {latency} ms, {seconds} s, srt-live-transmit and telebridge side by side ...",
        bitrate_kbps / 1000
    );
    let mut encoder = crate::spawn_to(
        Command::new(bin)
            .args(["-q", "encode", "--bitrate-mode", "fixed", "--source", "test", "--size", "1280x720"])
            .args(["--bitrate-kbps", &bitrate_kbps.to_string()])
            .args(["--output", &format!("srt://:{enc_port}?mode=listener")])
            .args(["--duration", &format!("{}s", seconds + 10)]),
        &out.join("transport-encoder.txt"),
    )?;
    tokio::time::sleep(Duration::from_millis(800)).await;

    let mut chains = Vec::new();
    let mut procs: Vec<(Proc, Proc, std::path::PathBuf, linkemu::relay::Relay)> = Vec::new();
    for tool in ["srt-live-transmit", "telebridge"] {
        let rx_port = crate::free_udp_port()?;
        let relay = linkemu::relay::start(
            "127.0.0.1:0".parse()?,
            format!("127.0.0.1:{rx_port}").parse()?,
            Impairment::new(profile.params(), vec![], 1),
            Impairment::new(profile.params(), vec![], 2),
        )
        .await?;
        let file = std::env::current_dir()?.join(out).join(format!("transport-{tool}.ts"));
        let _ = std::fs::remove_file(&file);
        let rx_url = format!("srt://:{rx_port}?mode=listener&latency={latency}");
        let tx_in = format!("srt://127.0.0.1:{enc_port}?latency=120");
        let tx_out = format!("srt://127.0.0.1:{}?latency={latency}", relay.listen.port());
        let (receiver, sender) = if tool == "telebridge" {
            let rx = Command::new(bin)
                .args(["-q", "relay", "--input", &rx_url, "--output"])
                .arg(format!("file:{}", file.display()))
                .spawn()?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let tx = Command::new(bin).args(["-q", "relay", "--input", &tx_in, "--output", &tx_out]).spawn()?;
            (rx, tx)
        } else {
            let rx = crate::spawn_to(Command::new("srt-live-transmit").args(["-q", &rx_url, "file://con"]), &file)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let tx = Command::new("srt-live-transmit").args(["-q", &tx_in, &tx_out]).spawn()?;
            (rx, tx)
        };
        procs.push((Proc { label: "sender", child: sender }, Proc { label: "receiver", child: receiver }, file, relay));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    for (i, (tx, rx, file, relay)) in procs.into_iter().enumerate() {
        let (sender, receiver) = (measure(&tx), measure(&rx));
        let link = relay.stats().forward;
        stop(tx);
        stop(rx);
        let (bytes, ts_missing) = missing_in(&file)?;
        chains.push(Chain {
            tool: if i == 0 { "srt-live-transmit" } else { "telebridge relay" },
            bytes,
            ts_missing,
            link_lost: link.dropped_random + link.dropped_burst + link.dropped_queue,
            link_packets: link.offered,
            sender,
            receiver,
        });
    }
    let _ = encoder.kill();
    let _ = encoder.wait();

    let mut csv = String::from("tool,role,cpu_s,gb,cpu_s_per_gb,peak_rss_mb,ts_missing,link_lost,link_packets\n");
    println!("| tool | role | CPU s per GB | peak RSS | TS packets missing (receiver file) | link: lost / sent |");
    println!("|---|---|---|---|---|---|");
    for c in &chains {
        let gb = c.bytes as f64 / 1e9;
        for m in [&c.sender, &c.receiver] {
            let per_gb = if gb > 0.0 { m.cpu_s / gb } else { 0.0 };
            csv.push_str(&format!(
                "{},{},{:.2},{:.4},{:.1},{:.1},{},{},{}\n",
                c.tool, m.label, m.cpu_s, gb, per_gb, m.peak_rss_mb, c.ts_missing, c.link_lost, c.link_packets
            ));
            println!(
                "| {} | {} | {:.1} | {:.1} MB | {} | {} / {} |",
                c.tool, m.label, per_gb, m.peak_rss_mb, c.ts_missing, c.link_lost, c.link_packets
            );
        }
    }
    std::fs::write(out.join("transport.csv"), csv)?;
    let bars: Vec<(String, f64)> = chains
        .iter()
        .flat_map(|c| {
            let gb = (c.bytes as f64 / 1e9).max(1e-9);
            [
                (format!("{} {}", c.tool, c.sender.label), c.sender.cpu_s / gb),
                (format!("{} {}", c.tool, c.receiver.label), c.receiver.cpu_s / gb),
            ]
        })
        .collect();
    crate::plot::bars(
        &out.join("transport.png"),
        "CPU seconds per GB carried, same link, same stream",
        "CPU s / GB",
        &bars,
    )?;
    println!(
        "\n{} MB carried by srt-live-transmit, {} MB by telebridge; CSV: {dir}/transport.csv; plot: {dir}/transport.png",
        chains[0].bytes / 1_000_000,
        chains[1].bytes / 1_000_000,
        dir = out.display()
    );
    if quick {
        for c in &chains {
            let expected = u64::from(bitrate_kbps) * 1000 / 8 * seconds / 2;
            anyhow::ensure!(c.bytes > expected, "{}: carried {} bytes, expected over {expected}", c.tool, c.bytes);
            anyhow::ensure!(c.link_lost > 0, "{}: a lossy link lost nothing", c.tool);
            anyhow::ensure!(c.sender.cpu_s > 0.0 && c.receiver.cpu_s > 0.0, "{}: no CPU time read", c.tool);
        }
        eprintln!("quick check passed: both transports carried the stream over a lossy link and were measured");
    }
    Ok(())
}
