//! The relay role (an SRT gateway): receive one SRT stream and pass it on, untouched, to every
//! output at once: SRT to more places (listener for many callers, or callers), RTMP(S) to a
//! platform, a recording. No decoding and no re-encoding, so it costs only the transport.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use telebridge_config::{OutputSpec, SrtUrl};
use telebridge_srt::{InputStatus, OutputStatus, SrtInput};
use tracing::info;

use crate::roles::outputs::{Output, OutputStarter};
use crate::AppError;

/// Receives each one-second sample.
pub type RelaySampleCallback = Arc<dyn Fn(&RelaySample) + Send + Sync>;

/// How to run.
pub struct RelayOptions {
    /// Where the stream comes from.
    pub input: SrtUrl,
    /// Where it goes: (name, destination).
    pub outputs: Vec<(String, OutputSpec)>,
    /// Buffer per output, bytes (about a second of the stream).
    pub queue_bytes: u64,
    /// Stop after this long; `None` runs until the shutdown future completes.
    pub duration: Option<Duration>,
    /// Called with each one-second sample.
    pub on_sample: Option<RelaySampleCallback>,
    /// Also takes bonded senders (srtla's protocol) on this address and hands their SRT to the
    /// input, which must then be a listener (`telebridge relay --bond-listen`).
    pub bond_listen: Option<std::net::SocketAddr>,
    /// Starts each output: [`crate::roles::outputs::start_any`], or
    /// [`crate::roles::outputs::start_without_gstreamer`] for a relay that must not load GStreamer.
    pub start_output: OutputStarter,
}

impl std::fmt::Debug for RelayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayOptions").field("input", &self.input.to_string()).finish_non_exhaustive()
    }
}

/// One line of `relay --stats json`.
#[derive(Debug, Clone, Serialize)]
pub struct RelaySample {
    /// Seconds since start.
    pub t: f64,
    /// The SRT input.
    pub input: InputStatus,
    /// Every output.
    pub outputs: Vec<OutputStatus>,
    /// The bonded senders and their uplinks, with `--bond-listen`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bond: Vec<telebridge_bond::receiver::GroupStatus>,
}

/// The relay's summary at exit.
#[derive(Debug, Clone, Serialize)]
pub struct RelaySummary {
    /// How long it ran, s.
    pub duration_s: f64,
    /// The input's final status.
    pub input: InputStatus,
    /// Every output's final status.
    pub outputs: Vec<OutputStatus>,
}

/// Runs the relay until `duration` elapses or `shutdown` completes.
pub async fn run_relay(options: RelayOptions, shutdown: impl Future<Output = ()>) -> Result<RelaySummary, AppError> {
    // SRT to SRT and to a recording needs no GStreamer at all: only an RTMP output starts it.
    let mut outputs: Vec<Arc<Box<dyn Output>>> = Vec::new();
    for (name, spec) in &options.outputs {
        outputs.push(Arc::new((options.start_output)(name, spec, options.queue_bytes)?));
        info!(output = %spec.label(), "output added");
    }
    let feed = outputs.clone();
    let input = SrtInput::start(
        options.input.clone(),
        Arc::new(move |data: &[u8]| {
            for o in &feed {
                o.send(data);
            }
        }),
    )?;
    let status = input.status();
    let bond = match options.bond_listen {
        Some(listen) => Some(start_bond(listen, &options.input)?),
        None => None,
    };
    info!(input = %options.input, outputs = outputs.len(), "relay running");
    let started = Instant::now();
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tokio::select! {
            _ = &mut shutdown => { info!("stopping on request"); break; }
            _ = tick.tick() => {}
        }
        if let Some(cb) = &options.on_sample {
            cb(&RelaySample {
                t: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                input: status.borrow().clone(),
                outputs: outputs.iter().map(|o| o.snapshot()).collect(),
                bond: bond.as_ref().map(|b| b.status()).unwrap_or_default(),
            });
        }
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
    }
    let elapsed = started.elapsed();
    // Stopping joins threads: do it off the async runtime.
    let summary = tokio::task::spawn_blocking(move || {
        if let Some(b) = bond {
            b.stop();
        }
        input.stop();
        let input = status.borrow().clone();
        let statuses = outputs.iter().map(|o| o.snapshot()).collect();
        for o in outputs {
            if let Ok(o) = Arc::try_unwrap(o) {
                o.stop();
            }
        }
        RelaySummary { duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0, input, outputs: statuses }
    })
    .await?;
    Ok(summary)
}

/// A bonding receiver in front of a listening SRT input (the relay's, the decoder's): bonded
/// senders on `listen`, their SRT handed to the input on this machine.
pub fn start_bond(listen: std::net::SocketAddr, input: &SrtUrl) -> Result<telebridge_bond::BondReceiver, AppError> {
    if input.mode != telebridge_config::SrtMode::Listener {
        return Err(AppError::BadInput(format!(
            "--bond-listen hands the bonded stream to the input, which must listen: --input srt://:PORT?mode=listener (not {})",
            input.label()
        )));
    }
    let host = input.host.as_deref().and_then(|h| h.parse().ok());
    let to = std::net::SocketAddr::new(host.unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()), input.port);
    // A packet after a gap waits at most a third of the SRT latency for it: the rest is SRT's
    // time to resend what is really lost.
    let reorder_max = match input.latency {
        Some(telebridge_config::Latency::Fixed(l)) => l / 3,
        _ => std::time::Duration::from_millis(50),
    };
    telebridge_bond::BondReceiver::start(listen, to, reorder_max)
        .map_err(|e| AppError::Runtime(format!("--bond-listen {listen}: cannot listen: {e}")))
}
