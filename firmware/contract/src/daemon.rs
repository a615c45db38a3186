//! The daemon as the panel and the API see it: the status it publishes, the commands it takes,
//! and what they carry (the tally, talkback, the input, the bridge's route to its paired box).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use telebridge_config::{SrtUrl, ValidConfig};
use tokio::sync::{broadcast, mpsc, watch};

use crate::gpio::{ButtonEvent, LedPattern, SimBoard, LEDS};
use crate::machine::Machine;
use crate::monitor::{WatchAnswer, WatchRefusal, WatchRequest};
use crate::sample::{LinkView, MediaSample};

/// The daemon as the API sees it: the status it publishes, the commands it takes, whether its
/// main loop turns, the previews, and (under `--sim`) the simulated hardware. The appliance's
/// daemon is one; the API's tests also run against a fake.
pub trait Daemon: Send + Sync + std::fmt::Debug + 'static {
    /// The latest status, and its changes.
    fn status(&self) -> watch::Receiver<DaemonStatus>;
    /// Where commands go.
    fn commands(&self) -> mpsc::Sender<DaemonCommand>;
    /// How long ago the main loop last turned.
    fn heartbeat_age(&self) -> Duration;
    /// The latest preview JPEG, while the encoder runs.
    fn preview(&self) -> Option<Vec<u8>>;
    /// The simulated board, under `--sim`.
    fn sim(&self) -> Option<SimBoard>;
    /// The simulated HDMI cable, under `--sim` (`true`: plugged in).
    fn sim_cable(&self) -> Option<Arc<AtomicBool>>;
    /// Control messages from the paired box (the bridge's connection); `None` when the daemon
    /// has no bridge.
    fn peer_messages(&self) -> Option<broadcast::Receiver<Vec<u8>>> {
        None
    }
    /// The latest JPEG of what arrives from the paired box (bridge role).
    fn received_preview(&self) -> Option<Vec<u8>> {
        None
    }
    /// The sound's meters as they read now (ten readings a second); none when no stream with
    /// sound runs.
    fn levels(&self) -> Vec<crate::sound::StreamLevels> {
        Vec::new()
    }
    /// A viewer of the live monitor (WHEP): the answer to its offer, or why not. Blocks while
    /// the answer is made (ICE candidates gathered, up to 3 s): call it off the async runtime.
    fn watch(&self, request: &WatchRequest) -> Result<WatchAnswer, WatchRefusal> {
        Err(WatchRefusal::NotRunning(request.feed))
    }
    /// Ends viewer `id`; `false` when there is none.
    fn end_watch(&self, id: u64) -> bool {
        let _ = id;
        false
    }
}

/// What the daemon is doing, for the API and the panel.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonStatus {
    /// The box's name.
    pub name: String,
    /// `encoder`, `decoder` or `bridge`.
    pub role: &'static str,
    /// State, reason, links.
    pub machine: Machine,
    /// Since when, ms since the Unix epoch.
    pub since_unix_ms: u64,
    /// What each LED shows (power, link, live, error).
    pub led_patterns: [LedPattern; LEDS],
    /// The tally light: on air, and why.
    pub tally: TallyStatus,
    /// Talkback with the paired box.
    pub talk: TalkStatus,
    /// The GPIO backend.
    pub gpio: &'static str,
    /// The latest one-second sample of the running media (serialised as `--stats json` prints it).
    pub media: Option<MediaSample>,
    /// Media runs (going live, live or degraded): the panel's button says Stop.
    pub running: bool,
    /// The links as the panel lists them (outputs, or the decoder's input).
    pub links: Vec<LinkView>,
    /// Seconds since the daemon started.
    pub uptime_s: u64,
    /// Settings that were changed and wait for the next start.
    pub pending_restart: Vec<&'static str>,
    /// What the HDMI output shows instead of a picture, if anything.
    pub screen: Option<String>,
    /// The input: whether it has a signal, and the format configured.
    pub input: InputInfo,
    /// What needs the user's attention, in words.
    pub alerts: Vec<String>,
    /// Long presses of the button that asked for a pairing code (bridge role), since start.
    pub pairing_requests: u64,
    /// The sound's meters (each running stream's peak and RMS per channel, and its silence),
    /// as they read when the status was made; [`Daemon::levels`] reads them now.
    pub sound: Vec<crate::sound::StreamLevels>,
    /// The browsers watching the live monitor.
    pub viewers: Vec<crate::monitor::ViewerInfo>,
}

/// The input as the status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    /// A signal is present (an HDMI source plugged and sending; always for the test pattern).
    pub signal: bool,
    /// The source and format (encoder), or the SRT input (decoder).
    pub format: String,
}

/// The tally as the status shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TallyStatus {
    /// On air: the light is on.
    pub on_air: bool,
    /// The API's cue.
    pub cue: bool,
    /// The tally input (the vision mixer's contact) is active.
    pub wired: bool,
    /// Bridge: the paired box has this box's picture on air (heard within a second).
    pub taken_by_far: bool,
    /// Bridge: this box has the paired box's picture on air (its cue or contact), and says so.
    pub takes_far: bool,
}

/// Talkback as the status shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TalkStatus {
    /// Who talks.
    pub state: TalkState,
    /// Voice packets (10 ms each) sent to the paired box.
    pub packets_sent: u64,
    /// Voice packets heard from it and played.
    pub packets_heard: u64,
    /// Its packets not played: it pressed after this box, which kept the channel.
    pub packets_not_played: u64,
    /// Messages whose tag did not hold (altered on the way, or not the paired box's).
    pub packets_refused: u64,
    /// The test voice's last beep, mouth to ear (ms): from the second it was spoken on to its
    /// start decoded here (meaningful when both boxes' clocks agree).
    pub beep_lag_ms: Option<u64>,
    /// The microphone (`talkback.source`), when this box has one running.
    pub microphone: Option<String>,
    /// Where the far box's voice goes.
    pub output: Option<String>,
    /// Why talkback does not work here, in words.
    pub error: Option<String>,
}

/// Where this box stands on talkback.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TalkState {
    /// Nobody talks.
    #[default]
    Idle,
    /// This box talks: its voice goes to the far box.
    Talking,
    /// The far box talks: its voice is heard here.
    Listening,
    /// Pressed while the far box holds the channel: this box talks once it is free.
    Waiting,
}

/// Commands to the daemon.
#[derive(Debug)]
pub enum DaemonCommand {
    /// Go live or stop (the API's `POST /api/live`).
    Live(bool),
    /// A button event (also how the simulated button arrives).
    Button(ButtonEvent),
    /// Apply a new configuration (already validated), restarting only what changed.
    Apply(Box<ValidConfig>),
    /// Simulation only: block the main loop this long (tests the watchdog).
    Stall(Duration),
    /// What the HDMI output should say while the box shows no picture (the first-run setup
    /// code), or `None` to clear it.
    SetupText(Option<String>),
    /// What the HDMI output should say of the pairing while no picture is shown (the code to
    /// type into the other box, or that the box is not paired), or `None`.
    PairingText(Option<String>),
    /// The bridge's connection changed: paired (the new link) or unpaired (why there is none).
    /// A running bridge restarts on it.
    PeerLink(Box<Result<PeerRoute, String>>),
    /// Send this control message to the paired box on the bridge's connection (a farewell).
    ToPeer(Vec<u8>),
    /// The control room's tally cue (`POST /api/tally`): this box's picture is on air, or not.
    Tally(bool),
    /// The tally input (a vision mixer's contact on a GPIO pin) changed: on air, or not.
    TallyIn(bool),
    /// The talk button (the panel's, renewed while held): down, or up.
    Talk(bool),
    /// The paired box said it is live, or not (its tally message).
    FarLive(bool),
}

/// How a bridge reaches its peer: the way to try first, and others to try in turn when it does
/// not connect.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRoute {
    /// The paired box's name, for the slate (none for a link made by hand).
    pub peer_name: Option<String>,
    /// The pairing's listen/call way (or a link made by hand).
    pub first: SrtUrl,
    /// Then: a rendezvous with the other's public address, then one through the meeting point.
    pub then: Vec<SrtUrl>,
}

impl PeerRoute {
    /// A route of one way.
    pub fn only(url: SrtUrl) -> Self {
        Self { peer_name: None, first: url, then: Vec::new() }
    }
}
