//! The bridge role: this box encodes its input and sends it to the paired box, and decodes
//! what the paired box sends to its own output, at the same time, over one SRT connection
//! (both directions on one socket: one UDP port for a router to pass).
//!
//! ```text
//! source ─ EncoderPipeline ─ TS fan-out ─┬─ SrtOutput (duplex) ══ one SRT connection ══ the peer
//!                                        └─ other outputs           │ what the peer sends
//!                                                                   ▼
//!                          Display ◄─ DecodePipeline ◄─ PeerFeed (counts, records, hands on)
//! ```
//!
//! The encoder role and the decoder role run as they are; the [`PeerFeed`] stands where the
//! decoder's SRT input would, fed from the duplex output's socket.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use telebridge_sync::Locked;

use telebridge_config::ValidConfig;
use tokio::sync::watch;

use super::decoder::{DecodeOptions, DecodeSample};
use super::encoder::{EncoderCommand, RunOptions};
use super::peer::{ControlCallback, PeerFeed, PeerLink, PEER_OUTPUT};
use crate::roles::stats::StatsSample;
use crate::AppError;

pub use telebridge_contract::roles::{BridgeSample, BridgeSummary};

/// Receives each one-second sample.
pub type BridgeSampleCallback = Arc<dyn Fn(&BridgeSample) + Send + Sync>;

/// How to run the bridge.
pub struct BridgeOptions {
    /// The ways to the peer, or why there are none ("not paired...").
    pub link: Result<telebridge_pairing::PeerRoute, String>,
    /// Where the paired box's control messages go.
    pub on_control: Option<ControlCallback>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Called with each one-second sample.
    pub on_sample: Option<BridgeSampleCallback>,
    /// Outputs added or removed while running.
    pub commands: Option<tokio::sync::mpsc::Receiver<EncoderCommand>>,
    /// The panel's preview of what this box sends.
    pub preview: Option<telebridge_media::PreviewSlot>,
    /// The panel's preview of what arrives from the paired box.
    pub received_preview: Option<telebridge_media::PreviewSlot>,
    /// The sound's meters (both ways); `None` meters nothing.
    pub levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
    /// The live monitor (both feeds); `None` offers them to none.
    pub monitor: Option<Arc<telebridge_media::monitor::MonitorHub>>,
    /// The simulated HDMI cable.
    pub signal_gate: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The tally: while set, the slate is framed in red (the box is on air).
    pub on_air: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Talkback with the paired box (the daemon's talk button and status).
    pub talk: Option<Arc<super::talkback::TalkShared>>,
}

impl std::fmt::Debug for BridgeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeOptions").field("link", &self.link).finish_non_exhaustive()
    }
}

/// Runs the bridge until `duration` elapses, `shutdown` completes, or either half fails.
pub async fn run_bridge(
    config: ValidConfig,
    options: BridgeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<BridgeSummary, AppError> {
    let route = options.link.clone().map_err(|why| AppError::BadInput(format!("role bridge: {why}")))?;
    let link = route.first.clone();
    let feed = Arc::new(PeerFeed::new(&link, config.bridge.record.clone(), options.on_control.clone()));
    let wins_ties = link.mode == telebridge_config::SrtMode::Listener;
    let key = crate::roles::talk::TalkKey::from_passphrase(link.passphrase.as_ref().map(|p| p.expose()));
    let talk =
        options.talk.clone().map(|t| super::talkback::TalkRun::start(&config.talkback, t, &feed, key, wins_ties));
    let latest: Arc<Mutex<Option<DecodeSample>>> = Arc::default();
    let echo = telebridge_media::timecode::Echo::default();
    let decode = DecodeOptions {
        name: config.name.clone(),
        input: link.clone(),
        sink: telebridge_media::display::SinkKind::from_config(&config.decoder_sink),
        audio: config.audio_out.clone(),
        duration: options.duration,
        on_sample: Some({
            let latest = latest.clone();
            Arc::new(move |s: &DecodeSample| *latest.locked() = Some(s.clone()))
        }),
        loop_to: None,
        peer: Some(feed.clone()),
        echo: Some(echo.clone()),
        peer_name: Some(route.peer_name.clone().unwrap_or_else(|| "the other end".into())),
        preview: options.received_preview.clone(),
        levels: options.levels.clone(),
        monitor: options.monitor.clone(),
        on_air: options.on_air.clone(),
    };
    let encode = RunOptions {
        duration: options.duration,
        on_sample: Some({
            let (latest, feed, cb) = (latest.clone(), feed.clone(), options.on_sample.clone());
            Arc::new(move |s: &StatsSample| {
                if let Some(cb) = &cb {
                    cb(&BridgeSample {
                        sending: s.clone(),
                        receiving: latest.locked().clone(),
                        received_recording: feed.recording_status(),
                    });
                }
            })
        }),
        commands: options.commands,
        preview: options.preview,
        levels: options.levels.clone(),
        monitor: options.monitor.clone(),
        signal_gate: options.signal_gate,
        peer: Some(PeerLink { name: PEER_OUTPUT.into(), url: link, then: route.then, feed: feed.clone() }),
        echo: Some(echo),
        rate_law: None,
        rate_step: None,
        rate_trace: None,
    };
    // Either half ending (on request or failing) ends the other.
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let encoder = async {
        let r = crate::run_encoder(config.clone(), encode, stopped(stop_rx.clone())).await;
        stop_tx.send_replace(true);
        r
    };
    let decoder = async {
        let r = crate::run_decoder(decode, stopped(stop_rx.clone())).await;
        stop_tx.send_replace(true);
        r
    };
    let outside = async {
        tokio::select! {
            () = shutdown => { stop_tx.send_replace(true); }
            () = stopped(stop_rx.clone()) => {}
        }
    };
    let (sent, received, ()) = tokio::join!(encoder, decoder, outside);
    feed.stop();
    if let Some(t) = talk {
        let _ = tokio::task::spawn_blocking(move || t.stop()).await;
    }
    Ok(BridgeSummary { sending: sent?, receiving: received? })
}
