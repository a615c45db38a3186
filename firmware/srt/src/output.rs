//! One SRT output: `appsrc ! srtsink`, in a pipeline and a thread of its own.
//!
//! The encoder hands it TS buffers with [`SrtOutput::push`], which never blocks: the `appsrc` is
//! a bounded queue that drops its oldest data when the link cannot keep up. The thread owns the
//! pipeline, watches its bus and statistics, publishes an [`OutputStatus`] on a `watch`, and when
//! the connection fails it retries with capped backoff without touching the encoder.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gst::prelude::*;
use serde::Serialize;
use telebridge_config::{SrtMode, SrtUrl};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::reject::rejected_since;
use crate::reject::RejectLog;
use crate::stats::LifeTotals;
use crate::supervisor::{Attempt, Control, Job, Supervisor};
use crate::{Backoff, SrtStats};

/// Where an output is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputState {
    /// Calling the peer (caller, rendezvous).
    Connecting,
    /// Listening, no caller yet.
    Listening,
    /// Connected and sending (for a listener: at least one caller).
    Live,
    /// The last attempt failed; waiting before the next (see `reason`).
    Retrying,
    /// Stopped on request.
    Stopped,
    /// Given up until reconfigured (a full disk, a removed USB stick).
    Failed,
}

/// What an output reports: state, reason when not live, counters.
#[derive(Debug, Clone, Serialize)]
pub struct OutputStatus {
    /// The output's name.
    pub name: String,
    /// Its URL without secrets.
    pub url: String,
    /// Current state.
    pub state: OutputState,
    /// Why it is not live, in words (e.g. "passphrase rejected: ...").
    pub reason: Option<String>,
    /// Reconnects so far.
    pub reconnects: u32,
    /// Connected callers (listener) or 0/1.
    pub callers: usize,
    /// Counters summed over connections.
    pub srt: SrtStats,
    /// Per-caller counters in listener mode: (address, stats).
    pub per_caller: Vec<(String, SrtStats)>,
    /// The last rejected caller's reason, in listener mode.
    pub last_rejection: Option<String>,
    /// Buffers dropped at this output's queue because the link could not keep up.
    pub queue_dropped: u64,
    /// Bytes written to the network or the disk (RTMP and recording outputs).
    pub bytes_written: u64,
    /// `srt`, `rtmp` or `file`.
    pub kind: &'static str,
}

impl OutputStatus {
    /// A fresh status for an output of `kind`.
    pub fn new(kind: &'static str, name: String, url: String, state: OutputState) -> Self {
        Self {
            name,
            url,
            state,
            reason: None,
            reconnects: 0,
            callers: 0,
            srt: SrtStats::default(),
            per_caller: Vec::new(),
            last_rejection: None,
            queue_dropped: 0,
            bytes_written: 0,
            kind,
        }
    }
}

/// Why an output could not be created.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// `srtsink` is missing.
    #[error("GStreamer element srtsink is missing: install gstreamer1.0-plugins-bad")]
    NoSrtSink,
    /// GStreamer refused to build the pipeline.
    #[error("GStreamer: {0}")]
    Gst(String),
}

/// A running SRT output.
#[derive(Debug)]
pub struct SrtOutput {
    name: String,
    appsrc: gst_app::AppSrc,
    queue_bytes: u64,
    dropped: Arc<AtomicU64>,
    status: watch::Receiver<OutputStatus>,
    supervisor: Supervisor,
}

/// How long a caller may send without an ACK before it counts the receiver as gone. libsrt
/// itself needs about 5 s whatever `peeridletimeo` says (it also waits for 16 expiry periods of
/// at least 300 ms); a receiver that restarts should get video again in well under that. A
/// `peeridletimeo` in the URL overrides it.
fn ack_timeout(url: &SrtUrl, rtt: Duration) -> Duration {
    url.peer_idle_timeout.unwrap_or_else(|| (rtt * 4).max(Duration::from_secs(2)))
}

/// Whether a caller's receiver is still there, from the counters libsrt gives it: a receiver
/// acknowledges what it gets, so a caller that sends and hears no ACK for [`ack_timeout`] has
/// lost it. Pure: fed readings and the time, tested without waiting.
#[derive(Debug, Clone)]
pub struct PeerWatch {
    last_acks: i64,
    last_sent: i64,
    last_heard: Instant,
}

/// What [`PeerWatch::observe`] concluded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Peer {
    /// An ACK arrived since the last reading.
    Heard,
    /// No ACK, but nothing to acknowledge either (or not for long).
    Quiet,
    /// Sending without an ACK for this long, past the timeout: the receiver is gone.
    Gone(Duration),
}

impl PeerWatch {
    /// A watch starting at `now` (the connection attempt).
    pub fn new(now: Instant) -> Self {
        Self { last_acks: 0, last_sent: 0, last_heard: now }
    }

    /// One reading of the counters at `now`; `timeout` is [`ack_timeout`] for the link.
    pub fn observe(&mut self, acks: i64, sent: i64, now: Instant, timeout: Duration) -> Peer {
        let acked = acks > self.last_acks;
        let sending = sent > self.last_sent;
        self.last_acks = acks;
        self.last_sent = sent;
        if acked || !sending {
            self.last_heard = now;
        }
        let silent = now.saturating_duration_since(self.last_heard);
        if acked {
            Peer::Heard
        } else if silent > timeout {
            Peer::Gone(silent)
        } else {
            Peer::Quiet
        }
    }
}

impl SrtOutput {
    /// Starts an output. `queue_bytes` bounds its queue (about a second of stream is right);
    /// `on_peer_joined` is called when a peer connects, to ask the encoder for a keyframe.
    pub fn start(
        name: String,
        url: SrtUrl,
        queue_bytes: u64,
        on_peer_joined: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Self, OutputError> {
        let pipeline = gst::Pipeline::with_name(&format!("output-{name}"));
        let caps = gst::Caps::builder("video/mpegts").field("systemstream", true).field("packetsize", 188i32).build();
        let appsrc = gst_app::AppSrc::builder()
            .name("ts-in")
            .caps(&caps)
            .format(gst::Format::Time)
            .is_live(true)
            .block(false)
            .max_bytes(queue_bytes)
            .leaky_type(gst_app::AppLeakyType::Downstream)
            .build();
        let uri = url.uri_without_secret();
        let sink = gst::ElementFactory::make("srtsink")
            .name("srt")
            .property("uri", &uri)
            .property("auto-reconnect", false)
            .property("wait-for-connection", false)
            .property("sync", false)
            .property("async", false)
            .build()
            .map_err(|_| OutputError::NoSrtSink)?;
        if let Some(pass) = &url.passphrase {
            sink.set_property("passphrase", pass.expose());
        }
        if url.mode == SrtMode::Listener {
            let cb = on_peer_joined.clone();
            sink.connect("caller-added", false, move |_| {
                cb();
                None
            });
        }
        pipeline.add_many([appsrc.upcast_ref(), &sink]).map_err(|e| OutputError::Gst(e.to_string()))?;
        appsrc.link(&sink).map_err(|e| OutputError::Gst(e.to_string()))?;

        let state = if url.mode == SrtMode::Listener { OutputState::Listening } else { OutputState::Connecting };
        let initial = OutputStatus::new("srt", name.clone(), url.to_string(), state);
        let (status_tx, status_rx) = watch::channel(initial);
        let dropped = Arc::new(AtomicU64::new(0));
        let worker = Worker {
            pipeline,
            sink,
            appsrc: appsrc.clone(),
            url,
            status: status_tx,
            on_peer_joined,
            dropped: dropped.clone(),
            totals: LifeTotals::default(),
            reject_log: RejectLog::default(),
        };
        let supervisor = Supervisor::spawn(format!("srt-out-{name}"), Backoff::default(), worker)
            .map_err(|e| OutputError::Gst(e.to_string()))?;
        Ok(Self { name, appsrc, queue_bytes, dropped, status: status_rx, supervisor })
    }

    /// Hands the output one TS buffer. Never blocks; dropped when the output is not connected
    /// or its queue is full.
    pub fn push(&self, buffer: &gst::Buffer) {
        if self.appsrc.current_level_bytes() + buffer.size() as u64 > self.queue_bytes {
            // The leaky queue is about to drop its oldest buffer: the link is not keeping up.
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self.appsrc.push_buffer(buffer.clone());
    }

    /// The output's status, updated a few times a second.
    pub fn status(&self) -> watch::Receiver<OutputStatus> {
        self.status.clone()
    }

    /// The output's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Flushes what is queued, closes the connection and ends the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.supervisor.stop();
    }
}

struct Worker {
    pipeline: gst::Pipeline,
    sink: gst::Element,
    appsrc: gst_app::AppSrc,
    url: SrtUrl,
    status: watch::Sender<OutputStatus>,
    on_peer_joined: Arc<dyn Fn() + Send + Sync>,
    dropped: Arc<AtomicU64>,
    /// Counters over every connection so far (callers that left, earlier attempts).
    totals: LifeTotals,
    reject_log: RejectLog,
}

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        let dropped = self.dropped.clone();
        match self.connection(control, attempts, &dropped) {
            AttemptEnd::Stop => Attempt::Stopped,
            AttemptEnd::Failed(reason) => Attempt::Failed(reason),
        }
    }

    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration) {
        let _ = self.pipeline.set_state(gst::State::Null);
        warn!(output = %self.url.label(), %reason, retry_in_ms = delay.as_millis() as u64, attempt = attempts, "SRT output retrying");
        self.status.send_modify(|s| {
            s.state = OutputState::Retrying;
            s.reason = Some(reason);
            s.reconnects = attempts;
            s.callers = 0;
            s.per_caller.clear();
        });
    }

    fn stopped(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
        self.status.send_modify(|s| {
            s.state = OutputState::Stopped;
            s.callers = 0;
        });
    }
}

enum AttemptEnd {
    Stop,
    Failed(String),
}

impl Worker {
    fn connection(&mut self, control: &Control, attempt: &mut u32, dropped: &AtomicU64) -> AttemptEnd {
        let started = Instant::now();
        let listener = self.url.mode == SrtMode::Listener;
        self.status.send_modify(|s| s.state = if listener { OutputState::Listening } else { OutputState::Connecting });
        if let Err(e) = self.pipeline.set_state(gst::State::Playing) {
            return AttemptEnd::Failed(self.bus_error().unwrap_or_else(|| e.to_string()));
        }
        let Some(bus) = self.pipeline.bus() else { return AttemptEnd::Failed("pipeline has no bus".into()) };
        let mut live = false;
        let mut peer = PeerWatch::new(Instant::now());
        let mut last_reject_check = started;
        let connect_deadline =
            started + self.url.connect_timeout.unwrap_or(Duration::from_secs(3)) + Duration::from_secs(2);
        loop {
            if control.stop_within(Duration::from_millis(200)) {
                let _ = self.appsrc.end_of_stream();
                let _ = bus.timed_pop_filtered(
                    gst::ClockTime::from_seconds(1),
                    &[gst::MessageType::Eos, gst::MessageType::Error],
                );
                return AttemptEnd::Stop;
            }
            while let Some(msg) = bus.pop() {
                if let gst::MessageView::Error(err) = msg.view() {
                    let text = err.error().to_string();
                    let reason = match rejected_since(started) {
                        Some(r) => r.to_string(),
                        None if live => format!("connection lost: {text}"),
                        None => format!("cannot connect to {}: {text}", self.peer()),
                    };
                    return AttemptEnd::Failed(reason);
                }
            }
            let conns = SrtStats::read(&self.sink);
            let total = SrtStats::total(conns.iter().map(|(_, s)| s));
            let rejection = if listener { rejected_since(last_reject_check) } else { None };
            last_reject_check = Instant::now();
            if let Some(r) = &rejection {
                if let Some(unlogged) = self.reject_log.rejected(Instant::now()) {
                    warn!(output = %self.url.label(), reason = %r, not_logged_since_last = unlogged, "SRT caller rejected");
                }
            }
            let now_live = if listener {
                !conns.is_empty()
            } else {
                let timeout = ack_timeout(&self.url, Duration::from_secs_f64(total.rtt_ms / 1000.0));
                match peer.observe(total.acks_received, total.packets_sent, Instant::now(), timeout) {
                    Peer::Gone(silent) if live => {
                        return AttemptEnd::Failed(format!(
                            "connection lost: {} stopped acknowledging for {:.1} s",
                            self.peer(),
                            silent.as_secs_f64()
                        ));
                    }
                    Peer::Heard => true,
                    Peer::Quiet | Peer::Gone(_) => live,
                }
            };
            if now_live && !live {
                info!(output = %self.url.label(), "SRT output connected");
                *attempt = 0;
                if !listener {
                    (self.on_peer_joined)();
                }
            }
            if !now_live && !listener && Instant::now() > connect_deadline {
                return AttemptEnd::Failed(match rejected_since(started) {
                    Some(r) => r.to_string(),
                    None => format!("no answer from {} (is the receiver running?)", self.peer()),
                });
            }
            let joined = now_live && !live;
            live = now_live;
            let q = dropped.load(Ordering::Relaxed);
            let life = self.totals.update(&conns);
            self.status.send_modify(|s| {
                s.state = match (live, listener) {
                    (true, _) => OutputState::Live,
                    (false, true) => OutputState::Listening,
                    (false, false) => OutputState::Connecting,
                };
                if live {
                    s.reason = None;
                } else if listener {
                    s.reason = Some(format!("no caller yet on port {}", self.url.port));
                }
                s.callers = conns.len();
                s.srt = life;
                s.per_caller = if listener {
                    conns.iter().map(|(a, st)| (a.clone().unwrap_or_default(), st.clone())).collect()
                } else {
                    Vec::new()
                };
                if joined {
                    // A caller got in: an earlier rejection (a wrong passphrase, a stranger's
                    // handshake) is no longer what the user needs to see.
                    s.last_rejection = None;
                }
                if let Some(r) = rejection.as_ref().filter(|_| !joined) {
                    s.last_rejection = Some(r.to_string());
                }
                s.queue_dropped = q;
            });
        }
    }

    fn peer(&self) -> String {
        format!("{}:{}", self.url.host.as_deref().unwrap_or("*"), self.url.port)
    }

    fn bus_error(&self) -> Option<String> {
        let bus = self.pipeline.bus()?;
        while let Some(msg) = bus.pop() {
            if let gst::MessageView::Error(err) = msg.view() {
                return Some(err.error().to_string());
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_that_stops_acknowledging_is_gone_after_the_timeout() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let timeout = Duration::from_secs(2);
        let mut w = PeerWatch::new(t0);
        // Connecting: nothing sent, nothing heard: quiet, however long.
        assert_eq!(w.observe(0, 0, ms(3000), timeout), Peer::Quiet);
        // Live: ACKs arrive while sending.
        assert_eq!(w.observe(10, 100, ms(3200), timeout), Peer::Heard);
        assert_eq!(w.observe(25, 300, ms(3400), timeout), Peer::Heard);
        // The receiver goes: packets go out, no ACK comes back.
        assert_eq!(w.observe(25, 500, ms(4400), timeout), Peer::Quiet);
        assert_eq!(w.observe(25, 700, ms(5400), timeout), Peer::Quiet, "exactly at the timeout: not yet");
        assert_eq!(w.observe(25, 900, ms(5600), timeout), Peer::Gone(Duration::from_millis(2200)));
        // Not sending (the encoder paused) is not silence.
        let mut w = PeerWatch::new(t0);
        assert_eq!(w.observe(5, 50, ms(200), timeout), Peer::Heard);
        assert_eq!(w.observe(5, 50, ms(9000), timeout), Peer::Quiet);
    }

    #[test]
    fn ack_timeout_scales_with_rtt_and_obeys_the_url() {
        let url = SrtUrl::parse("srt://h:1").unwrap();
        assert_eq!(ack_timeout(&url, Duration::from_millis(20)), Duration::from_secs(2));
        assert_eq!(ack_timeout(&url, Duration::from_millis(800)), Duration::from_millis(3200));
        let url = SrtUrl::parse("srt://h:1?peeridletimeo=5000").unwrap();
        assert_eq!(ack_timeout(&url, Duration::from_millis(20)), Duration::from_secs(5));
    }
}
