//! Glass to viewer three ways, from the same encoder (1280x720, 30 fps, x264) one after the
//! other, each frame's age read from its burnt-in timecode against the same clock:
//!
//! - the live monitor: WebRTC asked for by WHEP, a GStreamer viewer decoding each frame as it
//!   arrives (no jitter buffer, no display: the browser's figure is `tests/browser/monitor.mjs`'s);
//! - the still preview: the JPEG the panel fetches, its age when fetched (the page fetches one
//!   every 2 s, so what is on screen is older by up to that);
//! - SRT at 200 ms into `telebridge decode`, its own meter (the decoder's display path).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use gst::prelude::*;
use telebridge_media::decode_pipeline::sample_timecodes;
use telebridge_media::timecode;

/// p50 and p95 of `v` (sorted here).
fn quantiles(v: &mut [f64]) -> Option<(f64, f64)> {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (!v.is_empty()).then(|| (at(0.5), at(0.95)))
}

fn row(path: &str, mut ages: Vec<f64>, note: &str) -> Option<f64> {
    let n = ages.len();
    match quantiles(&mut ages) {
        Some((p50, p95)) => {
            println!("| {path} | {n} | {p50:.0} ms | {p95:.0} ms | {note} |");
            Some(p50)
        }
        None => {
            println!("| {path} | 0 | - | - | {note} |");
            None
        }
    }
}

/// The live monitor: a viewer decoding for `secs`, after 2 s to settle.
fn webrtc(port: u16, cookie: &str, secs: u64) -> anyhow::Result<Vec<f64>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let viewer = crate::monitor::viewer(port, cookie, Some(tx))?;
    std::thread::sleep(Duration::from_secs(2));
    while rx.try_recv().is_ok() {}
    std::thread::sleep(Duration::from_secs(secs));
    let ages = rx.try_iter().collect();
    viewer.end(port, cookie);
    Ok(ages)
}

/// The still preview: fetched every 100 ms for `secs`; each new picture's age when it came.
fn jpeg(port: u16, cookie: &str, secs: u64) -> anyhow::Result<Vec<f64>> {
    let pipeline = gst::parse::launch(
        "appsrc name=src caps=image/jpeg,framerate=0/1 ! jpegdec ! videoconvert ! video/x-raw,format=I420 \
         ! appsink name=out sync=false",
    )?
    .downcast::<gst::Pipeline>()
    .map_err(|_| anyhow::anyhow!("not a pipeline"))?;
    let src = pipeline.by_name("src").and_then(|s| s.downcast::<gst_app::AppSrc>().ok()).context("no appsrc")?;
    let out = pipeline.by_name("out").and_then(|s| s.downcast::<gst_app::AppSink>().ok()).context("no appsink")?;
    pipeline.set_state(gst::State::Playing)?;
    let (mut ages, mut last_frame) = (Vec::new(), None);
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        let reply = crate::panel::http(port, "GET", "/api/preview.jpg", cookie, "");
        let fetched = timecode::now_us();
        if reply.status == 200 && src.push_buffer(gst::Buffer::from_slice(reply.body)).is_ok() {
            if let Some(tc) = out.try_pull_sample(gst::ClockTime::from_seconds(1)).and_then(|s| sample_timecodes(&s)) {
                if last_frame != Some(tc.0.frame) {
                    last_frame = Some(tc.0.frame);
                    ages.push(tc.0.age_us(fetched) as f64 / 1000.0);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = pipeline.set_state(gst::State::Null);
    Ok(ages)
}

/// SRT at 200 ms into `telebridge decode` for `secs`: its meter's p50 and p95 and frame count.
fn srt(bin: &Path, dir: &Path, srt_port: u16, secs: u64) -> anyhow::Result<Option<(f64, f64, u64)>> {
    let out = dir.join("decode.json");
    let mut child = crate::spawn_to(
        Command::new(bin).args([
            "decode",
            "--input",
            &format!("srt://127.0.0.1:{srt_port}?mode=caller&latency=200"),
            "--sink",
            "fake",
            "--stats",
            "json",
            "--duration",
            &format!("{secs}s"),
        ]),
        &out,
    )?;
    let until = Instant::now() + Duration::from_secs(secs + 20);
    while child.try_wait()?.is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            anyhow::bail!("telebridge decode did not end");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let summary = crate::json_lines(&out).into_iter().find_map(|v| v.get("summary").cloned()).unwrap_or_default();
    let l = &summary["latency"];
    Ok(l["p50_ms"].as_f64().zip(l["p95_ms"].as_f64()).map(|(a, b)| (a, b, l["samples"].as_u64().unwrap_or(0))))
}

/// The three paths' rows, printed under the viewers' table.
pub fn run(bin: &Path, dir: &Path, port: u16, cookie: &str, srt_port: u16, quick: bool) -> anyhow::Result<()> {
    let secs = if quick { 5 } else { 15 };
    println!("\nGlass to viewer, {secs} s each:\n");
    println!("| path | frames read | p50 | p95 | |\n|---|---|---|---|---|");
    let live = row(
        "live monitor: WebRTC by WHEP, decoded as it arrives",
        webrtc(port, cookie, secs)?,
        "a browser adds its jitter buffer and display",
    );
    let still =
        row("still preview: the JPEG when fetched", jpeg(port, cookie, secs)?, "the page fetches one every 2 s");
    let srt = srt(bin, dir, srt_port, secs + 3)?;
    match srt {
        Some((p50, p95, n)) => {
            println!("| SRT at 200 ms: `telebridge decode`, its display path | {n} | {p50:.0} ms | {p95:.0} ms | |")
        }
        None => println!("| SRT at 200 ms: `telebridge decode`, its display path | 0 | - | - | |"),
    }
    if quick {
        anyhow::ensure!(
            live.is_some() && still.is_some() && srt.is_some(),
            "a path was not measured: live {live:?}, still {still:?}, SRT {srt:?}"
        );
        eprintln!("quick check passed: glass to viewer measured three ways");
    }
    Ok(())
}
