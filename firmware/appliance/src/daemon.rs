//! `telebridge run`: the long-running daemon. One main loop owns the [`Machine`]; it takes
//! events from the button (a GPIO thread of its own), the API ([`DaemonHandle`]), the media
//! (the encoder or decoder role, a task it starts and stops) and new configurations, and
//! turns the machine's actions into starting and stopping media. It publishes a
//! [`DaemonStatus`] for the API and beats a heartbeat the systemd watchdog thread checks.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use telebridge_config::{Role, ValidConfig};
use telebridge_gpio::backend::{Board, SimBoard, SimState};
use telebridge_gpio::{ButtonEvent, LedPattern};

use tokio::sync::{mpsc, oneshot, watch};
use tracing::{error, info, warn};

use crate::changes::{self, ChangePlan};
use crate::sample::MediaSample;
use crate::sd_notify::Heartbeat;
use crate::state::{Action, Event, Machine};
use crate::{AppError, DecodeOptions, DecodeSample, EncoderCommand, RunOptions, StatsSample};

/// Turns the file's configuration into the running one (`--sim` and the command line's flags);
/// applied at start and again to every reload.
pub type Overrides = Arc<dyn Fn(telebridge_config::Config) -> telebridge_config::Config + Send + Sync>;

/// How the daemon was asked to run.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// The configuration, validated, with the command line's overrides applied.
    pub config: ValidConfig,
}

/// What the daemon is doing, for the API and the panel.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonStatus {
    /// The box's name.
    pub name: String,
    /// `encoder` or `decoder`.
    pub role: &'static str,
    /// State, reason, links.
    pub machine: Machine,
    /// Since when, ms since the Unix epoch.
    pub since_unix_ms: u64,
    /// What each LED shows (power, link, live, error).
    pub led_patterns: [LedPattern; 4],
    /// The GPIO backend.
    pub gpio: &'static str,
    /// The latest one-second sample of the running media (serialised as `--stats json` prints it).
    pub media: Option<MediaSample>,
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
}

/// The input as the status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    /// A signal is present (an HDMI source plugged and sending; always for the test pattern).
    pub signal: bool,
    /// The source and format (encoder), or the SRT input (decoder).
    pub format: String,
}

fn input_info(config: &ValidConfig, machine: &Machine) -> InputInfo {
    let p = &config.picture;
    let format = match config.role {
        Role::Encoder => {
            format!("{} {}x{} {} fps, {} kbit/s", config.video_source, p.width, p.height, p.fps, p.bitrate_kbps)
        }
        Role::Decoder => config.decoder_input.to_string(),
    };
    InputInfo { signal: machine.signal, format }
}

/// What needs attention: an error, no signal, links that are down and why (and SRT latency
/// advice, see [`MediaSample::alerts`]), settings waiting for a restart.
fn alerts(machine: &Machine, media: Option<&MediaSample>, pending: &[&'static str]) -> Vec<String> {
    let mut out = Vec::new();
    if machine.state == crate::state::State::Error {
        out.push(format!("stopped: {}", machine.reason.as_deref().unwrap_or("the media failed")));
    }
    if !machine.signal {
        out.push("no input signal: check the HDMI source and cable".into());
    }
    out.extend(media.map(MediaSample::alerts).unwrap_or_default());
    for p in pending {
        out.push(format!("{p} changed: it takes effect after a restart"));
    }
    out
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
}

impl DaemonHandle {
    /// The simulated GPIO's state, under `--sim`.
    pub fn sim_state(&self) -> Option<SimState> {
        self.sim.as_ref().map(|s| s.state())
    }
}

enum MediaEvent {
    /// Once a second: the running media's sample.
    Sample(Box<MediaSample>),
    Ended(Result<(), AppError>),
}

struct Media {
    stop: Option<oneshot::Sender<()>>,
    commands: Option<mpsc::Sender<EncoderCommand>>,
    generation: u64,
}

/// What the daemon shares with the media it starts.
#[derive(Clone)]
struct MediaShared {
    preview: telebridge_media::PreviewSlot,
    cable: Option<Arc<AtomicBool>>,
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
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
        uptime_s: 0,
        pending_restart: Vec::new(),
        screen: None,
        input: input_info(&options.config, &machine),
        alerts: Vec::new(),
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
    };
    let handle = DaemonHandle {
        status: status_rx,
        commands: cmd_tx,
        sim,
        heartbeat: heartbeat.clone(),
        preview: shared.preview.clone(),
        sim_cable: shared.cable.clone(),
    };
    let task =
        tokio::spawn(main_loop(options, machine, patterns, status_tx, cmd_rx, heartbeat, started, shared, shutdown));
    Ok((handle, task))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Encoder => "encoder",
        Role::Decoder => "decoder",
    }
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
    let (media_tx, mut media_rx) = mpsc::unbounded_channel::<(u64, MediaEvent)>();
    let mut media: Option<Media> = None;
    let mut generation = 0u64;
    let mut last_sample: Option<MediaSample> = None;
    let mut pending_restart: Vec<&'static str> = Vec::new();
    let mut screen = Screen::default();
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
                        media = Some(start_media(&config, generation, media_tx.clone(), &shared));
                    }
                    Action::Stop => {
                        if let Some(mut m) = media.take() {
                            if let Some(stop) = m.stop.take() {
                                let _ = stop.send(());
                            }
                        }
                        last_sample = None;
                        *shared.preview.lock().unwrap_or_else(|p| p.into_inner()) = None;
                    }
                    Action::ShowSetup => {
                        let text = screen.setup_card(&config);
                        info!(text = %text.replace('\n', " / "), "button held 10 s: showing the address");
                        screen.show_until = Some(Instant::now() + Duration::from_millis(crate::state::SETUP_SHOW_MS));
                    }
                }
            }
        }
        screen.update(&config, machine.state.running() && config.role == Role::Decoder);
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
            uptime_s: started.elapsed().as_secs(),
            pending_restart: pending_restart.clone(),
            screen: screen.shown(),
            input: input_info(&config, &machine),
            alerts: alerts(&machine, last_sample.as_ref(), &pending_restart),
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
                        media = Some(start_media(&config, generation, media_tx.clone(), &shared));
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

/// The HDMI output when no picture is shown there: the first-run setup code, or (for 10 s after
/// a long press) the box's name and address. A decoder that is receiving owns the screen.
#[derive(Default)]
struct Screen {
    /// The setup text the web side asked for.
    setup: Option<String>,
    /// The address card is up until then.
    show_until: Option<Instant>,
    display: Option<telebridge_media::display::Display>,
    failed: bool,
}

impl Screen {
    fn setup_card(&self, config: &ValidConfig) -> String {
        let mut text = format!("{}\nPanel: http://{}/", config.name, config.http_listen);
        if let Some(s) = &self.setup {
            text = format!("{text}\n{s}");
        }
        text
    }

    /// The text that should be up now.
    fn wanted(&self, config: &ValidConfig) -> Option<String> {
        if self.show_until.is_some_and(|t| Instant::now() < t) {
            return Some(self.setup_card(config));
        }
        self.setup.clone()
    }

    fn shown(&self) -> Option<String> {
        self.display.as_ref().map(|d| d.slate_text())
    }

    fn update(&mut self, config: &ValidConfig, decoder_busy: bool) {
        let want = if decoder_busy { None } else { self.wanted(config) };
        match (want, self.display.as_ref()) {
            (Some(text), Some(d)) => d.set_slate_text(&text),
            (Some(text), None) if !self.failed => {
                let kind = telebridge_media::display::SinkKind::from_config(&config.decoder_sink);
                let started = telebridge_media::init().map_err(|e| e.to_string()).and_then(|()| {
                    telebridge_media::display::Display::start(kind, (1280, 720), text).map_err(|e| e.to_string())
                });
                match started {
                    Ok(d) => self.display = Some(d),
                    Err(e) => {
                        warn!(error = %e, "cannot show the setup text on the HDMI output");
                        self.failed = true;
                    }
                }
            }
            (None, Some(_)) => self.close(),
            _ => {}
        }
    }

    /// Takes the text down; the display stops on a thread of its own (it waits for its sink to
    /// finish, which must not hold up the main loop).
    fn close(&mut self) {
        if let Some(mut d) = self.display.take() {
            std::thread::spawn(move || d.stop());
        }
    }
}

/// Applies a plan's output changes; a media restart is left to the caller.
fn apply(plan: &ChangePlan, media: &mut Option<Media>, pending: &mut Vec<&'static str>) {
    for s in &plan.next_start {
        if !pending.contains(s) {
            pending.push(s);
        }
        warn!(setting = *s, "changed; takes effect at the next start");
    }
    if plan.restart_media {
        if let Some(mut m) = media.take() {
            info!("configuration changed: restarting the media");
            if let Some(stop) = m.stop.take() {
                let _ = stop.send(());
            }
        }
        return;
    }
    let Some(cmds) = media.as_ref().and_then(|m| m.commands.clone()) else { return };
    for name in &plan.remove_outputs {
        info!(output = %name, "configuration changed: removing output");
        let _ = cmds.try_send(EncoderCommand::RemoveOutput(name.clone()));
    }
    for (name, spec) in &plan.add_outputs {
        info!(output = %spec.label(), "configuration changed: adding output");
        let _ = cmds.try_send(EncoderCommand::AddOutput(name.clone(), spec.clone()));
    }
}

/// What `--sim` changes in a configuration: the test source, simulated GPIO, a headless sink.
pub fn simulate(mut c: telebridge_config::Config) -> telebridge_config::Config {
    c.video.source = "test".into();
    c.audio.source = "test".into();
    c.gpio.backend = "sim".into();
    if !c.decoder.sink.starts_with("file:") {
        c.decoder.sink = "fake".into();
    }
    c
}

fn start_media(
    config: &ValidConfig,
    generation: u64,
    events: mpsc::UnboundedSender<(u64, MediaEvent)>,
    shared: &MediaShared,
) -> Media {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stop_rx.await;
    };
    match config.role {
        Role::Encoder => {
            let (cmd_tx, cmd_rx) = mpsc::channel(16);
            let tx = events.clone();
            let gate = match config.video_source {
                telebridge_config::VideoSource::Test => shared.cable.clone(),
                _ => None,
            };
            let options = RunOptions {
                duration: None,
                on_sample: Some(Arc::new(move |s: &StatsSample| {
                    let _ = tx.send((generation, MediaEvent::Sample(Box::new(MediaSample::Encoder(s.clone())))));
                })),
                commands: Some(cmd_rx),
                preview: Some(shared.preview.clone()),
                signal_gate: gate,
            };
            let config = config.clone();
            tokio::spawn(async move {
                let r = crate::run_encoder(config, options, shutdown).await.map(|_| ());
                let _ = events.send((generation, MediaEvent::Ended(r)));
            });
            Media { stop: Some(stop_tx), commands: Some(cmd_tx), generation }
        }
        Role::Decoder => {
            let tx = events.clone();
            let options = DecodeOptions {
                name: config.name.clone(),
                input: config.decoder_input.clone(),
                sink: telebridge_media::display::SinkKind::from_config(&config.decoder_sink),
                audio: config.audio_out.clone(),
                duration: None,
                on_sample: Some(Arc::new(move |s: &DecodeSample| {
                    let sample = MediaSample::Decoder(Box::new(s.clone()));
                    let _ = tx.send((generation, MediaEvent::Sample(Box::new(sample))));
                })),
                loop_to: None,
            };
            tokio::spawn(async move {
                let r = crate::run_decoder(options, shutdown).await.map(|_| ());
                let _ = events.send((generation, MediaEvent::Ended(r)));
            });
            Media { stop: Some(stop_tx), commands: None, generation }
        }
    }
}
