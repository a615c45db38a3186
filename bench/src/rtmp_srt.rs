//! Benchmarks 1 and 2: SRT against RTMP over the same emulated link, side by side.
//!
//! One encoder in namespace A sends the same stream two ways through the link (IP mode, so RTMP
//! meets the loss, delay and bottleneck in the kernel's own TCP): SRT to our decoder in namespace
//! B, and RTMP to nginx-rtmp in namespace B, played there by `telebridge-bench rtmp-read`. Both
//! ends read the timecode burnt into every frame.
//!
//! - Latency (1): per profile at 2 Mbit/s. SRT plays at a fixed delay (its latency setting,
//!   4 x RTT and at least 120 ms, Haivision's preset for lossy links); a fixed-delay RTMP player
//!   needs a buffer as deep as the latest frame was late, so RTMP's figure is the largest
//!   per-frame latency after a 3 s warm-up (its median is given too).
//! - Bitrate (2): per profile and bitrate, SRT and RTMP each in a run of its own (together they
//!   would share the link's bottleneck and disturb each other); sustainable = for SRT no packet dropped at the sender
//!   and no TS packet missing at the receiver; for RTMP no frame missing, no gap over 1 s and a
//!   lag that does not grow by more than 1 s over the run. Missing frames count from each
//!   protocol's first frame; gaps and latency from 3 s after it (the start-up burst is one-off).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use linkemu::ip_mode::{self, ADDR_B};
use linkemu::{Impairment, Profiles};

use crate::plot::{self, Series};

const NGINX_CONF: &str = "load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off;
master_process off;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 64; }
rtmp { server { listen 1935; chunk_size 4096; application live { live on; record off; } } }
";

/// The profiles of the study, in its order.
pub const PROFILES: [&str; 5] = ["lan", "metro-17ms", "transatlantic-100ms", "us-west-180ms", "sydney-360ms"];
/// The study's bitrate steps, kbit/s.
pub const BITRATES: [u32; 5] = [1000, 2000, 6000, 10000, 20000];

/// Which protocols one run carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// SRT and RTMP from one encoder at once (the latency benchmark: a 2 Mbit/s pair does not
    /// load the link).
    Both,
    /// SRT alone (the bitrate benchmark: each protocol has the link to itself).
    Srt,
    /// RTMP alone.
    Rtmp,
}

/// What one side-by-side run measured.
#[derive(Debug, Clone)]
pub struct Pair {
    profile: String,
    rtt_ms: f64,
    bitrate_kbps: u32,
    encoder_kbps: f64,
    srt_rtt_factor: f64,
    srt_latency_ms: u32,
    srt_frames: u64,
    srt_p50: f64,
    srt_max: f64,
    srt_dropped: i64,
    srt_ts_missing: i64,
    srt_frames_missing: u64,
    rtmp_frames: usize,
    rtmp_p50: f64,
    rtmp_max: f64,
    rtmp_frames_missing: u64,
    rtmp_max_gap_ms: f64,
    rtmp_lag_growth_ms: f64,
    /// Packets A to B through the link, and how many it dropped (random, burst, queue).
    link_packets: u64,
    link_dropped: u64,
    /// The same for the RTMP run, when RTMP ran on its own.
    rtmp_link_packets: u64,
    rtmp_link_dropped: u64,
    /// (seconds since the encoder started, latency ms) per RTMP frame.
    rtmp_series: Vec<(f64, f64)>,
}

impl Pair {
    fn srt_ok(&self) -> bool {
        self.srt_frames > 0 && self.srt_dropped == 0 && self.srt_ts_missing == 0
    }

    fn rtmp_ok(&self) -> bool {
        self.rtmp_frames > 0
            && self.rtmp_frames_missing == 0
            && self.rtmp_max_gap_ms < 1000.0
            && self.rtmp_lag_growth_ms < 1000.0
    }
}

/// SRT's latency for a link: `factor` x RTT, at least libsrt's default of 120 ms.
fn srt_latency_for(rtt_ms: f64, factor: f64) -> u32 {
    ((rtt_ms * factor).ceil() as u32).max(120)
}

/// The bitrate benchmark's SRT latency: 4 x RTT, Haivision's preset for lossy links.
pub const BITRATE_RTT_FACTOR: f64 = 4.0;

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One run: `profile` at `bitrate_kbps` for `seconds`, the `sides` asked for from one encoder.
pub async fn run_pair(
    profiles: &Path,
    out: &Path,
    profile: &str,
    bitrate_kbps: u32,
    seconds: u64,
    sides: Sides,
    rtt_factor: f64,
) -> anyhow::Result<Pair> {
    let p = Profiles::load(profiles)?.get(profile)?.clone();
    let bin = crate::telebridge()?;
    let me = std::env::current_exe()?;
    let prefix = format!("tbb{}", std::process::id() % 10_000);
    let link = ip_mode::start(
        &prefix,
        Impairment::new(p.params(), p.events.clone(), 1),
        Impairment::new(p.params(), p.events.clone(), 2),
    )
    .await
    .context("IP mode needs root and /dev/net/tun")?;
    let tag = format!("{profile}-{bitrate_kbps}-{sides:?}-{rtt_factor}x").to_lowercase();
    let nginx_dir = std::env::current_dir()?.join(out).join(format!("nginx-{tag}"));
    std::fs::create_dir_all(nginx_dir.join("logs"))?;
    std::fs::write(nginx_dir.join("nginx.conf"), NGINX_CONF)?;
    let mut nginx = crate::spawn_to(
        link.in_b("nginx").arg("-p").arg(&nginx_dir).arg("-c").arg(nginx_dir.join("nginx.conf")),
        &nginx_dir.join("stdout"),
    )?;
    let latency = srt_latency_for(p.rtt_ms, rtt_factor);
    let run_s = seconds + 6;
    let dec_out = out.join(format!("pair-{tag}-decoder.jsonl"));
    let rtmp_out = out.join(format!("pair-{tag}-rtmp.csv"));
    let enc_out = out.join(format!("pair-{tag}-encoder.jsonl"));
    let mut decoder = crate::spawn_to(
        link.in_b(bin.to_str().context("path")?).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
            "--input",
            &format!("srt://:9000?mode=listener&latency={latency}"),
            "--duration",
            &format!("{run_s}s"),
        ]),
        &dec_out,
    )?;
    let mut reader = crate::spawn_to(
        link.in_b(me.to_str().context("path")?).args([
            "rtmp-read",
            &format!("rtmp://{ADDR_B}:1935/live/bench"),
            "--seconds",
            &run_s.to_string(),
        ]),
        &rtmp_out,
    )?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let started = telebridge_media::timecode::now_us() as f64 / 1e6;
    let mut enc = link.in_a(bin.to_str().context("path")?);
    // A fixed bitrate: the benchmark finds what each transport sustains at a given one.
    enc.args(["-q", "encode", "--bitrate-mode", "fixed", "--source", "test", "--size", "1280x720", "--stats", "json"])
        .args(["--bitrate-kbps", &bitrate_kbps.to_string()])
        .args(["--duration", &format!("{seconds}s")]);
    if sides != Sides::Rtmp {
        enc.args(["--output", &format!("srt://{ADDR_B}:9000?latency={latency}")]);
    }
    if sides != Sides::Srt {
        enc.args(["--output", &format!("rtmp://{ADDR_B}:1935/live/bench")]);
    }
    let mut encoder = crate::spawn_to(&mut enc, &enc_out)?;
    let enc_status = tokio::task::spawn_blocking(move || encoder.wait()).await??;
    let dec_status = tokio::task::spawn_blocking(move || decoder.wait()).await??;
    let _ = tokio::task::spawn_blocking(move || reader.wait()).await?;
    let _ = nginx.kill();
    let _ = nginx.wait();
    let f = link.forward.snapshot();
    drop(link);
    anyhow::ensure!(enc_status.success() && dec_status.success(), "encoder {enc_status}, decoder {dec_status}");

    let summary = |v: &[serde_json::Value]| v.iter().find_map(|l| l.get("summary").cloned()).unwrap_or_default();
    let enc = summary(&crate::json_lines(&enc_out));
    let dec = summary(&crate::json_lines(&dec_out));
    let srt_out = enc["outputs"].as_array().and_then(|o| o.iter().find(|x| x["kind"] == "srt")).cloned();
    let srt_out = srt_out.unwrap_or_default();

    // RTMP: frames after a 3 s warm-up from the first one.
    let frames: Vec<(f64, u32, f64)> = std::fs::read_to_string(&rtmp_out)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect();
    let first = frames.first().map(|f| f.0).unwrap_or(0.0);
    let steady: Vec<&(f64, u32, f64)> = frames.iter().filter(|f| f.0 >= first + 3.0).collect();
    let mut lat: Vec<f64> = steady.iter().map(|f| f.2).collect();
    let rtmp_max = lat.iter().copied().fold(0.0, f64::max);
    let rtmp_p50 = median(&mut lat);
    // Frames lost count from the first frame on, as the SRT decoder counts them.
    let missing: u64 = frames
        .windows(2)
        .map(|w| {
            let gap = w[1].1.wrapping_sub(w[0].1) & 0xff_ffff;
            if gap > 1 && gap < 100_000 {
                u64::from(gap - 1)
            } else {
                0
            }
        })
        .sum();
    let max_gap = steady.windows(2).map(|w| (w[1].0 - w[0].0) * 1000.0).fold(0.0, f64::max);
    let window = |from: f64, to: f64| {
        let mut v: Vec<f64> = steady.iter().filter(|f| f.0 >= from && f.0 < to).map(|f| f.2).collect();
        median(&mut v)
    };
    let last = steady.last().map(|f| f.0).unwrap_or(0.0);
    let growth =
        if last > first + 13.0 { window(last - 5.0, last + 1.0) - window(first + 3.0, first + 8.0) } else { 0.0 };
    Ok(Pair {
        profile: profile.to_string(),
        rtt_ms: p.rtt_ms,
        bitrate_kbps,
        encoder_kbps: enc["encoder"]["bitrate_kbps"].as_f64().unwrap_or(0.0),
        srt_rtt_factor: rtt_factor,
        srt_latency_ms: latency,
        srt_frames: dec["decoder"]["frames_decoded"].as_u64().unwrap_or(0),
        srt_p50: dec["latency"]["p50_ms"].as_f64().unwrap_or(0.0),
        srt_max: dec["latency"]["max_ms"].as_f64().unwrap_or(0.0),
        srt_dropped: srt_out["srt"]["packets_dropped"].as_i64().unwrap_or(0),
        srt_ts_missing: dec["input"]["ts_continuity_errors"].as_i64().unwrap_or(0),
        srt_frames_missing: dec["decoder"]["frames_missing"].as_u64().unwrap_or(0),
        rtmp_frames: steady.len(),
        rtmp_p50,
        rtmp_max,
        rtmp_frames_missing: missing,
        rtmp_max_gap_ms: max_gap,
        rtmp_lag_growth_ms: growth,
        link_packets: f.offered,
        link_dropped: f.dropped_random + f.dropped_burst + f.dropped_queue,
        rtmp_link_packets: f.offered,
        rtmp_link_dropped: f.dropped_random + f.dropped_burst + f.dropped_queue,
        rtmp_series: frames.iter().map(|f| (f.0 - started, f.2)).collect(),
    })
}

/// Benchmark 1: latency per profile at 2 Mbit/s.
pub async fn latency(profiles: &Path, out: &Path, quick: bool, rtt_factors: &[f64]) -> anyhow::Result<()> {
    let (list, seconds): (&[&str], u64) = if quick { (&["metro-17ms"], 20) } else { (&PROFILES, 40) };
    let factors: &[f64] = if quick { &rtt_factors[..1.min(rtt_factors.len())] } else { rtt_factors };
    anyhow::ensure!(
        !factors.is_empty() && factors.iter().all(|f| (1.0..=20.0).contains(f)),
        "--rtt-factors: {rtt_factors:?}: give one or more factors from 1 to 20"
    );
    let mut pairs = Vec::new();
    for profile in list {
        for &factor in factors {
            eprintln!("latency: {profile}, 2 Mbit/s, {seconds} s, SRT at {factor} x RTT and RTMP side by side ...");
            pairs.push(
                run_pair(profiles, out, profile, 2000, seconds, Sides::Both, factor)
                    .await
                    .with_context(|| format!("{profile}, {factor} x RTT"))?,
            );
        }
    }
    let mut csv = String::from(
        "profile,rtt_ms,srt_rtt_factor,srt_latency_setting_ms,srt_p50_ms,srt_max_ms,srt_frames,srt_frames_missing,srt_ts_gaps,rtmp_p50_ms,rtmp_max_ms,rtmp_frames,rtmp_frames_missing,ratio\n",
    );
    println!("| profile | RTT | SRT latency setting | SRT p50 / max | RTMP p50 / max (buffer needed) | RTMP / SRT (max) | SRT lost for good: frames (TS gaps) | RTMP frames lost | link A to B: packets lost / sent |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &pairs {
        let ratio = if r.srt_max > 0.0 { r.rtmp_max / r.srt_max } else { 0.0 };
        let _ = writeln!(
            csv,
            "{},{},{},{},{:.1},{:.1},{},{},{},{:.1},{:.1},{},{},{:.2}",
            r.profile,
            r.rtt_ms,
            r.srt_rtt_factor,
            r.srt_latency_ms,
            r.srt_p50,
            r.srt_max,
            r.srt_frames,
            r.srt_frames_missing,
            r.srt_ts_missing,
            r.rtmp_p50,
            r.rtmp_max,
            r.rtmp_frames,
            r.rtmp_frames_missing,
            ratio
        );
        println!(
            "| {} | {} ms | {} x = {} ms | {:.0} / {:.0} ms | {:.0} / {:.0} ms | {:.2} x | {} ({}) | {} | {} / {} |",
            r.profile,
            r.rtt_ms,
            r.srt_rtt_factor,
            r.srt_latency_ms,
            r.srt_p50,
            r.srt_max,
            r.rtmp_p50,
            r.rtmp_max,
            ratio,
            r.srt_frames_missing,
            r.srt_ts_missing,
            r.rtmp_frames_missing,
            r.link_dropped,
            r.link_packets
        );
    }
    std::fs::write(out.join("latency-srt-rtmp.csv"), csv)?;
    // Per frame, from the runs at the first factor.
    let series: Vec<Series> = pairs
        .iter()
        .filter(|r| r.srt_rtt_factor == factors[0])
        .map(|r| Series { label: format!("RTMP, {}", r.profile), points: r.rtmp_series.clone() })
        .chain(pairs.iter().filter(|r| r.srt_rtt_factor == factors[0]).map(|r| Series {
            label: format!("SRT p50, {}", r.profile),
            points: vec![(0.0, r.srt_p50), (r.rtmp_series.last().map(|p| p.0).unwrap_or(1.0), r.srt_p50)],
        }))
        .collect();
    plot::lines(
        &out.join("latency-srt-rtmp.png"),
        "Glass-to-glass latency per frame, 2 Mbit/s: RTMP (no player buffer) against SRT",
        "seconds",
        "ms",
        &series,
    )?;
    // Against RTT: SRT's worst frame at each factor, and the buffer RTMP needed (every run).
    let mut by_rtt: Vec<Series> = factors
        .iter()
        .map(|f| Series {
            label: format!("SRT max, latency {f} x RTT"),
            points: pairs.iter().filter(|r| r.srt_rtt_factor == *f).map(|r| (r.rtt_ms, r.srt_max)).collect(),
        })
        .collect();
    by_rtt.push(Series {
        label: "RTMP max (buffer needed), mean of its runs".into(),
        points: list
            .iter()
            .filter_map(|p| {
                let runs: Vec<&Pair> = pairs.iter().filter(|r| r.profile == *p).collect();
                let rtt = runs.first()?.rtt_ms;
                Some((rtt, runs.iter().map(|r| r.rtmp_max).sum::<f64>() / runs.len() as f64))
            })
            .collect(),
    });
    plot::lines(
        &out.join("latency-vs-rtt.png"),
        "Worst-frame latency against RTT, 2 Mbit/s: SRT per latency factor, RTMP",
        "RTT, ms",
        "ms",
        &by_rtt,
    )?;
    println!("\nCSV: {0}/latency-srt-rtmp.csv; plots: {0}/latency-srt-rtmp.png, {0}/latency-vs-rtt.png", out.display());
    if quick {
        for r in &pairs {
            anyhow::ensure!(r.srt_frames > 300 && r.rtmp_frames > 300, "{}: too few frames: {r:?}", r.profile);
            // Over 17 ms RTT both must carry the picture at least one RTT late.
            anyhow::ensure!(
                r.srt_p50 > r.rtt_ms / 2.0 && r.rtmp_p50 > r.rtt_ms / 2.0,
                "{}: latency below the link's",
                r.profile
            );
            anyhow::ensure!(r.srt_ok(), "{}: SRT lost data on a link it should carry: {r:?}", r.profile);
        }
        eprintln!("quick check passed: SRT and RTMP both played through the link, latencies measured");
    }
    Ok(())
}

/// Benchmark 2: the highest bitrate each protocol sustains per profile.
pub async fn bitrate(profiles: &Path, out: &Path, quick: bool) -> anyhow::Result<()> {
    let (list, rates, seconds): (&[&str], &[u32], u64) =
        if quick { (&["sydney-360ms"], &[6000], 20) } else { (&PROFILES, &BITRATES, 30) };
    let mut pairs = Vec::new();
    for profile in list {
        for &rate in rates {
            eprintln!("bitrate: {profile}, {} Mbit/s, {seconds} s ...", rate / 1000);
            let what = |side: &str| format!("{profile} {rate} {side}");
            let srt = run_pair(profiles, out, profile, rate, seconds, Sides::Srt, BITRATE_RTT_FACTOR)
                .await
                .with_context(|| what("SRT"))?;
            let rtmp = run_pair(profiles, out, profile, rate, seconds, Sides::Rtmp, BITRATE_RTT_FACTOR)
                .await
                .with_context(|| what("RTMP"))?;
            pairs.push(Pair {
                rtmp_frames: rtmp.rtmp_frames,
                rtmp_p50: rtmp.rtmp_p50,
                rtmp_max: rtmp.rtmp_max,
                rtmp_frames_missing: rtmp.rtmp_frames_missing,
                rtmp_max_gap_ms: rtmp.rtmp_max_gap_ms,
                rtmp_lag_growth_ms: rtmp.rtmp_lag_growth_ms,
                rtmp_link_packets: rtmp.link_packets,
                rtmp_link_dropped: rtmp.link_dropped,
                rtmp_series: rtmp.rtmp_series,
                ..srt
            });
        }
    }
    let mut csv = String::from(
        "profile,bitrate_kbps,encoder_kbps,srt_dropped,srt_ts_missing,srt_ok,rtmp_frames_missing,rtmp_max_gap_ms,rtmp_lag_growth_ms,rtmp_ok\n",
    );
    for r in &pairs {
        let _ = writeln!(
            csv,
            "{},{},{:.0},{},{},{},{},{:.0},{:.0},{}",
            r.profile,
            r.bitrate_kbps,
            r.encoder_kbps,
            r.srt_dropped,
            r.srt_ts_missing,
            r.srt_ok(),
            r.rtmp_frames_missing,
            r.rtmp_max_gap_ms,
            r.rtmp_lag_growth_ms,
            r.rtmp_ok()
        );
    }
    std::fs::write(out.join("bitrate-srt-rtmp.csv"), csv)?;
    println!("| profile | bitrate (encoder made) | SRT: dropped / TS missing | RTMP: frames missing / longest gap / lag growth | link lost / sent: SRT run; RTMP run | SRT | RTMP |");
    println!("|---|---|---|---|---|---|---|");
    for r in &pairs {
        let yes = |b: bool| if b { "yes" } else { "**no**" };
        println!(
            "| {} | {} Mbit/s ({:.1}) | {} / {} | {} / {:.0} ms / {:.0} ms | {} / {}; {} / {} | {} | {} |",
            r.profile,
            r.bitrate_kbps / 1000,
            r.encoder_kbps / 1000.0,
            r.srt_dropped,
            r.srt_ts_missing,
            r.rtmp_frames_missing,
            r.rtmp_max_gap_ms,
            r.rtmp_lag_growth_ms,
            r.link_dropped,
            r.link_packets,
            r.rtmp_link_dropped,
            r.rtmp_link_packets,
            yes(r.srt_ok()),
            yes(r.rtmp_ok())
        );
    }
    println!("\n| profile | highest sustained, SRT | highest sustained, RTMP |\n|---|---|---|");
    let mut best_srt = Vec::new();
    let mut best_rtmp = Vec::new();
    for (i, profile) in list.iter().enumerate() {
        let mine: Vec<&Pair> = pairs.iter().filter(|r| r.profile == *profile).collect();
        let best = |ok: fn(&Pair) -> bool| mine.iter().filter(|r| ok(r)).map(|r| r.bitrate_kbps).max().unwrap_or(0);
        let (s, r) = (best(Pair::srt_ok), best(Pair::rtmp_ok));
        println!("| {profile} | {} | {} |", mbit(s), mbit(r));
        best_srt.push((i as f64, f64::from(s) / 1000.0));
        best_rtmp.push((i as f64, f64::from(r) / 1000.0));
    }
    plot::lines(
        &out.join("bitrate-srt-rtmp.png"),
        &format!("Highest sustained bitrate per profile ({}), Mbit/s", list.join(", ")),
        "profile (in the order listed)",
        "Mbit/s",
        &[Series { label: "SRT".into(), points: best_srt }, Series { label: "RTMP".into(), points: best_rtmp }],
    )?;
    println!("\nCSV: {0}/bitrate-srt-rtmp.csv; plot: {0}/bitrate-srt-rtmp.png", out.display());
    if quick {
        let r = pairs.first().context("no run")?;
        anyhow::ensure!(r.srt_frames > 300, "SRT carried too few frames over {}: {r:?}", r.profile);
        anyhow::ensure!(r.rtmp_frames > 0, "RTMP never played over {}: {r:?}", r.profile);
        eprintln!("quick check passed: both protocols ran over {} and were judged", r.profile);
    }
    Ok(())
}

fn mbit(kbps: u32) -> String {
    if kbps == 0 {
        "none of the steps".into()
    } else {
        format!("{} Mbit/s", kbps / 1000)
    }
}
