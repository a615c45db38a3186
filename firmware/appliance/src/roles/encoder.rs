//! The encoder role: capture, encode once, send to every output, report once a second.
//!
//! Outputs live beside the pipeline, fed through its TS fan-out: when an HDMI source changes
//! format only the pipeline is rebuilt and the outputs keep their connections.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_config::{OutputSpec, ValidConfig};
use telebridge_media::{choose_encoder, probe_encoder, EncoderChoice, Platform};
use tracing::info;

mod running;
use running::EncoderRun;

use crate::roles::signal::SignalWatch;
use crate::roles::stats::{StatsSample, Summary};
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
    /// Where the programme's sound meter writes (the panel's meters); `None` meters nothing.
    pub levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
    /// Where the programme is offered to the live monitor's viewers while it runs; `None`
    /// offers it to none.
    pub monitor: Option<Arc<telebridge_media::monitor::MonitorHub>>,
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
    if WORKING.locked().contains(&kind) {
        return Ok(());
    }
    probe_encoder(kind)?;
    WORKING.locked().push(kind);
    Ok(())
}

/// Picks the encoder for this machine and logs the choice and why.
pub fn select_encoder(config: &ValidConfig) -> Result<EncoderChoice, AppError> {
    let platform = Platform::detect();
    let choice = choose_encoder(config.encoder, &platform, &telebridge_media::has_element, &mut probe_once)
        .map_err(telebridge_media::MediaError::from)?;
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
    crate::logs::route_library_logs();
    let mut commands = options.commands;
    let duration = options.duration;
    let mut rate_tick = tokio::time::interval(options.rate_step.unwrap_or(crate::rate::STEP));
    rate_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let taps = telebridge_media::Taps {
        preview: options.preview,
        signal_gate: options.signal_gate,
        echo: options.echo,
        levels: options.levels,
    };
    let mut run = EncoderRun::start(config, taps, options.on_sample)?;
    run.add_peer(options.peer.as_ref())?;
    run.follow_links(options.rate_law, options.rate_trace);
    run.pipeline().start()?;
    let _offered = options.monitor.map(|hub| {
        let tap =
            telebridge_media::monitor::Tap { fanout: run.fanout.clone(), keyframe: Some(run.keyframe_proxy.clone()) };
        hub.publish(telebridge_contract::feed::Feed::Programme, tap)
    });
    run.started = Instant::now();
    run.last_sample = run.started;
    info!(outputs = run.outputs.len(), "encoder running");
    run.watch = SignalWatch::new(0);

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
            _ = rate_tick.tick(), if run.rate.is_some() => { run.on_rate_tick(); continue; }
            cmd = command => match cmd {
                Some(cmd) => run.on_command(cmd),
                None => commands = None,
            },
        }
        if duration.is_some_and(|d| run.started.elapsed() >= d) {
            break;
        }
        if let Some(err) = run.on_tick()? {
            failure = Some(err);
            break;
        }
    }
    run.finish(failure)
}
