//! The video sources (test pattern, V4L2 capture, libcamera), the timecode stamp and the
//! preview branch.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use telebridge_sync::Locked;

use gst_video::prelude::*;
use telebridge_config::VideoSource;
use tracing::info;

use crate::capture_device::{self, CaptureKind, CapturePlan};
use crate::error::{make, MediaError};
use crate::lipsync;
use crate::timecode::{self, Timecode};

use super::{EncoderCounters, EncoderSettings, FrameGate, PreviewSlot, Taps, PREVIEW_WIDTH};

pub(super) fn add_video_source(
    pipeline: &gst::Pipeline,
    s: &EncoderSettings,
    taps: &Taps,
    counters: &Arc<EncoderCounters>,
    grid: &lipsync::SharedGrid,
    frames: &Arc<FrameGate>,
) -> Result<(gst::Element, Option<CapturePlan>), MediaError> {
    let captured = counters.clone();
    let gate = taps.signal_gate.clone();
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
                .name(crate::VIDEO_SOURCE)
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
            frames.attach(&pad, counters.clone());
            add_timecode_stamp(&pad, taps.echo.clone(), grid.clone());
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
                .name(crate::VIDEO_SOURCE)
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
            let src = gst::ElementFactory::make("libcamerasrc").name(crate::VIDEO_SOURCE).build().map_err(|_| {
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

/// Burns the timecode into each frame as it leaves the test source, and the far box's under it
/// when there is a fresh `echo`; and the lip-sync flash ([`crate::lipsync`]) in its corner.
pub(super) fn add_timecode_stamp(pad: &gst::Pad, echo: Option<timecode::Echo>, grid: lipsync::SharedGrid) {
    let frame_no = AtomicU64::new(0);
    let info: Mutex<Option<gst_video::VideoInfo>> = Mutex::new(None);
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, probe| {
        let mut info = info.locked();
        if info.is_none() {
            *info = pad.current_caps().and_then(|c| gst_video::VideoInfo::from_caps(&c).ok());
        }
        let Some(vinfo) = info.as_ref() else { return gst::PadProbeReturn::Ok };
        if let Some(gst::PadProbeData::Buffer(ref mut buffer)) = probe.data {
            let tc = Timecode::now(frame_no.fetch_add(1, Ordering::Relaxed) as u32);
            let frame_time =
                gst::ClockTime::SECOND.mul_div_floor(vinfo.fps().denom() as u64, vinfo.fps().numer().max(1) as u64);
            let flash = match (buffer.pts(), buffer.duration().or(frame_time)) {
                (Some(pts), Some(d)) => {
                    *grid.locked() = Some(lipsync::FrameGrid { pts: pts.nseconds(), duration: d.nseconds() });
                    lipsync::is_flash_frame(pts.into(), d.into())
                }
                _ => false,
            };
            let buffer = buffer.make_mut();
            if let Ok(mut frame) = gst_video::VideoFrameRef::from_buffer_ref_writable(buffer, vinfo) {
                let (w, h) = (frame.width() as usize, frame.height() as usize);
                let stride = frame.plane_stride()[0] as usize;
                if let Ok(luma) = frame.plane_data_mut(0) {
                    timecode::stamp_luma(luma, stride, w, h, &tc);
                    if let Some(far) = echo.as_ref().and_then(|e| e.fresh(std::time::Instant::now())) {
                        timecode::stamp_strip(luma, stride, w, h, &far, timecode::Strip::Echo);
                    }
                }
                // Neutral chroma under the strips so they read as grey, not colour.
                let strip = timecode::strip_height(w) * if echo.is_some() { 2 } else { 1 };
                for plane in 1..frame.n_planes() {
                    let stride = frame.plane_stride()[plane as usize] as usize;
                    if let Ok(data) = frame.plane_data_mut(plane) {
                        let rows = strip.div_ceil(2);
                        let end = (rows * stride).min(data.len());
                        data[..end].fill(128);
                    }
                }
                for plane in 0..frame.n_planes().min(3) {
                    let stride = frame.plane_stride()[plane as usize] as usize;
                    if let Ok(data) = frame.plane_data_mut(plane) {
                        lipsync::stamp_flash(plane as usize, data, stride, w, h, flash);
                    }
                }
            }
        }
        gst::PadProbeReturn::Ok
    });
}

/// The preview branch: `tee ! queue(leaky, 1) ! videorate(1 fps) ! videoscale ! videoconvert !
/// jpegenc ! appsink`; it never holds up the encoder (the queue drops, the appsink drops).
pub(super) fn add_preview(
    pipeline: &gst::Pipeline,
    tee: &gst::Element,
    s: &EncoderSettings,
    slot: PreviewSlot,
) -> Result<(), MediaError> {
    add_jpeg_branch(pipeline, tee, Some((PREVIEW_WIDTH * s.height / s.width.max(1)) & !1), slot)
}

/// The preview branch from `tee`, [`PREVIEW_WIDTH`] wide and `height` high (or as high as the
/// picture's shape makes it), into `slot` once a second. Also the bridge's decoder's.
pub(crate) fn add_jpeg_branch(
    pipeline: &gst::Pipeline,
    tee: &gst::Element,
    height: Option<u32>,
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
    // Square pixels: with no height given, videoscale keeps the picture's shape (without it, it
    // kept the height and stretched the pixels: a 640x360 picture came out 320x360).
    let mut caps = gst::Caps::builder("video/x-raw")
        .field("format", "I420")
        .field("width", PREVIEW_WIDTH as i32)
        .field("pixel-aspect-ratio", gst::Fraction::new(1, 1));
    if let Some(h) = height {
        caps = caps.field("height", h.max(2) as i32);
    }
    let caps = caps.build();
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
                    *slot.locked() = Some(map.as_slice().to_vec());
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    Ok(())
}
