//! The encoder pipeline: one capture, one encode, MPEG-TS handed to any number of outputs.
//!
//! ```text
//! video source ! queue(leaky) ! videoconvert ! videoscale ! videorate ! caps ! H.264 encoder
//!     ! h264parse(config-interval=-1) ! mpegtsmux(alignment=0) ! appsink ──► TsFanout ──► outputs
//! audio source ! audioconvert ! audioresample ! 48 kHz ! AAC encoder ! aacparse ! queue ─┘
//! ```
//!
//! Outputs are not GStreamer branches of this pipeline: each receives the 1316-byte TS buffers
//! through [`TsFanout`] and feeds its own pipeline through a bounded leaky `appsrc`, so an output
//! that blocks, fails or restarts never touches the encoder or another output.

mod encode;
mod fanout;
mod settings;
mod sources;

pub use encode::probe_encoder;
use encode::{add_audio, build_encoder, encoder_output_caps};
pub use fanout::{TsConsumerId, TsFanout};
pub use settings::{EncoderCounters, EncoderSettings, PreviewSlot, Taps, PREVIEW_WIDTH};
pub(crate) use sources::add_jpeg_branch;
use sources::{add_preview, add_video_source};
use telebridge_sync::Locked;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gst_video::prelude::*;
use telebridge_config::{AudioCodec, VideoSource};
use tracing::{debug, info};

use crate::capture_device::CapturePlan;
use crate::encoder_choice::EncoderKind;
use crate::error::{make, MediaError};

/// A running (or ready) encoder pipeline.
#[derive(Debug)]
pub struct EncoderPipeline {
    pipeline: gst::Pipeline,
    encoder: gst::Element,
    kind: EncoderKind,
    /// x264's rate buffer across cuts (x264enc only).
    rate_buffer: Option<Arc<encode::RateBuffer>>,
    /// Which frames go on to the encoder.
    frames: Arc<FrameGate>,
    counters: Arc<EncoderCounters>,
    capture: Option<CapturePlan>,
    frame_input: Option<gst_app::AppSrc>,
}

impl EncoderPipeline {
    /// Builds the pipeline (state NULL), wired to `taps`. TS buffers go to `fanout`.
    pub fn build(settings: &EncoderSettings, taps: &Taps, fanout: TsFanout) -> Result<Self, MediaError> {
        let pipeline = gst::Pipeline::with_name("encoder");
        let counters = Arc::new(EncoderCounters::default());
        let frames = Arc::new(FrameGate::default());
        // The test picture's frames, for its sound's beeps to start with its flashes.
        let grid = crate::lipsync::SharedGrid::default();

        // Video: source.
        let (video_tail, capture, frame_input) = if settings.frames_from_app {
            let src = crate::display::live_frame_source(crate::VIDEO_SOURCE);
            pipeline.add(&src)?;
            (src.clone().upcast::<gst::Element>(), None, Some(src))
        } else {
            let (tail, capture) = add_video_source(&pipeline, settings, taps, &counters, &grid, &frames)?;
            (tail, capture, None)
        };

        // Video: decouple the source from the encoder; drop the oldest frame if encoding lags.
        let queue = leaky_queue(&counters)?;
        let convert = make("videoconvert", "gstreamer1.0-plugins-base")?;
        let scale = make("videoscale", "gstreamer1.0-plugins-base")?;
        let rate = gst::ElementFactory::make("videorate").property("drop-only", true).build()?;
        let format = if settings.encoder.kind == EncoderKind::V4l2h264enc { "NV12" } else { "I420" };
        let raw_caps = gst::Caps::builder("video/x-raw")
            .field("format", format)
            .field("width", settings.width as i32)
            .field("height", settings.height as i32)
            .field("framerate", gst::Fraction::new(settings.fps as i32, 1))
            .field("pixel-aspect-ratio", gst::Fraction::new(1, 1))
            .build();
        let raw_filter = gst::ElementFactory::make("capsfilter").property("caps", &raw_caps).build()?;
        let encoder = build_encoder(settings)?;
        let rate_buffer = (settings.encoder.kind == EncoderKind::X264enc).then(|| {
            let rb = Arc::new(encode::RateBuffer::new(settings.rate_buffer_ms, settings.fps, settings.bitrate_kbps));
            if let Some(pad) = encoder.static_pad("src") {
                let (rb, e) = (rb.clone(), encoder.downgrade());
                pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                    if let Some(e) = e.upgrade() {
                        rb.frame_done(&e);
                    }
                    gst::PadProbeReturn::Ok
                });
            }
            rb
        });
        let enc_caps =
            gst::ElementFactory::make("capsfilter").property("caps", encoder_output_caps(settings)).build()?;
        let parse = gst::ElementFactory::make("h264parse").property("config-interval", -1i32).build()?;
        let h264_caps =
            gst::Caps::builder("video/x-h264").field("stream-format", "byte-stream").field("alignment", "au").build();
        let h264_filter = gst::ElementFactory::make("capsfilter").property("caps", &h264_caps).build()?;
        let mux = gst::ElementFactory::make("mpegtsmux").name("mux").property("alignment", 0i32).build()?;
        let appsink = ts_sink(counters.clone(), fanout);

        // videorate holds each frame until the next arrives (one frame of latency): only a
        // capture device whose rate may differ from the configured one needs it.
        let mut chain: Vec<&gst::Element> = vec![&queue, &convert, &scale];
        if settings.video_source != VideoSource::Test {
            chain.push(&rate);
        }
        chain.push(&raw_filter);
        let tee = gst::ElementFactory::make("tee").name("preview-tee").build()?;
        if taps.preview.is_some() {
            chain.push(&tee);
        }
        chain.extend([&encoder, &enc_caps, &parse, &h264_filter]);
        pipeline.add_many(chain.iter().copied())?;
        pipeline.add_many([&mux, appsink.upcast_ref()])?;
        video_tail.link(&queue)?;
        gst::Element::link_many(chain.iter().copied())?;
        if let Some(slot) = &taps.preview {
            add_preview(&pipeline, &tee, settings, slot.clone())?;
        }
        h264_filter.link(&mux)?;
        mux.link(&appsink)?;

        // A frame rate stepped down: the frames left out go before the encoder (the test
        // picture's go before its timecode, so that its frame numbers count the frames sent).
        if settings.frames_from_app || settings.video_source != VideoSource::Test {
            if let Some(pad) = encoder.static_pad("sink") {
                frames.attach(&pad, counters.clone());
            }
        }

        count_encoded(&parse, counters.clone());

        if settings.audio_codec != AudioCodec::None {
            add_audio(&pipeline, settings, &mux, &counters, &grid, taps.levels.is_some())?;
        }
        if let (Some(board), Some(bus)) = (&taps.levels, pipeline.bus()) {
            crate::sound_level::watch(&bus, board.clone());
        }

        info!(
            encoder = %settings.encoder.kind,
            reason = %settings.encoder.reason,
            size = %format!("{}x{}", settings.width, settings.height),
            fps = settings.fps,
            bitrate_kbps = settings.bitrate_kbps,
            source = %settings.video_source,
            "encoder pipeline built"
        );
        Ok(Self { pipeline, encoder, kind: settings.encoder.kind, rate_buffer, frames, counters, capture, frame_input })
    }

    /// Starts capturing and encoding.
    pub fn start(&self) -> Result<(), MediaError> {
        self.pipeline.set_state(gst::State::Playing)?;
        Ok(())
    }

    /// Ends the stream cleanly (EOS through the muxer) and stops, waiting at most `timeout`.
    pub fn stop(&self, timeout: Duration) {
        self.pipeline.send_event(gst::event::Eos::new());
        if let Some(bus) = self.pipeline.bus() {
            let _ = bus.timed_pop_filtered(
                gst::ClockTime::from_mseconds(timeout.as_millis() as u64),
                &[gst::MessageType::Eos, gst::MessageType::Error],
            );
        }
        let _ = self.pipeline.set_state(gst::State::Null);
    }

    /// Asks the encoder for a keyframe with SPS/PPS now, so a decoder that just joined starts
    /// at once instead of waiting for the next periodic keyframe.
    pub fn request_keyframe(&self) {
        let event = gst_video::UpstreamForceKeyUnitEvent::builder().all_headers(true).build();
        if let Some(pad) = self.encoder.static_pad("src") {
            let sent = pad.send_event(event);
            debug!(sent, "keyframe requested");
        }
    }

    /// A handle that requests a keyframe (at most one every 250 ms), for outputs to call when a
    /// peer joins. Holds only a weak reference to the encoder.
    pub fn keyframe_requester(&self) -> Arc<dyn Fn() + Send + Sync> {
        let encoder = self.encoder.downgrade();
        let last = Mutex::new(None::<std::time::Instant>);
        Arc::new(move || {
            let mut last = last.locked();
            if last.is_some_and(|t| t.elapsed() < Duration::from_millis(250)) {
                return;
            }
            *last = Some(std::time::Instant::now());
            if let Some(pad) = encoder.upgrade().and_then(|e| e.static_pad("src")) {
                let event = gst_video::UpstreamForceKeyUnitEvent::builder().all_headers(true).build();
                let sent = pad.send_event(event);
                debug!(sent, "keyframe requested");
            }
        })
    }

    /// A handle that sets the encoder's video bitrate while it runs, kbit/s (an adaptive
    /// bitrate's), without a keyframe or a restart: x264enc reconfigures its rate control,
    /// openh264enc takes its new target, v4l2h264enc's `video_bitrate` control is set on the
    /// device. Holds only a weak reference to the encoder.
    pub fn bitrate_setter(&self) -> Arc<dyn Fn(u32) + Send + Sync> {
        let encoder = self.encoder.downgrade();
        let kind = self.kind;
        let rate_buffer = self.rate_buffer.clone();
        Arc::new(move |kbps| {
            if let Some(e) = encoder.upgrade() {
                match &rate_buffer {
                    Some(rb) => rb.set(&e, kbps),
                    None => encode::set_bitrate(&e, kind, kbps),
                }
            }
        })
    }

    /// A handle that steps the frame rate down while it runs: the encoder is given one frame in
    /// `n` (1: every frame), the others are left out before it (counted as skipped). With
    /// x264enc's zero-latency tuning x264 budgets each frame at its bitrate over the configured
    /// frame rate, so one frame in two at a bitrate makes half of it, each frame as good as
    /// before; the preview keeps every frame.
    pub fn frame_rate_setter(&self) -> Arc<dyn Fn(u32) + Send + Sync> {
        let frames = self.frames.clone();
        Arc::new(move |n| frames.one_in.store(n.max(1), Ordering::Relaxed))
    }

    /// The pipeline's bus, to watch for errors.
    pub fn bus(&self) -> Option<gst::Bus> {
        self.pipeline.bus()
    }

    /// The pipeline's counters.
    pub fn counters(&self) -> Arc<EncoderCounters> {
        self.counters.clone()
    }

    /// Where to push frames when built with `frames_from_app`.
    pub fn frame_input(&self) -> Option<&gst_app::AppSrc> {
        self.frame_input.as_ref()
    }

    /// The capture format chosen for a V4L2 source.
    pub fn capture_plan(&self) -> Option<&CapturePlan> {
        self.capture.as_ref()
    }
}

/// Which frames go on to the encoder: one in `one_in` (1: all), the others counted as skipped.
#[derive(Debug)]
pub(super) struct FrameGate {
    one_in: AtomicU32,
    seen: AtomicU64,
}

impl Default for FrameGate {
    fn default() -> Self {
        Self { one_in: AtomicU32::new(1), seen: AtomicU64::new(0) }
    }
}

impl FrameGate {
    /// Leaves out the frames not let through on `pad`, counting them in `counters`.
    pub(super) fn attach(self: &Arc<Self>, pad: &gst::Pad, counters: Arc<EncoderCounters>) {
        let gate = self.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            let n = gate.seen.fetch_add(1, Ordering::Relaxed);
            if keeps_frame(n, gate.one_in.load(Ordering::Relaxed)) {
                gst::PadProbeReturn::Ok
            } else {
                counters.frames_skipped.fetch_add(1, Ordering::Relaxed);
                gst::PadProbeReturn::Drop
            }
        });
    }
}

/// Whether the frame numbered `index` goes on to the encoder when one frame in `one_in` does.
fn keeps_frame(index: u64, one_in: u32) -> bool {
    one_in <= 1 || index.is_multiple_of(u64::from(one_in))
}

impl Drop for EncoderPipeline {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// The queue between the source and the encoder: the oldest frame goes when encoding lags,
/// counted as dropped.
fn leaky_queue(counters: &Arc<EncoderCounters>) -> Result<gst::Element, MediaError> {
    let queue = gst::ElementFactory::make("queue")
        .name("encoder-queue")
        .property_from_str("leaky", "downstream")
        .property("max-size-buffers", 3u32)
        .property("max-size-bytes", 0u32)
        .property("max-size-time", 0u64)
        .build()?;
    let dropped = counters.clone();
    queue.connect("overrun", false, move |_| {
        dropped.frames_dropped.fetch_add(1, Ordering::Relaxed);
        None
    });
    Ok(queue)
}

/// The muxer's end: each sample's TS to the fan-out, counted.
fn ts_sink(counters: Arc<EncoderCounters>, fanout: TsFanout) -> gst_app::AppSink {
    // The muxer hands over each input's packets at once as a buffer list (alignment=0): one
    // sample per list, so that the outputs cut it into full SRT messages with only the last
    // one of each frame short (single packets would make SRT send seven times the packets).
    let appsink = gst_app::AppSink::builder()
        .name("ts")
        .sync(false)
        .async_(false)
        .max_buffers(64)
        .drop(true)
        .buffer_list(true)
        .build();
    appsink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let push = |data: &[u8]| {
                    counters.ts_bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                    fanout.push(data);
                };
                match sample.buffer_list() {
                    Some(list) => {
                        let mut merged = Vec::with_capacity(list.calculate_size());
                        for b in list.iter() {
                            if let Ok(map) = b.map_readable() {
                                merged.extend_from_slice(map.as_slice());
                            }
                        }
                        push(&merged);
                    }
                    None => {
                        if let Some(map) = sample.buffer().and_then(|b| b.map_readable().ok()) {
                            push(map.as_slice());
                        }
                    }
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    appsink
}

/// Counts encoded frames, their bytes and keyframes, after the parser.
fn count_encoded(parse: &gst::Element, counters: Arc<EncoderCounters>) {
    if let Some(pad) = parse.static_pad("src") {
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(gst::PadProbeData::Buffer(ref buffer)) = info.data {
                counters.frames_encoded.fetch_add(1, Ordering::Relaxed);
                counters.video_bytes.fetch_add(buffer.size() as u64, Ordering::Relaxed);
                if !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT) {
                    counters.keyframes.fetch_add(1, Ordering::Relaxed);
                }
            }
            gst::PadProbeReturn::Ok
        });
    }
}

#[cfg(test)]
mod tests {
    use super::keeps_frame;

    #[test]
    fn one_frame_in_two_keeps_every_other_and_one_keeps_all() {
        let kept = |one_in| (0..8).filter(|&i| keeps_frame(i, one_in)).collect::<Vec<_>>();
        assert_eq!(kept(1), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(kept(2), [0, 2, 4, 6]);
        assert_eq!(kept(0), [0, 1, 2, 3, 4, 5, 6, 7], "0 is taken as 1");
    }
}
