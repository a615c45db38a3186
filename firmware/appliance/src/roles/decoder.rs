//! The decoder role: SRT in, decode, show; a slate saying what the box waits for whenever no
//! picture arrives; glass-to-glass latency from the timecodes the test source burns in.
//!
//! ```text
//! SrtInput (srtsrc ! appsink) ──TS──► DecodePipeline (restarted per connection) ──frames──► Display (never torn down)
//!                                              ├── timecode reader ──► LatencyWindow
//!                                              └── flash and beep readers ──► AvMeter (lip sync)
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::SrtUrl;
use telebridge_media::decode_pipeline::{AudioOut, DecodePipeline, DecoderCounters};
use telebridge_media::decoder_choice::{choose_decoder, DecoderChoice};
use telebridge_media::display::{Display, SinkKind};
use telebridge_media::timecode;
use telebridge_media::watched::{Heartbeat, Watched};
use telebridge_media::Platform;
use telebridge_srt::{InputStatus, SrtInput};
use tracing::{info, warn};

mod feed;

use super::decoder_stop::{retire, RetireTo, Retired};
pub use crate::roles::decoder_stats::{AvEvent, DecodeSample, DecodeSummary, DecoderStats, DisplayStats};
pub use crate::roles::slate::{bridge_slate_text, slate_text, stream_problem, Arrived};
use crate::AppError;
use feed::{Decoding, Loop, Meters, Restarts};

/// Receives each one-second decoder sample.
pub type DecodeSampleCallback = Arc<dyn Fn(&DecodeSample) + Send + Sync>;

/// How to run the decoder.
#[derive(Clone)]
pub struct DecodeOptions {
    /// The box's name, for the slate.
    pub name: String,
    /// Where the stream comes from.
    pub input: SrtUrl,
    /// Where the picture goes.
    pub sink: SinkKind,
    /// Where the sound goes.
    pub audio: AudioOut,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Called with each one-second sample.
    pub on_sample: Option<DecodeSampleCallback>,
    /// Re-encode what is shown and send it here (round-trip measurement: A -> B -> A).
    pub loop_to: Option<SrtUrl>,
    /// The bridge: the stream comes from the paired box on the connection `input` names, which
    /// the bridge's encoder holds, not from an SRT input of the decoder's own.
    pub peer: Option<Arc<super::peer::PeerFeed>>,
    /// The bridge: each timecode read goes here, for this box's encoder to return it.
    pub echo: Option<timecode::Echo>,
    /// The bridge: the paired box's name, for the slate.
    pub peer_name: Option<String>,
    /// Keep a small JPEG of what is shown here, once a second (the panel's preview).
    pub preview: Option<telebridge_media::PreviewSlot>,
    /// Where the received sound's meter writes (the panel's meters); `None` meters nothing.
    pub levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
    /// Where what arrives is offered to the live monitor's viewers; `None` offers it to none.
    pub monitor: Option<Arc<telebridge_media::monitor::MonitorHub>>,
    /// The tally: while set, the slate is framed in red (the box is on air).
    pub on_air: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl std::fmt::Debug for DecodeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeOptions").field("input", &self.input).field("sink", &self.sink).finish_non_exhaustive()
    }
}

/// Chooses the decoder and logs why.
pub fn select_decoder() -> Result<DecoderChoice, AppError> {
    let choice = choose_decoder(&Platform::detect(), &telebridge_media::has_element)
        .ok_or_else(|| AppError::BadInput("no H.264 decoder: install gstreamer1.0-libav".into()))?;
    info!(decoder = choice.element, reason = %choice.reason, "H.264 decoder chosen");
    Ok(choice)
}

/// Where the stream comes from: the decoder's own SRT input, or the bridge's connection.
enum Source {
    Srt(SrtInput),
    Peer(Arc<super::peer::PeerFeed>),
}

impl Source {
    fn status(&self) -> InputStatus {
        match self {
            Source::Srt(i) => i.status().borrow().clone(),
            Source::Peer(f) => f.status(),
        }
    }
}

/// How long the stats loop waits for one of its locks before it logs who holds it and goes on.
const STATS_LOCK_WAIT: Duration = Duration::from_millis(200);
/// How long a turn of the stats loop may take before its stage is logged (a turn takes well
/// under a millisecond; it waits 250 ms for the next).
const STATS_STALL: Duration = Duration::from_secs(2);
/// How long the summary at the end waits for one.
const END_LOCK_WAIT: Duration = Duration::from_secs(1);

/// Runs the decoder until `duration` elapses or `shutdown` completes.
pub async fn run_decoder(
    options: DecodeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<DecodeSummary, AppError> {
    telebridge_media::init()?;
    crate::logs::route_library_logs();
    let mut run = DecoderRun::start(options)?;
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        run.heart.beat("waiting for the next tick");
        tokio::select! {
            _ = &mut shutdown => { info!("stopping on request"); break; }
            _ = tick.tick() => {}
        }
        if run.options.duration.is_some_and(|d| run.started.elapsed() >= d) {
            break;
        }
        run.on_tick();
    }
    Ok(run.finish())
}

/// The decoder role while it runs: the input, the display, the current decode pipeline and
/// the meters, and what the stats loop keeps from one second to the next.
struct DecoderRun {
    options: DecodeOptions,
    decoder: DecoderChoice,
    display: Arc<Display>,
    meters: Meters,
    decoding: Arc<Watched<Decoding>>,
    current: Arc<AtomicU64>,
    retired: Retired<DecodePipeline>,
    retire_to: RetireTo<DecodePipeline>,
    input: Source,
    looped: Option<Loop>,
    started: Instant,
    /// A turn that stops anywhere (not only at a lock) is logged with the stage it stopped in.
    heart: Heartbeat,
    warned_stuck: bool,
    last_sample: Instant,
    last_frames: u64,
    /// When the last second with a frame decoded ended (ms since the Unix epoch).
    last_frame_unix_ms: Option<u64>,
    last_arrived: Arrived,
    /// Seconds the slate was shown.
    slate_s: u64,
    /// Why a stream that arrives shows no picture.
    problem: Option<String>,
    /// What arrives, offered to the live monitor while the decoder runs.
    _offered: Option<telebridge_media::monitor::Publication>,
}

impl DecoderRun {
    /// Chooses the decoder, shows the slate, and starts the input (or takes the bridge's feed).
    fn start(options: DecodeOptions) -> Result<Self, AppError> {
        let decoder = select_decoder()?;
        let first_text = slate(&options, false, None);
        let display = Arc::new(Display::start(options.sink.clone(), (1280, 720), first_text)?);
        if let Some(board) = &options.levels {
            display.set_levels(board.clone());
        }
        let meters = Meters::new();
        let decoding = Arc::new(Watched::new("decoding", Decoding::new()));
        let looped = options.loop_to.as_ref().map(Loop::start).transpose()?;
        let on_frame: telebridge_media::decode_pipeline::FrameConsumer = {
            let d = display.clone();
            let input = looped.as_ref().and_then(|l| l.pipeline.frame_input().cloned());
            Arc::new(move |s| {
                d.show(s);
                if let Some(i) = &input {
                    telebridge_media::display::push_fresh(i, s);
                }
            })
        };
        let retired = Retired::<DecodePipeline>::start()?;
        let current = Arc::new(AtomicU64::new(0));
        // What arrives, as it arrives, for the live monitor's viewers.
        let received = telebridge_media::TsFanout::default();
        let offered = options.monitor.as_ref().map(|hub| {
            let tap = telebridge_media::monitor::Tap { fanout: received.clone(), keyframe: None };
            hub.publish(telebridge_contract::feed::Feed::Received, tap)
        });
        let on_data = Restarts {
            received,
            decoding: decoding.clone(),
            meters: meters.clone(),
            decoder: decoder.clone(),
            audio: options.audio.clone(),
            taps: telebridge_media::decode_pipeline::DecodeTaps {
                preview: options.preview.clone(),
                levels: options.levels.clone(),
            },
            retire_to: retired.sender(),
            current: current.clone(),
            on_frame,
            on_timecode: meters.on_timecode(options.echo.clone()),
            on_mark: meters.on_mark(),
        }
        .consumer();
        let input = match &options.peer {
            Some(feed) => {
                feed.attach(on_data);
                Source::Peer(feed.clone())
            }
            None => Source::Srt(SrtInput::start(options.input.clone(), on_data)?),
        };
        info!(input = %options.input, sink = options.sink.name(), "decoder running");
        Ok(Self {
            _offered: offered,
            retire_to: retired.sender(),
            retired,
            decoder,
            display,
            meters,
            decoding,
            current,
            input,
            looped,
            options,
            started: Instant::now(),
            heart: Heartbeat::watch("decoder stats", STATS_STALL),
            warned_stuck: false,
            last_sample: Instant::now(),
            last_frames: 0,
            last_frame_unix_ms: None,
            last_arrived: Arrived::default(),
            slate_s: 0,
            problem: None,
        })
    }

    /// Every 250 ms: a failed pipeline retired, a stuck stop told, the slate's words, and once
    /// a second the sample. The loop's locks are taken with a limit: one held elsewhere is
    /// named with its holder in the log and this turn goes on without it (the stats loop never
    /// stops).
    fn on_tick(&mut self) {
        self.heart.beat("checking the decoder");
        if let Some(mut d) = self.decoding.lock_within(STATS_LOCK_WAIT) {
            if let Some(err) = d.pipeline.as_ref().and_then(|p| p.error()) {
                warn!(error = %err, "decoder failed; restarting it with the next data");
                self.current.fetch_add(1, Ordering::SeqCst);
                retire(&self.retire_to, d.pipeline.take());
            }
        }
        self.heart.beat("checking the retired decoders");
        match self.retired.stuck_for() {
            Some(t) if t > Duration::from_secs(5) && !self.warned_stuck => {
                warn!(for_ms = t.as_millis() as u64, "an old decoder is not stopping; the new one runs beside it");
                self.warned_stuck = true;
            }
            None => self.warned_stuck = false,
            _ => {}
        }
        self.heart.beat("reading the input's status");
        let st = self.input.status();
        self.heart.beat("setting the slate");
        let receiving = st.state == telebridge_srt::input::InputState::Receiving;
        let reason = self.problem.as_deref().or(st.reason.as_deref());
        // "A caller is connected" only while a stream arrives that shows no picture: a sender
        // that just went away still counts as receiving for up to half a second.
        self.display.set_slate_text(&slate(&self.options, self.problem.is_some(), reason));
        if let Some(on_air) = &self.options.on_air {
            self.display.set_on_air(on_air.load(std::sync::atomic::Ordering::Relaxed));
        }
        if self.last_sample.elapsed() >= Duration::from_secs(1) {
            self.sample(st, receiving);
        }
    }

    /// The one-second sample: the stream's problem looked at again, and everything measured.
    fn sample(&mut self, st: InputStatus, receiving: bool) {
        let secs = self.last_sample.elapsed().as_secs_f64();
        self.last_sample = Instant::now();
        let counters = &self.meters.counters;
        let frames = counters.frames_decoded.load(Ordering::Relaxed);
        let now = Arrived { bytes: st.bytes, not_ts: st.not_ts_packets, frames };
        let last_second = Arrived {
            bytes: now.bytes.saturating_sub(self.last_arrived.bytes),
            not_ts: now.not_ts.saturating_sub(self.last_arrived.not_ts),
            frames: now.frames.saturating_sub(self.last_arrived.frames),
        };
        self.last_arrived = now;
        let found = stream_problem(receiving, last_second, &counters.unsupported());
        if found != self.problem {
            match &found {
                Some(p) => warn!(problem = %p, "a stream arrives but shows no picture"),
                None if self.problem.is_some() => info!("the stream's problem is gone"),
                None => {}
            }
            self.problem = found;
        }
        let fps = ((frames - self.last_frames) as f64 / secs * 10.0).round() / 10.0;
        if frames > self.last_frames {
            self.last_frame_unix_ms = Some(timecode::now_us() / 1000);
        }
        self.last_frames = frames;
        self.heart.beat("making the sample");
        let display = &self.display;
        let showing_slate = display.showing_slate();
        if showing_slate {
            self.slate_s += 1;
        }
        let m = &self.meters;
        let sample = DecodeSample {
            t: (self.started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            input: st,
            decoder: DecoderStats {
                last_frame_unix_ms: self.last_frame_unix_ms,
                ..decoder_stats(&self.decoder, counters, fps, self.problem.clone())
            },
            display: DisplayStats {
                sink: self.options.sink.name().to_string(),
                showing: if showing_slate { "slate" } else { "video" },
                slate: display.slate_text(),
                slate_since_unix_ms: display.transitions().0,
                video_since_unix_ms: display.transitions().1,
            },
            latency: m.recent.lock_within(STATS_LOCK_WAIT).and_then(|r| r.summary(Instant::now())),
            round_trip: m.round_trip.lock_within(STATS_LOCK_WAIT).and_then(|r| r.recent.summary(Instant::now())),
            av_offset: m.av.lock_within(STATS_LOCK_WAIT).and_then(|a| a.summary(m.since())),
            av_events: m
                .av_events
                .lock_within(STATS_LOCK_WAIT)
                .map(|mut e| e.list(timecode::now_us() / 1000))
                .unwrap_or_default(),
            loop_output: self.looped.as_ref().map(|l| l.output.status().borrow().clone()),
        };
        if let Some(cb) = &self.options.on_sample {
            self.heart.beat("handing the sample on");
            cb(&sample);
        }
    }

    /// Stops the input, the loop and the pipelines; the summary of the run.
    fn finish(self) -> DecodeSummary {
        // The loop has ended: what follows (stopping the pipelines) is not a stall of it.
        drop(self.heart);
        let elapsed = self.started.elapsed();
        let final_input = self.input.status();
        if let Source::Srt(i) = self.input {
            i.stop();
        }
        if let Some(l) = self.looped {
            l.pipeline.stop(Duration::from_millis(500));
        }
        retire(&self.retire_to, self.decoding.lock_within(END_LOCK_WAIT).and_then(|mut d| d.pipeline.take()));
        self.retired.finish(Duration::from_secs(2));
        let frames = self.meters.counters.frames_decoded.load(Ordering::Relaxed);
        let m = &self.meters;
        let fps = ((frames as f64 / elapsed.as_secs_f64().max(0.001)) * 10.0).round() / 10.0;
        let summary = DecodeSummary {
            duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
            decoder: decoder_stats(&self.decoder, &m.counters, fps, self.problem),
            input: final_input,
            latency: m.whole.lock_within(END_LOCK_WAIT).and_then(|w| w.summary()),
            round_trip: m.round_trip.lock_within(END_LOCK_WAIT).and_then(|r| r.whole.summary()),
            av_offset: m.av.lock_within(END_LOCK_WAIT).and_then(|a| a.whole_summary()),
            slate_s: self.slate_s,
        };
        if let Ok(mut d) = Arc::try_unwrap(self.display) {
            d.stop();
        }
        summary
    }
}

/// The slate's words: what the box waits for.
fn slate(options: &DecodeOptions, receiving: bool, reason: Option<&str>) -> String {
    match &options.peer_name {
        Some(peer) => bridge_slate_text(&options.name, peer, &options.input, receiving, reason),
        None => slate_text(&options.name, &options.input, receiving, reason),
    }
}

/// The decoder's figures now.
fn decoder_stats(decoder: &DecoderChoice, c: &DecoderCounters, fps: f64, problem: Option<String>) -> DecoderStats {
    DecoderStats {
        element: decoder.element.to_string(),
        reason: decoder.reason.clone(),
        fps,
        frames_decoded: c.frames_decoded.load(Ordering::Relaxed),
        frames_missing: c.frames_missing.load(Ordering::Relaxed),
        frames_unread: c.frames_unread.load(Ordering::Relaxed),
        audio_frames: c.audio_frames.load(Ordering::Relaxed),
        width: c.width.load(Ordering::Relaxed),
        height: c.height.load(Ordering::Relaxed),
        problem,
        last_frame_unix_ms: None,
    }
}
