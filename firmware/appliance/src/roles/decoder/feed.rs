//! What the decoder role hands the streaming threads: the TS consumer that starts a decode
//! pipeline per stream ([`Restarts`]), the meters its frames, timecodes and marks go to
//! ([`Meters`]), and the re-encoder of `--loop-to` ([`Loop`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::{Config, SrtUrl};
use telebridge_media::decode_pipeline::{
    AudioOut, AvMark, DecodePipeline, DecoderCounters, FrameConsumer, MarkConsumer, TimecodeConsumer,
};
use telebridge_media::decoder_choice::DecoderChoice;
use telebridge_media::latency::{LatencyHistogram, LatencyWindow};
use telebridge_media::lipsync::AvMeter;
use telebridge_media::timecode;
use telebridge_media::watched::Watched;
use telebridge_media::{EncoderPipeline, EncoderSettings, TsFanout};
use telebridge_srt::SrtOutput;
use tracing::{info, warn};

use crate::roles::decoder_stats::{AvEvent, RecentAvEvents, RoundTrip};
use crate::roles::decoder_stop::{retire, RetireTo};
use crate::AppError;

/// The re-encoder of `--loop-to`: the shown frames, encoded again and sent on.
pub(super) struct Loop {
    pub(super) pipeline: EncoderPipeline,
    pub(super) output: Arc<SrtOutput>,
}

impl Loop {
    pub(super) fn start(url: &SrtUrl) -> Result<Self, AppError> {
        let mut config = Config::default();
        config.audio.codec = "none".into();
        let valid = config.validate()?;
        let mut settings = EncoderSettings::from_config(&valid, crate::select_encoder(&valid)?);
        settings.frames_from_app = true;
        let fanout = TsFanout::default();
        let pipeline = EncoderPipeline::build(&settings, &telebridge_media::Taps::default(), fanout.clone())?;
        let output = Arc::new(SrtOutput::start("loop".into(), url.clone(), pipeline.keyframe_requester())?);
        let o = output.clone();
        fanout.add(move |data| o.send(data));
        pipeline.start()?;
        info!(output = %url, "looping the picture back");
        Ok(Self { pipeline, output })
    }
}

/// The decode pipeline of the stream now, and what tells a new stream from the same one.
pub(super) struct Decoding {
    pub(super) pipeline: Option<DecodePipeline>,
    last_push: Option<Instant>,
    timeline: telebridge_media::timeline::TimelineWatch,
}

impl Decoding {
    pub(super) fn new() -> Self {
        Self { pipeline: None, last_push: None, timeline: Default::default() }
    }
}

/// What the decoder measures, shared with the pipelines' streaming threads.
#[derive(Clone)]
pub(super) struct Meters {
    pub(super) counters: Arc<DecoderCounters>,
    /// Glass-to-glass latency of the last 5 s, and of the whole run.
    pub(super) recent: Arc<Watched<LatencyWindow>>,
    pub(super) whole: Arc<Watched<LatencyHistogram>>,
    pub(super) round_trip: Arc<Watched<RoundTrip>>,
    pub(super) av: Arc<Watched<AvMeter>>,
    pub(super) av_events: Arc<Watched<RecentAvEvents>>,
    clock: Instant,
}

impl Meters {
    pub(super) fn new() -> Self {
        Self {
            counters: Arc::new(DecoderCounters::default()),
            recent: Arc::new(Watched::new("latency window", LatencyWindow::new(Duration::from_secs(5)))),
            whole: Arc::new(Watched::new("latency histogram", LatencyHistogram::default())),
            round_trip: Arc::new(Watched::new("round trip", RoundTrip::default())),
            av: Arc::new(Watched::new("lip-sync meter", AvMeter::new(Duration::from_secs(10)))),
            av_events: Arc::new(Watched::new("lip-sync events", RecentAvEvents::default())),
            clock: Instant::now(),
        }
    }

    /// The lip-sync meter's clock, ns.
    pub(super) fn since(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// Where the pictures' flashes and the sound's beeps go.
    pub(super) fn on_mark(&self) -> MarkConsumer {
        let meters = self.clone();
        Arc::new(move |mark| {
            let mut m = meters.av.lock();
            tracing::trace!(?mark, "lip-sync mark");
            let event = match mark {
                AvMark::Flash(t) => m.flash(t, meters.since()),
                AvMark::Beep(t) => m.beep(t, meters.since()),
            };
            if let Some(e) = event {
                tracing::debug!(offset_ms = e.offset_ms, "lip sync");
                meters.av_events.lock().push(AvEvent { offset_ms: e.offset_ms, at_unix_ms: timecode::now_us() / 1000 });
            }
        })
    }

    /// Where each frame's timecode goes (and, in the bridge, the far box's echo of ours); each
    /// one read is handed to `echo_to` for this box's encoder to return.
    pub(super) fn on_timecode(&self, echo_to: Option<timecode::Echo>) -> TimecodeConsumer {
        let meters = self.clone();
        Arc::new(move |tc, echo| {
            let (now_us, now) = (timecode::now_us(), Instant::now());
            let ms = tc.age_us(now_us) as f64 / 1000.0;
            if ms < 60_000.0 {
                meters.recent.lock().push(now, ms);
                meters.whole.lock().push(ms);
            }
            if let Some(e) = &echo_to {
                e.heard(tc, now);
            }
            if let Some(mine) = echo {
                meters.round_trip.lock().heard(mine, now_us, now);
            }
        })
    }
}

/// Starts a decode pipeline for each new stream: a gap in the data (a new connection, a sender
/// restart) or the stream's clock starting again.
pub(super) struct Restarts {
    pub(super) decoding: Arc<Watched<Decoding>>,
    pub(super) meters: Meters,
    pub(super) decoder: DecoderChoice,
    pub(super) audio: AudioOut,
    pub(super) taps: telebridge_media::decode_pipeline::DecodeTaps,
    /// What arrives, handed on as it is (the live monitor's viewers).
    pub(super) received: telebridge_media::TsFanout,
    pub(super) retire_to: RetireTo<DecodePipeline>,
    /// Which pipeline is the current one: an old pipeline's streaming threads may still hand
    /// over a frame or a mark while it is being stopped, and those must not reach the display
    /// or the lip-sync meter of the new stream.
    pub(super) current: Arc<AtomicU64>,
    pub(super) on_frame: FrameConsumer,
    pub(super) on_timecode: TimecodeConsumer,
    pub(super) on_mark: MarkConsumer,
}

impl Restarts {
    /// The TS consumer the input (or the bridge's feed) hands the stream to.
    pub(super) fn consumer(self) -> telebridge_srt::input::TsConsumer {
        Arc::new(move |data: &[u8]| {
            let mut d = self.decoding.lock();
            // A gap means a new connection or a sender restart, and so does the stream's clock
            // starting again: start the decoder afresh.
            let stale = d.last_push.is_none_or(|t| t.elapsed() > Duration::from_millis(500));
            let restarted = d.timeline.feed(data);
            if restarted {
                info!("the sender's stream started again; so does the decoder");
            }
            if d.pipeline.is_none() || stale || restarted {
                let generation = self.current.fetch_add(1, Ordering::SeqCst) + 1;
                retire(&self.retire_to, d.pipeline.take());
                self.meters.counters.new_connection();
                self.meters.av.lock().new_stream();
                match self.start(generation) {
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
            drop(d);
            self.received.push(data);
        })
    }

    /// A decode pipeline whose frames, timecodes and marks go on while it is `generation`.
    fn start(&self, generation: u64) -> Result<DecodePipeline, telebridge_media::MediaError> {
        let (frame, timecode, mark) = (self.on_frame.clone(), self.on_timecode.clone(), self.on_mark.clone());
        let live = {
            let current = self.current.clone();
            move || current.load(Ordering::SeqCst) == generation
        };
        let (l1, l2, l3) = (live.clone(), live.clone(), live);
        DecodePipeline::start(
            &self.decoder,
            &self.audio,
            self.meters.counters.clone(),
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
            self.taps.clone(),
        )
    }
}
