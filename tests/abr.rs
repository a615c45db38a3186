//! The adaptive bitrate end to end: our encoder (`--bitrate-mode adaptive`) through the link
//! emulator, whose capacity steps down and back up (a capacity trace), to our decoder. The
//! bitrate the encoder chose (its `--stats json`) must follow the step down under the new
//! capacity and come back up when the link has room again; with a fixed bitrate the same link
//! loses frames. What is measured over time is the benchmark's (`telebridge-bench abr`).

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::time::Duration;

use support::*;

struct Run {
    /// (encoder's t, chosen video kbit/s, why)
    chosen: Vec<(f64, f64, String)>,
    frames_missing: u64,
}

/// 5 Mbit/s of video at most, through a link of 8 Mbit/s for 10 s, 1.5 Mbit/s for 12 s, then 8.
fn through_a_step(mode: &str, name: &str) -> Run {
    let dir = scratch(name);
    let port = free_udp_port();
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener&latency=500"), &["--duration", "46s"]);
    wait_udp_bound(port, "the decoder");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let link = linkemu::LinkParams {
        one_way_delay: Duration::from_millis(30),
        queue: Duration::from_millis(250),
        ..Default::default()
    };
    let trace = linkemu::CapacityTrace::parse("steps:8000@0,1500@10,8000@22").unwrap();
    let relay = runtime
        .block_on(linkemu::relay::start(
            "127.0.0.1:0".parse().unwrap(),
            format!("127.0.0.1:{port}").parse().unwrap(),
            linkemu::Impairment::new(link.clone(), Vec::new(), 1).with_trace(trace),
            linkemu::Impairment::new(link, Vec::new(), 2),
        ))
        .unwrap();
    let mut enc = encoder(
        &dir,
        "encoder",
        &[&format!("srt://127.0.0.1:{}?latency=500", relay.listen.port())],
        &[
            "--size",
            "1280x720",
            "--bitrate-kbps",
            "5000",
            "--bitrate-mode",
            mode,
            "--min-bitrate-kbps",
            "400",
            "--duration",
            "42s",
        ],
    );
    let status = enc.wait_timeout(Duration::from_secs(90)).expect("the encoder stops after --duration");
    assert!(status.success(), "encoder: {}", std::fs::read_to_string(dir.join("encoder.stderr")).unwrap_or_default());
    dec.wait_timeout(Duration::from_secs(20));
    drop(relay);
    let chosen = json_lines(&dir.join("encoder.stdout"))
        .iter()
        .filter_map(|l| {
            let t = l["t"].as_f64()?;
            let r = &l["rate"];
            let kbps = r["video_kbps"].as_f64().unwrap_or(5000.0);
            Some((t, kbps, r["reason"].as_str().unwrap_or("").to_string()))
        })
        .collect();
    let s = summary(&dir.join("decoder.stdout"));
    Run { chosen, frames_missing: s["decoder"]["frames_missing"].as_u64().unwrap_or(0) }
}

#[test]
fn the_bitrate_follows_a_capacity_step_down_and_back_up() {
    let _serial = serial();
    let run = through_a_step("adaptive", "abr-adaptive");
    for (t, k, why) in &run.chosen {
        eprintln!("{t:5.1} s  {k:5.0} kbit/s  {why}");
    }
    let during = |from: f64, to: f64| run.chosen.iter().filter(move |(t, _, _)| (from..to).contains(t));
    // The first connection starts at half the maximum's stream ((5000 + 128) x 1.05 / 2: 2436
    // kbit/s of video; the first stats line, a second in, may show a few rises over it), and
    // climbs to the maximum while the link has room.
    let first = run.chosen.iter().find(|(_, k, why)| *k < 5000.0 || why.starts_with("link"));
    assert!(first.is_some_and(|(_, k, _)| (2400.0..3000.0).contains(k)), "started at {first:?}");
    assert!(during(8.0, 9.5).all(|(_, k, _)| *k == 5000.0), "not at the maximum before the step");
    // Under the 1.5 Mbit/s link (video plus sound and TS under 1500) within 6 s of the step.
    let under = during(10.0, 22.0).find(|(_, k, _)| (k + 128.0) * 1.05 <= 1500.0);
    assert!(under.is_some(), "never under the 1.5 Mbit/s link while it lasted");
    assert!(under.unwrap().0 < 16.0, "under the link only at {} s", under.unwrap().0);
    // And it says why in words.
    assert!(during(10.0, 22.0).any(|(_, _, why)| why.starts_with("link carries ")), "no reason in words");
    // Back up towards the maximum once the link has 8 Mbit/s again.
    let back = during(30.0, 43.0).map(|(_, k, _)| *k).fold(0.0, f64::max);
    assert!(back >= 3000.0, "came back only to {back} kbit/s");
}

#[test]
fn a_fixed_bitrate_over_the_same_step_loses_frames() {
    let _serial = serial();
    let run = through_a_step("fixed", "abr-fixed");
    assert!(run.chosen.iter().all(|(_, k, _)| *k == 5000.0));
    assert!(run.frames_missing > 0, "5 Mbit/s through 1.5 Mbit/s lost nothing: the trace did not apply");
}

/// The box shows what it chose: the status (the panel's source) and /metrics carry the adaptive
/// bitrate's choice and its reason while it is live.
#[test]
fn the_status_and_the_metrics_say_what_bitrate_was_chosen_and_why() {
    let _serial = serial();
    let dir = scratch("abr-status");
    let (slt_port, http_port) = (free_udp_port(), free_tcp_port());
    let _slt = slt_to_file(&format!("srt://:{slt_port}?mode=listener"), &dir.join("received.ts"), &dir, "slt");
    let config = dir.join("telebridge.toml");
    std::fs::write(
        &config,
        format!(
            "[video]\nbitrate_kbps = 3000\nbitrate_mode = \"adaptive\"\nmin_bitrate_kbps = 400\n\n\
             [[outputs]]\nurl = \"srt://127.0.0.1:{slt_port}?latency=200\"\n"
        ),
    )
    .unwrap();
    let config = config.to_string_lossy().to_string();
    let _box = run_sim(&dir, "box", http_port, &["--config", &config, "--start-live"], &[]);
    let rate = |s: &serde_json::Value| s["media"]["rate"].clone();
    let seen = wait_for(Duration::from_secs(20), || rate(&get_json(http_port, "/api/status"))["reason"].is_string());
    let status = get_json(http_port, "/api/status");
    assert!(seen.is_some(), "no rate in the status: {status}");
    let r = rate(&status);
    assert_eq!(r["max_video_kbps"], 3000, "{r}");
    assert_eq!(r["min_video_kbps"], 400, "{r}");
    assert!(r["video_kbps"].as_u64().is_some_and(|v| (400..=3000).contains(&v)), "{r}");
    let (code, metrics) = http("GET", http_port, "/metrics", None);
    assert_eq!(code, 200);
    assert!(metrics.contains("telebridge_rate_video_kbps "), "{metrics}");
    assert!(metrics.contains("telebridge_rate_max_video_kbps 3000"), "{metrics}");
}
