//! A fleet in an existing engine (issue 39): two boxes (`telebridge run --sim`, an encoder
//! calling a decoder over SRT) scraped by a real Prometheus (Debian's `prometheus`) with the
//! read-only metrics token; its HTTP API then answers, for each box by name, the link's round
//! trip, the bitrate and the state, as the dashboard in docs/grafana asks them.

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::*;

const TOKEN: &str = "fleet-token-0123456789";

/// A box's configuration file: its name and the metrics token Prometheus sends.
fn config(dir: &Path, name: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("name = \"{name}\"\n[web]\nmetrics_token = \"{TOKEN}\"\n")).unwrap();
    path.display().to_string()
}

/// Prometheus' answer to an instant query: (labels, value) of each series.
fn query(port: u16, promql: &str) -> Vec<(serde_json::Value, f64)> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let v = get_json(port, &format!("/api/v1/query?query={q}"));
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|s| (s["metric"].clone(), s["value"][1].as_str().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN)))
                .collect()
        })
        .unwrap_or_default()
}

/// The value of `promql` for the box named `name` (joined on `telebridge_info`).
fn for_box(port: u16, promql: &str, name: &str) -> Option<f64> {
    query(port, &format!("({promql}) * on(instance) group_left(name) telebridge_info"))
        .into_iter()
        .find(|(labels, _)| labels["name"] == name)
        .map(|(_, v)| v)
}

#[test]
fn prometheus_scrapes_two_boxes_and_answers_each_ones_round_trip_bitrate_and_state_by_name() {
    let _serial = serial();
    let dir = scratch("fleet");
    let (srt, http_a, http_b, prom) = (free_udp_port(), free_tcp_port(), free_tcp_port(), free_tcp_port());
    let cfg_b = config(&dir, "studio-b");
    let input = format!("srt://:{srt}?mode=listener");
    let _b = run_sim(
        &dir,
        "studio-b",
        http_b,
        &["--config", &cfg_b, "--role", "decoder", "--input", &input, "--start-live"],
        &[],
    );
    wait_udp_bound(srt, "studio-b's input");
    let cfg_a = config(&dir, "studio-a");
    let output = format!("srt://127.0.0.1:{srt}");
    let _a = run_sim(&dir, "studio-a", http_a, &["--config", &cfg_a, "--output", &output, "--start-live"], &[]);

    let prom_dir = dir.join("prometheus");
    std::fs::create_dir_all(&prom_dir).unwrap();
    let prom_config = prom_dir.join("prometheus.yml");
    std::fs::write(
        &prom_config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: telebridge\n    \
             authorization:\n      credentials: {TOKEN}\n    static_configs:\n      - targets: ['127.0.0.1:{http_a}', \
             '127.0.0.1:{http_b}']\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", prom_config.display()))
        .arg(format!("--storage.tsdb.path={}", prom_dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom}"));
    let _prometheus = Proc::spawn(cmd, &dir, "prometheus");
    wait_tcp_listening(prom, None, "prometheus");

    // Both boxes scraped and told apart by name.
    let both = wait_for(Duration::from_secs(30), || {
        let names: Vec<String> =
            query(prom, "telebridge_info").iter().filter_map(|(l, _)| l["name"].as_str().map(str::to_string)).collect();
        names.contains(&"studio-a".to_string()) && names.contains(&"studio-b".to_string())
    });
    let log = || std::fs::read_to_string(dir.join("prometheus.stderr")).unwrap_or_default();
    assert!(both.is_some(), "Prometheus did not scrape both boxes: {:?}\n{}", query(prom, "up"), log());
    let targets_up = query(prom, "up");
    assert!(targets_up.iter().all(|(_, v)| *v == 1.0), "a target is down: {targets_up:?}");

    // Live, with the link's round trip on both ends and the sender's bitrate.
    let live = wait_for(Duration::from_secs(30), || {
        for_box(prom, "telebridge_state{state=\"live\"}", "studio-a") == Some(1.0)
            && for_box(prom, "telebridge_state{state=\"live\"}", "studio-b") == Some(1.0)
            && for_box(prom, "telebridge_encoder_bitrate_kbps", "studio-a").is_some_and(|k| k > 100.0)
            && for_box(prom, "max by (instance) (telebridge_srt_rtt_ms)", "studio-a").is_some()
            && for_box(prom, "max by (instance) (telebridge_srt_rtt_ms)", "studio-b").is_some()
    });
    assert!(
        live.is_some(),
        "state {:?}, bitrate {:?}, rtt {:?}",
        query(prom, "telebridge_state == 1"),
        query(prom, "telebridge_encoder_bitrate_kbps"),
        query(prom, "telebridge_srt_rtt_ms"),
    );
    let rtt = for_box(prom, "max by (instance) (telebridge_srt_rtt_ms)", "studio-a").unwrap();
    assert!((0.0..50.0).contains(&rtt), "a loopback round trip of {rtt} ms");
    // The decoder has no encoder series: the dashboard's bitrate panel shows the sender only.
    assert_eq!(for_box(prom, "telebridge_encoder_bitrate_kbps", "studio-b"), None);

    // Every query of the dashboard answers, each series with a box's name.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana/telebridge-fleet.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 6, "{} panels", panels.len());
    for panel in panels {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let answered = wait_for(Duration::from_secs(20), || {
                let r = query(prom, expr);
                !r.is_empty() && r.iter().all(|(l, _)| l["name"].is_string())
            });
            assert!(answered.is_some(), "panel {}: {expr} answered {:?}", panel["title"], query(prom, expr));
        }
    }
}
