//! The encoder pipeline: one capture, one encode, MPEG-TS handed to any number of outputs.
//!
//! ```text
//! video source ! queue(leaky) ! videoconvert ! videoscale ! videorate ! caps ! H.264 encoder
//!     ! h264parse(config-interval=-1) ! mpegtsmux(alignment=7) ! appsink ──► TsFanout ──► outputs
//! audio source ! audioconvert ! audioresample ! 48 kHz ! AAC encoder ! aacparse ! queue ─┘
//! ```
//!
//! Outputs are not GStreamer branches of this pipeline: each receives the 1316-byte TS buffers
//! through [`TsFanout`] and feeds its own pipeline through a bounded leaky `appsrc`, so an output
//! that blocks, fails or restarts never touches the encoder or another output.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gst_video::prelude::*;
use telebridge_config::{AudioCodec, AudioSource, ValidConfig, VideoSource};
use tracing::{debug, info};

use crate::capture_device::{self, CaptureKind, CapturePlan};
use crate::encoder_choice::{EncoderChoice, EncoderKind};
use crate::error::{make, MediaError};
use crate::timecode::{self, Timecode};

/// Everything the pipeline needs to know, taken from a validated configuration.
#[derive(Debug, Clone)]
pub struct EncoderSettings {
    /// Where the picture comes from.
    pub video_source: VideoSource,
    /// Encoded size and rate.
    pub width: u32,
    /// Encoded height.
    pub height: u32,
    /// Frames per second.
    pub fps: u32,
    /// Video bitrate, kbit/s.
    pub bitrate_kbps: u32,
    /// Keyframe interval.
    pub keyframe_interval: Duration,
    /// x264 speed preset.
    pub x264_preset: String,
    /// Where the sound comes from.
    pub audio_source: AudioSource,
    /// AAC or none.
    pub audio_codec: AudioCodec,
    /// AAC bitrate, kbit/s.
    pub audio_bitrate_kbps: u32,
    /// The encoder element to use.
    pub encoder: EncoderChoice,
    /// Take frames pushed through [`EncoderPipeline::frame_input`] instead of `video_source`
    /// (a decoder re-encoding what it shows, for round-trip measurements).
    pub frames_from_app: bool,
    /// Where to keep a small JPEG of the picture, made at most once a second (the panel's
    /// preview); `None` makes none.
    pub preview: Option<PreviewSlot>,
    /// While this holds `false` the source's frames are thrown away as they leave it, as if the
    /// HDMI cable were out: the simulated cable of `telebridge run --sim`. `None`: no gate.
    pub signal_gate: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// The latest preview picture: a JPEG at most [`PREVIEW_WIDTH`] wide, replaced once a second.
pub type PreviewSlot = Arc<std::sync::Mutex<Option<Vec<u8>>>>;

/// The preview's width in pixels.
pub const PREVIEW_WIDTH: u32 = 320;

impl EncoderSettings {
    /// Settings from a validated configuration and an encoder choice.
    pub fn from_config(config: &ValidConfig, encoder: EncoderChoice) -> Self {
        let p = &config.picture;
        Self {
            video_source: config.video_source.clone(),
            width: p.width,
            height: p.height,
            fps: p.fps,
            bitrate_kbps: p.bitrate_kbps,
            keyframe_interval: config.keyframe_interval,
            x264_preset: p.x264_preset.clone(),
            audio_source: config.audio_source.clone(),
            audio_codec: config.audio_codec,
            audio_bitrate_kbps: config.audio_bitrate_kbps,
            encoder,
            frames_from_app: false,
            preview: None,
            signal_gate: None,
        }
    }

    fn keyframe_frames(&self) -> u32 {
        ((self.keyframe_interval.as_millis() as u64 * u64::from(self.fps)) / 1000).max(1) as u32
    }
}

/// Counters the pipeline keeps; read them at any time.
#[derive(Debug, Default)]
pub struct EncoderCounters {
    /// Frames that left the source.
    pub frames_captured: AtomicU64,
    /// Frames that left the encoder.
    pub frames_encoded: AtomicU64,
    /// Keyframes among them.
    pub keyframes: AtomicU64,
    /// Encoded video bytes.
    pub video_bytes: AtomicU64,
    /// Frames dropped before the encoder because it could not keep up.
    pub frames_dropped: AtomicU64,
    /// AAC frames encoded.
    pub audio_frames: AtomicU64,
    /// MPEG-TS bytes handed to outputs.
    pub ts_bytes: AtomicU64,
}

/// Identifies a consumer registered with [`TsFanout::add`].
pub type TsConsumerId = u64;
type TsConsumer = Box<dyn Fn(&gst::Buffer) + Send + Sync>;

/// Hands each MPEG-TS buffer to every registered consumer. Consumers must not block: outputs
/// push into their own bounded leaky queue. Survives pipeline rebuilds (source changes).
#[derive(Clone, Default)]
pub struct TsFanout {
    inner: Arc<Mutex<Consumers>>,
}

/// The last id handed out, and the consumers.
type Consumers = (TsConsumerId, Vec<(TsConsumerId, TsConsumer)>);

impl std::fmt::Debug for TsFanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.lock().map(|g| g.1.len()).unwrap_or(0);
        write!(f, "TsFanout({n} consumers)")
    }
}

impl TsFanout {
    /// Registers a consumer; returns its id for [`TsFanout::remove`].
    pub fn add(&self, consumer: impl Fn(&gst::Buffer) + Send + Sync + 'static) -> TsConsumerId {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0 += 1;
        let id = g.0;
        g.1.push((id, Box::new(consumer)));
        id
    }

    /// Unregisters a consumer.
    pub fn remove(&self, id: TsConsumerId) {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).1.retain(|(i, _)| *i != id);
    }

    fn push(&self, buffer: &gst::Buffer) {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for (_, consumer) in g.1.iter() {
            consumer(buffer);
        }
    }
}

/// A running (or ready) encoder pipeline.
#[derive(Debug)]
pub struct EncoderPipeline {
    pipeline: gst::Pipeline,
    encoder: gst::Element,
    counters: Arc<EncoderCounters>,
    capture: Option<CapturePlan>,
    frame_input: Option<gst_app::AppSrc>,
}

impl EncoderPipeline {
    /// Builds the pipeline (state NULL). TS buffers go to `fanout`.
    pub fn build(settings: &EncoderSettings, fanout: TsFanout) -> Result<Self, MediaError> {
        let pipeline = gst::Pipeline::with_name("encoder");
        let counters = Arc::new(EncoderCounters::default());

        // Video: source.
        let (video_tail, capture, frame_input) = if settings.frames_from_app {
            let src = crate::display::live_frame_source("video-source");
            pipeline.add(&src)?;
            (src.clone().upcast::<gst::Element>(), None, Some(src))
        } else {
            let (tail, capture) = add_video_source(&pipeline, settings, &counters)?;
            (tail, capture, None)
        };

        // Video: decouple the source from the encoder; drop the oldest frame if encoding lags.
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
        let enc_caps =
            gst::ElementFactory::make("capsfilter").property("caps", encoder_output_caps(settings)).build()?;
        let parse = gst::ElementFactory::make("h264parse").property("config-interval", -1i32).build()?;
        let h264_caps =
            gst::Caps::builder("video/x-h264").field("stream-format", "byte-stream").field("alignment", "au").build();
        let h264_filter = gst::ElementFactory::make("capsfilter").property("caps", &h264_caps).build()?;
        let mux = gst::ElementFactory::make("mpegtsmux").name("mux").property("alignment", 7i32).build()?;
        let appsink =
            gst_app::AppSink::builder().name("ts").sync(false).async_(false).max_buffers(64).drop(true).build();

        // videorate holds each frame until the next arrives (one frame of latency): only a
        // capture device whose rate may differ from the configured one needs it.
        let mut chain: Vec<&gst::Element> = vec![&queue, &convert, &scale];
        if settings.video_source != VideoSource::Test {
            chain.push(&rate);
        }
        chain.push(&raw_filter);
        let tee = gst::ElementFactory::make("tee").name("preview-tee").build()?;
        if settings.preview.is_some() {
            chain.push(&tee);
        }
        chain.extend([&encoder, &enc_caps, &parse, &h264_filter]);
        pipeline.add_many(chain.iter().copied())?;
        pipeline.add_many([&mux, appsink.upcast_ref()])?;
        video_tail.link(&queue)?;
        gst::Element::link_many(chain.iter().copied())?;
        if let Some(slot) = &settings.preview {
            add_preview(&pipeline, &tee, settings, slot.clone())?;
        }
        h264_filter.link(&mux)?;
        mux.link(&appsink)?;

        // Count encoded frames and keyframes.
        let c = counters.clone();
        if let Some(pad) = parse.static_pad("src") {
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                if let Some(gst::PadProbeData::Buffer(ref buffer)) = info.data {
                    c.frames_encoded.fetch_add(1, Ordering::Relaxed);
                    c.video_bytes.fetch_add(buffer.size() as u64, Ordering::Relaxed);
                    if !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT) {
                        c.keyframes.fetch_add(1, Ordering::Relaxed);
                    }
                }
                gst::PadProbeReturn::Ok
            });
        }

        if settings.audio_codec == AudioCodec::Aac {
            add_audio(&pipeline, settings, &mux, &counters)?;
        }

        let c = counters.clone();
        appsink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    if let Some(buffer) = sample.buffer_owned() {
                        c.ts_bytes.fetch_add(buffer.size() as u64, Ordering::Relaxed);
                        fanout.push(&buffer);
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );

        info!(
            encoder = %settings.encoder.kind,
            reason = %settings.encoder.reason,
            size = %format!("{}x{}", settings.width, settings.height),
            fps = settings.fps,
            bitrate_kbps = settings.bitrate_kbps,
            source = %settings.video_source,
            "encoder pipeline built"
        );
        Ok(Self { pipeline, encoder, counters, capture, frame_input })
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
            let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
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

impl Drop for EncoderPipeline {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

fn add_video_source(
    pipeline: &gst::Pipeline,
    s: &EncoderSettings,
    counters: &Arc<EncoderCounters>,
) -> Result<(gst::Element, Option<CapturePlan>), MediaError> {
    let captured = counters.clone();
    let gate = s.signal_gate.clone();
    let count = move |pad: &gst::Pad| {
        let gate = gate.clone();
        let captured = captured.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            if gate.as_ref().is_some_and(|g| !g.load(Ordering::Relaxed)) {
                return gst::PadProbeReturn::Drop;
            }
            captured.frames_captured.fetch_add(1, Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
    };
    match &s.video_source {
        VideoSource::Test => {
            let src = gst::ElementFactory::make("videotestsrc")
                .name("video-source")
                .property("is-live", true)
                .property_from_str("pattern", "smpte")
                .property("horizontal-speed", 4i32)
                .build()?;
            let caps = gst::Caps::builder("video/x-raw")
                .field("format", "I420")
                .field("width", s.width as i32)
                .field("height", s.height as i32)
                .field("framerate", gst::Fraction::new(s.fps as i32, 1))
                .build();
            let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
            pipeline.add_many([&src, &filter])?;
            src.link(&filter)?;
            let pad = filter.static_pad("src").ok_or_else(|| MediaError::Gst("capsfilter has no src pad".into()))?;
            count(&pad);
            add_timecode_stamp(&pad);
            Ok((filter, None))
        }
        VideoSource::V4l2 { device } => {
            let info = capture_device::probe(device)?;
            let dv = if capture_device::classify(&info) == CaptureKind::HdmiBridge {
                capture_device::apply_queried_dv_timings(device)
                    .map_err(|e| MediaError::Gst(format!("{}: {e}", device.display())))?
            } else {
                None
            };
            let plan = capture_device::plan_capture(&info, (s.width, s.height, s.fps), dv)?;
            info!(device = %device.display(), driver = %info.driver, caps = %plan.caps, "capture format chosen");
            let src = gst::ElementFactory::make("v4l2src")
                .name("video-source")
                .property("device", device.display().to_string())
                .property_from_str("io-mode", "dmabuf")
                .build()
                .map_err(|_| MediaError::ElementMissing { element: "v4l2src", package: "gstreamer1.0-plugins-good" })?;
            let caps =
                gst::Caps::from_str(&plan.caps).map_err(|e| MediaError::Gst(format!("caps {}: {e}", plan.caps)))?;
            let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
            pipeline.add_many([&src, &filter])?;
            src.link(&filter)?;
            let tail = if plan.jpeg {
                let dec = if crate::has_element("v4l2jpegdec") {
                    make("v4l2jpegdec", "gstreamer1.0-plugins-good")?
                } else {
                    make("jpegdec", "gstreamer1.0-plugins-good")?
                };
                pipeline.add(&dec)?;
                filter.link(&dec)?;
                dec
            } else {
                filter
            };
            if let Some(pad) = tail.static_pad("src") {
                count(&pad);
            }
            Ok((tail, Some(plan)))
        }
        VideoSource::Libcamera => {
            let src = gst::ElementFactory::make("libcamerasrc").name("video-source").build().map_err(|_| {
                MediaError::ElementMissing { element: "libcamerasrc", package: "gstreamer1.0-libcamera" }
            })?;
            let caps = gst::Caps::builder("video/x-raw")
                .field("width", s.width as i32)
                .field("height", s.height as i32)
                .field("framerate", gst::Fraction::new(s.fps as i32, 1))
                .build();
            let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
            pipeline.add_many([&src, &filter])?;
            src.link(&filter)?;
            if let Some(pad) = filter.static_pad("src") {
                count(&pad);
            }
            Ok((filter, None))
        }
    }
}

/// Burns the timecode into each frame as it leaves the test source.
fn add_timecode_stamp(pad: &gst::Pad) {
    let frame_no = AtomicU64::new(0);
    let info: Mutex<Option<gst_video::VideoInfo>> = Mutex::new(None);
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, probe| {
        let mut info = info.lock().unwrap_or_else(|p| p.into_inner());
        if info.is_none() {
            *info = pad.current_caps().and_then(|c| gst_video::VideoInfo::from_caps(&c).ok());
        }
        let Some(vinfo) = info.as_ref() else { return gst::PadProbeReturn::Ok };
        if let Some(gst::PadProbeData::Buffer(ref mut buffer)) = probe.data {
            let tc = Timecode::now(frame_no.fetch_add(1, Ordering::Relaxed) as u32);
            let buffer = buffer.make_mut();
            if let Ok(mut frame) = gst_video::VideoFrameRef::from_buffer_ref_writable(buffer, vinfo) {
                let (w, h) = (frame.width() as usize, frame.height() as usize);
                let stride = frame.plane_stride()[0] as usize;
                if let Ok(luma) = frame.plane_data_mut(0) {
                    timecode::stamp_luma(luma, stride, w, h, &tc);
                }
                // Neutral chroma under the strip so it reads as grey, not colour.
                let strip = timecode::strip_height(w);
                for plane in 1..frame.n_planes() {
                    let stride = frame.plane_stride()[plane as usize] as usize;
                    if let Ok(data) = frame.plane_data_mut(plane) {
                        let rows = strip.div_ceil(2);
                        let end = (rows * stride).min(data.len());
                        data[..end].fill(128);
                    }
                }
            }
        }
        gst::PadProbeReturn::Ok
    });
}

/// The preview branch: `tee ! queue(leaky, 1) ! videorate(1 fps) ! videoscale ! videoconvert !
/// jpegenc ! appsink`; it never holds up the encoder (the queue drops, the appsink drops).
fn add_preview(
    pipeline: &gst::Pipeline,
    tee: &gst::Element,
    s: &EncoderSettings,
    slot: PreviewSlot,
) -> Result<(), MediaError> {
    let queue = gst::ElementFactory::make("queue")
        .property_from_str("leaky", "downstream")
        .property("max-size-buffers", 1u32)
        .property("max-size-bytes", 0u32)
        .property("max-size-time", 0u64)
        .build()?;
    let rate = gst::ElementFactory::make("videorate").property("drop-only", true).property("max-rate", 1i32).build()?;
    let scale = make("videoscale", "gstreamer1.0-plugins-base")?;
    let convert = make("videoconvert", "gstreamer1.0-plugins-base")?;
    let height = (PREVIEW_WIDTH * s.height / s.width.max(1)) & !1;
    let caps = gst::Caps::builder("video/x-raw")
        .field("format", "I420")
        .field("width", PREVIEW_WIDTH as i32)
        .field("height", height.max(2) as i32)
        .build();
    let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
    let jpeg = make("jpegenc", "gstreamer1.0-plugins-good")?;
    jpeg.set_property("quality", 70i32);
    let sink = gst_app::AppSink::builder().sync(false).async_(false).max_buffers(1).drop(true).build();
    let chain = [&queue, &rate, &scale, &convert, &filter, &jpeg, sink.upcast_ref()];
    pipeline.add_many(chain)?;
    gst::Element::link_many(chain)?;
    tee.link(&queue)?;
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                if let Some(map) = sample.buffer().and_then(|b| b.map_readable().ok()) {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(map.as_slice().to_vec());
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    Ok(())
}

fn build_encoder(s: &EncoderSettings) -> Result<gst::Element, MediaError> {
    let kind = s.encoder.kind;
    let gop = s.keyframe_frames();
    let enc = match kind {
        EncoderKind::X264enc => {
            let e = make("x264enc", kind.package())?;
            e.set_property_from_str("tune", "zerolatency");
            e.set_property_from_str("speed-preset", &s.x264_preset);
            e.set_property("bitrate", s.bitrate_kbps);
            e.set_property("key-int-max", gop);
            e.set_property("bframes", 0u32);
            e.set_property("byte-stream", true);
            // About one second of VBV keeps the rate even enough for a live link.
            e.set_property("vbv-buf-capacity", 1000u32);
            e
        }
        EncoderKind::Openh264enc => {
            let e = make("openh264enc", kind.package())?;
            e.set_property("bitrate", s.bitrate_kbps * 1000);
            e.set_property("gop-size", gop);
            e.set_property_from_str("rate-control", "bitrate");
            e.set_property_from_str("complexity", "low");
            e
        }
        EncoderKind::V4l2h264enc => {
            let e = make("v4l2h264enc", kind.package())?;
            // bcm2835-codec: bitrate and repeated SPS/PPS go in through extra-controls; VBR
            // (CBR costs ~100 ms a frame); never an I-frame period of 1 (hangs).
            let controls = gst::Structure::builder("controls")
                .field("video_bitrate", (s.bitrate_kbps * 1000) as i32)
                .field("video_bitrate_mode", 0i32)
                .field("repeat_sequence_header", 1i32)
                .field("h264_i_frame_period", gop.max(2) as i32)
                .build();
            e.set_property("extra-controls", &controls);
            e
        }
    };
    Ok(enc)
}

fn encoder_output_caps(s: &EncoderSettings) -> gst::Caps {
    let mut b = gst::Caps::builder("video/x-h264");
    if s.encoder.kind == EncoderKind::V4l2h264enc {
        // Negotiation fails unless a level is named; 4 = 1080p30, the block's specified limit.
        b = b.field("level", "4").field("profile", "high");
    }
    b.build()
}

fn add_audio(
    pipeline: &gst::Pipeline,
    s: &EncoderSettings,
    mux: &gst::Element,
    counters: &Arc<EncoderCounters>,
) -> Result<(), MediaError> {
    let src = match &s.audio_source {
        AudioSource::Test => gst::ElementFactory::make("audiotestsrc")
            .name("audio-source")
            .property("is-live", true)
            .property_from_str("wave", "sine")
            .property("freq", 1000f64)
            .property("volume", 0.2f64)
            .build()?,
        AudioSource::Alsa { device } => gst::ElementFactory::make("alsasrc")
            .name("audio-source")
            .property("device", device)
            .property("provide-clock", false)
            .build()
            .map_err(|_| MediaError::ElementMissing { element: "alsasrc", package: "gstreamer1.0-alsa" })?,
    };
    let convert = make("audioconvert", "gstreamer1.0-plugins-base")?;
    // HDMI audio arrives at whatever rate the source sends: resample to 48 kHz stereo.
    let resample = make("audioresample", "gstreamer1.0-plugins-base")?;
    let caps = gst::Caps::builder("audio/x-raw").field("rate", 48_000i32).field("channels", 2i32).build();
    let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
    let aac = if crate::has_element("fdkaacenc") {
        gst::ElementFactory::make("fdkaacenc").property("bitrate", (s.audio_bitrate_kbps * 1000) as i32).build()?
    } else if crate::has_element("avenc_aac") {
        gst::ElementFactory::make("avenc_aac").property("bitrate", (s.audio_bitrate_kbps * 1000) as i32).build()?
    } else {
        gst::ElementFactory::make("voaacenc")
            .property("bitrate", (s.audio_bitrate_kbps * 1000) as i32)
            .build()
            .map_err(|_| MediaError::ElementMissing { element: "avenc_aac", package: "gstreamer1.0-libav" })?
    };
    let parse = make("aacparse", "gstreamer1.0-plugins-good")?;
    let queue = gst::ElementFactory::make("queue").property("max-size-time", 500_000_000u64).build()?;
    let chain = [&src, &convert, &resample, &filter, &aac, &parse, &queue];
    pipeline.add_many(chain)?;
    gst::Element::link_many(chain)?;
    queue.link(mux)?;
    let c = counters.clone();
    if let Some(pad) = parse.static_pad("src") {
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            c.audio_frames.fetch_add(1, Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
    }
    Ok(())
}

/// Tries an encoder on a few frames: `Ok` if it produced them within two seconds.
pub fn probe_encoder(kind: EncoderKind) -> Result<(), String> {
    let run = || -> Result<(), MediaError> {
        let pipeline = gst::Pipeline::with_name("encoder-probe");
        let src = gst::ElementFactory::make("videotestsrc").property("num-buffers", 3i32).build()?;
        let format = if kind == EncoderKind::V4l2h264enc { "NV12" } else { "I420" };
        let caps = gst::Caps::builder("video/x-raw")
            .field("format", format)
            .field("width", 320i32)
            .field("height", 240i32)
            .field("framerate", gst::Fraction::new(30, 1))
            .build();
        let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
        let settings_caps = if kind == EncoderKind::V4l2h264enc {
            gst::Caps::builder("video/x-h264").field("level", "4").build()
        } else {
            gst::Caps::builder("video/x-h264").build()
        };
        let enc = make(kind.element(), kind.package())?;
        let out = gst::ElementFactory::make("capsfilter").property("caps", &settings_caps).build()?;
        let sink = gst::ElementFactory::make("fakesink").property("sync", false).build()?;
        let chain = [&src, &filter, &enc, &out, &sink];
        pipeline.add_many(chain)?;
        gst::Element::link_many(chain)?;
        pipeline.set_state(gst::State::Playing)?;
        let bus = pipeline.bus().ok_or_else(|| MediaError::Gst("no bus".into()))?;
        let msg =
            bus.timed_pop_filtered(gst::ClockTime::from_seconds(2), &[gst::MessageType::Eos, gst::MessageType::Error]);
        let _ = pipeline.set_state(gst::State::Null);
        match msg.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Eos(_)) => Ok(()),
            Some(gst::MessageView::Error(e)) => Err(MediaError::from_bus_error(e)),
            _ => Err(MediaError::Gst("produced nothing within 2 s".into())),
        }
    };
    run().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyframe_interval_in_frames() {
        let s = |ms: u64, fps: u32| EncoderSettings {
            video_source: VideoSource::Test,
            width: 1280,
            height: 720,
            fps,
            bitrate_kbps: 4000,
            keyframe_interval: Duration::from_millis(ms),
            x264_preset: "superfast".into(),
            audio_source: AudioSource::Test,
            audio_codec: AudioCodec::Aac,
            audio_bitrate_kbps: 128,
            encoder: EncoderChoice { kind: EncoderKind::X264enc, reason: String::new() },
            frames_from_app: false,
            preview: None,
            signal_gate: None,
        };
        assert_eq!(s(1000, 30).keyframe_frames(), 30);
        assert_eq!(s(2000, 25).keyframe_frames(), 50);
        assert_eq!(s(100, 9).keyframe_frames(), 1);
    }
}
