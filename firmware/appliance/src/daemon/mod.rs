//! `telebridge run`: the long-running daemon. One main loop owns the [`Machine`]; it takes
//! events from the button (a GPIO thread of its own), the API ([`DaemonHandle`]), the media
//! (the encoder or decoder role, a task it starts and stops) and new configurations, and
//! turns the machine's actions into starting and stopping media. It publishes a
//! [`DaemonStatus`] for the API and beats a heartbeat the systemd watchdog thread checks.

pub(crate) mod changes;
mod main_loop;
mod media;
pub(crate) use telebridge_contract::sample;
mod screen;
pub mod sd_notify;
pub(crate) use telebridge_contract::machine as state;
mod status;
pub mod tally;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_config::ValidConfig;
use telebridge_contract::monitor::{WatchAnswer, WatchRefusal, WatchRequest};
use telebridge_gpio::backend::{Board, SimBoard, SimState};
use telebridge_gpio::LedPattern;

use tokio::sync::{mpsc, watch};
use tracing::{error, info};

use crate::daemon::sd_notify::Heartbeat;
use crate::daemon::state::Machine;
use crate::AppError;

use main_loop::MainLoop;
pub use media::simulate;
use media::MediaShared;
use screen::Screen;
use status::{status_of, unix_ms, StatusParts};
pub use status::{DaemonStatus, InputInfo};

/// How the daemon was asked to run.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The configuration, validated, with the command line's overrides applied.
    pub config: ValidConfig,
    /// The bridge's connection to the paired box, from the stored pairing, or why there is
    /// none ("not paired...").
    pub peer_link: Result<telebridge_pairing::PeerRoute, String>,
}

pub use telebridge_contract::daemon::DaemonCommand;

/// The daemon as the API sees it.
#[derive(Debug, Clone)]
pub struct DaemonHandle {
    /// The latest status.
    pub status: watch::Receiver<DaemonStatus>,
    /// Where commands go.
    pub commands: mpsc::Sender<DaemonCommand>,
    /// The simulated board, under `--sim`.
    pub sim: Option<SimBoard>,
    /// The heartbeat of the main loop.
    pub heartbeat: Heartbeat,
    /// The latest preview JPEG while the encoder runs.
    pub preview: telebridge_media::PreviewSlot,
    /// The simulated HDMI cable under `--sim` (`true`: plugged in): pulled, the test pattern's
    /// frames stop as a real input's do, and the same watch notices.
    pub sim_cable: Option<Arc<AtomicBool>>,
    /// Control messages from the paired box, as they arrive on the bridge's connection.
    pub peer_messages: tokio::sync::broadcast::Sender<Vec<u8>>,
    /// The latest JPEG of what arrives from the paired box (bridge role).
    pub received_preview: telebridge_media::PreviewSlot,
    /// The sound's meters, as the pipelines write them.
    pub levels: Arc<telebridge_contract::sound::LevelBoard>,
    /// The live monitor: the feeds offered to viewers, and the viewers.
    pub monitor: Arc<telebridge_media::monitor::MonitorHub>,
}

impl DaemonHandle {
    /// The simulated GPIO's state, under `--sim`.
    pub fn sim_state(&self) -> Option<SimState> {
        self.sim.as_ref().map(|s| s.state())
    }
}

impl telebridge_contract::daemon::Daemon for DaemonHandle {
    fn status(&self) -> watch::Receiver<DaemonStatus> {
        self.status.clone()
    }

    fn commands(&self) -> mpsc::Sender<DaemonCommand> {
        self.commands.clone()
    }

    fn heartbeat_age(&self) -> Duration {
        self.heartbeat.age()
    }

    fn preview(&self) -> Option<Vec<u8>> {
        self.preview.locked().clone()
    }

    fn sim(&self) -> Option<SimBoard> {
        self.sim.clone()
    }

    fn sim_cable(&self) -> Option<Arc<AtomicBool>> {
        self.sim_cable.clone()
    }

    fn peer_messages(&self) -> Option<tokio::sync::broadcast::Receiver<Vec<u8>>> {
        Some(self.peer_messages.subscribe())
    }

    fn received_preview(&self) -> Option<Vec<u8>> {
        self.received_preview.locked().clone()
    }

    fn levels(&self) -> Vec<telebridge_contract::sound::StreamLevels> {
        self.levels.read(std::time::Instant::now())
    }

    fn watch(&self, request: &WatchRequest) -> Result<WatchAnswer, WatchRefusal> {
        self.monitor.watch(request)
    }

    fn end_watch(&self, id: u64) -> bool {
        self.monitor.end(id)
    }
}

/// Media events the main loop may have waiting (samples, an end).
const MEDIA_EVENTS: usize = 16;

/// Starts the daemon: opens the GPIO, spawns the main loop. Returns the handle for the API and
/// a future that ends when the daemon has stopped (after `shutdown`).
pub fn start(
    options: DaemonOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(DaemonHandle, tokio::task::JoinHandle<()>), AppError> {
    let started = Instant::now();
    let now_ms = move || started.elapsed().as_millis() as u64;
    let board = Board::open(&options.config.gpio)?;
    let gpio_name = board.name();
    let sim = board.sim();
    info!(gpio = gpio_name, role = ?options.config.role, "appliance starting");

    let machine = Machine::new(now_ms());
    let leds = crate::daemon::tally::panel(machine.leds(now_ms()), LedPattern::Off);
    let patterns = Arc::new(Mutex::new(leds));
    let status = status_of(StatusParts {
        config: &options.config,
        machine: &machine,
        since_unix_ms: unix_ms(),
        led_patterns: leds,
        tally: crate::daemon::tally::TallyStatus::default(),
        talk: crate::roles::talkback::TalkStatus::default(),
        gpio: gpio_name,
        media: None,
        links: Vec::new(),
        uptime_s: 0,
        pending_restart: &[],
        screen: None,
        pairing_requests: 0,
        sound: Vec::new(),
        viewers: Vec::new(),
    });
    let (status_tx, status_rx) = watch::channel(status);
    let (cmd_tx, cmd_rx) = mpsc::channel(32);
    let heartbeat = Heartbeat::default();
    heartbeat.beat();

    if !matches!(board, Board::None) {
        spawn_gpio(board, patterns.clone(), cmd_tx.clone(), now_ms)?;
    }

    let shared = MediaShared {
        preview: telebridge_media::PreviewSlot::default(),
        cable: sim.is_some().then(|| Arc::new(AtomicBool::new(true))),
        peer_messages: tokio::sync::broadcast::channel(8).0,
        received: telebridge_media::PreviewSlot::default(),
        on_air: Arc::new(AtomicBool::new(false)),
        talk: Arc::default(),
        levels: Arc::default(),
        monitor: Arc::default(),
    };
    shared.monitor.set_limit(options.config.raw.web.monitor_viewers);
    let handle = DaemonHandle {
        status: status_rx,
        commands: cmd_tx,
        sim,
        heartbeat: heartbeat.clone(),
        preview: shared.preview.clone(),
        sim_cable: shared.cable.clone(),
        peer_messages: shared.peer_messages.clone(),
        received_preview: shared.received.clone(),
        levels: shared.levels.clone(),
        monitor: shared.monitor.clone(),
    };
    // Bounded: a sample comes a second; one the main loop has no room for is dropped (the next
    // replaces it), never queued without end behind a stalled loop. An end waits for room.
    let (media_tx, media_rx) = mpsc::channel(MEDIA_EVENTS);
    let main = MainLoop {
        config: options.config,
        peer_link: options.peer_link,
        machine,
        patterns,
        tally: crate::daemon::tally::Tally::default(),
        status_tx,
        heartbeat,
        started,
        shared,
        media_tx,
        media: None,
        generation: 0,
        last_sample: None,
        link_since: Vec::new(),
        pending_restart: Vec::new(),
        screen: Screen::default(),
        pairing_requests: 0,
    };
    let task = tokio::spawn(main.run(cmd_rx, media_rx, shutdown));
    Ok((handle, task))
}

/// The GPIO thread: LEDs every 10 ms from the shared patterns, the button and the tally input
/// read as often (the debouncer wants 30 ms of a level), what they say to the main loop.
fn spawn_gpio(
    board: Board,
    gpio_patterns: Arc<Mutex<[LedPattern; telebridge_gpio::LEDS]>>,
    gpio_cmds: mpsc::Sender<DaemonCommand>,
    now_ms: impl Fn() -> u64 + Send + 'static,
) -> Result<(), AppError> {
    std::thread::Builder::new()
        .name("gpio".into())
        .spawn(move || {
            let mut board = board;
            let mut reported = false;
            let mut tally_in = None;
            let mut talk = crate::roles::talk::TalkButton::default();
            loop {
                let p = *gpio_patterns.locked();
                match board.tick(now_ms(), &p) {
                    Ok(inputs) => {
                        let mut said = Vec::new();
                        if let Some(e) = inputs.button {
                            info!(button = ?e, "button");
                            said.push(DaemonCommand::Button(e));
                        }
                        if inputs.tally_in.is_some() && inputs.tally_in != tally_in {
                            tally_in = inputs.tally_in;
                            said.push(DaemonCommand::TallyIn(tally_in == Some(true)));
                        }
                        if let Some(down) = talk.update(inputs.talk, now_ms()) {
                            said.push(DaemonCommand::Talk(down));
                        }
                        if said.into_iter().any(|c| gpio_cmds.blocking_send(c).is_err()) {
                            break;
                        }
                    }
                    Err(e) if !reported => {
                        error!(error = %e, "GPIO failed");
                        reported = true;
                    }
                    Err(_) => {}
                }
                if gpio_cmds.is_closed() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .map(|_| ())
        .map_err(|e| AppError::Runtime(format!("cannot start the GPIO thread: {e}")))
}
