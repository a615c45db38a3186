//! The encoder role: capture, encode once, send to every output, report once a second.
//!
//! Outputs live beside the pipeline, fed through its TS fan-out: when an HDMI source changes
//! format only the pipeline is rebuilt and the outputs keep their connections.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::{OutputSpec, ValidConfig};
use telebridge_media::capture_device::{self, CaptureKind};
use telebridge_media::{
    choose_encoder, probe_encoder, EncoderChoice, EncoderPipeline, EncoderSettings, Platform, TsFanout,
};
use tracing::{error, info, warn};

use crate::outputs::Output;
use crate::signal::{BridgeLink, SignalWatch};
use crate::stats::{EncoderMeter, StatsSample, Summary};
use crate::AppError;

/// Receives each one-second statistics sample.
pub type SampleCallback = Arc<dyn Fn(&StatsSample) + Send + Sync>;

/// What can be changed while the encoder runs.
#[derive(Debug)]
pub enum EncoderCommand {
    /// Start one more output (name, destination).
    AddOutput(String, Box<OutputSpec>),
    /// Stop and remove the output of this name.
    RemoveOutput(String),
    /// Send a control message to the paired box on the bridge's connection.
    ToPeer(Vec<u8>),
}

/// How to run.
#[derive(Default)]
pub struct RunOptions {
    /// Stop after this long; `None` runs until the shutdown future completes.
    pub duration: Option<Duration>,
    /// Called with each one-second sample.
    pub on_sample: Option<SampleCallback>,
    /// Changes while running (the appliance and the web panel send these).
    pub commands: Option<tokio::sync::mpsc::Receiver<EncoderCommand>>,
    /// Keep a small JPEG of the picture here, once a second (the panel's preview).
    pub preview: Option<telebridge_media::PreviewSlot>,
    /// The simulated HDMI cable (see `EncoderSettings::signal_gate`).
    pub signal_gate: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The bridge's connection to the paired box: an SRT output that also receives (its data
    /// goes to the link's feed).
    pub peer: Option<super::peer::PeerLink>,
    /// The bridge: the far box's timecode to burn back (see `telebridge_media::timecode::Echo`).
    pub echo: Option<telebridge_media::timecode::Echo>,
    /// Another rate law than the configuration's (the benchmark's baselines); with `None` an
    /// adaptive bitrate (`video.bitrate_mode`) uses ours.
    pub rate_law: Option<crate::rate::LawFactory>,
    /// How often the rate law is asked (`None`: [`crate::rate::STEP`]).
    pub rate_step: Option<Duration>,
    /// Where to record what the rate law saw and chose, step by step (JSON lines); `None`:
    /// the file `TELEBRIDGE_RATE_TRACE` names, if any.
    pub rate_trace: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions").field("duration", &self.duration).finish_non_exhaustive()
    }
}

/// The encoders that passed their probe in this process. A probe pushes frames through the
/// encoder (up to 2 s for one that hangs); one that worked once is not probed again, so a
/// press of Go live does not wait for it. One that failed is probed again next time (a
/// hardware encoder can be busy for a moment).
static WORKING: std::sync::Mutex<Vec<telebridge_media::EncoderKind>> = std::sync::Mutex::new(Vec::new());

fn probe_once(kind: telebridge_media::EncoderKind) -> Result<(), String> {
    if WORKING.lock().unwrap_or_else(|p| p.into_inner()).contains(&kind) {
        return Ok(());
    }
    probe_encoder(kind)?;
    WORKING.lock().unwrap_or_else(|p| p.into_inner()).push(kind);
    Ok(())
}

/// Picks the encoder for this machine and logs the choice and why.
pub fn select_encoder(config: &ValidConfig) -> Result<EncoderChoice, AppError> {
    let platform = Platform::detect();
    let choice = choose_encoder(config.encoder, &platform, &telebridge_media::has_element, &mut probe_once)
        .map_err(|e| AppError::BadInput(e.to_string()))?;
    info!(encoder = %choice.kind, reason = %choice.reason, "H.264 encoder chosen");
    Ok(choice)
}

/// Runs the encoder role until `duration` elapses or `shutdown` completes; returns the summary.
pub async fn run_encoder(
    config: ValidConfig,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<Summary, AppError> {
    telebridge_media::init()?;
    telebridge_srt::install_log_hook();
    let choice = select_encoder(&config)?;
    let mut settings = EncoderSettings::from_config(&config, choice);
    settings.preview = options.preview.clone();
    settings.signal_gate = options.signal_gate.clone();
    settings.echo = options.echo.clone();
    let fanout = TsFanout::default();
    let mut pipeline = EncoderPipeline::build(&settings, fanout.clone())?;

    // About one second of stream per output queue.
    let queue_bytes = (u64::from(config.picture.bitrate_kbps + config.audio_bitrate_kbps) * 1000 / 8).max(256 * 1024);
    // Outputs ask for a keyframe when a peer joins; the slot is refilled when the pipeline is
    // rebuilt after a source change.
    let keyframe_slot = Arc::new(std::sync::Mutex::new(pipeline.keyframe_requester()));
    let keyframe_proxy: Arc<dyn Fn() + Send + Sync> = {
        let slot = keyframe_slot.clone();
        Arc::new(move || {
            let request = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
            request();
        })
    };
    let start_output = |name: &str, spec: &OutputSpec| -> Result<Arc<Output>, AppError> {
        Output::start(name, spec, queue_bytes, keyframe_proxy.clone()).map(Arc::new)
    };
    let mut outputs: Vec<(String, Arc<Output>, telebridge_media::TsConsumerId)> = Vec::new();
    for (name, spec) in &config.outputs {
        let out = start_output(name, spec)?;
        let o = out.clone();
        let id = fanout.add(move |buf| o.push(buf));
        info!(output = %spec.label(), "output added");
        outputs.push((name.clone(), out, id));
    }
    if let Some(link) = &options.peer {
        let feed = link.feed.clone();
        let on_receive: telebridge_srt::output::Receiver = Arc::new(move |d: &[u8]| feed.receive(d));
        let out = telebridge_srt::SrtOutput::start_route(
            link.name.clone(),
            link.url.clone(),
            link.then.clone(),
            keyframe_proxy.clone(),
            Some(on_receive),
        )
        .map_err(|e| AppError::Runtime(e.to_string()))?;
        link.feed.set_output(out.status());
        let out = Arc::new(Output::Srt(out));
        let o = out.clone();
        let id = fanout.add(move |buf| o.push(buf));
        info!(link = %link.url, "connection to the paired box added");
        outputs.push((link.name.clone(), out, id));
    }
    let mut commands = options.commands;
    // The adaptive bitrate: a law per SRT connection, asked every rate::STEP.
    let mut rate = match (options.rate_law, config.picture.bitrate_mode) {
        (Some(factory), _) => Some(factory),
        (None, telebridge_config::BitrateMode::Adaptive) => {
            let f: crate::rate::LawFactory =
                Box::new(|b| Box::new(crate::rate::Adaptive::new(b)) as Box<dyn crate::rate::RateLaw>);
            Some(f)
        }
        (None, telebridge_config::BitrateMode::Fixed) => None,
    }
    .map(|factory| {
        crate::rate::RateControl::new(
            factory,
            config.picture.min_bitrate_kbps.min(config.picture.bitrate_kbps),
            config.picture.bitrate_kbps,
            config.audio_bitrate_kbps,
        )
        .with_frame_rate_step_down(config.picture.frame_rate_step_down)
    });
    let mut set_bitrate = pipeline.bitrate_setter();
    let mut set_frame_rate = pipeline.frame_rate_setter();
    let mut rate_tick = tokio::time::interval(options.rate_step.unwrap_or(crate::rate::STEP));
    rate_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let pace = |outputs: &[(String, Arc<Output>, telebridge_media::TsConsumerId)], pacing| {
        for (_, o, _) in outputs {
            if let Output::Srt(o) = o.as_ref() {
                o.pace(pacing);
            }
        }
    };
    if let Some(rc) = rate.as_mut() {
        // TELEBRIDGE_RATE_TRACE=FILE records what the law saw and chose, step by step.
        let trace = options.rate_trace.clone().or_else(|| std::env::var_os("TELEBRIDGE_RATE_TRACE").map(Into::into));
        if let Some(path) = trace {
            if let Err(e) = rc.record_to(&path) {
                warn!(error = %e, "cannot write the rate trace");
            }
        }
        if let Some(p) = rc.pacing_change() {
            pace(&outputs, p);
        }
        info!(
            min_kbps = config.picture.min_bitrate_kbps,
            max_kbps = config.picture.bitrate_kbps,
            "adaptive bitrate: following the SRT links"
        );
    }
    pipeline.start()?;
    let started = Instant::now();
    info!(outputs = outputs.len(), "encoder running");

    let mut meter = EncoderMeter::default();
    let mut last_sample = Instant::now();
    let bridge = matches!(pipeline.capture_plan(), Some(p) if p.kind == CaptureKind::HdmiBridge);
    let now_ms = || started.elapsed().as_millis() as u64;
    let mut watch = SignalWatch::new(now_ms());
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut failure: Option<AppError> = None;
    loop {
        let command = async {
            match commands.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut shutdown => { info!("stopping on request"); break; }
            _ = tick.tick() => {}
            _ = rate_tick.tick(), if rate.is_some() => {
                if let Some(rc) = rate.as_mut() {
                    let links: Vec<(String, crate::rate::LinkSample)> = outputs
                        .iter()
                        .filter_map(|(name, o, _)| match o.as_ref() {
                            Output::Srt(o) => Some((name, o)),
                            _ => None,
                        })
                        .flat_map(|(name, o)| {
                            o.stats_now().into_iter().map(move |(peer, st)| {
                                let key = match peer { Some(p) => format!("{name} {p}"), None => name.clone() };
                                (key, crate::rate::LinkSample::from(&st))
                            })
                        })
                        .collect();
                    let changed = rc.step(&links, started.elapsed());
                    if let Some(p) = rc.pacing_change() {
                        pace(&outputs, p);
                    }
                    if let Some(n) = rc.frame_rate_change() {
                        set_frame_rate(n);
                    }
                    if let Some(video) = changed {
                        set_bitrate(video);
                        info!(video_kbps = video, reason = %rc.status().reason, link = rc.status().link.as_deref().unwrap_or("?"), "bitrate changed");
                    }
                }
                continue;
            }
            cmd = command => match cmd {
                Some(EncoderCommand::AddOutput(name, spec)) => match start_output(&name, &spec) {
                    Ok(out) => {
                        let o = out.clone();
                        let id = fanout.add(move |buf| o.push(buf));
                        info!(output = %spec.label(), "output added while running");
                        pipeline.request_keyframe();
                        outputs.push((name, out, id));
                    }
                    Err(e) => warn!(error = %e, "cannot add output"),
                },
                Some(EncoderCommand::RemoveOutput(name)) => {
                    if let Some(i) = outputs.iter().position(|(n, _, _)| *n == name) {
                        let (_, out, id) = outputs.remove(i);
                        fanout.remove(id);
                        // Stopping joins the output's thread: do it off the async runtime.
                        if let Ok(out) = Arc::try_unwrap(out) {
                            tokio::task::spawn_blocking(move || out.stop());
                        }
                        info!(output = %name, "output removed while running");
                    }
                }
                Some(EncoderCommand::ToPeer(message)) => {
                    match outputs.iter().find(|(n, _, _)| n == super::peer::PEER_OUTPUT) {
                        Some((_, out, _)) => out.send(&message),
                        None => warn!("a message for the paired box, but no connection to it"),
                    }
                }
                None => commands = None,
            },
        }
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        // An HDMI source that changed format (seen by a look, or ending the capture before the
        // next one), or locked again without frames: apply its timings and rebuild the capture
        // pipeline; the outputs and their connections stay.
        let mut rebuild = None;
        if let Some(err) = pipeline_error(&pipeline) {
            match if bridge { watch.capture_error(bridge_link(&config)) } else { None } {
                Some(why) => rebuild = Some(format!("{why} (the capture ended: {err})")),
                None => {
                    error!(%err, "encoder pipeline failed");
                    failure = Some(err);
                    break;
                }
            }
        } else if last_sample.elapsed() >= Duration::from_secs(1) {
            let interval = last_sample.elapsed();
            last_sample = Instant::now();
            let counters = pipeline.counters();
            let link = if bridge { bridge_link(&config) } else { None };
            let verdict =
                watch.look(counters.frames_captured.load(std::sync::atomic::Ordering::Relaxed), link, now_ms());
            match verdict.changed {
                Some(true) => info!("input signal back"),
                Some(false) => warn!("input signal lost: no frames from the source"),
                None => {}
            }
            let sample = StatsSample {
                t: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                signal: watch.present(),
                encoder: meter.sample(&settings.encoder, &counters, interval),
                outputs: outputs.iter().map(|(_, o, _)| o.status().borrow().clone()).collect(),
                rate: rate.as_ref().map(|r| r.status().clone()),
            };
            if let Some(cb) = &options.on_sample {
                cb(&sample);
            }
            rebuild = verdict.restart;
        }
        if let Some(why) = rebuild {
            warn!(reason = %why, "rebuilding the capture pipeline");
            pipeline.stop(Duration::from_millis(200));
            drop(pipeline);
            pipeline = EncoderPipeline::build(&settings, fanout.clone())?;
            *keyframe_slot.lock().unwrap_or_else(|p| p.into_inner()) = pipeline.keyframe_requester();
            set_bitrate = pipeline.bitrate_setter();
            set_frame_rate = pipeline.frame_rate_setter();
            // The new encoder starts at the configured bitrate: give it the one chosen.
            if let Some(rc) = &rate {
                set_bitrate(rc.status().video_kbps);
                set_frame_rate(rc.status().one_frame_in);
            }
            pipeline.start()?;
            // The new pipeline counts from zero.
            meter = EncoderMeter::default();
            watch = SignalWatch::new(now_ms());
        }
    }
    pipeline.stop(Duration::from_secs(2));
    let elapsed = started.elapsed();
    let counters = pipeline.counters();
    let mut encoder = EncoderMeter::default().sample(&settings.encoder, &counters, elapsed);
    encoder.frames_encoded = counters.frames_encoded.load(std::sync::atomic::Ordering::Relaxed);
    let summary_outputs = outputs.iter().map(|(_, o, _)| o.status().borrow().clone()).collect();
    drop(pipeline);
    drop(fanout);
    for (_, o, _) in outputs {
        if let Ok(o) = Arc::try_unwrap(o) {
            o.stop();
        }
    }
    if let Some(err) = failure {
        return Err(err);
    }
    Ok(Summary { duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0, encoder, outputs: summary_outputs })
}

/// What the HDMI bridge says of its input; `None` when it cannot be asked (the frames decide).
fn bridge_link(config: &ValidConfig) -> Option<BridgeLink> {
    match &config.video_source {
        telebridge_config::VideoSource::V4l2 { device } => match capture_device::query_dv_timings(device) {
            Ok(Some(t)) => Some(BridgeLink::Locked(t)),
            Ok(None) => Some(BridgeLink::NoLink),
            Err(_) => None,
        },
        _ => None,
    }
}

fn pipeline_error(pipeline: &EncoderPipeline) -> Option<AppError> {
    let bus = pipeline.bus()?;
    while let Some(msg) = bus.pop() {
        if let gst::MessageView::Error(err) = msg.view() {
            let e = telebridge_media::MediaError::from_bus_error(err);
            // A capture device that disappears or is busy is the user's to fix.
            let text = e.to_string();
            return Some(if text.contains("video-source") {
                AppError::BadInput(text)
            } else {
                AppError::Runtime(text)
            });
        }
    }
    None
}
