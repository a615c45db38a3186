//! The encoder role's state while it runs ([`EncoderRun`]), and what its events do: a rate
//! step, a command, a tick (the sample, the signal's verdict, a rebuild).

use std::sync::Arc;
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_config::{OutputSpec, ValidConfig};
use telebridge_media::capture_device::{self, CaptureKind};
use telebridge_media::{EncoderPipeline, EncoderSettings, TsFanout};
use tracing::{error, info, warn};

use super::{select_encoder, EncoderCommand, SampleCallback};
use crate::roles::outputs::Output;
use crate::roles::signal::{BridgeLink, SignalWatch};
use crate::roles::stats::{EncoderMeter, StatsSample, Summary};
use crate::AppError;

/// One output of the encoder: its name, the output, and its place in the fan-out.
type Running = (String, Arc<Box<dyn Output>>, telebridge_media::TsConsumerId);

/// The encoder role while it runs: the pipeline, the outputs it feeds, the rate control and the
/// signal watch, stepped by the run loop's events.
pub(super) struct EncoderRun {
    pub(super) config: ValidConfig,
    pub(super) settings: EncoderSettings,
    /// The preview, the simulated cable and the bridge's echo the pipeline is wired to.
    pub(super) taps: telebridge_media::Taps,
    pub(super) fanout: TsFanout,
    /// `None` only inside [`Self::rebuild`], between the old pipeline and the new.
    pub(super) pipeline: Option<EncoderPipeline>,
    /// Outputs ask for a keyframe when a peer joins, through the proxy; the slot is refilled
    /// when the pipeline is rebuilt after a source change.
    pub(super) keyframe_slot: Arc<std::sync::Mutex<Arc<dyn Fn() + Send + Sync>>>,
    pub(super) keyframe_proxy: Arc<dyn Fn() + Send + Sync>,
    /// About one second of stream per output queue.
    pub(super) queue_bytes: u64,
    pub(super) outputs: Vec<Running>,
    /// The adaptive bitrate: a law per SRT connection.
    pub(super) rate: Option<crate::rate::RateControl>,
    pub(super) set_bitrate: Arc<dyn Fn(u32) + Send + Sync>,
    pub(super) set_frame_rate: Arc<dyn Fn(u32) + Send + Sync>,
    pub(super) started: Instant,
    pub(super) meter: EncoderMeter,
    pub(super) last_sample: Instant,
    /// The source is an HDMI bridge (its timings can be asked).
    pub(super) bridge: bool,
    pub(super) watch: SignalWatch,
    pub(super) on_sample: Option<SampleCallback>,
}

impl EncoderRun {
    /// Chooses the encoder, builds the pipeline (not started) and starts the configured outputs.
    pub(super) fn start(
        config: ValidConfig,
        taps: telebridge_media::Taps,
        on_sample: Option<SampleCallback>,
    ) -> Result<Self, AppError> {
        let choice = select_encoder(&config)?;
        let settings = EncoderSettings::from_config(&config, choice);
        let fanout = TsFanout::default();
        let pipeline = EncoderPipeline::build(&settings, &taps, fanout.clone())?;
        let queue_bytes =
            (u64::from(config.picture.bitrate_kbps + config.audio_bitrate_kbps) * 1000 / 8).max(256 * 1024);
        let keyframe_slot = Arc::new(std::sync::Mutex::new(pipeline.keyframe_requester()));
        let keyframe_proxy: Arc<dyn Fn() + Send + Sync> = {
            let slot = keyframe_slot.clone();
            Arc::new(move || {
                let request = slot.locked().clone();
                request();
            })
        };
        let bridge = matches!(pipeline.capture_plan(), Some(p) if p.kind == CaptureKind::HdmiBridge);
        let mut run = Self {
            set_bitrate: pipeline.bitrate_setter(),
            set_frame_rate: pipeline.frame_rate_setter(),
            pipeline: Some(pipeline),
            settings,
            taps,
            fanout,
            keyframe_slot,
            keyframe_proxy,
            queue_bytes,
            outputs: Vec::new(),
            rate: None,
            started: Instant::now(),
            meter: EncoderMeter::default(),
            last_sample: Instant::now(),
            bridge,
            watch: SignalWatch::new(0),
            on_sample,
            config,
        };
        for (name, spec) in run.config.outputs.clone() {
            let out = run.start_output(&name, &spec)?;
            run.attach(name, out);
            info!(output = %spec.label(), "output added");
        }
        Ok(run)
    }

    pub(super) fn pipeline(&self) -> &EncoderPipeline {
        self.pipeline.as_ref().expect("the encoder pipeline exists outside a rebuild")
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn start_output(&self, name: &str, spec: &OutputSpec) -> Result<Arc<Box<dyn Output>>, AppError> {
        crate::roles::outputs::start(name, spec, self.queue_bytes, self.keyframe_proxy.clone()).map(Arc::new)
    }

    /// Feeds `out` from the fan-out.
    fn attach(&mut self, name: String, out: Arc<Box<dyn Output>>) {
        let o = out.clone();
        let id = self.fanout.add(move |data| o.send(data));
        self.outputs.push((name, out, id));
    }

    /// The bridge's connection to the paired box: an SRT output that also receives.
    pub(super) fn add_peer(&mut self, link: Option<&crate::roles::peer::PeerLink>) -> Result<(), AppError> {
        let Some(link) = link else { return Ok(()) };
        let feed = link.feed.clone();
        let on_receive: telebridge_srt::output::Receiver = Arc::new(move |d: &[u8]| feed.receive(d));
        let out = telebridge_srt::SrtOutput::start_route(
            link.name.clone(),
            link.url.clone(),
            link.then.clone(),
            self.keyframe_proxy.clone(),
            Some(on_receive),
        )?;
        link.feed.set_output(out.status());
        let out: Arc<Box<dyn Output>> = Arc::new(Box::new(out));
        link.feed.set_sender(&out);
        self.attach(link.name.clone(), out);
        info!(link = %link.url, "connection to the paired box added");
        Ok(())
    }

    /// With an adaptive bitrate (or another law given), the rate control and the first pacing.
    pub(super) fn follow_links(&mut self, law: Option<crate::rate::LawFactory>, trace: Option<std::path::PathBuf>) {
        let picture = &self.config.picture;
        let factory = match (law, picture.bitrate_mode) {
            (Some(factory), _) => factory,
            (None, telebridge_config::BitrateMode::Adaptive) => {
                Box::new(|b| Box::new(crate::rate::Adaptive::new(b)) as Box<dyn crate::rate::RateLaw>)
            }
            (None, telebridge_config::BitrateMode::Fixed) => return,
        };
        let mut rc = crate::rate::RateControl::new(
            factory,
            picture.min_bitrate_kbps.min(picture.bitrate_kbps),
            picture.bitrate_kbps,
            self.config.audio_bitrate_kbps,
        )
        .with_frame_rate_step_down(picture.frame_rate_step_down);
        // TELEBRIDGE_RATE_TRACE=FILE records what the law saw and chose, step by step.
        if let Some(path) = trace.or_else(|| std::env::var_os("TELEBRIDGE_RATE_TRACE").map(Into::into)) {
            if let Err(e) = rc.record_to(&path) {
                warn!(error = %e, "cannot write the rate trace");
            }
        }
        if let Some(p) = rc.pacing_change() {
            pace(&self.outputs, p);
        }
        info!(
            min_kbps = picture.min_bitrate_kbps,
            max_kbps = picture.bitrate_kbps,
            "adaptive bitrate: following the SRT links"
        );
        self.rate = Some(rc);
    }

    /// Every rate step: each SRT connection's counters to the laws, their choice to the encoder
    /// and to SRT's pacing.
    pub(super) fn on_rate_tick(&mut self) {
        let Some(rc) = self.rate.as_mut() else { return };
        let links: Vec<(String, crate::rate::LinkSample)> = self
            .outputs
            .iter()
            .filter_map(|(name, o, _)| o.srt().map(|srt| (name, srt, o.bond_reading())))
            .flat_map(|(name, o, bond)| {
                o.stats_now().into_iter().map(move |(peer, st)| {
                    let key = match peer {
                        Some(p) => format!("{name} {p}"),
                        None => name.clone(),
                    };
                    let sample = link_sample(&st);
                    let sample = match bond {
                        Some(b) => sample.bonded(
                            b.delivered_ahead,
                            crate::rate::BondView {
                                queue_ms: b.queue.map(|q| q.as_secs_f64() * 1000.0),
                                lost_share: b.lost_share,
                            },
                        ),
                        None => sample,
                    };
                    (key, sample)
                })
            })
            .collect();
        let changed = rc.step(&links, self.started.elapsed());
        if let Some(p) = rc.pacing_change() {
            pace(&self.outputs, p);
        }
        if let Some(n) = rc.frame_rate_change() {
            (self.set_frame_rate)(n);
        }
        if let Some(video) = changed {
            (self.set_bitrate)(video);
            let status = rc.status();
            info!(video_kbps = video, reason = %status.reason, link = status.link.as_deref().unwrap_or("?"), "bitrate changed");
        }
    }

    /// A change asked for while running.
    pub(super) fn on_command(&mut self, cmd: EncoderCommand) {
        match cmd {
            EncoderCommand::AddOutput(name, spec) => match self.start_output(&name, &spec) {
                Ok(out) => {
                    self.attach(name, out);
                    info!(output = %spec.label(), "output added while running");
                    // Fed from now on: its first picture is the next keyframe.
                    self.pipeline().request_keyframe();
                }
                Err(e) => warn!(error = %e, "cannot add output"),
            },
            EncoderCommand::RemoveOutput(name) => {
                if let Some(i) = self.outputs.iter().position(|(n, _, _)| *n == name) {
                    let (_, out, id) = self.outputs.remove(i);
                    self.fanout.remove(id);
                    // Stopping joins the output's thread: do it off the async runtime.
                    if let Ok(out) = Arc::try_unwrap(out) {
                        tokio::task::spawn_blocking(move || out.stop());
                    }
                    info!(output = %name, "output removed while running");
                }
            }
            EncoderCommand::ToPeer(message) => {
                match self.outputs.iter().find(|(n, _, _)| n == crate::roles::peer::PEER_OUTPUT) {
                    Some((_, out, _)) => out.send(&message),
                    None => warn!("a message for the paired box, but no connection to it"),
                }
            }
        }
    }

    /// After every event: the pipeline's errors, once a second the sample and the signal's
    /// verdict, and a rebuild when the source asks for one. `Some` is the failure that ends the
    /// run; `Err`, a rebuild that could not start.
    pub(super) fn on_tick(&mut self) -> Result<Option<AppError>, AppError> {
        // An HDMI source that changed format (seen by a look, or ending the capture before the
        // next one), or locked again without frames: apply its timings and rebuild the capture
        // pipeline; the outputs and their connections stay.
        let mut rebuild = None;
        if let Some(err) = pipeline_error(self.pipeline()) {
            match if self.bridge { self.watch.capture_error(bridge_link(&self.config)) } else { None } {
                Some(why) => rebuild = Some(format!("{why} (the capture ended: {err})")),
                None => {
                    error!(%err, "encoder pipeline failed");
                    return Ok(Some(err));
                }
            }
        } else if self.last_sample.elapsed() >= Duration::from_secs(1) {
            rebuild = self.sample();
        }
        if let Some(why) = rebuild {
            self.rebuild(&why)?;
        }
        Ok(None)
    }

    /// The one-second sample, handed to the callback; the signal watch's verdict on a rebuild.
    fn sample(&mut self) -> Option<String> {
        let interval = self.last_sample.elapsed();
        self.last_sample = Instant::now();
        let counters = self.pipeline().counters();
        let link = if self.bridge { bridge_link(&self.config) } else { None };
        let now = self.now_ms();
        let verdict = self.watch.look(counters.frames_captured.load(std::sync::atomic::Ordering::Relaxed), link, now);
        match verdict.changed {
            Some(true) => info!("input signal back"),
            Some(false) => warn!("input signal lost: no frames from the source"),
            None => {}
        }
        let sample = StatsSample {
            t: (self.started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            signal: self.watch.present(),
            encoder: self.meter.sample(&self.settings.encoder, &counters, interval),
            outputs: self.outputs.iter().map(|(_, o, _)| o.snapshot()).collect(),
            rate: self.rate.as_ref().map(|r| r.status().clone()),
        };
        if let Some(cb) = &self.on_sample {
            cb(&sample);
        }
        verdict.restart
    }

    /// A new capture pipeline for the same outputs, at the rate chosen.
    fn rebuild(&mut self, why: &str) -> Result<(), AppError> {
        warn!(reason = %why, "rebuilding the capture pipeline");
        if let Some(old) = self.pipeline.take() {
            old.stop(Duration::from_millis(200));
        }
        let pipeline = EncoderPipeline::build(&self.settings, &self.taps, self.fanout.clone())?;
        *self.keyframe_slot.locked() = pipeline.keyframe_requester();
        self.set_bitrate = pipeline.bitrate_setter();
        self.set_frame_rate = pipeline.frame_rate_setter();
        // The new encoder starts at the configured bitrate: give it the one chosen.
        if let Some(rc) = &self.rate {
            (self.set_bitrate)(rc.status().video_kbps);
            (self.set_frame_rate)(rc.status().one_frame_in);
        }
        pipeline.start()?;
        self.pipeline = Some(pipeline);
        // The new pipeline counts from zero.
        self.meter = EncoderMeter::default();
        self.watch = SignalWatch::new(self.now_ms());
        Ok(())
    }

    /// Stops everything; the summary, or the failure that ended the run.
    pub(super) fn finish(mut self, failure: Option<AppError>) -> Result<Summary, AppError> {
        let pipeline = self.pipeline.take().expect("the encoder pipeline exists outside a rebuild");
        pipeline.stop(Duration::from_secs(2));
        let elapsed = self.started.elapsed();
        let counters = pipeline.counters();
        let mut encoder = EncoderMeter::default().sample(&self.settings.encoder, &counters, elapsed);
        encoder.frames_encoded = counters.frames_encoded.load(std::sync::atomic::Ordering::Relaxed);
        let outputs = self.outputs.iter().map(|(_, o, _)| o.snapshot()).collect();
        drop(pipeline);
        drop(self.fanout);
        for (_, o, _) in self.outputs {
            if let Ok(o) = Arc::try_unwrap(o) {
                o.stop();
            }
        }
        if let Some(err) = failure {
            return Err(err);
        }
        Ok(Summary { duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0, encoder, outputs })
    }
}

/// Paces every SRT output as the rate control says.
/// libsrt's counters of one connection as the rate law reads them.
fn link_sample(s: &telebridge_srt::SrtStats) -> crate::rate::LinkSample {
    crate::rate::LinkSample {
        rtt_ms: s.rtt_ms,
        send_buffer_ms: s.send_buffer_ms as f64,
        send_buffer_packets: s.send_buffer_packets,
        flight_packets: s.flight_packets,
        packets_sent: s.packets_sent,
        packets_retransmitted: s.packets_retransmitted,
        bytes_sent: s.bytes_sent,
        bytes_retransmitted: s.bytes_retransmitted,
        packets_dropped: s.packets_dropped,
        packets_lost: s.packets_lost,
        bandwidth_mbps: s.bandwidth_mbps,
        send_rate_mbps: s.send_rate_mbps,
        acks_received: s.acks_received,
        latency_ms: s.negotiated_latency_ms as f64,
        delivered_ahead: 0,
        bond: None,
    }
}

/// The rate control's pacing to every SRT output.
fn pace(outputs: &[Running], pacing: crate::rate::Pacing) {
    for (_, o, _) in outputs {
        if let Some(o) = o.srt() {
            o.pace(pacing);
        }
    }
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
            return Some(telebridge_media::MediaError::from_bus_error(err).into());
        }
    }
    None
}
