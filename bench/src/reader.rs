//! `telebridge-bench rtmp-read URL`: the RTMP player of benchmarks 1 and 2. It plays an RTMP
//! stream as fast as it arrives (no player buffer) and prints, per decoded frame, when it arrived
//! (wall clock), its frame number and its glass-to-glass latency from the burnt-in timecode, so
//! the runner can work out the buffer a player would need to play without stalls.

use std::io::Write as _;
use std::time::{Duration, Instant};

use gst::prelude::*;
use telebridge_media::decode_pipeline::sample_timecodes;
use telebridge_media::timecode;

/// Calls `f` with each decoded frame's burnt-in timecode and the time it came (µs, the
/// timecode's clock): the benches' viewers all read frames so.
pub fn on_frame(sink: &gst_app::AppSink, f: impl Fn(timecode::Timecode, u64) + Send + 'static) {
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let now = timecode::now_us();
                if let Some((tc, _)) = sample_timecodes(&sample) {
                    f(tc, now);
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
}

/// Reads `url` for `seconds`, reconnecting until the stream appears; prints
/// `arrival_unix_s,frame,latency_ms` lines on stdout.
pub fn run(url: &str, seconds: f64) -> anyhow::Result<()> {
    telebridge_media::init()?;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let printer = std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        for line in rx {
            let _ = out.write_all(line.as_bytes());
        }
        let _ = out.flush();
    });
    while Instant::now() < deadline {
        let pipeline = gst::parse::launch(&format!(
            "rtmp2src name=src location={url} ! flvdemux name=d \
             d.video ! queue ! h264parse ! avdec_h264 ! videoconvert ! video/x-raw,format=I420 ! \
             appsink name=sink sync=false \
             d.audio ! queue ! fakesink sync=false async=false"
        ))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| anyhow::anyhow!("not a pipeline"))?;
        let sink = pipeline
            .by_name("sink")
            .and_then(|s| s.downcast::<gst_app::AppSink>().ok())
            .ok_or_else(|| anyhow::anyhow!("no appsink"))?;
        let tx = tx.clone();
        on_frame(&sink, move |tc, now| {
            let _ = tx.send(format!("{:.6},{},{:.1}\n", now as f64 / 1e6, tc.frame, tc.age_us(now) as f64 / 1000.0));
        });
        pipeline.set_state(gst::State::Playing)?;
        let bus = pipeline.bus().ok_or_else(|| anyhow::anyhow!("no bus"))?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let wait = gst::ClockTime::from_mseconds(left.as_millis().min(200) as u64);
            match bus.timed_pop_filtered(wait, &[gst::MessageType::Error, gst::MessageType::Eos]) {
                Some(msg) => {
                    if let gst::MessageView::Error(e) = msg.view() {
                        eprintln!("rtmp-read: {} (retrying)", e.error());
                    }
                    break;
                }
                None => continue,
            }
        }
        let _ = pipeline.set_state(gst::State::Null);
        if Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    drop(tx);
    let _ = printer.join();
    Ok(())
}
