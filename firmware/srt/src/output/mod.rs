//! One SRT output on libsrt: a caller, a rendezvous, or a listener serving any number of callers.
//!
//! The encoder hands it TS buffers with [`SrtOutput::send`], which never blocks: each 1316-byte
//! piece goes straight into every connection's libsrt send buffer (no queue, pipeline or copy
//! of ours per connection). The output's own thread waits on all its sockets with one libsrt
//! epoll: it accepts callers, notices the ones that leave, reads what a peer sends back, reads
//! libsrt's statistics and publishes an [`OutputStatus`] on a `watch`; when the connection
//! fails it retries with capped backoff without touching the encoder.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use telebridge_sync::{Locked, RwLocked};

use telebridge_config::{SrtMode, SrtUrl};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::latency::LinkMeter;
use crate::reject::RejectLog;
use crate::socket::{SendError, Socket};
use crate::stats::LifeTotals;
pub use crate::status::{OutputState, OutputStatus};

mod worker;
use crate::supervisor::{Attempt, Control, Job, Supervisor};
use crate::{Backoff, SrtStats};
use worker::unix_ms;

/// Why an output could not be created.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Its thread could not be started.
    #[error("cannot start the output's thread: {0}")]
    Thread(String),
}

/// A running SRT output.
#[derive(Debug)]
pub struct SrtOutput {
    name: String,
    /// The URL sets `maxbw` or `inputbw`: [`SrtOutput::pace`] leaves it alone.
    fixed_bandwidth: bool,
    shared: Arc<Shared>,
    status: watch::Receiver<OutputStatus>,
    supervisor: Supervisor,
}

/// Room for callers whose handshakes reach a listener at the same moment (libsrt's backlog).
/// GStreamer's `srtsink` listens with 1, which turned simultaneous callers away.
pub const LISTEN_BACKLOG: i32 = 128;

/// The most a TS buffer is cut into for one SRT message: seven 188-byte packets, what
/// srt-live-transmit, ffmpeg and GStreamer send.
pub const MESSAGE_BYTES: usize = 1316;

/// A connection the fan-out sends to.
#[derive(Debug)]
struct Conn {
    socket: Socket,
    /// The peer's address, for a listener's per-caller figures.
    addr: Option<String>,
}

/// How an output's connections are paced, as the rate control sets it (its type: one concept).
pub use telebridge_rate::Pacing;

/// Sets `pacing` on `socket`: by the input rate libsrt measures, [`PACING_OVERHEAD_PCT`] over it
/// for retransmissions ([`crate::socket::Socket::pace_by_input`]), or at most a rate
/// ([`crate::socket::Socket::pace_at_most`]).
fn apply(pacing: Pacing, socket: &Socket) -> Result<(), crate::error::SrtError> {
    match pacing {
        Pacing::ByInput { min_bytes_per_s } => {
            socket.pace_by_input(min_bytes_per_s, pacing_overhead_pct(socket.peer_latency_ms()))
        }
        Pacing::AtMost { bytes_per_s } => socket.pace_at_most(bytes_per_s),
    }
}

/// What the encoder's thread and the output's own thread share: the connected sockets.
#[derive(Debug, Default)]
struct Shared {
    conns: RwLock<Vec<Arc<Conn>>>,
    dropped: AtomicU64,
    /// How new connections are paced (`None`: as the URL says).
    pacing: std::sync::Mutex<Option<Pacing>>,
}

/// Room for retransmissions over the input rate when an output is paced by it (libsrt's
/// default, 25 %), where the latency leaves time enough ([`pacing_overhead_pct`]).
pub const PACING_OVERHEAD_PCT: i32 = 25;

/// The longest a frame's packets come in at once: a frame's interval at 25 fps, ms.
const FRAME_BURST_MS: i32 = 40;

/// How far over the input rate a connection is paced, %, for the latency its packets have
/// (the peer's, ms): a frame's packets must leave within a third of it.
///
/// libsrt sends a waiting original before any retransmission (`isRetransmissionAllowed` in
/// live mode), so a resend waits until the frame being paced out has left. At 25 % over the
/// input a 30 fps frame takes 27 ms to leave: on a bridge over a 20 ms link at 61 ms of latency
/// (3 x RTT), resends left 14-33 ms after their NAK had arrived in half the cases seen on the
/// wire, and 1-2 packets of 10-17 lost in 30 s were given up. Long latencies keep libsrt's 25 %;
/// short ones get up to 100 % (a frame then leaves in half its interval).
pub fn pacing_overhead_pct(peer_latency_ms: Option<i32>) -> i32 {
    match peer_latency_ms {
        Some(l) if l > 0 => (100 * FRAME_BURST_MS * 3 / l - 100).clamp(PACING_OVERHEAD_PCT, 100),
        _ => PACING_OVERHEAD_PCT,
    }
}

impl Shared {
    fn conns(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Conn>>> {
        self.conns.reading()
    }

    fn add(&self, c: Arc<Conn>) {
        let pacing = *self.pacing.locked();
        if let Some(p) = pacing {
            if let Err(e) = apply(p, &c.socket) {
                warn!(error = %e, "cannot pace the new connection for the stream's rate");
            }
        }
        self.conns.writing().push(c);
    }

    fn remove(&self, id: i32) -> Option<Arc<Conn>> {
        let mut g = self.conns.writing();
        let i = g.iter().position(|c| c.socket.id() == id)?;
        Some(g.remove(i))
    }

    fn clear(&self) {
        self.conns.writing().clear();
    }
}

/// Receives what a peer sends back on an output's connection (both directions on one socket).
pub type Receiver = Arc<dyn Fn(&[u8]) + Send + Sync>;

impl SrtOutput {
    /// Starts an output. `on_peer_joined` is called when a peer connects, to ask the encoder
    /// for a keyframe.
    pub fn start(name: String, url: SrtUrl, on_peer_joined: Arc<dyn Fn() + Send + Sync>) -> Result<Self, OutputError> {
        Self::start_duplex(name, url, on_peer_joined, None)
    }

    /// Starts an output whose connections also carry the peer's stream back: each message the
    /// peer sends goes to `on_receive` (from the output's thread).
    pub fn start_duplex(
        name: String,
        url: SrtUrl,
        on_peer_joined: Arc<dyn Fn() + Send + Sync>,
        on_receive: Option<Receiver>,
    ) -> Result<Self, OutputError> {
        Self::start_route(name, url, Vec::new(), on_peer_joined, on_receive)
    }

    /// As [`SrtOutput::start_duplex`], with rendezvous ways to the same peer after the first:
    /// when the first way does not connect (a caller that gets no answer, a listener no caller
    /// reached before the next slot), a rendezvous way is tried at the next slot of the clock
    /// (see [`crate::ways`]), then the first again; a way that connected is kept when its
    /// connection is lost.
    pub fn start_route(
        name: String,
        url: SrtUrl,
        then: Vec<SrtUrl>,
        on_peer_joined: Arc<dyn Fn() + Send + Sync>,
        on_receive: Option<Receiver>,
    ) -> Result<Self, OutputError> {
        let state = if url.mode == SrtMode::Listener { OutputState::Listening } else { OutputState::Connecting };
        let initial = OutputStatus::new("srt", name.clone(), url.to_string(), state);
        let (status_tx, status_rx) = watch::channel(initial);
        let shared = Arc::new(Shared::default());
        let fixed_bandwidth = url.max_bw_bytes_per_s.is_some() || url.input_bw_bytes_per_s.is_some();
        let mut ways = vec![url.clone()];
        ways.extend(then);
        let worker = Worker {
            url,
            ways,
            way: 0,
            connected: false,
            wait: Duration::ZERO,
            status: status_tx,
            on_peer_joined,
            on_receive,
            shared: shared.clone(),
            totals: LifeTotals::default(),
            reject_log: RejectLog::default(),
            meter: LinkMeter::default(),
            latency: None,
        };
        let supervisor = Supervisor::spawn(format!("srt-out-{name}"), Backoff::default(), worker)
            .map_err(|e| OutputError::Thread(e.to_string()))?;
        Ok(Self { name, fixed_bandwidth, shared, status: status_rx, supervisor })
    }

    /// Hands the output TS bytes: each 1316-byte piece goes straight into every connection's
    /// libsrt send buffer. Never blocks; counted in `queue_dropped` when a connection's send
    /// buffer is full (the link cannot keep up).
    pub fn send(&self, data: &[u8]) {
        let conns = self.shared.conns();
        for conn in conns.iter() {
            for piece in data.chunks(MESSAGE_BYTES) {
                if let Err(e) = conn.socket.send(piece) {
                    if e == SendError::Full {
                        self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    // Anything else: the connection broke; the output's thread sees it.
                    break;
                }
            }
        }
    }

    /// libsrt's counters of each connection now, read on demand: for a control loop that needs
    /// a finer step than the status (which is refreshed every 200 ms). `(peer address, stats)`.
    pub fn stats_now(&self) -> Vec<(Option<String>, SrtStats)> {
        self.shared
            .conns()
            .iter()
            .filter_map(|c| c.socket.stats().map(|p| (c.addr.clone(), crate::stats::from_perf(&p))))
            .collect()
    }

    /// Paces every connection, now and later, as `pacing` says: an adaptive bitrate keeps the
    /// floor at the rate it chose, or holds a congested link's connections under what it
    /// carries. Not when the URL sets `maxbw` or `inputbw` itself: the user's ceiling stays.
    pub fn pace(&self, pacing: Pacing) {
        if self.fixed_bandwidth {
            return;
        }
        *self.shared.pacing.locked() = Some(pacing);
        for c in self.shared.conns().iter() {
            if let Err(e) = apply(pacing, &c.socket) {
                warn!(output = %self.name, error = %e, "cannot pace the connection for the new rate");
            }
        }
    }

    /// The output's status, updated a few times a second.
    pub fn status(&self) -> watch::Receiver<OutputStatus> {
        self.status.clone()
    }

    /// The output's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the connections and ends the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.supervisor.stop();
    }
}

struct Worker {
    /// The way being tried.
    url: SrtUrl,
    /// Every way to the peer (the first is `url` at start).
    ways: Vec<SrtUrl>,
    /// Which of `ways` is being tried.
    way: usize,
    /// Whether the current attempt connected.
    connected: bool,
    /// How long to wait before the next attempt (for a rendezvous slot).
    wait: Duration,
    status: watch::Sender<OutputStatus>,
    on_peer_joined: Arc<dyn Fn() + Send + Sync>,
    on_receive: Option<Receiver>,
    shared: Arc<Shared>,
    /// Counters over every connection so far (callers that left, earlier attempts).
    totals: LifeTotals,
    reject_log: RejectLog,
    /// The link as the connections measured it, for the next one's latency.
    meter: LinkMeter,
    /// The SRT latency chosen for the current attempt (from the URL's `latency`), and how lost
    /// packets are resent.
    latency: Option<crate::latency::LatencyChoice>,
}

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        if !self.wait.is_zero() && control.stop_within(std::mem::take(&mut self.wait)) {
            return Attempt::Stopped;
        }
        self.connected = false;
        self.url = self.ways[self.way].clone();
        // The latency, chosen afresh for each connection from what the last one measured.
        let choice = self
            .url
            .latency
            .map(|l| crate::latency::choose(l, self.meter.reading(), self.url.mode == SrtMode::Listener));
        if let Some(c) = &choice {
            if !c.pinned {
                info!(output = %self.url.label(), latency_ms = c.latency_ms, reason = %c.reason, "SRT latency chosen");
            }
        }
        // Set on the socket (not written into the URL, which keeps what the user asked for).
        self.latency = choice.clone();
        self.meter.new_connection(std::time::Instant::now());
        let shown = self.ways[self.way].to_string();
        self.status.send_modify(|s| {
            s.url = shown;
            s.latency = choice;
        });
        let ended = match self.url.mode {
            SrtMode::Listener => self.listen(control, attempts),
            SrtMode::Caller | SrtMode::Rendezvous => self.call(control, attempts),
        };
        // Whatever ended the attempt, nothing is sent to its sockets any more.
        self.shared.clear();
        let next = crate::ways::next(self.way, self.ways.len(), self.connected, unix_ms());
        if next.way != self.way && ended.is_some() {
            info!(output = %self.url.label(), next = %self.ways[next.way].label(), in_ms = next.wait.as_millis() as u64, "no connection this way: trying the next");
        }
        self.way = next.way;
        self.wait = next.wait;
        match ended {
            None => Attempt::Stopped,
            Some(reason) => Attempt::Failed(reason),
        }
    }

    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration) {
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
        self.shared.clear();
        self.status.send_modify(|s| {
            s.state = OutputState::Stopped;
            s.callers = 0;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_latency_paces_with_more_room_over_the_input() {
        // 3 x a 20 ms round trip: a 30 fps frame must leave within 20 ms, so about twice the
        // input; at the 120 ms default and beyond, libsrt's 25 %.
        assert_eq!(pacing_overhead_pct(Some(61)), 96);
        assert_eq!(pacing_overhead_pct(Some(40)), 100, "at most twice the input");
        assert_eq!(pacing_overhead_pct(Some(80)), 50);
        assert_eq!(pacing_overhead_pct(Some(120)), PACING_OVERHEAD_PCT);
        assert_eq!(pacing_overhead_pct(Some(2000)), PACING_OVERHEAD_PCT);
        assert_eq!(pacing_overhead_pct(None), PACING_OVERHEAD_PCT, "latency unknown");
        assert_eq!(pacing_overhead_pct(Some(0)), PACING_OVERHEAD_PCT);
    }

    #[test]
    fn pacing_by_the_input_reads_the_latency_the_socket_has() {
        let socket = Socket::new().expect("a socket");
        let url = SrtUrl::parse("srt://127.0.0.1:9000?latency=61").expect("a URL");
        socket.configure(&url).expect("libsrt takes it");
        assert_eq!(socket.peer_latency_ms(), Some(61));
        apply(Pacing::ByInput { min_bytes_per_s: 100_000 }, &socket).expect("paced");
        assert_eq!(socket.get_int(crate::ffi::SRTO_OHEADBW), Some(96), "the overhead for 61 ms");
    }
}
