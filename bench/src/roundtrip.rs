//! The telebridge's round trip, glass to glass: two `telebridge bridge` boxes, one SRT
//! connection between them through the link emulator, each sending its test picture with its
//! timecode and returning the other's (the echo strip). Each box reads its own timecode back
//! from the far box's picture: the round trip A -> B -> A on A's clock alone, with both
//! encoders, both decoders, both directions of the link and the wait for the next captured
//! frame on the far side in it. Also each direction's one-way figure and what a box adds to
//! the SRT latency. The latency is the one the boxes choose for the link: a first run of a few
//! seconds lets the calling box measure it (`latency=auto`), and the measured run asks for
//! what the box chose from that reading (`telebridge_srt::latency::choose`, the SRT deployment
//! guide's table, at least the 40 ms floor); the listening box says `auto` and starts at the
//! floor, so SRT takes the caller's figure.
//!
//! ```text
//! A: telebridge bridge (listener) ◄══ linkemu (profile) ══► B: telebridge bridge (caller)
//! ```

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use linkemu::{Impairment, Profiles};

/// A bench-only passphrase (pairing derives a random one).
const KEY: &str = "b3c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1";
/// How long the first run measures the link.
const PROBE_S: u64 = 6;

struct Row {
    size: String,
    profile: String,
    rtt_ms: f64,
    latency_ms: i64,
    reason: String,
    a: serde_json::Value,
    b: serde_json::Value,
    one_way_ms: f64,
    /// The video each box's encoder made, mean over the run, kbit/s (A, B).
    video_kbps: (f64, f64),
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn peer(line: &serde_json::Value) -> serde_json::Value {
    line["sending"]["outputs"]
        .as_array()
        .and_then(|o| o.iter().find(|x| x["name"] == "peer").cloned())
        .unwrap_or_default()
}

/// What to run: x264's preset and, when named, only some sizes and links.
pub struct Choice {
    /// x264's speed preset on both boxes.
    pub x264_preset: String,
    /// Only these sizes (all when empty).
    pub sizes: Vec<String>,
    /// Only these link profiles (all when empty).
    pub links: Vec<String>,
}

async fn one(
    bin: &str,
    profile: &linkemu::LinkProfile,
    size: &str,
    seconds: u64,
    preset: &str,
    out: &Path,
) -> anyhow::Result<Row> {
    let port_a = crate::free_udp_port()?;
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse()?,
        format!("127.0.0.1:{port_a}").parse()?,
        Impairment::new(profile.params(), vec![], 1),
        Impairment::new(profile.params(), vec![], 2),
    )
    .await?;
    let link = |base: String, latency: &str| format!("{base}latency={latency}&passphrase={KEY}&pbkeylen=32");
    let common = |name: &str| {
        let mut c = Command::new(bin);
        c.args(["-q", "bridge", "--sink", "fake", "--size", size, "--fps", "30", "--bitrate-kbps", "4000"]).args([
            "--x264-preset",
            preset,
            "--stats",
            "json",
            "--name",
            name,
        ]);
        c
    };
    let tag = format!("roundtrip-{}-{size}", profile.name);
    let run =
        |phase: &str, latency_b: &str, seconds: u64| -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
            let (file_a, file_b) =
                (out.join(format!("{tag}{phase}-a.jsonl")), out.join(format!("{tag}{phase}-b.jsonl")));
            // Each box's rate steps beside its samples (TELEBRIDGE_RATE_TRACE), to read a cut
            // after the run.
            let steps = |who: &str| out.join(format!("{tag}{phase}-{who}-rate.jsonl"));
            let mut a = crate::spawn_to(
                common("a")
                    .env("TELEBRIDGE_RATE_TRACE", steps("a"))
                    .args(["--link", &link(format!("srt://:{port_a}?mode=listener&"), "auto")])
                    .args(["--duration", &format!("{}s", seconds + 3)]),
                &file_a,
            )?;
            std::thread::sleep(Duration::from_millis(700));
            let mut b = crate::spawn_to(
                common("b")
                    .env("TELEBRIDGE_RATE_TRACE", steps("b"))
                    .args(["--link", &link(format!("srt://127.0.0.1:{}?mode=caller&", relay.listen.port()), latency_b)])
                    .args(["--duration", &format!("{seconds}s")]),
                &file_b,
            )?;
            let (ra, rb) = (a.wait(), b.wait());
            anyhow::ensure!(ra?.success() && rb?.success(), "a bridge failed; see {}", file_a.display());
            Ok((file_a, file_b))
        };
    // The first run: the calling box measures the link.
    let (_, probe_b) = tokio::task::block_in_place(|| run("-probe", "auto", PROBE_S))?;
    let reading = crate::json_lines(&probe_b).iter().rev().map(peer).find_map(|p| {
        serde_json::from_value::<Option<telebridge_srt::latency::LinkReading>>(p["link"].clone()).ok().flatten()
    });
    let auto =
        telebridge_config::Latency::Auto { floor: telebridge_config::AUTO_FLOOR, start: telebridge_config::AUTO_START };
    let choice = telebridge_srt::latency::choose(auto, reading, false);
    eprintln!("  the calling box chooses {} ms: {}", choice.latency_ms, choice.reason);
    let (file_a, file_b) = tokio::task::block_in_place(|| run("", &choice.latency_ms.to_string(), seconds))?;
    let summary = |p: &Path| -> anyhow::Result<serde_json::Value> {
        let lines = crate::json_lines(p);
        lines
            .iter()
            .rev()
            .find_map(|l| l.get("summary").cloned())
            .with_context(|| format!("no summary in {}", p.display()))
    };
    let (sa, sb) = (summary(&file_a)?, summary(&file_b)?);
    // The connection's figures from A's last second live (at exit it is closed).
    let pa = crate::json_lines(&file_a)
        .iter()
        .rev()
        .map(peer)
        .find(|p| p["srt"]["negotiated_latency_ms"].as_i64().unwrap_or(0) > 0)
        .unwrap_or_default();
    let video = |p: &Path| {
        let made: Vec<f64> =
            crate::json_lines(p).iter().filter_map(|l| l["sending"]["encoder"]["bitrate_kbps"].as_f64()).collect();
        made.iter().sum::<f64>() / made.len().max(1) as f64
    };
    Ok(Row {
        video_kbps: (video(&file_a), video(&file_b)),
        size: size.into(),
        profile: profile.name.clone(),
        rtt_ms: f(&pa["srt"]["rtt_ms"]),
        latency_ms: pa["srt"]["negotiated_latency_ms"].as_i64().unwrap_or(0),
        reason: choice.reason,
        one_way_ms: (f(&sa["receiving"]["latency"]["p50_ms"]) + f(&sb["receiving"]["latency"]["p50_ms"])) / 2.0,
        a: sa,
        b: sb,
    })
}

/// Runs every size over every profile (quick: 720p over metro-17ms, briefly).
pub async fn run(profiles: &Path, out: &Path, quick: bool, choice: &Choice) -> anyhow::Result<()> {
    let profiles = Profiles::load(profiles)?;
    let bin = crate::telebridge()?;
    let bin = bin.to_str().context("path")?;
    let (sizes, names, seconds): (&[&str], &[&str], u64) = if quick {
        (&["1280x720"], &["metro-17ms"], 8)
    } else {
        (&["1280x720", "1920x1080"], &["metro-17ms", "transatlantic-100ms"], 30)
    };
    for (flag, asked, known) in [("--sizes", &choice.sizes, sizes), ("--links", &choice.links, names)] {
        if let Some(bad) = asked.iter().find(|a| !known.contains(&a.as_str())) {
            anyhow::bail!(
                "{flag}: {bad} is not one this bench runs{}; it runs {}",
                if quick { " quick" } else { "" },
                known.join(", ")
            );
        }
    }
    let named = |list: &[String], x: &str| list.is_empty() || list.iter().any(|n| n == x);
    let mut rows = Vec::new();
    for name in names.iter().filter(|n| named(&choice.links, n)) {
        let profile = profiles.get(name)?.clone();
        for size in sizes.iter().filter(|s| named(&choice.sizes, s)) {
            eprintln!("round trip: {size} over {name}, {seconds} s ...");
            rows.push(one(bin, &profile, size, seconds, &choice.x264_preset, out).await?);
        }
    }
    println!("| size | link | SRT latency (the box's choice) | RTT (SRT) | video sent A / B, mean | round trip A p50 / p95 / max | round trip B p50 | bound | one-way p50 | added per direction | frames lost for good (A, B) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut csv = String::from("size,profile,latency_ms,rtt_ms,video_kbps_a,video_kbps_b,rt_a_p50,rt_a_p95,rt_a_max,rt_b_p50,bound_ms,one_way_p50,added_ms,lost_a,lost_b\n");
    for r in &rows {
        let (ra, rb) = (&r.a["receiving"]["round_trip"], &r.b["receiving"]["round_trip"]);
        // Metro: a conversation's 200 ms (a Makito X pair is quoted at 333 ms); longer links:
        // twice the latency, the RTT and 40 ms of the boxes' own.
        let bound = if r.profile == "metro-17ms" { 200.0 } else { 2.0 * r.latency_ms as f64 + r.rtt_ms + 40.0 };
        let one_way_delay = profiles.get(&r.profile).map(|p| p.rtt_ms / 2.0).unwrap_or(0.0);
        let added = r.one_way_ms - r.latency_ms as f64 - one_way_delay;
        let lost = |s: &serde_json::Value| s["receiving"]["decoder"]["frames_missing"].as_u64().unwrap_or(0);
        println!(
            "| {} | {} | {} ms ({}) | {:.1} ms | {:.0} / {:.0} kbit/s | {:.1} / {:.1} / {:.1} ms | {:.1} ms | {:.0} ms | {:.1} ms | {:.1} ms | {}, {} |",
            r.size, r.profile, r.latency_ms, r.reason, r.rtt_ms, r.video_kbps.0, r.video_kbps.1, f(&ra["p50_ms"]), f(&ra["p95_ms"]), f(&ra["max_ms"]),
            f(&rb["p50_ms"]), bound, r.one_way_ms, added, lost(&r.a), lost(&r.b)
        );
        csv.push_str(&format!(
            "{},{},{},{:.1},{:.0},{:.0},{:.1},{:.1},{:.1},{:.1},{:.0},{:.1},{:.1},{},{}\n",
            r.size,
            r.profile,
            r.latency_ms,
            r.rtt_ms,
            r.video_kbps.0,
            r.video_kbps.1,
            f(&ra["p50_ms"]),
            f(&ra["p95_ms"]),
            f(&ra["max_ms"]),
            f(&rb["p50_ms"]),
            bound,
            r.one_way_ms,
            added,
            lost(&r.a),
            lost(&r.b)
        ));
        if quick {
            anyhow::ensure!(ra["samples"].as_u64().unwrap_or(0) > 30, "A measured no round trip: {ra}");
            anyhow::ensure!(rb["samples"].as_u64().unwrap_or(0) > 30, "B measured no round trip: {rb}");
            anyhow::ensure!(f(&ra["p50_ms"]) > r.rtt_ms, "a round trip shorter than the link's RTT: {ra}");
            // A 42 Mbit/s link carries the 4 Mbit/s at most: the rate climbs from half of it
            // (a latency of 3 x RTT once read the link's own round trip as an overload and held
            // both boxes at the 0.5 Mbit/s floor).
            let least = r.video_kbps.0.min(r.video_kbps.1);
            anyhow::ensure!(least > 1500.0, "a box sent {least:.0} kbit/s of video over a free link");
        }
    }
    std::fs::write(out.join("roundtrip.csv"), csv)?;
    println!("\nCSV: {}/roundtrip.csv; per-second lines: {}/roundtrip-*.jsonl", out.display(), out.display());
    if quick {
        eprintln!("quick check passed: both boxes measured their round trip through the other");
    }
    Ok(())
}
