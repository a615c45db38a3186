//! `telebridge measure`: our encoder into our decoder on this machine, optionally through the
//! link emulator, and a table of configured SRT latency against measured glass-to-glass latency,
//! with the lip sync of the same run beside it.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use linkemu::{Impairment, LinkProfile};
use serde::Serialize;
use telebridge_config::{Config, OutputConfig, SrtUrl};
use telebridge_media::decode_pipeline::AudioOut;
use telebridge_media::display::SinkKind;

use crate::{run_decoder, run_encoder, AppError, DecodeOptions, RunOptions};

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct MeasureRow {
    /// WIDTHxHEIGHT.
    pub size: String,
    /// Video bitrate, kbit/s.
    pub bitrate_kbps: u32,
    /// The link profile, if any.
    pub link: Option<String>,
    /// The link's added round-trip time, ms.
    pub link_rtt_ms: f64,
    /// Configured SRT latency, ms.
    pub srt_latency_ms: u32,
    /// Measured glass-to-glass median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// Worst, ms.
    pub max_ms: f64,
    /// Median minus the SRT latency and the link's one-way delay: what the box itself adds.
    pub added_ms: f64,
    /// Frames measured.
    pub frames: usize,
    /// Lip sync (picture less sound, ms; positive: the sound first), when there was sound.
    pub av_offset: Option<telebridge_media::lipsync::AvOffsetSummary>,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct MeasurePlan {
    /// Sizes to try.
    pub sizes: Vec<(u32, u32)>,
    /// Bitrates to try, kbit/s.
    pub bitrates_kbps: Vec<u32>,
    /// SRT latency, ms.
    pub srt_latency_ms: u32,
    /// Seconds per measurement.
    pub seconds: u64,
    /// Frames per second.
    pub fps: u32,
    /// A link to go through.
    pub link: Option<LinkProfile>,
    /// x264 speed preset.
    pub x264_preset: String,
    /// `aac` or `none`.
    pub audio: String,
}

fn free_port() -> Result<u16, AppError> {
    let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| AppError::Runtime(format!("no free UDP port: {e}")))?;
    s.local_addr().map(|a| a.port()).map_err(|e| AppError::Runtime(e.to_string()))
}

/// Runs every combination and returns the rows.
pub async fn measure(plan: &MeasurePlan) -> Result<Vec<MeasureRow>, AppError> {
    let mut rows = Vec::new();
    for &(w, h) in &plan.sizes {
        for &kbps in &plan.bitrates_kbps {
            rows.push(measure_one(plan, (w, h), kbps).await?);
        }
    }
    Ok(rows)
}

async fn measure_one(plan: &MeasurePlan, (w, h): (u32, u32), kbps: u32) -> Result<MeasureRow, AppError> {
    let decoder_port = free_port()?;
    let latency = plan.srt_latency_ms;
    let decoder_url = SrtUrl::parse(&format!("srt://127.0.0.1:{decoder_port}?mode=listener&latency={latency}"))
        .map_err(|e| AppError::BadInput(e.to_string()))?;
    // Through the link emulator when asked: encoder -> relay -> decoder.
    let (send_port, _relay) = match &plan.link {
        Some(profile) => {
            let target: SocketAddr =
                format!("127.0.0.1:{decoder_port}").parse().map_err(|_| AppError::Runtime("address".into()))?;
            let fwd = Impairment::new(profile.params(), profile.events.clone(), 1);
            let rev = Impairment::new(profile.params(), profile.events.clone(), 2);
            let listen: SocketAddr = "127.0.0.1:0".parse().map_err(|_| AppError::Runtime("address".into()))?;
            let relay = linkemu::relay::start(listen, target, fwd, rev)
                .await
                .map_err(|e| AppError::Runtime(format!("link emulator: {e}")))?;
            (relay.listen.port(), Some(relay))
        }
        None => (decoder_port, None),
    };
    let mut config = Config::default();
    config.video.width = w;
    config.video.height = h;
    config.video.fps = plan.fps;
    config.video.bitrate_kbps = kbps;
    config.video.x264_preset = plan.x264_preset.clone();
    config.audio.codec = plan.audio.clone();
    config.outputs = vec![OutputConfig::new(format!("srt://127.0.0.1:{send_port}?mode=caller&latency={latency}"))];
    let valid = config.validate()?;
    let seconds = Duration::from_secs(plan.seconds);
    let decode = DecodeOptions {
        name: "measure".into(),
        input: decoder_url,
        sink: SinkKind::Fake,
        audio: AudioOut::Discard,
        duration: Some(seconds + Duration::from_secs(2)),
        on_sample: None,
        loop_to: None,
        peer: None,
        echo: None,
        peer_name: None,
        preview: None,
        levels: None,
        monitor: None,
        on_air: None,
    };
    let decoder = tokio::spawn(run_decoder(decode, std::future::pending()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    run_encoder(valid, RunOptions { duration: Some(seconds), ..Default::default() }, std::future::pending()).await?;
    let summary = decoder.await??;
    let l =
        summary.latency.ok_or_else(|| AppError::Runtime(format!("no timecode was read at {w}x{h} {kbps} kbit/s")))?;
    let link_rtt_ms = plan.link.as_ref().map(|p| p.rtt_ms).unwrap_or(0.0);
    Ok(MeasureRow {
        size: format!("{w}x{h}"),
        bitrate_kbps: kbps,
        link: plan.link.as_ref().map(|p| p.name.clone()),
        link_rtt_ms,
        srt_latency_ms: latency,
        p50_ms: l.p50_ms,
        p95_ms: l.p95_ms,
        max_ms: l.max_ms,
        added_ms: ((l.p50_ms - f64::from(latency) - link_rtt_ms / 2.0) * 10.0).round() / 10.0,
        frames: l.samples,
        av_offset: summary.av_offset,
    })
}

/// The rows as a Markdown table.
pub fn table(rows: &[MeasureRow]) -> String {
    let mut s = String::from("| size | bitrate | link | SRT latency | glass-to-glass p50 | p95 | max | added (p50 - SRT latency - one-way link delay) | frames | A/V offset p50 (min, max) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let av = match &r.av_offset {
            Some(a) => format!(
                "{:.1} ms ({:.1}, {:.1}){}",
                a.p50_ms,
                a.min_ms,
                a.max_ms,
                if a.within_tolerance { "" } else { ", outside EBU R37" }
            ),
            None => "-".to_string(),
        };
        s.push_str(&format!(
            "| {} | {} kbit/s | {} | {} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} | {av} |\n",
            r.size,
            r.bitrate_kbps,
            r.link.as_deref().unwrap_or("loopback"),
            r.srt_latency_ms,
            r.p50_ms,
            r.p95_ms,
            r.max_ms,
            r.added_ms,
            r.frames
        ));
    }
    s
}
