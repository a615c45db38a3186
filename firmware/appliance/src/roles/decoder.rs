//! The decoder role: SRT in, decode, show; a slate saying what the box waits for whenever no
//! picture arrives; glass-to-glass latency from the timecodes the test source burns in.
//!
//! ```text
//! SrtInput (srtsrc ! appsink) ──TS──► DecodePipeline (restarted per connection) ──frames──► Display (never torn down)
//!                                              ├── timecode reader ──► LatencyWindow
//!                                              └── flash and beep readers ──► AvMeter (lip sync)
//! ```

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::{Duration, Instant};
use telebridge_media::watched::{Heartbeat, Watched};

use telebridge_config::Config;
use telebridge_config::SrtUrl;
use telebridge_media::decode_pipeline::{AudioOut, DecodePipeline, DecoderCounters};
use telebridge_media::decoder_choice::{choose_decoder, DecoderChoice};
use telebridge_media::display::{Display, SinkKind};
use telebridge_media::latency::{LatencyHistogram, LatencyWindow};
use telebridge_media::lipsync::AvMeter;
use telebridge_media::timecode;
use telebridge_media::Platform;
use telebridge_media::{EncoderPipeline, EncoderSettings, TsFanout};
use telebridge_srt::{InputStatus, SrtInput, SrtOutput};
use tracing::{info, warn};

use super::decoder_stop::{retire, Retired};
use crate::decoder_stats::RoundTrip;
pub use crate::decoder_stats::{AvEvent, DecodeSample, DecodeSummary, DecoderStats, DisplayStats};
pub use crate::slate::{bridge_slate_text, slate_text, stream_problem, Arrived};
use crate::AppError;

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

/// The re-encoder of `--loop-to`: the shown frames, encoded again and sent on.
struct Loop {
    pipeline: EncoderPipeline,
    output: Arc<SrtOutput>,
}

fn start_loop(url: &SrtUrl) -> Result<Loop, AppError> {
    let mut config = Config::default();
    config.audio.codec = "none".into();
    let valid = config.validate().map_err(|e| AppError::Runtime(e.to_string()))?;
    let mut settings = EncoderSettings::from_config(&valid, crate::select_encoder(&valid)?);
    settings.frames_from_app = true;
    let fanout = TsFanout::default();
    let pipeline = EncoderPipeline::build(&settings, fanout.clone())?;
    let output = Arc::new(
        SrtOutput::start("loop".into(), url.clone(), pipeline.keyframe_requester())
            .map_err(|e| AppError::BadInput(e.to_string()))?,
    );
    let o = output.clone();
    fanout.add(move |b| o.push(b));
    pipeline.start()?;
    info!(output = %url, "looping the picture back");
    Ok(Loop { pipeline, output })
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

struct Decoding {
    pipeline: Option<DecodePipeline>,
    last_push: Option<Instant>,
    timeline: telebridge_media::timeline::TimelineWatch,
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
    telebridge_srt::install_log_hook();
    let decoder = select_decoder()?;
    let slate = |receiving: bool, reason: Option<&str>| match &options.peer_name {
        Some(peer) => bridge_slate_text(&options.name, peer, &options.input, receiving, reason),
        None => slate_text(&options.name, &options.input, receiving, reason),
    };
    let first_text = slate(false, None);
    let display = Arc::new(Display::start(options.sink.clone(), (1280, 720), first_text)?);
    let counters = Arc::new(DecoderCounters::default());
    let recent = Arc::new(Watched::new("latency window", LatencyWindow::new(Duration::from_secs(5))));
    let whole = Arc::new(Watched::new("latency histogram", LatencyHistogram::default()));
    let decoding =
        Arc::new(Watched::new("decoding", Decoding { pipeline: None, last_push: None, timeline: Default::default() }));

    let looped = options.loop_to.as_ref().map(start_loop).transpose()?;
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
    let round_trip = Arc::new(Watched::new("round trip", RoundTrip::default()));
    let clock = Instant::now();
    let since = move || clock.elapsed().as_nanos() as u64;
    let av = Arc::new(Watched::new("lip-sync meter", AvMeter::new(Duration::from_secs(10))));
    let av_events = Arc::new(Watched::new("lip-sync events", crate::decoder_stats::RecentAvEvents::default()));
    let on_mark: telebridge_media::decode_pipeline::MarkConsumer = {
        let (av, av_events) = (av.clone(), av_events.clone());
        Arc::new(move |mark| {
            let mut m = av.lock();
            tracing::trace!(?mark, "lip-sync mark");
            let event = match mark {
                telebridge_media::decode_pipeline::AvMark::Flash(t) => m.flash(t, since()),
                telebridge_media::decode_pipeline::AvMark::Beep(t) => m.beep(t, since()),
            };
            if let Some(e) = event {
                tracing::debug!(offset_ms = e.offset_ms, "lip sync");
                av_events.lock().push(AvEvent { offset_ms: e.offset_ms, at_unix_ms: timecode::now_us() / 1000 });
            }
        })
    };
    let on_timecode: telebridge_media::decode_pipeline::TimecodeConsumer = {
        let (recent, whole, echo_to, round_trip) =
            (recent.clone(), whole.clone(), options.echo.clone(), round_trip.clone());
        Arc::new(move |tc, echo| {
            let (now_us, now) = (timecode::now_us(), Instant::now());
            let ms = tc.age_us(now_us) as f64 / 1000.0;
            if ms < 60_000.0 {
                recent.lock().push(now, ms);
                whole.lock().push(ms);
            }
            if let Some(e) = &echo_to {
                e.heard(tc, now);
            }
            if let Some(mine) = echo {
                round_trip.lock().heard(mine, now_us, now);
            }
        })
    };
    let retired = Retired::<DecodePipeline>::start()?;
    // Which pipeline is the current one: an old pipeline's streaming threads may still hand
    // over a frame or a mark while it is being stopped, and those must not reach the display or
    // the lip-sync meter of the new stream.
    let current = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let on_data: telebridge_srt::input::TsConsumer = {
        let (decoding, counters, decoder, audio, preview, av, retire_to, current) = (
            decoding.clone(),
            counters.clone(),
            decoder.clone(),
            options.audio.clone(),
            options.preview.clone(),
            av.clone(),
            retired.sender(),
            current.clone(),
        );
        Arc::new(move |data: &[u8]| {
            let mut d = decoding.lock();
            // A gap means a new connection or a sender restart, and so does the stream's clock
            // starting again: start the decoder afresh.
            let stale = d.last_push.is_none_or(|t| t.elapsed() > Duration::from_millis(500));
            let restarted = d.timeline.feed(data);
            if restarted {
                info!("the sender's stream started again; so does the decoder");
            }
            if d.pipeline.is_none() || stale || restarted {
                let generation = current.fetch_add(1, Ordering::SeqCst) + 1;
                retire(&retire_to, d.pipeline.take());
                counters.new_connection();
                av.lock().new_stream();
                let (frame, timecode, mark) = (on_frame.clone(), on_timecode.clone(), on_mark.clone());
                let live = {
                    let current = current.clone();
                    move || current.load(Ordering::SeqCst) == generation
                };
                let (l1, l2, l3) = (live.clone(), live.clone(), live);
                let started = DecodePipeline::start(
                    &decoder,
                    &audio,
                    counters.clone(),
                    Arc::new(move |s| {
                        if l1() {
                            frame(s)
                        }
                    }),
                    Arc::new(move |tc, echo| {
                        if l2() {
                            timecode(tc, echo)
                        }
                    }),
                    Arc::new(move |m| {
                        if l3() {
                            mark(m)
                        }
                    }),
                    preview.clone(),
                );
                match started {
                    Ok(p) => {
                        // The tables that came with or before the new clock, for the new decoder.
                        let tables = d.timeline.tables();
                        if restarted && !tables.is_empty() {
                            p.push(&gst::Buffer::from_slice(tables));
                        }
                        d.pipeline = Some(p)
                    }
                    Err(e) => warn!(error = %e, "cannot start the decoder"),
                }
            }
            d.last_push = Some(Instant::now());
            if let Some(p) = &d.pipeline {
                p.push(&gst::Buffer::from_slice(data.to_vec()));
            }
        })
    };
    let input = match &options.peer {
        Some(feed) => {
            feed.attach(on_data);
            Source::Peer(feed.clone())
        }
        None => {
            Source::Srt(SrtInput::start(options.input.clone(), on_data).map_err(|e| AppError::BadInput(e.to_string()))?)
        }
    };
    let started = Instant::now();
    info!(input = %options.input, sink = options.sink.name(), "decoder running");

    tokio::pin!(shutdown);
    let retire_to = retired.sender();
    let mut warned_stuck = false;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    // A turn that stops anywhere (not only at a lock) is logged with the stage it stopped in.
    let heart = Heartbeat::watch("decoder stats", STATS_STALL);
    let mut last_sample = Instant::now();
    let mut last_frames = 0u64;
    let mut slate_s = 0u64;
    let mut last_arrived = Arrived::default();
    let mut problem: Option<String> = None;
    let stats = |fps: f64, problem: Option<String>| DecoderStats {
        element: decoder.element.to_string(),
        reason: decoder.reason.clone(),
        fps,
        frames_decoded: counters.frames_decoded.load(Ordering::Relaxed),
        frames_missing: counters.frames_missing.load(Ordering::Relaxed),
        frames_unread: counters.frames_unread.load(Ordering::Relaxed),
        audio_frames: counters.audio_frames.load(Ordering::Relaxed),
        width: counters.width.load(Ordering::Relaxed),
        height: counters.height.load(Ordering::Relaxed),
        problem,
    };
    loop {
        heart.beat("waiting for the next tick");
        tokio::select! {
            _ = &mut shutdown => { info!("stopping on request"); break; }
            _ = tick.tick() => {}
        }
        heart.beat("checking the decoder");
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        // The loop's locks are taken with a limit: one held elsewhere is named with its holder
        // in the log and this turn goes on without it (the stats loop never stops).
        if let Some(mut d) = decoding.lock_within(STATS_LOCK_WAIT) {
            if let Some(err) = d.pipeline.as_ref().and_then(|p| p.error()) {
                warn!(error = %err, "decoder failed; restarting it with the next data");
                current.fetch_add(1, Ordering::SeqCst);
                retire(&retire_to, d.pipeline.take());
            }
        }
        heart.beat("checking the retired decoders");
        match retired.stuck_for() {
            Some(t) if t > Duration::from_secs(5) && !warned_stuck => {
                warn!(for_ms = t.as_millis() as u64, "an old decoder is not stopping; the new one runs beside it");
                warned_stuck = true;
            }
            None => warned_stuck = false,
            _ => {}
        }
        heart.beat("reading the input's status");
        let st = input.status();
        heart.beat("setting the slate");
        let receiving = st.state == telebridge_srt::input::InputState::Receiving;
        let reason = problem.as_deref().or(st.reason.as_deref());
        // "A caller is connected" only while a stream arrives that shows no picture: a sender
        // that just went away still counts as receiving for up to half a second.
        display.set_slate_text(&slate(problem.is_some(), reason));
        if last_sample.elapsed() >= Duration::from_secs(1) {
            let secs = last_sample.elapsed().as_secs_f64();
            last_sample = Instant::now();
            let frames = counters.frames_decoded.load(Ordering::Relaxed);
            let now = Arrived { bytes: st.bytes, not_ts: st.not_ts_packets, frames };
            let last_second = Arrived {
                bytes: now.bytes.saturating_sub(last_arrived.bytes),
                not_ts: now.not_ts.saturating_sub(last_arrived.not_ts),
                frames: now.frames.saturating_sub(last_arrived.frames),
            };
            last_arrived = now;
            let found = stream_problem(receiving, last_second, &counters.unsupported());
            if found != problem {
                match &found {
                    Some(p) => warn!(problem = %p, "a stream arrives but shows no picture"),
                    None if problem.is_some() => info!("the stream's problem is gone"),
                    None => {}
                }
                problem = found;
            }
            let fps = ((frames - last_frames) as f64 / secs * 10.0).round() / 10.0;
            last_frames = frames;
            heart.beat("making the sample");
            let showing_slate = display.showing_slate();
            if showing_slate {
                slate_s += 1;
            }
            let sample = DecodeSample {
                t: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                input: st,
                decoder: stats(fps, problem.clone()),
                display: DisplayStats {
                    sink: options.sink.name().to_string(),
                    showing: if showing_slate { "slate" } else { "video" },
                    slate: display.slate_text(),
                    slate_since_unix_ms: display.transitions().0,
                    video_since_unix_ms: display.transitions().1,
                },
                latency: recent.lock_within(STATS_LOCK_WAIT).and_then(|r| r.summary(Instant::now())),
                round_trip: round_trip.lock_within(STATS_LOCK_WAIT).and_then(|r| r.recent.summary(Instant::now())),
                av_offset: av.lock_within(STATS_LOCK_WAIT).and_then(|a| a.summary(since())),
                av_events: av_events
                    .lock_within(STATS_LOCK_WAIT)
                    .map(|mut e| e.list(timecode::now_us() / 1000))
                    .unwrap_or_default(),
                loop_output: looped.as_ref().map(|l| l.output.status().borrow().clone()),
            };
            if let Some(cb) = &options.on_sample {
                heart.beat("handing the sample on");
                cb(&sample);
            }
        }
    }
    // The loop has ended: what follows (stopping the pipelines) is not a stall of it.
    drop(heart);
    let elapsed = started.elapsed();
    let final_input = input.status();
    if let Source::Srt(i) = input {
        i.stop();
    }
    if let Some(l) = looped {
        l.pipeline.stop(Duration::from_millis(500));
    }
    retire(&retire_to, decoding.lock_within(END_LOCK_WAIT).and_then(|mut d| d.pipeline.take()));
    retired.finish(Duration::from_secs(2));
    let frames = counters.frames_decoded.load(Ordering::Relaxed);
    let summary = DecodeSummary {
        duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        decoder: stats(((frames as f64 / elapsed.as_secs_f64().max(0.001)) * 10.0).round() / 10.0, problem),
        input: final_input,
        latency: whole.lock_within(END_LOCK_WAIT).and_then(|w| w.summary()),
        round_trip: round_trip.lock_within(END_LOCK_WAIT).and_then(|r| r.whole.summary()),
        av_offset: av.lock_within(END_LOCK_WAIT).and_then(|a| a.whole_summary()),
        slate_s,
    };
    if let Ok(mut d) = Arc::try_unwrap(display) {
        d.stop();
    }
    Ok(summary)
}
