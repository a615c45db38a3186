//! Outputs added and removed while the encoder runs (as the appliance and the web panel will do)
//! leave the other outputs untouched: the first receiver's video has no gap.

mod support;

use std::process::Command;
use std::time::Duration;

use support::*;
use telebridge_appliance::{run_encoder, EncoderCommand, RunOptions};
use telebridge_config::{Config, OutputConfig, OutputSpec, SrtUrl};

fn max_video_gap_s(file: &std::path::Path) -> f64 {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0"])
        .arg(file)
        .output()
        .expect("ffprobe packets");
    let mut pts: Vec<f64> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim_end_matches(',').parse().ok()).collect();
    pts.sort_by(f64::total_cmp);
    pts.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max)
}

#[test]
fn adding_and_removing_an_output_leaves_the_others_alone() {
    let _serial = serial();
    let dir = scratch("live-outputs");
    let (port_a, port_b) = (free_udp_port(), free_udp_port());
    let (file_a, file_b) = (dir.join("a.ts"), dir.join("b.ts"));
    let mut rx_a = slt_to_file(&format!("srt://:{port_a}?mode=listener"), &file_a, &dir, "slt-a");
    let mut rx_b = slt_to_file(&format!("srt://:{port_b}?mode=listener"), &file_b, &dir, "slt-b");
    wait_udp_bound(port_a, "srt-live-transmit a");
    wait_udp_bound(port_b, "srt-live-transmit b");

    let config = Config {
        outputs: vec![OutputConfig { url: format!("srt://127.0.0.1:{port_a}"), name: Some("a".into()) }],
        ..Default::default()
    };
    let valid = config.validate().expect("valid config");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let summary = runtime.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let spec_b = OutputSpec::Srt(SrtUrl::parse(&format!("srt://127.0.0.1:{port_b}")).expect("url"));
        // The scenario's timeline: output b added at 3 s, removed 4 s later.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            tx.send(EncoderCommand::AddOutput("b".into(), Box::new(spec_b))).await.expect("send add");
            tokio::time::sleep(Duration::from_secs(4)).await;
            tx.send(EncoderCommand::RemoveOutput("b".into())).await.expect("send remove");
        });
        let options = RunOptions { duration: Some(Duration::from_secs(10)), commands: Some(rx), ..Default::default() };
        run_encoder(valid, options, std::future::pending()).await.expect("encoder runs")
    });
    for rx in [&mut rx_a, &mut rx_b] {
        rx.signal("INT");
        rx.wait_timeout(Duration::from_secs(3));
    }
    let names: Vec<&str> = summary.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["a"], "b should be gone at the end");
    let (frames_a, frames_b) = (decodable_frames(&file_a), decodable_frames(&file_b));
    let gap = max_video_gap_s(&file_a);
    eprintln!(
        "a: {frames_a} frames, largest gap {:.0} ms; b (added at 3 s, removed at 7 s): {frames_b} frames",
        gap * 1000.0
    );
    assert!(frames_a >= 280, "a decoded {frames_a} of ~300 frames");
    assert!(gap < 0.1, "a had a {:.0} ms gap while b came and went", gap * 1000.0);
    assert!((90..=150).contains(&frames_b), "b got {frames_b} frames in its 4 s");
}
