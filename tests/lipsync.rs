//! Lip sync holds through what happens to a live box. The daemon (`telebridge run --sim`, its
//! test source flashing and beeping together once a second) sends to `telebridge decode`, whose
//! meter reads the offset of each event. After a reconnect (the receiver restarted, the box's
//! SRT output calls again), a new picture size (the configuration file changed and reloaded)
//! and the HDMI cable pulled and put back, the first event measured after the picture returns
//! is within EBU R37 (-60/+40 ms) and comes within 2 s.

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::path::Path;
use std::time::Duration;

use support::*;

/// How soon after the picture's return the offset must be measured within tolerance.
const WITHIN: Duration = Duration::from_secs(2);

fn config(path: &Path, port: u16, (w, h): (u32, u32)) {
    std::fs::write(
        path,
        format!(
            "start_live = true\n[video]\nwidth = {w}\nheight = {h}\nbitrate_kbps = 1500\nx264_preset = \"ultrafast\"\n\
             [[outputs]]\nurl = \"srt://127.0.0.1:{port}?latency=120\"\nname = \"decoder\"\n"
        ),
    )
    .unwrap();
}

/// Waits for the decoder's first lip-sync event after the picture came back following `since`
/// (ms since the Unix epoch, when the disturbance ended); returns (picture back, event time,
/// offset).
fn back_in_sync(stats: &Path, since: u64, what: &str) -> (u64, u64, f64) {
    let mut found = None;
    let ok = wait_for(Duration::from_secs(15), || {
        let lines = json_lines(stats);
        // The picture is back when the screen shows video again: at the latest slate-to-video
        // change after `since`, or at `since` if the screen never showed the slate.
        let Some(last) = lines.last() else { return false };
        let back = last["display"]["video_since_unix_ms"].as_u64().unwrap_or(0).max(since);
        let event = lines
            .iter()
            .filter_map(|l| l["av_events"].as_array())
            .flatten()
            .find(|e| e["at_unix_ms"].as_u64() > Some(back));
        if let Some(e) = event {
            found = Some((back, e["at_unix_ms"].as_u64().unwrap(), e["offset_ms"].as_f64().unwrap()));
        }
        found.is_some()
    });
    assert!(ok.is_some(), "{what}: no lip-sync event after the picture came back; see {}", stats.display());
    let (back, at, offset) = found.unwrap();
    eprintln!("{what}: offset {offset} ms, {} ms after the picture came back", at - back);
    assert!((-60.0..=40.0).contains(&offset), "{what}: offset {offset} ms is outside -60/+40 ms");
    assert!(at - back <= WITHIN.as_millis() as u64, "{what}: measured {} ms after the picture came back", at - back);
    (back, at, offset)
}

#[test]
fn after_a_reconnect_a_new_size_and_a_lost_signal_the_offset_is_back_within_tolerance_in_two_seconds() {
    let _guard = serial();
    let dir = scratch("lipsync-recovery");
    let (srt_port, http_port) = (free_udp_port(), free_tcp_port());
    let input = format!("srt://:{srt_port}?mode=listener&latency=120");
    let first = decoder(&dir, "decoder-1", &input, &[]);
    let file = dir.join("telebridge.toml");
    config(&file, srt_port, (640, 360));
    let daemon = run_sim(&dir, "box", http_port, &["--config", file.to_str().unwrap()], &[]);
    back_in_sync(&dir.join("decoder-1.stdout"), unix_ms(), "at the start");

    // A reconnect: the receiver goes away and a new one listens; the box calls again.
    drop(first);
    let since = unix_ms();
    let _second = decoder(&dir, "decoder-2", &input, &[]);
    let stats = dir.join("decoder-2.stdout");
    back_in_sync(&stats, since, "after a reconnect");

    // A new picture size: the encoder starts again with new times.
    config(&file, srt_port, (960, 540));
    daemon.signal("HUP");
    let since = unix_ms();
    let resized =
        wait_for(Duration::from_secs(10), || json_lines(&stats).last().is_some_and(|l| l["decoder"]["width"] == 960));
    assert!(resized.is_some(), "the decoder never saw 960x540; see {}", stats.display());
    back_in_sync(&stats, since, "after a new size");

    // The HDMI cable out for two seconds and back.
    let (code, body) = http("POST", http_port, "/api/sim/signal", Some(r#"{"present": false}"#));
    assert_eq!(code, 200, "{body}");
    std::thread::sleep(Duration::from_secs(2)); // the two seconds without a cable: the scenario
    let (code, body) = http("POST", http_port, "/api/sim/signal", Some(r#"{"present": true}"#));
    assert_eq!(code, 200, "{body}");
    back_in_sync(&stats, unix_ms(), "after the signal came back");

    // The box's own figures: the decoder's /metrics-worthy summary says the same.
    let last = json_lines(&stats).last().cloned().unwrap();
    assert_eq!(last["av_offset"]["within_tolerance"], true, "{last}");
}
