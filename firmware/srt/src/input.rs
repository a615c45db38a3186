//! One SRT input: `srtsrc ! appsink`, in a pipeline and a thread of its own. It hands each TS
//! buffer to a consumer, restarts with capped backoff when the connection ends, and publishes an
//! [`InputStatus`]: whether a stream is arriving, why not, and the receiver's counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;
use serde::Serialize;
use telebridge_config::{SrtMode, SrtUrl};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::reject::rejected_since;
use crate::supervisor::{Attempt, Control, Job, Supervisor};
use crate::ts_check::ContinuityCheck;
use crate::{Backoff, SrtStats};

/// Where an input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputState {
    /// Listening; no caller yet (or the caller left).
    Listening,
    /// Calling the sender.
    Connecting,
    /// A stream is arriving.
    Receiving,
    /// The last attempt failed; waiting to retry.
    Retrying,
    /// Stopped on request.
    Stopped,
}

/// What an input reports.
#[derive(Debug, Clone, Serialize)]
pub struct InputStatus {
    /// The URL without secrets.
    pub url: String,
    /// Current state.
    pub state: InputState,
    /// Why no stream is arriving, in words.
    pub reason: Option<String>,
    /// Connections that ended so far.
    pub reconnects: u32,
    /// Receiver counters (packets received, lost in the network, RTT, rate, latency).
    pub srt: SrtStats,
    /// MPEG-TS packets missing from what arrived: lost for good.
    pub ts_continuity_errors: u64,
    /// 188-byte pieces received that were not MPEG-TS packets (no sync byte): the sender sends
    /// something else.
    pub not_ts_packets: u64,
    /// Bytes received since start.
    pub bytes: u64,
    /// Milliseconds since the last data (null before any).
    pub last_data_ms_ago: Option<u64>,
}

/// Why an input could not be created.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `srtsrc` is missing.
    #[error("GStreamer element srtsrc is missing: install gstreamer1.0-plugins-bad")]
    NoSrtSrc,
    /// GStreamer refused to build the pipeline.
    #[error("GStreamer: {0}")]
    Gst(String),
}

/// Receives each TS buffer.
pub type TsConsumer = Arc<dyn Fn(&gst::Buffer) + Send + Sync>;

/// A running SRT input.
#[derive(Debug)]
pub struct SrtInput {
    status: watch::Receiver<InputStatus>,
    supervisor: Supervisor,
}

struct Shared {
    last_data: Mutex<Option<Instant>>,
    bytes: AtomicU64,
    cc: Mutex<ContinuityCheck>,
}

impl SrtInput {
    /// Starts receiving from `url`; every TS buffer goes to `consumer`.
    pub fn start(url: SrtUrl, consumer: TsConsumer) -> Result<Self, InputError> {
        let pipeline = gst::Pipeline::with_name("srt-input");
        let src = gst::ElementFactory::make("srtsrc")
            .name("srt")
            .property("uri", url.uri_without_secret())
            .property("auto-reconnect", false)
            .property("keep-listening", false)
            .property("wait-for-connection", true)
            // libsrt's epoll wait must return now and then: with the default (-1, forever) a
            // caller that is connected but silent keeps the streaming thread from ever seeing a
            // stop, and the input cannot restart.
            .property("poll-timeout", 100i32)
            .build()
            .map_err(|_| InputError::NoSrtSrc)?;
        if let Some(pass) = &url.passphrase {
            src.set_property("passphrase", pass.expose());
        }
        let sink = gst_app::AppSink::builder().name("ts").sync(false).async_(false).max_buffers(256).drop(true).build();
        pipeline.add_many([&src, sink.upcast_ref()]).map_err(|e| InputError::Gst(e.to_string()))?;
        src.link(&sink).map_err(|e| InputError::Gst(e.to_string()))?;
        let shared = Arc::new(Shared {
            last_data: Mutex::new(None),
            bytes: AtomicU64::new(0),
            cc: Mutex::new(ContinuityCheck::default()),
        });
        let s = shared.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    if let Some(buffer) = sample.buffer_owned() {
                        *s.last_data.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                        s.bytes.fetch_add(buffer.size() as u64, Ordering::Relaxed);
                        if let Ok(map) = buffer.map_readable() {
                            s.cc.lock().unwrap_or_else(|p| p.into_inner()).feed(map.as_slice());
                        }
                        consumer(&buffer);
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
        let initial = InputStatus {
            url: url.to_string(),
            state: if url.mode == SrtMode::Listener { InputState::Listening } else { InputState::Connecting },
            reason: None,
            reconnects: 0,
            srt: SrtStats::default(),
            ts_continuity_errors: 0,
            not_ts_packets: 0,
            bytes: 0,
            last_data_ms_ago: None,
        };
        let (status_tx, status_rx) = watch::channel(initial);
        // A listener whose caller left listens again at once; a caller backs off.
        let backoff = if url.mode == SrtMode::Listener {
            Backoff { first: Duration::from_millis(100), max: Duration::from_millis(100) }
        } else {
            Backoff::default()
        };
        let worker = Worker { pipeline, src, url, status: status_tx, shared };
        let supervisor =
            Supervisor::spawn("srt-in".into(), backoff, worker).map_err(|e| InputError::Gst(e.to_string()))?;
        Ok(Self { status: status_rx, supervisor })
    }

    /// The input's status, updated a few times a second.
    pub fn status(&self) -> watch::Receiver<InputStatus> {
        self.status.clone()
    }

    /// Stops receiving and ends the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.supervisor.stop();
    }
}

struct Worker {
    pipeline: gst::Pipeline,
    src: gst::Element,
    url: SrtUrl,
    status: watch::Sender<InputStatus>,
    shared: Arc<Shared>,
}

/// Data older than this means the stream has stopped arriving.
const STALE: Duration = Duration::from_millis(500);

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        let started = Instant::now();
        self.shared.cc.lock().unwrap_or_else(|p| p.into_inner()).reset();
        let ended = if self.pipeline.set_state(gst::State::Playing).is_err() {
            Some("cannot start the SRT receiver".to_string())
        } else {
            self.watch(control, started, attempts)
        };
        let _ = self.pipeline.set_state(gst::State::Null);
        match ended {
            Some(reason) => Attempt::Failed(reason),
            None => Attempt::Stopped,
        }
    }

    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration) {
        warn!(input = %self.url.label(), %reason, retry_in_ms = delay.as_millis() as u64, "SRT input restarting");
        self.status.send_modify(|s| {
            s.state = InputState::Retrying;
            s.reason = Some(reason);
            s.reconnects = attempts;
        });
    }

    fn stopped(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
        self.status.send_modify(|s| s.state = InputState::Stopped);
    }
}

impl Worker {
    /// Watches one connection; `None` when stopped on request, else why it ended.
    fn watch(&self, control: &Control, started: Instant, attempt: &mut u32) -> Option<String> {
        let bus = self.pipeline.bus()?;
        let listener = self.url.mode == SrtMode::Listener;
        let mut was_receiving = false;
        let mut last_reject_check = started;
        let mut reject_reason: Option<String> = None;
        loop {
            if control.stop_within(Duration::from_millis(200)) {
                return None;
            }
            while let Some(msg) = bus.pop() {
                match msg.view() {
                    gst::MessageView::Error(err) => {
                        let text = err.error().to_string();
                        return Some(match rejected_since(started) {
                            Some(r) => r.to_string(),
                            None if was_receiving => format!("the sender went away: {text}"),
                            None => format!("cannot connect to {}: {text}", self.peer()),
                        });
                    }
                    gst::MessageView::Eos(_) => return Some("the sender closed the connection".into()),
                    _ => {}
                }
            }
            if let Some(r) = rejected_since(last_reject_check) {
                warn!(input = %self.url.label(), reason = %r, "SRT connection rejected");
                reject_reason = Some(r.to_string());
            }
            last_reject_check = Instant::now();
            let last = *self.shared.last_data.lock().unwrap_or_else(|p| p.into_inner());
            let since = last.map(|t| t.elapsed());
            let receiving = since.is_some_and(|d| d < STALE) && last.is_some_and(|t| t >= started);
            if receiving && !was_receiving {
                info!(input = %self.url.label(), "SRT input receiving");
                *attempt = 0;
                reject_reason = None;
            }
            if was_receiving && !receiving {
                // The sender stopped sending (gone, or the network is down): listen or call again
                // rather than wait for libsrt's 5 s timeout.
                return Some(format!("no data for {} ms", STALE.as_millis()));
            }
            if !receiving
                && !listener
                && started.elapsed()
                    > self.url.connect_timeout.unwrap_or(Duration::from_secs(3)) + Duration::from_secs(1)
            {
                return Some(
                    reject_reason.unwrap_or_else(|| format!("no answer from {} (is the sender running?)", self.peer())),
                );
            }
            was_receiving = receiving;
            let conns = SrtStats::read(&self.src);
            let (cc_errors, not_ts) = {
                let cc = self.shared.cc.lock().unwrap_or_else(|p| p.into_inner());
                (cc.errors, cc.not_ts)
            };
            self.status.send_modify(|s| {
                s.state = if receiving {
                    InputState::Receiving
                } else if listener {
                    InputState::Listening
                } else {
                    InputState::Connecting
                };
                s.reason = if receiving {
                    None
                } else if let Some(r) = &reject_reason {
                    Some(r.clone())
                } else if listener {
                    Some(format!("no caller yet on port {}", self.url.port))
                } else {
                    Some(format!("calling {}", self.peer()))
                };
                if let Some((_, st)) = conns.first() {
                    s.srt = st.clone();
                }
                s.ts_continuity_errors = cc_errors;
                s.not_ts_packets = not_ts;
                s.bytes = self.shared.bytes.load(Ordering::Relaxed);
                s.last_data_ms_ago = since.map(|d| d.as_millis() as u64);
            });
        }
    }

    fn peer(&self) -> String {
        format!("{}:{}", self.url.host.as_deref().unwrap_or("*"), self.url.port)
    }
}
