//! One RTMP or RTMPS output, in a thread of its own, with a pipeline built afresh for every
//! connection attempt (the FLV muxer and the demuxer start clean each time):
//!
//! ```text
//! appsrc(TS, leaky) ! tsdemux ─ h264parse ! queue ─┐
//!                             └ aacparse ! queue ──┴─ flvmux streamable=true ! rtmp2sink
//! ```
//!
//! The server and the stream key go to `rtmp2sink` as separate properties, so the key is never
//! part of a URL that GStreamer logs. When the server goes away the output retries with capped
//! backoff and asks the encoder for a keyframe once it is back, without touching anything else.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use gst::prelude::*;
use telebridge_config::RtmpUrl;
use telebridge_srt::supervisor::{Attempt, Control, Job, Supervisor};
use telebridge_srt::{Backoff, OutputState, OutputStatus};
use tokio::sync::watch;
use tracing::{info, warn};

type Slot = Arc<Mutex<Option<gst_app::AppSrc>>>;

/// A running RTMP(S) output.
#[derive(Debug)]
pub struct RtmpOutput {
    slot: Slot,
    queue_bytes: u64,
    dropped: Arc<AtomicU64>,
    status: watch::Receiver<OutputStatus>,
    supervisor: Option<Supervisor>,
}

impl RtmpOutput {
    /// Starts an output to `url`. `on_connected` asks the encoder for a keyframe.
    pub fn start(name: String, url: RtmpUrl, queue_bytes: u64, on_connected: Arc<dyn Fn() + Send + Sync>) -> Self {
        let (status_tx, status_rx) =
            watch::channel(OutputStatus::new("rtmp", name.clone(), url.label(), OutputState::Connecting));
        let slot: Slot = Arc::new(Mutex::new(None));
        let dropped = Arc::new(AtomicU64::new(0));
        let worker =
            Worker { url, status: status_tx, on_connected, slot: slot.clone(), queue_bytes, dropped: dropped.clone() };
        let supervisor = Supervisor::spawn(format!("rtmp-{name}"), Backoff::default(), worker)
            .map_err(|e| warn!(output = %name, error = %e, "cannot start the RTMP output's thread"))
            .ok();
        Self { slot, queue_bytes, dropped, status: status_rx, supervisor }
    }

    /// Hands the output TS bytes; never blocks.
    pub fn send(&self, data: &[u8]) {
        let slot = self.slot.locked();
        if let Some(src) = slot.as_ref() {
            if src.current_level_bytes() + data.len() as u64 > self.queue_bytes {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            let _ = src.push_buffer(gst::Buffer::from_slice(data.to_vec()));
        }
    }

    /// The output's status.
    pub fn status(&self) -> watch::Receiver<OutputStatus> {
        self.status.clone()
    }

    /// Ends the stream cleanly and stops.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.supervisor.as_mut() {
            s.stop();
        }
    }
}

struct Worker {
    url: RtmpUrl,
    status: watch::Sender<OutputStatus>,
    on_connected: Arc<dyn Fn() + Send + Sync>,
    slot: Slot,
    queue_bytes: u64,
    dropped: Arc<AtomicU64>,
}

enum End {
    Stop,
    Failed(String),
}

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        let end = match self.build() {
            Ok((pipeline, sink)) => {
                let end = self.connection(control, &pipeline, &sink, attempts);
                *self.slot.locked() = None;
                let _ = pipeline.set_state(gst::State::Null);
                end
            }
            Err(e) => End::Failed(e),
        };
        match end {
            End::Stop => Attempt::Stopped,
            End::Failed(reason) => Attempt::Failed(reason),
        }
    }

    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration) {
        warn!(output = %self.url, %reason, retry_in_ms = delay.as_millis() as u64, "RTMP output retrying");
        self.status.send_modify(|s| {
            s.state = OutputState::Retrying;
            s.reason = Some(reason);
            s.reconnects = attempts;
        });
    }

    fn stopped(&mut self) {
        self.status.send_modify(|s| s.state = OutputState::Stopped);
    }
}

impl Worker {
    fn build(&self) -> Result<(gst::Pipeline, gst::Element), String> {
        let e = |r: Result<gst::Element, gst::glib::BoolError>, what: &str, pkg: &str| {
            r.map_err(|_| format!("GStreamer element {what} is missing: install {pkg}"))
        };
        let pipeline = gst::Pipeline::with_name("rtmp-output");
        let caps = gst::Caps::builder("video/mpegts").field("systemstream", true).field("packetsize", 188i32).build();
        let appsrc = gst_app::AppSrc::builder()
            .caps(&caps)
            .format(gst::Format::Time)
            .is_live(true)
            .block(false)
            .max_bytes(self.queue_bytes)
            .leaky_type(gst_app::AppLeakyType::Downstream)
            .build();
        let demux = e(gst::ElementFactory::make("tsdemux").build(), "tsdemux", "gstreamer1.0-plugins-bad")?;
        let vparse = e(gst::ElementFactory::make("h264parse").build(), "h264parse", "gstreamer1.0-plugins-bad")?;
        let vqueue = e(gst::ElementFactory::make("queue").build(), "queue", "gstreamer1.0-plugins-base")?;
        let aparse = e(gst::ElementFactory::make("aacparse").build(), "aacparse", "gstreamer1.0-plugins-good")?;
        let aqueue = e(gst::ElementFactory::make("queue").build(), "queue", "gstreamer1.0-plugins-base")?;
        let mux = e(
            gst::ElementFactory::make("flvmux").property("streamable", true).build(),
            "flvmux",
            "gstreamer1.0-plugins-good",
        )?;
        let sink = e(gst::ElementFactory::make("rtmp2sink").build(), "rtmp2sink", "gstreamer1.0-plugins-bad")?;
        sink.set_property_from_str("scheme", if self.url.secure { "rtmps" } else { "rtmp" });
        sink.set_property("host", &self.url.host);
        sink.set_property("port", i32::from(self.url.port));
        sink.set_property("application", &self.url.app);
        sink.set_property("stream", self.url.key.expose());
        sink.set_property("sync", false);
        sink.set_property("async", false);
        if self.url.secure && !self.url.tls_verify {
            sink.set_property_from_str("tls-validation-flags", "no-flags");
        }
        let map = |r: Result<(), gst::glib::BoolError>| r.map_err(|err| err.to_string());
        map(pipeline.add_many([appsrc.upcast_ref(), &demux, &vparse, &vqueue, &aparse, &aqueue, &mux, &sink]))?;
        map(appsrc.link(&demux))?;
        map(vparse.link(&vqueue))?;
        map(aparse.link(&aqueue))?;
        map(mux.link(&sink))?;
        let (vpad, apad) = (vparse.static_pad("sink"), aparse.static_pad("sink"));
        let (vq, aq, m) = (vqueue.downgrade(), aqueue.downgrade(), mux.downgrade());
        demux.connect_pad_added(move |_, pad| {
            let name = pad.name();
            let (target, queue, mux_pad) = if name.starts_with("video") {
                (vpad.as_ref(), vq.upgrade(), "video")
            } else if name.starts_with("audio") {
                (apad.as_ref(), aq.upgrade(), "audio")
            } else {
                return;
            };
            let (Some(target), Some(queue), Some(mux)) = (target, queue, m.upgrade()) else { return };
            if target.is_linked() {
                return;
            }
            // The muxer's pad is requested only for streams that exist, so a stream without
            // audio does not make flvmux wait for it.
            let ok = pad.link(target).is_ok() && queue.link_pads(Some("src"), &mux, Some(mux_pad)).is_ok();
            if !ok {
                warn!(pad = %name, "cannot link the demuxed stream to flvmux");
            }
        });
        map(pipeline.set_state(gst::State::Playing).map(|_| ()).map_err(|e| gst::glib::bool_error!("{e}")))?;
        *self.slot.locked() = Some(appsrc);
        Ok((pipeline, sink))
    }

    fn connection(&self, control: &Control, pipeline: &gst::Pipeline, sink: &gst::Element, attempt: &mut u32) -> End {
        let Some(bus) = pipeline.bus() else { return End::Failed("no bus".into()) };
        self.status.send_modify(|s| s.state = OutputState::Connecting);
        (self.on_connected)();
        let started = Instant::now();
        let mut live = false;
        let mut last_bytes = 0u64;
        let mut last_progress = Instant::now();
        loop {
            if control.stop_within(Duration::from_millis(200)) {
                if let Some(src) = self.slot.locked().as_ref() {
                    let _ = src.end_of_stream();
                }
                let _ = bus.timed_pop_filtered(
                    gst::ClockTime::from_seconds(2),
                    &[gst::MessageType::Eos, gst::MessageType::Error],
                );
                return End::Stop;
            }
            while let Some(msg) = bus.pop() {
                if let gst::MessageView::Error(err) = msg.view() {
                    let text = err.error().to_string();
                    return End::Failed(if live {
                        format!("connection to {}:{} lost: {text}", self.url.host, self.url.port)
                    } else {
                        format!("cannot publish to {}:{}: {text}", self.url.host, self.url.port)
                    });
                }
            }
            // Bytes written, not acknowledged: servers acknowledge once per window (megabytes,
            // seconds apart at a few Mbit/s). A server that stops reading stalls the writes.
            let bytes = sink
                .property::<Option<gst::Structure>>("stats")
                .and_then(|s| s.get::<u64>("out-bytes-total").ok())
                .unwrap_or(0);
            if bytes > last_bytes {
                last_progress = Instant::now();
                if !live {
                    live = true;
                    *attempt = 0;
                    info!(output = %self.url, "RTMP output publishing");
                    (self.on_connected)();
                }
            }
            last_bytes = bytes;
            if live && last_progress.elapsed() > Duration::from_secs(5) {
                return End::Failed(format!("{}:{} stopped taking data", self.url.host, self.url.port));
            }
            if !live && started.elapsed() > Duration::from_secs(10) {
                return End::Failed(format!("no answer from {}:{}", self.url.host, self.url.port));
            }
            let dropped = self.dropped.load(Ordering::Relaxed);
            self.status.send_modify(|s| {
                s.state = if live { OutputState::Live } else { OutputState::Connecting };
                if live {
                    s.reason = None;
                }
                s.bytes_written = bytes;
                s.queue_dropped = dropped;
            });
        }
    }
}
