//! The paired box's side of the one SRT connection, as both roles see it: the [`PeerFeed`]
//! where what it sends arrives (counted, recorded, handed to the decoder), and the [`PeerLink`]
//! the encoder starts. A leaf: the bridge, encoder and decoder roles all use it, it uses none.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};
use telebridge_sync::{Locked, RwLocked};

use telebridge_config::{FileSpec, SrtMode, SrtUrl};
use telebridge_outputs::Recording;
use telebridge_srt::input::TsConsumer;
use telebridge_srt::ts_check::ContinuityCheck;
use telebridge_srt::{InputState, InputStatus, OutputState, OutputStatus};
use tokio::sync::watch;

/// Data older than this no longer counts as arriving (as the decoder's input).
const STALE: Duration = Duration::from_millis(500);

/// Where what the peer sends goes: counted, recorded if asked, handed to the decoder.
pub struct PeerFeed {
    url: String,
    listens: bool,
    consumer: RwLock<Option<TsConsumer>>,
    output: OnceLock<watch::Receiver<OutputStatus>>,
    bytes: AtomicU64,
    continuity: Mutex<ContinuityCheck>,
    last: Mutex<Option<Instant>>,
    recording: Mutex<Option<Recording>>,
    on_control: Option<ControlCallback>,
    /// Where talkback messages go (the bridge's talkback, when it has one).
    on_talk: OnceLock<ControlCallback>,
    /// The connection, for messages to the paired box (set once the encoder has started it;
    /// weak: the encoder owns it and stops it).
    sender: RwLock<Option<std::sync::Weak<Box<dyn crate::roles::outputs::Output>>>>,
}

/// Receives the paired box's control messages (see `telebridge_pairing::control`).
pub type ControlCallback = Arc<dyn Fn(&[u8]) + Send + Sync>;

impl std::fmt::Debug for PeerFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerFeed").field("url", &self.url).finish_non_exhaustive()
    }
}

impl PeerFeed {
    /// A feed for the connection `url`, recording what arrives to `record` if given; control
    /// messages go to `on_control`.
    pub fn new(url: &SrtUrl, record: Option<FileSpec>, on_control: Option<ControlCallback>) -> Self {
        Self {
            url: url.to_string(),
            listens: url.mode == SrtMode::Listener,
            consumer: RwLock::new(None),
            output: OnceLock::new(),
            bytes: AtomicU64::new(0),
            continuity: Mutex::new(ContinuityCheck::default()),
            last: Mutex::new(None),
            recording: Mutex::new(record.map(|spec| Recording::start("received".into(), spec))),
            on_control,
            on_talk: OnceLock::new(),
            sender: RwLock::new(None),
        }
    }

    /// What the peer sent (from the connection's thread).
    pub fn receive(&self, data: &[u8]) {
        if crate::roles::talk::is_talk(data) {
            if let Some(cb) = self.on_talk.get() {
                cb(data);
            }
            return;
        }
        if telebridge_pairing::control::is_control(data) {
            if let Some(cb) = &self.on_control {
                cb(data);
            }
            return;
        }
        self.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        self.continuity.locked().feed(data);
        *self.last.locked() = Some(Instant::now());
        if let Some(r) = self.recording.locked().as_ref() {
            r.send(data);
        }
        if let Some(c) = self.consumer.reading().as_ref() {
            c(data);
        }
    }

    /// Where the decoder takes the stream.
    pub fn attach(&self, consumer: TsConsumer) {
        *self.consumer.writing() = Some(consumer);
    }

    /// Talkback messages from the peer go to `cb` (set once, by the bridge).
    pub fn on_talk(&self, cb: ControlCallback) {
        let _ = self.on_talk.set(cb);
    }

    /// The connection, for messages to the peer (set when the encoder has started it).
    pub fn set_sender(&self, out: &Arc<Box<dyn crate::roles::outputs::Output>>) {
        *self.sender.writing() = Some(Arc::downgrade(out));
    }

    /// Sends `message` to the peer beside the stream; `false` while there is no connection.
    pub fn send(&self, message: &[u8]) -> bool {
        let out = self.sender.reading().as_ref().and_then(std::sync::Weak::upgrade);
        match out {
            Some(out) => {
                out.send(message);
                true
            }
            None => false,
        }
    }

    /// The connection's status (set once, when the encoder has started it).
    pub fn set_output(&self, status: watch::Receiver<OutputStatus>) {
        let _ = self.output.set(status);
    }

    /// The stream from the peer as the decoder reports an input.
    pub fn status(&self) -> InputStatus {
        let out = self.output.get().map(|o| o.borrow().clone());
        let cc = self.continuity.locked().clone();
        let age = self.last.locked().map(|t| t.elapsed());
        input_status(&self.url, self.listens, out.as_ref(), self.bytes.load(Ordering::Relaxed), &cc, age)
    }

    /// The recording of what arrives, if any.
    pub fn recording_status(&self) -> Option<OutputStatus> {
        self.recording.locked().as_ref().map(|r| r.status().borrow().clone())
    }

    /// Closes the recording (its last segment is complete).
    pub(crate) fn stop(&self) {
        if let Some(r) = self.recording.locked().take() {
            r.stop();
        }
    }
}

/// The stream from the peer as an input's status: receiving while data arrives on a live
/// connection, else the connection's own state and reason. Pure.
pub fn input_status(
    url: &str,
    listens: bool,
    out: Option<&OutputStatus>,
    bytes: u64,
    cc: &ContinuityCheck,
    since_data: Option<Duration>,
) -> InputStatus {
    let fresh = since_data.is_some_and(|d| d < STALE);
    let waiting = if listens { InputState::Listening } else { InputState::Connecting };
    let (state, reason) = match out {
        None => (waiting, None),
        Some(o) => match o.state {
            OutputState::Live if fresh => (InputState::Receiving, None),
            OutputState::Live => (waiting, Some("connected; nothing arrives from the paired box".to_string())),
            OutputState::Listening | OutputState::Connecting => (waiting, o.reason.clone()),
            OutputState::Retrying | OutputState::Failed => (InputState::Retrying, o.reason.clone()),
            OutputState::Stopped => (InputState::Stopped, None),
        },
    };
    InputStatus {
        url: url.to_string(),
        state,
        reason,
        reconnects: out.map_or(0, |o| o.reconnects),
        srt: out.map(|o| o.srt.clone()).unwrap_or_default(),
        ts_continuity_errors: cc.errors,
        not_ts_packets: cc.not_ts,
        bytes,
        last_data_ms_ago: since_data.map(|d| d.as_millis() as u64),
        stream_id: None,
        sender: out.and_then(|o| o.per_caller.first().map(|(a, _)| a.clone())),
    }
}

/// The connection to the peer, as the encoder starts it.
#[derive(Debug, Clone)]
pub struct PeerLink {
    /// The output's name in status and metrics.
    pub name: String,
    /// The connection, tried first.
    pub url: SrtUrl,
    /// Other ways to the peer, tried in turn when it does not connect.
    pub then: Vec<SrtUrl>,
    /// Where what arrives on it goes.
    pub feed: Arc<PeerFeed>,
}

pub use telebridge_contract::sample::PEER_OUTPUT;

#[cfg(test)]
mod tests {
    use super::*;

    fn out(state: OutputState, reason: Option<&str>) -> OutputStatus {
        let mut o = OutputStatus::new("srt", PEER_OUTPUT.into(), "srt://h:7700".into(), state);
        o.reason = reason.map(str::to_string);
        o.reconnects = 2;
        o
    }

    #[test]
    fn the_peers_stream_is_receiving_only_while_data_arrives_on_a_live_connection() {
        let cc = ContinuityCheck::default();
        let ms = Duration::from_millis;
        let s = input_status("u", false, None, 0, &cc, None);
        assert_eq!((s.state, s.reason), (InputState::Connecting, None));
        let live = out(OutputState::Live, None);
        let s = input_status("u", false, Some(&live), 1316, &cc, Some(ms(20)));
        assert_eq!((s.state, s.reconnects, s.bytes, s.last_data_ms_ago), (InputState::Receiving, 2, 1316, Some(20)));
        let s = input_status("u", true, Some(&live), 1316, &cc, Some(ms(900)));
        assert_eq!(s.state, InputState::Listening);
        assert_eq!(s.reason.as_deref(), Some("connected; nothing arrives from the paired box"));
        let lost = out(OutputState::Retrying, Some("the paired box stopped answering"));
        let s = input_status("u", false, Some(&lost), 1316, &cc, Some(ms(20)));
        assert_eq!((s.state, s.reason.as_deref()), (InputState::Retrying, Some("the paired box stopped answering")));
        let s = input_status("u", true, Some(&out(OutputState::Listening, None)), 0, &cc, None);
        assert_eq!(s.state, InputState::Listening);
    }
}
