//! Benchmark 4: the SRT-over-4G study. Our encoder sends 8 Mbit/s with a 10 Mbit/s SRT ceiling
//! (maxbw) through the 4g-fixed profile (150 ms RTT, 0.3 % loss, an 11 Mbit/s bottleneck with
//! 300 ms of buffer, and the study's RTT spikes) to our decoder, once with SRT latency 750 ms and
//! once with 1200 ms. Per second: RTT and packets sent, lost, retransmitted and dropped (sender),
//! and MPEG-TS packets missing at the receiver.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use linkemu::{Impairment, Profiles};

use crate::plot::{self, Series};

struct Row {
    t: f64,
    rtt_ms: f64,
    sent: i64,
    lost: i64,
    retransmitted: i64,
    dropped: i64,
    ts_missing: i64,
}

struct Run {
    latency_ms: u32,
    rows: Vec<Row>,
    frames_encoded: u64,
    frames_decoded: u64,
}

async fn one(profiles: &Path, out: &Path, latency_ms: u32, seconds: u64) -> anyhow::Result<Run> {
    let profile = Profiles::load(profiles)?.get("4g-fixed")?.clone();
    let bin = crate::telebridge()?;
    let decoder_port = crate::free_udp_port()?;
    let dec_out = out.join(format!("4g-{latency_ms}-decoder.jsonl"));
    let enc_out = out.join(format!("4g-{latency_ms}-encoder.jsonl"));
    let mut decoder = crate::spawn_to(
        Command::new(&bin).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
            "--input",
            &format!("srt://:{decoder_port}?mode=listener&latency={latency_ms}"),
            "--duration",
            &format!("{}s", seconds + 4),
        ]),
        &dec_out,
    )?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    // The link's timed events count from here, as the encoder starts.
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse()?,
        format!("127.0.0.1:{decoder_port}").parse()?,
        Impairment::new(profile.params(), profile.events.clone(), 1),
        Impairment::new(profile.params(), profile.events.clone(), 2),
    )
    .await?;
    let mut encoder = crate::spawn_to(
        Command::new(&bin)
            .args([
                "-q",
                "encode",
                "--bitrate-mode",
                "fixed",
                "--source",
                "test",
                "--size",
                "1280x720",
                "--bitrate-kbps",
                "8000",
                "--stats",
                "json",
            ])
            .args([
                "--output",
                // 10 Mbit/s ceiling = 1,250,000 bytes/s (SRTO_MAXBW).
                &format!("srt://127.0.0.1:{}?latency={latency_ms}&maxbw=1250000", relay.listen.port()),
                "--duration",
                &format!("{seconds}s"),
            ]),
        &enc_out,
    )?;
    let enc_status = tokio::task::spawn_blocking(move || encoder.wait()).await??;
    let dec_status = tokio::task::spawn_blocking(move || decoder.wait()).await??;
    anyhow::ensure!(enc_status.success() && dec_status.success(), "encoder {enc_status}, decoder {dec_status}");
    let enc = crate::json_lines(&enc_out);
    let dec = crate::json_lines(&dec_out);
    let missing_at = |t: f64| {
        dec.iter()
            .filter(|l| l["t"].as_f64().is_some_and(|x| x <= t + 0.7))
            .filter_map(|l| l["input"]["ts_continuity_errors"].as_i64())
            .max()
            .unwrap_or(0)
    };
    let rows = enc
        .iter()
        .filter(|l| l.get("t").is_some())
        .map(|l| {
            let s = &l["outputs"][0]["srt"];
            let t = l["t"].as_f64().unwrap_or(0.0);
            Row {
                t,
                rtt_ms: s["rtt_ms"].as_f64().unwrap_or(0.0),
                sent: s["packets_sent"].as_i64().unwrap_or(0),
                lost: s["packets_lost"].as_i64().unwrap_or(0),
                retransmitted: s["packets_retransmitted"].as_i64().unwrap_or(0),
                dropped: s["packets_dropped"].as_i64().unwrap_or(0),
                ts_missing: missing_at(t),
            }
        })
        .collect();
    let summary = |v: &[serde_json::Value]| v.iter().find_map(|l| l.get("summary").cloned()).unwrap_or_default();
    Ok(Run {
        latency_ms,
        rows,
        frames_encoded: summary(&enc)["encoder"]["frames_encoded"].as_u64().unwrap_or(0),
        frames_decoded: summary(&dec)["decoder"]["frames_decoded"].as_u64().unwrap_or(0),
    })
}

/// Runs both latencies, writes CSV and PNG, prints the table; in quick mode checks the figures.
pub async fn run(profiles: &Path, out: &Path, quick: bool) -> anyhow::Result<()> {
    let seconds = if quick { 25 } else { 70 };
    let mut runs = Vec::new();
    for latency in [750, 1200] {
        eprintln!("4g-fixed, 8 Mbit/s, SRT latency {latency} ms, {seconds} s ...");
        runs.push(one(profiles, out, latency, seconds).await.with_context(|| format!("latency {latency} ms"))?);
    }
    for r in &runs {
        let mut csv = String::from(
            "t_s,rtt_ms,packets_sent,packets_lost,packets_retransmitted,packets_dropped,ts_packets_missing\n",
        );
        for x in &r.rows {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{}",
                x.t, x.rtt_ms, x.sent, x.lost, x.retransmitted, x.dropped, x.ts_missing
            );
        }
        std::fs::write(out.join(format!("4g-{}.csv", r.latency_ms)), csv)?;
    }
    let per_second = |r: &Run, f: fn(&Row) -> i64| -> Vec<(f64, f64)> {
        r.rows.windows(2).map(|w| (w[1].t, (f(&w[1]) - f(&w[0])) as f64)).collect()
    };
    let mut loss = Vec::new();
    let mut rtt = Vec::new();
    for r in &runs {
        loss.push(Series { label: format!("lost/s, latency {} ms", r.latency_ms), points: per_second(r, |x| x.lost) });
        loss.push(Series {
            label: format!("retransmitted/s, latency {} ms", r.latency_ms),
            points: per_second(r, |x| x.retransmitted),
        });
        loss.push(Series {
            label: format!("dropped/s, latency {} ms", r.latency_ms),
            points: per_second(r, |x| x.dropped),
        });
        rtt.push(Series {
            label: format!("RTT, latency {} ms", r.latency_ms),
            points: r.rows.iter().map(|x| (x.t, x.rtt_ms)).collect(),
        });
    }
    plot::lines(
        &out.join("4g-loss.png"),
        "SRT over the 4g-fixed profile, 8 Mbit/s: packets per second",
        "seconds",
        "packets/s",
        &loss,
    )?;
    plot::lines(&out.join("4g-rtt.png"), "SRT over the 4g-fixed profile: round-trip time", "seconds", "ms", &rtt)?;

    println!("| SRT latency | sent | lost | retransmitted | dropped (sender) | TS packets missing (receiver) | frames decoded / encoded | max RTT |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in &runs {
        let last = r.rows.last().context("no stats lines")?;
        let max_rtt = r.rows.iter().map(|x| x.rtt_ms).fold(0.0, f64::max);
        println!(
            "| {} ms | {} | {} | {} | {} | {} | {} / {} | {:.0} ms |",
            r.latency_ms,
            last.sent,
            last.lost,
            last.retransmitted,
            last.dropped,
            last.ts_missing,
            r.frames_decoded,
            r.frames_encoded,
            max_rtt
        );
    }
    println!("\nCSV: {0}/4g-750.csv, {0}/4g-1200.csv; plots: {0}/4g-loss.png, {0}/4g-rtt.png", out.display());
    if quick {
        for r in &runs {
            let last = r.rows.last().context("no stats lines")?;
            // The link is lossy: SRT must see losses and repair them; the picture must arrive.
            anyhow::ensure!(
                last.lost > 0 && last.retransmitted > 0,
                "latency {}: a lossy link showed no loss or no retransmission",
                r.latency_ms
            );
            // A 25 s run includes the profile's 3 s outage (RTT 1200 ms, 10 % loss) and its recovery.
            anyhow::ensure!(
                r.frames_decoded * 100 >= r.frames_encoded * 65,
                "latency {}: decoded {} of {} frames",
                r.latency_ms,
                r.frames_decoded,
                r.frames_encoded
            );
            let max_rtt = r.rows.iter().map(|x| x.rtt_ms).fold(0.0, f64::max);
            anyhow::ensure!(
                max_rtt >= 140.0,
                "latency {}: RTT never reached the link's 150 ms ({max_rtt} ms)",
                r.latency_ms
            );
        }
        eprintln!("quick check passed: the link delivers what its profile says and SRT repairs its losses");
    }
    Ok(())
}
