//! The H.264 encoder element and its settings, the audio branch, and the encoder probe.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use telebridge_sync::Locked;

use gst_video::prelude::*;
use telebridge_config::{AudioCodec, AudioSource};

use crate::encoder_choice::EncoderKind;
use crate::error::{make, MediaError};

use super::{EncoderCounters, EncoderSettings};

pub(super) fn build_encoder(s: &EncoderSettings) -> Result<gst::Element, MediaError> {
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
            e.set_property("vbv-buf-capacity", s.rate_buffer_ms);
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

/// x264's rate buffer (its VBV) across a cut. While a picture makes less than the rate the
/// buffer saves bits, and after a cut x264 goes on spending what it saved at the old rate:
/// in the rate traces it made 4-5 Mbit/s for 100-150 ms after a cut from 6.4 to 1.5, the
/// excess that then waited behind a bottleneck longer than the latency. So a cut first shrinks
/// the buffer to one frame (x264 clamps what it saved to that when the next frame is done)
/// and gives it back its size two frames later: from then on the encoder saves again, from
/// nothing, at the new rate.
#[derive(Debug)]
pub(super) struct RateBuffer {
    /// The buffer's size, ms.
    full_ms: u32,
    /// One frame, ms: the smallest x264 takes.
    one_frame_ms: u32,
    /// Frames to encode before the size comes back (0: none pending).
    restore_after: AtomicU32,
    /// The bitrate last set, kbit/s.
    last_kbps: AtomicU32,
}

impl RateBuffer {
    /// For an encoder with a buffer of `full_ms` at `fps`, started at `kbps`.
    pub(super) fn new(full_ms: u32, fps: u32, kbps: u32) -> Self {
        Self {
            full_ms,
            one_frame_ms: 1000u32.div_ceil(fps.max(1)) + 1,
            restore_after: AtomicU32::new(0),
            last_kbps: AtomicU32::new(kbps),
        }
    }

    /// A new bitrate for a running x264enc.
    pub(super) fn set(&self, e: &gst::Element, kbps: u32) {
        if let Some(ms) = self.on_bitrate(kbps) {
            e.set_property("vbv-buf-capacity", ms);
        }
        e.set_property("bitrate", kbps);
    }

    /// A frame came out of the encoder.
    pub(super) fn frame_done(&self, e: &gst::Element) {
        if let Some(ms) = self.on_frame() {
            e.set_property("vbv-buf-capacity", ms);
        }
    }

    /// The buffer size to set (ms) with a new bitrate, if any.
    fn on_bitrate(&self, kbps: u32) -> Option<u32> {
        let last = self.last_kbps.swap(kbps, Ordering::SeqCst);
        (kbps < last).then(|| {
            // (Two frames: the one being encoded now may have been started before the change.)
            self.restore_after.store(2, Ordering::SeqCst);
            self.one_frame_ms
        })
    }

    /// The buffer size to set (ms) after a frame, if any.
    fn on_frame(&self) -> Option<u32> {
        let before = self.restore_after.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        (before == Ok(1)).then_some(self.full_ms)
    }
}

/// Sets a running encoder's video bitrate, kbit/s.
pub(super) fn set_bitrate(e: &gst::Element, kind: EncoderKind, kbps: u32) {
    match kind {
        EncoderKind::X264enc => e.set_property("bitrate", kbps),
        EncoderKind::Openh264enc => e.set_property("bitrate", kbps * 1000),
        EncoderKind::V4l2h264enc => {
            // GStreamer's V4L2 element applies extra-controls to the open device at once (and
            // keeps them for a reopen): the same controls with the new bitrate.
            let mut controls = e
                .property::<Option<gst::Structure>>("extra-controls")
                .unwrap_or_else(|| gst::Structure::new_empty("controls"));
            controls.set("video_bitrate", (kbps * 1000) as i32);
            e.set_property("extra-controls", &controls);
        }
    }
}

/// The H.264 the encoder makes: Main profile, which every browser's WebRTC takes (Chromium
/// offers Constrained Baseline and Main, no High), so that the live monitor sends the stream as
/// it is; the Pi's encoder does Main, x264 is told to. (openh264 makes Constrained Baseline,
/// which Main holds.)
pub(super) fn encoder_output_caps(s: &EncoderSettings) -> gst::Caps {
    let mut b = gst::Caps::builder("video/x-h264");
    match s.encoder.kind {
        // Negotiation fails unless a level is named; 4 = 1080p30, the block's specified limit.
        EncoderKind::V4l2h264enc => b = b.field("level", "4").field("profile", "main"),
        EncoderKind::X264enc => b = b.field("profile", "main"),
        EncoderKind::Openh264enc => {}
    }
    b.build()
}

/// How much later than the picture the sound is labelled (see [`add_audio`]), by codec: what
/// the sound spends before the muxer beyond the picture's ~6 ms. AAC: a source period (10 ms)
/// and a 1024-sample frame (21.3 ms) past the priming taken off its labels. Opus: a source
/// period and a 10 ms frame (its 2.5 ms look-ahead in the restricted-low-delay mode).
pub fn audio_trail(codec: AudioCodec) -> std::time::Duration {
    std::time::Duration::from_millis(match codec {
        AudioCodec::Aac => 32,
        AudioCodec::Opus => 20,
        AudioCodec::None => 0,
    })
}

/// The test source's and the capture's period for `codec`, samples at 48 kHz. A live source
/// hands over a buffer when its last sample is in, so the period is latency: Opus takes 10 ms
/// (its frame); AAC keeps its frame's 1024 samples (with 480 the muxer held the picture 17 ms
/// longer: `telebridge measure`, 42 against 25 ms added at 720p30).
fn source_period_samples(codec: AudioCodec) -> i32 {
    if codec == AudioCodec::Opus {
        480
    } else {
        1024
    }
}

/// The sound encoder for `codec` and its element's name.
fn sound_encoder(codec: AudioCodec, bitrate_kbps: u32) -> Result<(gst::Element, &'static str), MediaError> {
    let bps = (bitrate_kbps * 1000) as i32;
    if codec == AudioCodec::Opus {
        // 10 ms frames; the restricted-low-delay mode (CELT only) looks 2.5 ms ahead where the
        // others look 6.5 ms.
        let e = make("opusenc", "gstreamer1.0-plugins-base")?;
        e.set_property_from_str("frame-size", "10");
        e.set_property_from_str("audio-type", "restricted-lowdelay");
        e.set_property("bitrate", bps);
        return Ok((e, "opusenc"));
    }
    let name = if crate::has_element("fdkaacenc") {
        "fdkaacenc"
    } else if crate::has_element("avenc_aac") {
        "avenc_aac"
    } else {
        "voaacenc"
    };
    let e = gst::ElementFactory::make(name)
        .property("bitrate", bps)
        .build()
        .map_err(|_| MediaError::ElementMissing { element: "avenc_aac", package: "gstreamer1.0-libav" })?;
    Ok((e, name))
}

pub(super) fn add_audio(
    pipeline: &gst::Pipeline,
    s: &EncoderSettings,
    mux: &gst::Element,
    counters: &Arc<EncoderCounters>,
    grid: &crate::lipsync::SharedGrid,
    metered: bool,
) -> Result<(), MediaError> {
    let src = match &s.audio_source {
        // Silence made into the lip-sync beep once a second ([`crate::lipsync`]), in step with
        // the flash in the test picture: both from the buffers' presentation times.
        AudioSource::Test => gst::ElementFactory::make("audiotestsrc")
            .name("audio-source")
            .property("is-live", true)
            .property("samplesperbuffer", source_period_samples(s.audio_codec))
            .property_from_str("wave", "silence")
            .build()?,
        AudioSource::Alsa { device } => gst::ElementFactory::make("alsasrc")
            .name("audio-source")
            .property("device", device)
            .property("provide-clock", false)
            .property("latency-time", i64::from(source_period_samples(s.audio_codec)) * 1_000_000 / 48_000)
            .build()
            .map_err(|_| MediaError::ElementMissing { element: "alsasrc", package: "gstreamer1.0-alsa" })?,
    };
    let convert = make("audioconvert", "gstreamer1.0-plugins-base")?;
    // HDMI audio arrives at whatever rate the source sends: resample to 48 kHz stereo.
    let resample = make("audioresample", "gstreamer1.0-plugins-base")?;
    let caps = gst::Caps::builder("audio/x-raw").field("rate", 48_000i32).field("channels", 2i32).build();
    let filter = gst::ElementFactory::make("capsfilter").property("caps", &caps).build()?;
    let (aac, aac_element) = sound_encoder(s.audio_codec, s.audio_bitrate_kbps)?;
    // AAC through its parser (ADTS for the muxer); Opus goes in as it is.
    let parse = if s.audio_codec == AudioCodec::Aac {
        make("aacparse", "gstreamer1.0-plugins-good")?
    } else {
        make("identity", "gstreamer1.0-plugins-base")?
    };
    let queue = gst::ElementFactory::make("queue").property("max-size-time", 500_000_000u64).build()?;
    // The programme's meter reads the sound as it goes into the encoder (48 kHz stereo).
    let meter = if metered {
        crate::sound_level::meter(telebridge_contract::sound::Feed::Programme)?
    } else {
        make("identity", "gstreamer1.0-plugins-base")?
    };
    let chain = [&src, &convert, &resample, &filter, &meter, &aac, &parse, &queue];
    pipeline.add_many(chain)?;
    if s.audio_source == AudioSource::Test {
        let beep = gst::Caps::builder("audio/x-raw")
            .field("format", "F32LE")
            .field("layout", "interleaved")
            .field("rate", 48_000i32)
            .field("channels", 2i32)
            .build();
        let beep_filter = gst::ElementFactory::make("capsfilter").property("caps", &beep).build()?;
        pipeline.add(&beep_filter)?;
        gst::Element::link_many([&src, &beep_filter, &convert])?;
        if let Some(pad) = beep_filter.static_pad("src") {
            add_beep(&pad, grid.clone());
        }
        gst::Element::link_many(&chain[1..])?;
    } else {
        gst::Element::link_many(chain)?;
    }
    queue.link(mux)?;
    // The sound reaches the muxer later than the picture of the same instant (a source period,
    // an encoder frame and its look-ahead, against about 6 ms for the picture), and the muxer
    // interleaves by time: it would hold each picture for that long. Labelling the sound
    // [`audio_trail`] later lets the picture go at once; the sound then plays that much behind
    // the picture, inside EBU R37's tolerance for sound late (60 ms).
    // A configured delay (audio.delay_ms) moves the sound's labels the same way; the AAC
    // encoder's priming samples, which every decoder plays first, the other way.
    if let Some(pad) = queue.static_pad("src").and_then(|p| p.peer()) {
        let trail = audio_trail(s.audio_codec);
        pad.set_offset(audio_offset_ns(trail, s.audio_delay_ms, aac_priming(aac_element)));
    }
    let c = counters.clone();
    if let Some(pad) = parse.static_pad("src") {
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            c.audio_frames.fetch_add(1, Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
    }
    Ok(())
}

/// How much later than the picture of the same instant the sound is labelled, ns: the muxer's
/// `trail` ([`audio_trail`]) and the configured delay, less the encoder's `priming`.
pub(super) fn audio_offset_ns(trail: std::time::Duration, delay_ms: i32, priming: std::time::Duration) -> i64 {
    trail.as_nanos() as i64 + i64::from(delay_ms) * 1_000_000 - priming.as_nanos() as i64
}

/// The silence an AAC encoder puts before the first sound, at 48 kHz: its output is labelled
/// from the first input sample's time, and decoders (GStreamer's, ffmpeg's) play the priming
/// too, so without this the sound plays that much late. Measured here (an onset at a known
/// sample through the encoder, decoded by ffmpeg): avenc_aac 1024 samples, voaacenc 1601;
/// fdkaacenc's (not installed here) is libfdk's AAC-LC delay, 2048.
pub fn aac_priming(element: &str) -> std::time::Duration {
    let samples: u64 = match element {
        "avenc_aac" => 1024,
        "voaacenc" => 1601,
        "fdkaacenc" => 2048,
        _ => 0,
    };
    std::time::Duration::from_nanos(samples * 1_000_000_000 / 48_000)
}

/// Writes the lip-sync beep into the test source's (silent, F32 interleaved) buffers.
fn add_beep(pad: &gst::Pad, grid: crate::lipsync::SharedGrid) {
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, probe| {
        let Some((rate, channels)) = crate::audio_format(pad) else {
            return gst::PadProbeReturn::Ok;
        };
        if let Some(gst::PadProbeData::Buffer(ref mut buffer)) = probe.data {
            let Some(pts) = buffer.pts() else { return gst::PadProbeReturn::Ok };
            let buffer = buffer.make_mut();
            // audiotestsrc flags its silence as a gap, which opusenc encodes as silence
            // without reading it: the beep is sound.
            buffer.unset_flags(gst::BufferFlags::GAP);
            if let Ok(mut map) = buffer.map_writable() {
                let bytes = map.as_mut_slice();
                let mut samples: Vec<f32> = vec![0.0; bytes.len() / 4];
                crate::lipsync::fill_beep(&mut samples, channels, rate, pts.nseconds(), *lock(&grid));
                for (out, s) in bytes.chunks_exact_mut(4).zip(&samples) {
                    out.copy_from_slice(&s.to_le_bytes());
                }
            }
        }
        gst::PadProbeReturn::Ok
    });
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.locked()
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
    fn a_cut_empties_x264s_rate_buffer_for_two_frames_and_a_rise_does_not() {
        let rb = RateBuffer::new(300, 30, 6000);
        assert_eq!(rb.on_bitrate(2000), Some(35), "one frame at 30 fps (x264 takes no less)");
        assert_eq!(rb.on_frame(), None, "the frame under way may have started before the cut");
        assert_eq!(rb.on_frame(), Some(300), "its size back after two frames");
        assert_eq!(rb.on_frame(), None);
        assert_eq!(rb.on_bitrate(2500), None, "a rise keeps the buffer");
        assert_eq!(rb.on_frame(), None);
        assert_eq!(rb.on_bitrate(2400), Some(35));
        assert_eq!(rb.on_bitrate(1800), Some(35));
        assert_eq!(rb.on_frame(), None, "a second cut starts the count again");
        assert_eq!(rb.on_frame(), Some(300));
        assert_eq!(RateBuffer::new(300, 25, 1000).on_bitrate(500), Some(41));
    }
}
