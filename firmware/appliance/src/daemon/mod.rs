//! `telebridge run`: the long-running daemon. One main loop owns the [`Machine`]; it takes
//! events from the button (a GPIO thread of its own), the API ([`DaemonHandle`]), the media
//! (the encoder or decoder role, a task it starts and stops) and new configurations, and
//! turns the machine's actions into starting and stopping media. It publishes a
//! [`DaemonStatus`] for the API and beats a heartbeat the systemd watchdog thread checks.

mod media;
mod screen;
mod status;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use telebridge_config::{Role, ValidConfig};
use telebridge_gpio::backend::{Board, SimBoard, SimState};
use telebridge_gpio::{ButtonEvent, LedPattern};

use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

use crate::changes::{self};
use crate::sample::MediaSample;
use crate::sd_notify::Heartbeat;
use crate::state::{Action, Event, Machine};
use crate::AppError;

pub use media::simulate;
use media::{apply, start_media, Media, MediaEvent, MediaShared};
use screen::Screen;
use status::{alerts, input_info, role_name, unix_ms};
pub use status::{DaemonStatus, InputInfo};

/// Turns the file's configuration into the running one (`--sim` and the command line's flags);
/// applied at start and again to every reload.
pub type Overrides = Arc<dyn Fn(telebridge_config::Config) -> telebridge_config::Config + Send + Sync>;

/// How the daemon was asked to run.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The configuration, validated, with the command line's overrides applied.
    pub config: ValidConfig,
    /// The bridge's connection to the paired box, from the stored pairing, or why there is
    /// none ("not paired...").
    pub peer_link: Result<telebridge_pairing::PeerRoute, String>,
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
    PeerLink(Box<Result<telebridge_pairing::PeerRoute, String>>),
    /// Send this control message to the paired box on the bridge's connection (a farewell).
    ToPeer(Vec<u8>),
}

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
}

impl DaemonHandle {
    /// The simulated GPIO's state, under `--sim`.
    pub fn sim_state(&self) -> Option<SimState> {
        self.sim.as_ref().map(|s| s.state())
    }
}

/// Starts the daemon: opens the GPIO, spawns the main loop. Returns the handle for the API and
/// a future that ends when the daemon has stopped (after `shutdown`).
pub fn start(
    options: DaemonOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(DaemonHandle, tokio::task::JoinHandle<()>), AppError> {
    let started = Instant::now();
    let now_ms = move || started.elapsed().as_millis() as u64;
    let board = Board::open(&options.config.gpio).map_err(|e| AppError::BadInput(e.to_string()))?;
    let gpio_name = board.name();
    let sim = board.sim();
    info!(gpio = gpio_name, role = ?options.config.role, "appliance starting");

    let machine = Machine::new(now_ms());
    let patterns = Arc::new(Mutex::new(machine.leds(now_ms())));
    let status = DaemonStatus {
        name: options.config.name.clone(),
        role: role_name(options.config.role),
        machine: machine.clone(),
        since_unix_ms: unix_ms(),
        led_patterns: machine.leds(now_ms()),
        gpio: gpio_name,
        media: None,
        running: false,
        links: Vec::new(),
        uptime_s: 0,
        pending_restart: Vec::new(),
        screen: None,
        input: input_info(&options.config, &machine),
        alerts: Vec::new(),
        pairing_requests: 0,
    };
    let (status_tx, status_rx) = watch::channel(status);
    let (cmd_tx, cmd_rx) = mpsc::channel(32);
    let heartbeat = Heartbeat::default();
    heartbeat.beat();

    // The GPIO thread (when there are pins): LEDs every 10 ms from the shared patterns, the
    // button read as often (the debouncer wants 30 ms of a level), events to the loop.
    let gpio_patterns = patterns.clone();
    let gpio_cmds = cmd_tx.clone();
    let has_pins = !matches!(board, Board::None);
    if has_pins {
        std::thread::Builder::new()
            .name("gpio".into())
            .spawn(move || {
                let mut board = board;
                let mut reported = false;
                loop {
                    let p = *gpio_patterns.lock().unwrap_or_else(|p| p.into_inner());
                    match board.tick(now_ms(), &p) {
                        Ok(Some(e)) => {
                            info!(button = ?e, "button");
                            if gpio_cmds.blocking_send(DaemonCommand::Button(e)).is_err() {
                                break;
                            }
                        }
                        Ok(None) => {}
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
            .map_err(|e| AppError::Runtime(format!("cannot start the GPIO thread: {e}")))?;
    }

    let shared = MediaShared {
        preview: telebridge_media::PreviewSlot::default(),
        cable: sim.is_some().then(|| Arc::new(AtomicBool::new(true))),
        peer_messages: tokio::sync::broadcast::channel(8).0,
        received: telebridge_media::PreviewSlot::default(),
    };
    let handle = DaemonHandle {
        status: status_rx,
        commands: cmd_tx,
        sim,
        heartbeat: heartbeat.clone(),
        preview: shared.preview.clone(),
        sim_cable: shared.cable.clone(),
        peer_messages: shared.peer_messages.clone(),
        received_preview: shared.received.clone(),
    };
    let task =
        tokio::spawn(main_loop(options, machine, patterns, status_tx, cmd_rx, heartbeat, started, shared, shutdown));
    Ok((handle, task))
}

#[allow(clippy::too_many_arguments)]
async fn main_loop(
    options: DaemonOptions,
    mut machine: Machine,
    patterns: Arc<Mutex<[LedPattern; 4]>>,
    status_tx: watch::Sender<DaemonStatus>,
    mut commands: mpsc::Receiver<DaemonCommand>,
    heartbeat: Heartbeat,
    started: Instant,
    shared: MediaShared,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let now_ms = || started.elapsed().as_millis() as u64;
    let mut config = options.config.clone();
    let mut peer_link = options.peer_link.clone();
    let (media_tx, mut media_rx) = mpsc::unbounded_channel::<(u64, MediaEvent)>();
    let mut media: Option<Media> = None;
    let mut generation = 0u64;
    let mut last_sample: Option<MediaSample> = None;
    let mut pending_restart: Vec<&'static str> = Vec::new();
    let mut screen = Screen::default();
    let mut pairing_requests = 0u64;
    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_millis(100));

    let mut events = vec![Event::Booted { start_live: config.start_live }];
    loop {
        // Feed the machine, act on what it says.
        for event in events.drain(..) {
            let before = machine.state;
            let (next, actions) = machine.step(&event, now_ms());
            machine = next;
            if machine.state != before {
                match &machine.reason {
                    Some(r) => info!(from = ?before, to = ?machine.state, reason = %r, "state"),
                    None => info!(from = ?before, to = ?machine.state, "state"),
                }
            }
            for action in actions {
                match action {
                    Action::Start => {
                        generation += 1;
                        media = Some(start_media(&config, &peer_link, generation, media_tx.clone(), &shared));
                    }
                    Action::Stop => {
                        if let Some(mut m) = media.take() {
                            if let Some(stop) = m.stop.take() {
                                let _ = stop.send(());
                            }
                        }
                        last_sample = None;
                        *shared.preview.lock().unwrap_or_else(|p| p.into_inner()) = None;
                        *shared.received.lock().unwrap_or_else(|p| p.into_inner()) = None;
                    }
                    Action::ShowSetup => {
                        if config.role == Role::Bridge {
                            // A bridge's long press asks for a pairing code (the web side shows it).
                            pairing_requests += 1;
                        }
                        let text = screen.setup_card(&config);
                        info!(text = %text.replace('\n', " / "), "button held 10 s: showing the address");
                        screen.show_until = Some(Instant::now() + Duration::from_millis(crate::state::SETUP_SHOW_MS));
                    }
                }
            }
        }
        screen.update(&config, machine.state.running() && matches!(config.role, Role::Decoder | Role::Bridge));
        heartbeat.beat();
        let now = now_ms();
        let gpio = status_tx.borrow().gpio;
        *patterns.lock().unwrap_or_else(|p| p.into_inner()) = machine.leds(now);
        status_tx.send_replace(DaemonStatus {
            name: config.name.clone(),
            role: role_name(config.role),
            since_unix_ms: unix_ms().saturating_sub(now.saturating_sub(machine.since_ms)),
            led_patterns: machine.leds(now),
            machine: machine.clone(),
            gpio,
            media: last_sample.clone(),
            running: machine.state.running(),
            links: last_sample.as_ref().map(MediaSample::link_views).unwrap_or_default(),
            uptime_s: started.elapsed().as_secs(),
            pending_restart: pending_restart.clone(),
            screen: screen.shown(),
            input: input_info(&config, &machine),
            alerts: alerts(&machine, last_sample.as_ref(), &pending_restart),
            pairing_requests,
        });

        tokio::select! {
            _ = &mut shutdown => break,
            _ = tick.tick() => {}
            Some((generation_of, e)) = media_rx.recv() => {
                // Events of media already stopped are stale.
                if media.as_ref().is_some_and(|m| m.generation == generation_of) {
                    match e {
                        MediaEvent::Sample(sample) => {
                            events.push(Event::Links(sample.links()));
                            if let Some(present) = sample.signal().filter(|p| *p != machine.signal) {
                                events.push(Event::Signal(present));
                            }
                            last_sample = Some(*sample);
                        }
                        MediaEvent::Ended(Ok(())) => {
                            media = None;
                            events.push(Event::Stopped);
                        }
                        MediaEvent::Ended(Err(e)) => {
                            error!(error = %e, "media failed");
                            media = None;
                            events.push(Event::Failed(e.to_string()));
                        }
                    }
                }
            }
            Some(cmd) = commands.recv() => match cmd {
                DaemonCommand::Live(live) => events.push(Event::Api { live }),
                DaemonCommand::Button(b) => events.push(Event::Button(b)),
                DaemonCommand::SetupText(text) => screen.setup = text,
                DaemonCommand::PairingText(text) => screen.pairing = text,
                DaemonCommand::ToPeer(message) => {
                    if let Some(cmds) = media.as_ref().and_then(|m| m.commands.clone()) {
                        let _ = cmds.try_send(crate::EncoderCommand::ToPeer(message));
                    }
                }
                DaemonCommand::PeerLink(link) => {
                    let link = *link;
                    let changed = link != peer_link;
                    peer_link = link;
                    if changed && config.role == Role::Bridge && machine.state.running() {
                        info!(paired = peer_link.is_ok(), "the pairing changed: restarting the bridge");
                        if let Some(stop) = media.as_mut().and_then(|m| m.stop.take()) {
                            let _ = stop.send(());
                        }
                        generation += 1;
                        media = Some(start_media(&config, &peer_link, generation, media_tx.clone(), &shared));
                    }
                }
                DaemonCommand::Stall(d) => {
                    warn!(ms = d.as_millis() as u64, "stalling the main loop on request (simulation)");
                    std::thread::sleep(d);
                }
                DaemonCommand::Apply(new) => {
                    let plan = changes::plan(&config, &new);
                    apply(&plan, &mut media, &mut pending_restart);
                    config = *new;
                    if plan.restart_media && machine.state.running() {
                        generation += 1;
                        media = Some(start_media(&config, &peer_link, generation, media_tx.clone(), &shared));
                    }
                }
            },
        }
    }
    info!("stopping");
    let _ = crate::sd_notify::notify("STOPPING=1");
    screen.close();
    if let Some(mut m) = media.take() {
        if let Some(stop) = m.stop.take() {
            let _ = stop.send(());
        }
        // Let the media close its connections (each output joins its thread).
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_millis(200), media_rx.recv()).await {
                Ok(Some((g, MediaEvent::Ended(_)))) if g == m.generation => break,
                Ok(None) => break,
                _ => {}
            }
        }
    }
}
