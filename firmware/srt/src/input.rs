//! One SRT input on libsrt, in a thread of its own: a listener for one sender, a caller or a
//! rendezvous. It reads each message with `srt_recvmsg2`, hands it to a consumer (the decoder's
//! `appsrc`, the relay's outputs), restarts with capped backoff when the connection ends, and
//! publishes an [`InputStatus`]: whether a stream is arriving, why not, and libsrt's receiver
//! counters (drops, receive buffer) beside our own TS continuity check.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_config::{SrtMode, SrtUrl};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::addr::local_bind;
use crate::connect::{dial, peer_label};
use crate::epoll::Epoll;
use crate::error::SrtError;
use crate::ffi::SRT_REJX_CONFLICT;
use crate::listen_hook::{Admit, Listener};
use crate::output::LISTEN_BACKLOG;
use crate::reject::rejected_since;
use crate::socket::{SockState, Socket};
use crate::supervisor::{Attempt, Control, Job, Supervisor};
use crate::ts_check::ContinuityCheck;
use crate::{Backoff, SrtStats};

pub use telebridge_contract::srt::{InputState, InputStatus};

/// Why an input could not be created.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Its thread could not be started.
    #[error("cannot start the input's thread: {0}")]
    Thread(String),
}

/// Receives each message as it arrives (usually seven TS packets, 1316 bytes), on the input's
/// thread.
pub type TsConsumer = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A running SRT input.
#[derive(Debug)]
pub struct SrtInput {
    status: watch::Receiver<InputStatus>,
    supervisor: Supervisor,
}

impl SrtInput {
    /// Starts receiving from `url`; every message goes to `consumer`.
    pub fn start(url: SrtUrl, consumer: TsConsumer) -> Result<Self, InputError> {
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
            stream_id: None,
            sender: None,
        };
        let (status_tx, status_rx) = watch::channel(initial);
        // A listener whose caller left listens again at once; a caller backs off.
        let backoff = if url.mode == SrtMode::Listener {
            Backoff { first: Duration::from_millis(100), max: Duration::from_millis(100) }
        } else {
            Backoff::default()
        };
        let worker = Worker {
            url,
            status: status_tx,
            consumer,
            cc: ContinuityCheck::default(),
            bytes: 0,
            last_data: None,
            sender: Arc::new(Mutex::new(SenderSlot::default())),
        };
        let supervisor =
            Supervisor::spawn("srt-in".into(), backoff, worker).map_err(|e| InputError::Thread(e.to_string()))?;
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

/// Data older than this means the stream has stopped arriving: the sender is gone (or the
/// network is down), and the input listens or calls again rather than wait for libsrt's own
/// timeout (5 s or more).
pub const STALE: Duration = Duration::from_millis(500);

/// Whether a listening input has a sender, and when it last delivered: what its listen hook
/// needs to turn a second sender away while the first one is alive.
#[derive(Debug, Clone, Copy, Default)]
pub struct SenderSlot {
    /// A sender is connected.
    pub connected: bool,
    /// When data last arrived from it.
    pub last_data: Option<Instant>,
}

impl SenderSlot {
    /// Whether a new caller may come in at `now`: when nobody sends, or when the sender has
    /// been silent past [`STALE`] (a sender that restarted calls before its old connection
    /// has timed out). A second live sender is refused: the input plays one stream.
    pub fn admits(&self, now: Instant) -> bool {
        !self.connected || self.last_data.is_none_or(|t| now.saturating_duration_since(t) > STALE)
    }
}

struct Worker {
    url: SrtUrl,
    status: watch::Sender<InputStatus>,
    consumer: TsConsumer,
    cc: ContinuityCheck,
    bytes: u64,
    last_data: Option<Instant>,
    sender: Arc<Mutex<SenderSlot>>,
}

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        self.cc.reset();
        let ended = match self.url.mode {
            SrtMode::Listener => self.listen(control, attempts),
            SrtMode::Caller | SrtMode::Rendezvous => match dial(&self.url, control, false, None) {
                Ok(Some((sock, to))) => {
                    let to = to.to_string();
                    self.status.send_modify(|s| s.sender = Some(to));
                    self.receive(control, attempts, &sock, None)
                }
                Ok(None) => None,
                Err(reason) => Some(reason),
            },
        };
        *self.sender.locked() = SenderSlot::default();
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
            s.stream_id = None;
        });
    }

    fn stopped(&mut self) {
        self.status.send_modify(|s| s.state = InputState::Stopped);
    }
}

impl Worker {
    /// Listens for one sender; `None` when stopped, else why the connection ended.
    fn listen(&mut self, control: &Control, attempt: &mut u32) -> Option<String> {
        let slot = self.sender.clone();
        let setup = || -> Result<Listener, SrtError> {
            let sock = Socket::new()?;
            sock.configure(&self.url)?;
            let sock = Listener::new(
                sock,
                Arc::new(move |_: &str, _| {
                    if slot.locked().admits(Instant::now()) {
                        Admit::Accept(None)
                    } else {
                        Admit::Reject(SRT_REJX_CONFLICT)
                    }
                }),
            )?;
            let addr = local_bind(&self.url, None)?.ok_or_else(|| SrtError { code: -1, text: "no port".into() })?;
            sock.bind_listener(&addr)?;
            sock.listen(LISTEN_BACKLOG)?;
            Ok(sock)
        };
        let listener = match setup() {
            Ok(x) => x,
            Err(e) => return Some(format!("cannot listen on port {}: {e}", self.url.port)),
        };
        let started = Instant::now();
        let mut reject: Option<String> = None;
        let mut last_check = started;
        loop {
            if let Ok(Some((sock, addr))) = listener.accept() {
                info!(input = %self.url.label(), sender = %addr.map(|a| a.to_string()).unwrap_or_default(), "SRT sender connected");
                self.status.send_modify(|s| s.sender = addr.map(|a| a.to_string()));
                return self.receive(control, attempt, &sock, Some(&*listener));
            }
            if control.stop_within(Duration::from_millis(20)) {
                return None;
            }
            if last_check.elapsed() >= TICK {
                if let Some(r) = rejected_since(last_check) {
                    warn!(input = %self.url.label(), reason = %r, "SRT connection rejected");
                    reject = Some(r.to_string());
                }
                last_check = Instant::now();
                let reason = reject.clone().unwrap_or_else(|| format!("no caller yet on port {}", self.url.port));
                self.status.send_modify(|s| {
                    s.state = InputState::Listening;
                    s.reason = Some(reason);
                    s.last_data_ms_ago = self.last_data.map(|t| t.elapsed().as_millis() as u64);
                });
            }
        }
    }

    /// Receives from `sock` until the sender goes; `None` when stopped. A listening input
    /// passes its `listener`: a sender that calls again while its old connection is silent
    /// takes over at once.
    fn receive(
        &mut self,
        control: &Control,
        attempt: &mut u32,
        first: &Socket,
        listener: Option<&Socket>,
    ) -> Option<String> {
        let mut replaced: Option<Socket> = None;
        let epoll = match Epoll::new().and_then(|e| e.add(first).map(|_| e)) {
            Ok(e) => e,
            Err(e) => return Some(format!("cannot watch the connection: {e}")),
        };
        if let Some(l) = listener {
            let _ = epoll.add(l);
        }
        let connected = Instant::now();
        self.slot(|s| *s = SenderSlot { connected: true, last_data: Some(connected) });
        let stream_id = first.stream_id();
        self.status.send_modify(|s| s.stream_id = stream_id);
        let mut buf = vec![0u8; 1500];
        let mut ready = Vec::new();
        let mut receiving = false;
        let mut last_tick = connected;
        loop {
            let current = replaced.as_ref().unwrap_or(first).id();
            epoll.wait(WAIT, &mut ready);
            let mut broken = false;
            let mut readable = false;
            for r in &ready {
                if Some(r.socket) == listener.map(Socket::id) {
                    if let Some((new, addr)) = listener.and_then(|l| l.accept().ok().flatten()) {
                        // The hook let it in: the old sender is silent. The new one takes over.
                        info!(input = %self.url.label(), sender = %addr.map(|a| a.to_string()).unwrap_or_default(), "SRT sender replaced a silent one");
                        epoll.remove_id(current);
                        let _ = epoll.add(&new);
                        self.cc.reset();
                        let stream_id = new.stream_id();
                        self.status.send_modify(|s| {
                            s.stream_id = stream_id;
                            s.sender = addr.map(|a| a.to_string());
                        });
                        replaced = Some(new);
                    }
                } else if r.socket == current {
                    broken |= r.error;
                    readable |= r.readable;
                }
            }
            let sock = replaced.as_ref().unwrap_or(first);
            // One message per wake, as srt-live-transmit does: the epoll is level-triggered, so
            // more data wakes it again at once, and no read is made that libsrt must refuse (a
            // refusal costs a C++ exception inside libsrt).
            let mut got = false;
            if readable {
                if let Ok(Some(n)) = sock.recv(&mut buf) {
                    self.deliver(&buf[..n]);
                    got = true;
                }
            }
            let now = Instant::now();
            if got {
                self.last_data = Some(now);
                self.slot(|s| s.last_data = Some(now));
            }
            let fresh = self.last_data.is_some_and(|t| t >= connected && now.duration_since(t) < STALE);
            if fresh && !receiving {
                info!(input = %self.url.label(), "SRT input receiving");
                *attempt = 0;
            }
            if receiving && !fresh {
                return Some(format!("no data for {} ms: the sender went away", STALE.as_millis()));
            }
            receiving = fresh;
            if !broken && now.duration_since(last_tick) < TICK {
                continue;
            }
            last_tick = now;
            if control.stop_within(Duration::ZERO) {
                return None;
            }
            if broken || sock.state() != SockState::Connected {
                return Some(if receiving {
                    "the sender closed the connection".into()
                } else {
                    "the sender connected and left without sending".into()
                });
            }
            let st = sock.stats().map(|p| crate::stats::from_perf(&p));
            let reason = if receiving { None } else { Some(format!("{} connected; waiting for data", self.peer())) };
            self.status.send_modify(|s| {
                s.state = if receiving { InputState::Receiving } else { InputState::Connecting };
                s.reason = reason;
                if let Some(st) = st {
                    s.srt = st;
                }
                s.ts_continuity_errors = self.cc.errors;
                s.not_ts_packets = self.cc.not_ts;
                s.bytes = self.bytes;
                s.last_data_ms_ago = self.last_data.map(|t| now.duration_since(t).as_millis() as u64);
            });
        }
    }

    fn deliver(&mut self, data: &[u8]) {
        self.bytes += data.len() as u64;
        self.cc.feed(data);
        (self.consumer)(data);
    }

    fn slot(&self, f: impl FnOnce(&mut SenderSlot)) {
        f(&mut self.sender.locked());
    }

    fn peer(&self) -> String {
        peer_label(&self.url)
    }
}

/// How often the status is refreshed.
const TICK: Duration = Duration::from_millis(200);
/// How long the thread waits on its sockets before looking at the time and at a stop.
const WAIT: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_sender_is_refused_while_the_first_sends_and_let_in_when_it_is_silent() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert!(SenderSlot::default().admits(t0), "nobody sends");
        let slot = SenderSlot { connected: true, last_data: Some(t0) };
        assert!(!slot.admits(ms(100)));
        assert!(!slot.admits(ms(500)), "exactly at STALE: not yet");
        assert!(slot.admits(ms(501)), "silent past STALE: a restarted sender takes over");
        assert!(SenderSlot { connected: true, last_data: None }.admits(t0));
    }
}
