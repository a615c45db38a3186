//! Starting and changing the media (the encoder or decoder role) for the main loop.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use telebridge_config::{Role, ValidConfig};

use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::daemon::changes::ChangePlan;
use crate::daemon::sample::MediaSample;
use crate::{AppError, DecodeOptions, EncoderCommand, RunOptions};
use telebridge_contract::roles::{BridgeSample, DecodeSample, StatsSample};

pub(super) enum MediaEvent {
    /// Once a second: the running media's sample.
    Sample(Box<MediaSample>),
    Ended(Result<(), AppError>),
}

pub(super) struct Media {
    stop: Option<oneshot::Sender<()>>,
    pub(super) commands: Option<mpsc::Sender<EncoderCommand>>,
    pub(super) generation: u64,
}

impl Media {
    /// Asks the media to stop (the one place that does); its end comes as [`MediaEvent::Ended`].
    /// Asking again does nothing.
    pub(super) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// What the daemon shares with the media it starts.
#[derive(Clone)]
pub(super) struct MediaShared {
    pub(super) preview: telebridge_media::PreviewSlot,
    pub(super) cable: Option<Arc<AtomicBool>>,
    /// Control messages from the paired box (the bridge's connection), for the API.
    pub(super) peer_messages: tokio::sync::broadcast::Sender<Vec<u8>>,
    /// The bridge: what arrives from the paired box, as a small JPEG once a second.
    pub(super) received: telebridge_media::PreviewSlot,
    /// The tally, for the slate's red frame: set by the main loop, read by the display.
    pub(super) on_air: Arc<AtomicBool>,
    /// Talkback: the talk button (the main loop) and the sound (the bridge).
    pub(super) talk: Arc<crate::roles::talkback::TalkShared>,
    /// The sound's meters, written by the pipelines.
    pub(super) levels: Arc<telebridge_contract::sound::LevelBoard>,
    /// The live monitor: the feeds offered to viewers, and the viewers.
    pub(super) monitor: Arc<telebridge_media::monitor::MonitorHub>,
}

/// Applies a plan's output changes; a media restart is left to the caller.
pub(super) fn apply(plan: &ChangePlan, media: &mut Option<Media>, pending: &mut Vec<&'static str>) {
    for s in &plan.next_start {
        if !pending.contains(s) {
            pending.push(s);
        }
        warn!(setting = *s, "changed; takes effect at the next start");
    }
    if plan.restart_media {
        if let Some(mut m) = media.take() {
            info!("configuration changed: restarting the media");
            m.stop();
        }
        return;
    }
    let Some(cmds) = media.as_ref().and_then(|m| m.commands.clone()) else { return };
    for name in &plan.remove_outputs {
        info!(output = %name, "configuration changed: removing output");
        let _ = cmds.try_send(EncoderCommand::RemoveOutput(name.clone()));
    }
    for (name, spec) in &plan.add_outputs {
        info!(output = %spec.label(), "configuration changed: adding output");
        let _ = cmds.try_send(EncoderCommand::AddOutput(name.clone(), Box::new(spec.clone())));
    }
}

/// What `--sim` changes in a configuration: the test source, simulated GPIO, a headless sink.
pub fn simulate(mut c: telebridge_config::Config) -> telebridge_config::Config {
    c.video.source = "test".into();
    c.audio.source = "test".into();
    c.gpio.backend = "sim".into();
    if !c.decoder.sink.starts_with("file:") {
        c.decoder.sink = "fake".into();
    }
    c
}

pub(super) fn start_media(
    config: &ValidConfig,
    peer_link: &Result<telebridge_pairing::PeerRoute, String>,
    generation: u64,
    events: mpsc::Sender<(u64, MediaEvent)>,
    shared: &MediaShared,
) -> Media {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stop_rx.await;
    };
    match config.role {
        Role::Encoder => {
            let (cmd_tx, cmd_rx) = mpsc::channel(16);
            let tx = events.clone();
            let gate = match config.video_source {
                telebridge_config::VideoSource::Test => shared.cable.clone(),
                _ => None,
            };
            let options = RunOptions {
                duration: None,
                on_sample: Some(Arc::new(move |s: &StatsSample| {
                    let _ = tx.try_send((
                        generation,
                        MediaEvent::Sample(Box::new(MediaSample::Encoder(Box::new(s.clone())))),
                    ));
                })),
                commands: Some(cmd_rx),
                preview: Some(shared.preview.clone()),
                levels: Some(shared.levels.clone()),
                monitor: Some(shared.monitor.clone()),
                signal_gate: gate,
                peer: None,
                echo: None,
                rate_law: None,
                rate_step: None,
                rate_trace: None,
            };
            let config = config.clone();
            tokio::spawn(async move {
                let r = crate::run_encoder(config, options, shutdown).await.map(|_| ());
                let _ = events.send((generation, MediaEvent::Ended(r))).await;
            });
            Media { stop: Some(stop_tx), commands: Some(cmd_tx), generation }
        }
        Role::Decoder => {
            let tx = events.clone();
            let options = DecodeOptions {
                name: config.name.clone(),
                input: config.decoder_input.clone(),
                sink: telebridge_media::display::SinkKind::from_config(&config.decoder_sink),
                audio: config.audio_out.clone(),
                duration: None,
                on_sample: Some(Arc::new(move |s: &DecodeSample| {
                    let sample = MediaSample::Decoder(Box::new(s.clone()));
                    let _ = tx.try_send((generation, MediaEvent::Sample(Box::new(sample))));
                })),
                loop_to: None,
                peer: None,
                echo: None,
                peer_name: None,
                preview: Some(shared.received.clone()),
                levels: Some(shared.levels.clone()),
                monitor: Some(shared.monitor.clone()),
                on_air: Some(shared.on_air.clone()),
            };
            tokio::spawn(async move {
                let r = crate::run_decoder(options, shutdown).await.map(|_| ());
                let _ = events.send((generation, MediaEvent::Ended(r))).await;
            });
            Media { stop: Some(stop_tx), commands: None, generation }
        }
        Role::Bridge => {
            let (cmd_tx, cmd_rx) = mpsc::channel(16);
            let tx = events.clone();
            let gate = match config.video_source {
                telebridge_config::VideoSource::Test => shared.cable.clone(),
                _ => None,
            };
            let options = crate::BridgeOptions {
                // A link made by hand wins over the pairing's.
                link: match &config.bridge.link {
                    Some(l) => Ok(telebridge_pairing::PeerRoute::only(l.clone())),
                    None => peer_link.clone(),
                },
                on_control: Some({
                    let messages = shared.peer_messages.clone();
                    Arc::new(move |m: &[u8]| {
                        let _ = messages.send(m.to_vec());
                    })
                }),
                duration: None,
                on_sample: Some(Arc::new(move |s: &BridgeSample| {
                    let _ = tx
                        .try_send((generation, MediaEvent::Sample(Box::new(MediaSample::Bridge(Box::new(s.clone()))))));
                })),
                commands: Some(cmd_rx),
                preview: Some(shared.preview.clone()),
                received_preview: Some(shared.received.clone()),
                levels: Some(shared.levels.clone()),
                monitor: Some(shared.monitor.clone()),
                signal_gate: gate,
                on_air: Some(shared.on_air.clone()),
                talk: Some(shared.talk.clone()),
            };
            let config = config.clone();
            tokio::spawn(async move {
                let r = crate::run_bridge(config, options, shutdown).await.map(|_| ());
                let _ = events.send((generation, MediaEvent::Ended(r))).await;
            });
            Media { stop: Some(stop_tx), commands: Some(cmd_tx), generation }
        }
    }
}
