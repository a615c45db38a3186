//! The decode pipeline: MPEG-TS in, raw frames out, restarted for every new connection so that a
//! sender's restart (new timestamps, new continuity counters) never confuses the decoder.
//!
//! ```text
//! appsrc(TS, leaky) ! tsdemux ─ h264parse ! H.264 decoder ! videoconvert ! I420 ! appsink ──► frames (display, timecode and flash reader)
//!                            └ avdec_aac | opusdec ! audioconvert ! F32 ─(beep reader)─ audioresample ! audioconvert ! audio sink
//! ```

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use telebridge_sync::Locked;

use gst::prelude::*;
use gst_video::prelude::*;
use tracing::{debug, warn};

use crate::decoder_choice::DecoderChoice;
use crate::error::{make, MediaError};
use crate::lipsync;
use crate::timecode::{self, Timecode};

/// Counters of one decode pipeline's life plus the frame size.
#[derive(Debug, Default)]
pub struct DecoderCounters {
    /// Video frames decoded.
    pub frames_decoded: AtomicU64,
    /// Frames never shown, from the timecodes of those shown (test-pattern senders only; see
    /// [`timecode::Gaps`]).
    pub frames_missing: AtomicU64,
    /// Frames shown whose timecode could not be read (this pipeline's life).
    pub frames_unread: AtomicU64,
    /// Audio frames decoded.
    pub audio_frames: AtomicU64,
    /// Width of the last frame.
    pub width: AtomicU32,
    /// Height of the last frame.
    pub height: AtomicU32,
    /// Streams of the current connection this box cannot decode, in words ("video H.265
    /// (HEVC)"); cleared with [`DecoderCounters::new_connection`].
    pub unsupported: std::sync::Mutex<Vec<Unsupported>>,
}

impl DecoderCounters {
    /// A new connection: forget the last one's unsupported streams.
    pub fn new_connection(&self) {
        self.unsupported.locked().clear();
    }

    /// The unsupported streams of the current connection.
    pub fn unsupported(&self) -> Vec<Unsupported> {
        self.unsupported.locked().clone()
    }
}

pub use crate::stream_kind::{stream_kind, Side, StreamKind, Unsupported};

pub use telebridge_config::AudioOut;

/// Receives each decoded frame.
pub type FrameConsumer = Arc<dyn Fn(&gst::Sample) + Send + Sync>;
/// Receives each timecode read from a frame, and the timecode it returns (a bridge's echo of
/// this box's own), if any.
pub type TimecodeConsumer = Arc<dyn Fn(Timecode, Option<Timecode>) + Send + Sync>;

/// A lip-sync mark read from the stream, at its presentation time (ns, the pipeline's stream
/// time, the same for sound and picture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvMark {
    /// The picture's flash started on the frame presented then.
    Flash(u64),
    /// The beep started on the sample presented then.
    Beep(u64),
}

/// Receives each lip-sync mark.
pub type MarkConsumer = Arc<dyn Fn(AvMark) + Send + Sync>;

/// What a decode pipeline is wired to beside its decoder: shared state it writes while it runs.
#[derive(Debug, Clone, Default)]
pub struct DecodeTaps {
    /// Where to keep a small JPEG of the picture, once a second; `None` makes none.
    pub preview: Option<crate::PreviewSlot>,
    /// Where the received sound's meter writes its readings; `None` meters nothing.
    pub levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
}

/// A running decode pipeline.
#[derive(Debug)]
pub struct DecodePipeline {
    pipeline: gst::Pipeline,
    appsrc: gst_app::AppSrc,
}

impl DecodePipeline {
    /// Builds and starts a decode pipeline. Counters accumulate in `counters` across restarts.
    pub fn start(
        decoder: &DecoderChoice,
        audio: &AudioOut,
        counters: Arc<DecoderCounters>,
        on_frame: FrameConsumer,
        on_timecode: TimecodeConsumer,
        on_mark: MarkConsumer,
        taps: DecodeTaps,
    ) -> Result<Self, MediaError> {
        let DecodeTaps { preview, levels } = taps;
        let pipeline = gst::Pipeline::with_name("decoder");
        let caps = gst::Caps::builder("video/mpegts").field("systemstream", true).field("packetsize", 188i32).build();
        let appsrc = gst_app::AppSrc::builder()
            .name("ts-in")
            .caps(&caps)
            .format(gst::Format::Time)
            .is_live(true)
            .block(false)
            .max_bytes(4 * 1024 * 1024)
            .leaky_type(gst_app::AppLeakyType::Downstream)
            .build();
        let demux = gst::ElementFactory::make("tsdemux").build()?;
        // tsdemux announces H.264 without an alignment, so h264parse would wait for the next
        // access unit to know the current one is complete: one frame of latency. Senders put
        // one access unit in each PES (GStreamer's mpegtsmux, ffmpeg, hardware encoders), so
        // say so.
        let au =
            gst::Caps::builder("video/x-h264").field("stream-format", "byte-stream").field("alignment", "au").build();
        let au_filter = gst::ElementFactory::make("capsfilter").property("caps", &au).build()?;
        let parse = gst::ElementFactory::make("h264parse").build()?;
        let dec = make(decoder.element, "gstreamer1.0-libav")?;
        if decoder.element == "avdec_h264" {
            // Frame threading holds back one frame per thread; slice threading adds none.
            dec.set_property_from_str("thread-type", "slice");
        }
        let convert = make("videoconvert", "gstreamer1.0-plugins-base")?;
        let i420 = gst::ElementFactory::make("capsfilter")
            .property("caps", gst::Caps::builder("video/x-raw").field("format", "I420").build())
            .build()?;
        let vsink =
            gst_app::AppSink::builder().name("frames").sync(false).async_(false).max_buffers(2).drop(true).build();
        // The sound's decoder is made when the demuxer finds the stream ([`sound_decoder`]).
        let aconv = make("audioconvert", "gstreamer1.0-plugins-base")?;
        let f32 = gst::ElementFactory::make("capsfilter")
            .property(
                "caps",
                gst::Caps::builder("audio/x-raw").field("format", "F32LE").field("layout", "interleaved").build(),
            )
            .build()?;
        let ares = make("audioresample", "gstreamer1.0-plugins-base")?;
        let aconv_out = make("audioconvert", "gstreamer1.0-plugins-base")?;
        let asink = match audio {
            AudioOut::Discard => {
                gst::ElementFactory::make("fakesink").property("sync", false).property("async", false).build()?
            }
            AudioOut::Alsa(device) => gst::ElementFactory::make("alsasink")
                .property("device", device)
                .property("async", false)
                .build()
                .map_err(|_| MediaError::ElementMissing { element: "alsasink", package: "gstreamer1.0-alsa" })?,
        };
        // With a preview: i420 ! tee ! queue ! frames, and tee ! the JPEG branch.
        let tee = gst::ElementFactory::make("tee").build()?;
        let frames_queue = gst::ElementFactory::make("queue")
            .property_from_str("leaky", "downstream")
            .property("max-size-buffers", 2u32)
            .build()?;
        let video_chain: Vec<&gst::Element> = if preview.is_some() {
            vec![&au_filter, &parse, &dec, &convert, &i420, &tee, &frames_queue, vsink.upcast_ref()]
        } else {
            vec![&au_filter, &parse, &dec, &convert, &i420, vsink.upcast_ref()]
        };
        // The received sound's meter reads it as decoded, before it is resampled for the sink.
        let meter = match &levels {
            Some(_) => crate::sound_level::meter(telebridge_contract::sound::Feed::Received)?,
            None => make("identity", "gstreamer1.0-plugins-base")?,
        };
        let audio_chain = [&aconv, &f32, &meter, &ares, &aconv_out, &asink];
        pipeline.add_many([appsrc.upcast_ref(), &demux])?;
        pipeline.add_many(video_chain.iter().copied())?;
        pipeline.add_many(audio_chain)?;
        appsrc.link(&demux)?;
        gst::Element::link_many(video_chain.iter().copied())?;
        if let Some(slot) = preview {
            crate::encoder_pipeline::add_jpeg_branch(&pipeline, &tee, None, slot)?;
        }
        gst::Element::link_many(audio_chain)?;

        route_demuxed(&demux, au_filter.static_pad("sink"), aconv.static_pad("sink"), &counters);

        detect_beeps(&f32, on_mark.clone());
        vsink.set_callbacks(frame_callbacks(counters, on_frame, on_timecode, on_mark));
        if let (Some(board), Some(bus)) = (levels, pipeline.bus()) {
            crate::sound_level::watch(&bus, board);
        }
        pipeline.set_state(gst::State::Playing)?;
        debug!(decoder = decoder.element, "decode pipeline started");
        Ok(Self { pipeline, appsrc })
    }

    /// Hands the decoder one TS buffer; never blocks.
    pub fn push(&self, buffer: &gst::Buffer) {
        let _ = self.appsrc.push_buffer(buffer.clone());
    }

    /// The first error the pipeline posted, if any.
    pub fn error(&self) -> Option<MediaError> {
        let bus = self.pipeline.bus()?;
        while let Some(msg) = bus.pop() {
            if let gst::MessageView::Error(e) = msg.view() {
                return Some(MediaError::from_bus_error(e));
            }
        }
        None
    }
}

impl Drop for DecodePipeline {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// Adds the decoder of the sound stream `kind` beside `demux`, linked to `out` (the sound
/// chain's first pad) and counting its frames; returns its sink pad for the demuxer's.
///
/// AAC: no aacparse before it. aacparse waits for 1 KB of data before it parses, and AAC frames
/// of silence are 13 bytes, so through a quiet stretch it held the sound back up to 0.9 s and
/// then let it go at once (the lip-sync meter found it). tsdemux hands over whole ADTS PES,
/// which the AAC decoder takes as they are (one frame each, or several from ffmpeg).
fn sound_decoder(
    demux: &gst::Element,
    kind: &StreamKind,
    out: &gst::Pad,
    counters: &Arc<DecoderCounters>,
) -> Result<gst::Pad, MediaError> {
    let bin = demux.parent().and_then(|p| p.downcast::<gst::Bin>().ok()).ok_or(MediaError::Gst("no bin".into()))?;
    let dec = match kind {
        StreamKind::Opus => make("opusdec", "gstreamer1.0-plugins-base")?,
        _ => make("avdec_aac", "gstreamer1.0-libav")?,
    };
    bin.add(&dec)?;
    let (Some(sink), Some(src)) = (dec.static_pad("sink"), dec.static_pad("src")) else {
        return Err(MediaError::Gst("a sound decoder without pads".into()));
    };
    src.link(out).map_err(|e| MediaError::Gst(format!("cannot link the sound decoder: {e:?}")))?;
    let c = counters.clone();
    src.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
        c.audio_frames.fetch_add(1, Ordering::Relaxed);
        gst::PadProbeReturn::Ok
    });
    dec.sync_state_with_parent()?;
    Ok(sink)
}

/// Drains a demuxed stream the box does not decode into a new fakesink.
fn discard(demux: &gst::Element, pad: &gst::Pad) {
    let Some(bin) = demux.parent().and_then(|p| p.downcast::<gst::Bin>().ok()) else { return };
    let Ok(sink) = gst::ElementFactory::make("fakesink").property("sync", false).property("async", false).build()
    else {
        return;
    };
    if bin.add(&sink).is_err() {
        return;
    }
    let linked = sink.static_pad("sink").is_some_and(|s| pad.link(&s).is_ok());
    if !linked || sink.sync_state_with_parent().is_err() {
        debug!(pad = %pad.name(), "cannot drain a stream the box does not decode");
    }
}

/// Whether a decoded raw video frame (planar YUV, luma first) shows the lip-sync flash.
pub fn sample_flash(sample: &gst::Sample) -> Option<bool> {
    let buffer = sample.buffer()?;
    let info = sample.caps().and_then(|c| gst_video::VideoInfo::from_caps(c).ok())?;
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).ok()?;
    let stride = frame.plane_stride()[0] as usize;
    lipsync::reads_flash(frame.plane_data(0).ok()?, stride, info.width() as usize, info.height() as usize)
}

/// The burnt-in timecode of a decoded raw video frame (any planar YUV format with luma first),
/// if it carries one, and the echo it returns, if any.
pub fn sample_timecodes(sample: &gst::Sample) -> Option<(Timecode, Option<Timecode>)> {
    let buffer = sample.buffer()?;
    let info = sample.caps().and_then(|c| gst_video::VideoInfo::from_caps(c).ok())?;
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).ok()?;
    let stride = frame.plane_stride()[0] as usize;
    let (luma, w, h) = (frame.plane_data(0).ok()?, info.width() as usize, info.height() as usize);
    let own = timecode::read_strip(luma, stride, w, h, timecode::Strip::Own)?;
    Some((own, timecode::read_strip(luma, stride, w, h, timecode::Strip::Echo)))
}

/// Each stream tsdemux finds goes to its decoder (`video` and `audio`: the chains' first pads),
/// or, not decoded, to a fakesink, named in the counters when its kind is unsupported.
fn route_demuxed(
    demux: &gst::Element,
    vpad: Option<gst::Pad>,
    apad: Option<gst::Pad>,
    counters: &Arc<DecoderCounters>,
) {
    let unsupported_counters = counters.clone();
    let audio_counters = counters.clone();
    demux.connect_pad_added(move |demux, pad| {
        let caps = pad.current_caps();
        let s = caps.as_ref().and_then(|c| c.structure(0));
        let name = s.map(|s| s.name().to_string()).unwrap_or_default();
        let mpegversion = s.and_then(|s| s.get::<i32>("mpegversion").ok());
        let target = match stream_kind(&name, mpegversion, pad.name().as_str()) {
            StreamKind::H264 => vpad.clone(),
            kind @ (StreamKind::Aac | StreamKind::Opus) => match apad.clone().filter(|a| !a.is_linked()) {
                Some(a) => match sound_decoder(demux, &kind, &a, &audio_counters) {
                    Ok(sink) => Some(sink),
                    Err(e) => {
                        warn!(pad = %pad.name(), error = %e, "cannot decode the sound");
                        None
                    }
                },
                None => None,
            },
            StreamKind::Unsupported(what) => {
                // Not decoded: drained into a fakesink so that it neither stalls the demuxer
                // nor fails the pipeline, and named so the box can say what it receives.
                unsupported_counters.unsupported.locked().push(what);
                discard(demux, pad);
                return;
            }
        };
        match target.filter(|t| !t.is_linked()) {
            Some(t) => {
                if let Err(e) = pad.link(&t) {
                    warn!(pad = %pad.name(), error = ?e, "cannot link demuxed stream");
                    discard(demux, pad);
                }
            }
            // A second stream of a kind already shown: not decoded.
            None => discard(demux, pad),
        }
    });
}

/// The lip-sync meter's beeps, read from the decoded sound (F32 after `f32`).
fn detect_beeps(sound: &gst::Element, on_mark: MarkConsumer) {
    if let Some(pad) = sound.static_pad("src") {
        let (marks, beeps) = (on_mark, std::sync::Mutex::new(lipsync::BeepDetector::default()));
        pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
            let Some(gst::PadProbeData::Buffer(ref buffer)) = info.data else { return gst::PadProbeReturn::Ok };
            let format = crate::audio_format(pad);
            if let (Some((rate, channels)), Some(pts), Ok(map)) = (format, buffer.pts(), buffer.map_readable()) {
                let samples: Vec<f32> =
                    map.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                let mut d = beeps.locked();
                for onset in d.samples(&samples, channels, rate, pts.nseconds()) {
                    marks(AvMark::Beep(onset));
                }
            }
            gst::PadProbeReturn::Ok
        });
    }
}

/// Each decoded frame: counted, its size noted, its flash and timecode read, then handed on.
fn frame_callbacks(
    counters: Arc<DecoderCounters>,
    on_frame: FrameConsumer,
    on_timecode: TimecodeConsumer,
    on_mark: MarkConsumer,
) -> gst_app::AppSinkCallbacks {
    let flashes = std::sync::Mutex::new(lipsync::FlashDetector::default());
    let gaps = std::sync::Mutex::new(timecode::Gaps::default());
    gst_app::AppSinkCallbacks::builder()
        .new_sample(move |sink| {
            let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
            counters.frames_decoded.fetch_add(1, Ordering::Relaxed);
            if let Some(info) = sample.caps().and_then(|c| gst_video::VideoInfo::from_caps(c).ok()) {
                counters.width.store(info.width(), Ordering::Relaxed);
                counters.height.store(info.height(), Ordering::Relaxed);
            }
            if let Some(pts) = sample.buffer().and_then(|b| b.pts()) {
                let read = sample_flash(&sample);
                let started = flashes.locked().frame(pts.nseconds(), read);
                if let Some(t) = started {
                    on_mark(AvMark::Flash(t));
                }
            }
            let read = sample_timecodes(&sample);
            let mut g = gaps.locked();
            counters.frames_missing.fetch_add(g.frame(read.map(|(tc, _)| tc.frame)), Ordering::Relaxed);
            counters.frames_unread.store(g.unread(), Ordering::Relaxed);
            drop(g);
            if let Some((tc, echo)) = read {
                on_timecode(tc, echo);
            }
            on_frame(&sample);
            Ok(gst::FlowSuccess::Ok)
        })
        .build()
}
