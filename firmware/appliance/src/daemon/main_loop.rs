//! The daemon's main loop: the one owner of the [`Machine`]. Each turn feeds the machine the
//! events gathered, acts on what it says, publishes the status, then waits for the next event
//! (a tick, the media, a command). [`MainLoop`] holds what lives from turn to turn.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use telebridge_config::{Role, ValidConfig};
use telebridge_gpio::LedPattern;
use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

use super::media::{apply, start_media, Media, MediaEvent, MediaShared};
use super::screen::Screen;
use super::status::{status_of, unix_ms, StatusParts};
use super::{DaemonCommand, DaemonStatus};
use crate::daemon::changes;
use crate::daemon::sample::MediaSample;
use crate::daemon::sd_notify::Heartbeat;
use crate::daemon::state::{Action, Event, Machine};

/// What the main loop keeps from one turn to the next.
pub(super) struct MainLoop {
    pub(super) config: ValidConfig,
    pub(super) peer_link: Result<telebridge_pairing::PeerRoute, String>,
    pub(super) machine: Machine,
    /// The LEDs' patterns, read by the GPIO thread.
    pub(super) patterns: Arc<Mutex<[LedPattern; telebridge_gpio::LEDS]>>,
    pub(super) tally: crate::daemon::tally::Tally,
    pub(super) status_tx: watch::Sender<DaemonStatus>,
    pub(super) heartbeat: Heartbeat,
    pub(super) started: Instant,
    pub(super) shared: MediaShared,
    /// Where the running media's events come in, tagged with its generation.
    pub(super) media_tx: mpsc::Sender<(u64, MediaEvent)>,
    pub(super) media: Option<Media>,
    pub(super) generation: u64,
    pub(super) last_sample: Option<MediaSample>,
    /// When each link came into its state.
    pub(super) link_since: crate::daemon::sample::SinceBook,
    pub(super) pending_restart: Vec<&'static str>,
    pub(super) screen: Screen,
    pub(super) pairing_requests: u64,
}

impl MainLoop {
    /// Runs until `shutdown`, then stops the media and waits for it to close its connections.
    pub(super) async fn run(
        mut self,
        mut commands: mpsc::Receiver<DaemonCommand>,
        mut media_rx: mpsc::Receiver<(u64, MediaEvent)>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut events = vec![Event::Booted { start_live: self.config.start_live }];
        loop {
            for event in events.drain(..) {
                self.feed(&event);
            }
            self.publish();
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tick.tick() => {}
                Some((generation, e)) = media_rx.recv() => self.on_media(generation, e, &mut events),
                Some(cmd) = commands.recv() => self.on_command(cmd, &mut events),
            }
        }
        self.stop(media_rx).await;
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Feeds the machine one event and acts on what it says.
    fn feed(&mut self, event: &Event) {
        let before = self.machine.state;
        let (next, actions) = self.machine.step(event, self.now_ms());
        self.machine = next;
        if self.machine.state != before {
            match &self.machine.reason {
                Some(r) => info!(from = ?before, to = ?self.machine.state, reason = %r, "state"),
                None => info!(from = ?before, to = ?self.machine.state, "state"),
            }
        }
        for action in actions {
            match action {
                Action::Start => self.start_media(),
                Action::Stop => {
                    // Taken: its events from now on are stale.
                    if let Some(mut m) = self.media.take() {
                        m.stop();
                    }
                    self.last_sample = None;
                    *self.shared.preview.locked() = None;
                    *self.shared.received.locked() = None;
                }
                Action::ShowSetup => {
                    if self.config.role == Role::Bridge {
                        // A bridge's long press asks for a pairing code (the web side shows it).
                        self.pairing_requests += 1;
                    }
                    let text = self.screen.setup_card(&self.config);
                    info!(text = %text.replace('\n', " / "), "button held 10 s: showing the address");
                    self.screen.show_until =
                        Some(Instant::now() + Duration::from_millis(crate::daemon::state::SETUP_SHOW_MS));
                }
            }
        }
    }

    /// New media, of the next generation (the events of the old one are stale from now).
    fn start_media(&mut self) {
        self.generation += 1;
        self.media =
            Some(start_media(&self.config, &self.peer_link, self.generation, self.media_tx.clone(), &self.shared));
    }

    /// Tells the running media to stop.
    fn stop_media(&mut self) {
        if let Some(m) = self.media.as_mut() {
            m.stop();
        }
    }

    /// The screen, the heartbeat, the LEDs' patterns and the status for the API.
    fn publish(&mut self) {
        let (config, machine) = (&self.config, &self.machine);
        self.screen.update(config, machine.state.running() && matches!(config.role, Role::Decoder | Role::Bridge));
        self.heartbeat.beat();
        let now = self.now_ms();
        let gpio = self.status_tx.borrow().gpio;
        self.tally.set_bridge(config.role == Role::Bridge);
        let leds = crate::daemon::tally::panel(machine.leds(now), self.tally.pattern(now));
        let on_air = self.tally.status(now).on_air;
        self.shared.on_air.store(on_air, std::sync::atomic::Ordering::Relaxed);
        self.screen.set_on_air(on_air);
        *self.patterns.locked() = leds;
        let last = self.last_sample.as_ref();
        let mut links = last.map(MediaSample::link_views).unwrap_or_default();
        crate::daemon::sample::stamp_since(&mut links, &mut self.link_since, unix_ms());
        self.status_tx.send_replace(status_of(StatusParts {
            config,
            machine,
            since_unix_ms: unix_ms().saturating_sub(now.saturating_sub(machine.since_ms)),
            led_patterns: leds,
            tally: self.tally.status(now),
            talk: self.shared.talk.status(unix_ms()),
            gpio,
            media: last,
            links,
            uptime_s: self.started.elapsed().as_secs(),
            pending_restart: &self.pending_restart,
            screen: self.screen.shown(),
            pairing_requests: self.pairing_requests,
            sound: self.shared.levels.read(std::time::Instant::now()),
            viewers: self.shared.monitor.viewers(),
        }));
    }

    /// An event of the media of `generation` (stale when that media was stopped).
    fn on_media(&mut self, generation: u64, e: MediaEvent, events: &mut Vec<Event>) {
        if self.media.as_ref().is_none_or(|m| m.generation != generation) {
            return;
        }
        match e {
            MediaEvent::Sample(sample) => {
                events.push(Event::Links(sample.links()));
                if let Some(present) = sample.signal().filter(|p| *p != self.machine.signal) {
                    events.push(Event::Signal(present));
                }
                self.last_sample = Some(*sample);
            }
            MediaEvent::Ended(Ok(())) => {
                self.media = None;
                events.push(Event::Stopped);
            }
            MediaEvent::Ended(Err(e)) => {
                error!(error = %e, "media failed");
                self.media = None;
                events.push(Event::Failed(e.to_string()));
            }
        }
    }

    /// A command from the button's thread or the API.
    fn on_command(&mut self, cmd: DaemonCommand, events: &mut Vec<Event>) {
        match cmd {
            DaemonCommand::Live(live) => events.push(Event::Api { live }),
            DaemonCommand::Button(b) => events.push(Event::Button(b)),
            DaemonCommand::SetupText(text) => self.screen.setup = text,
            DaemonCommand::PairingText(text) => self.screen.pairing = text,
            DaemonCommand::ToPeer(message) => {
                if let Some(cmds) = self.media.as_ref().and_then(|m| m.commands.clone()) {
                    let _ = cmds.try_send(crate::EncoderCommand::ToPeer(message));
                }
            }
            DaemonCommand::PeerLink(link) => {
                let link = *link;
                let changed = link != self.peer_link;
                self.peer_link = link;
                if changed && self.config.role == Role::Bridge && self.machine.state.running() {
                    info!(paired = self.peer_link.is_ok(), "the pairing changed: restarting the bridge");
                    self.stop_media();
                    self.start_media();
                }
            }
            DaemonCommand::Tally(on_air) => {
                info!(on_air, "tally cue");
                self.tally.cue(on_air);
            }
            DaemonCommand::Talk(down) => {
                if down {
                    self.shared.talk.press(unix_ms());
                } else {
                    self.shared.talk.release();
                }
            }
            DaemonCommand::TallyIn(on_air) => {
                info!(on_air, "tally input");
                self.tally.wired(on_air);
            }
            DaemonCommand::FarLive(live) => {
                let now = self.now_ms();
                self.tally.far(live, now);
            }
            DaemonCommand::Stall(d) => {
                warn!(ms = d.as_millis() as u64, "stalling the main loop on request (simulation)");
                std::thread::sleep(d);
            }
            DaemonCommand::Apply(new) => {
                let plan = changes::plan(&self.config, &new);
                apply(&plan, &mut self.media, &mut self.pending_restart);
                self.shared.monitor.set_limit(new.raw.web.monitor_viewers);
                self.config = *new;
                if plan.restart_media && self.machine.state.running() {
                    self.start_media();
                }
            }
        }
    }

    /// After the loop: the media stopped, given 5 s to close its connections (each output
    /// joins its thread).
    async fn stop(mut self, mut media_rx: mpsc::Receiver<(u64, MediaEvent)>) {
        info!("stopping");
        let _ = crate::daemon::sd_notify::notify("STOPPING=1");
        self.screen.close();
        if let Some(mut m) = self.media.take() {
            m.stop();
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
}
