//! The fleet client: the box as a controller of a hawkBit server (its device API, DDI; gooseBit
//! serves it too), in a thread of its own beside the panel. It polls at the interval the server
//! asks, tells the server what the box is (its attributes), fetches an assigned RAUC bundle
//! (`fetch.rs`), hands it to the root helper through the same [`Host`] the panel's uploads use,
//! and reports each step in words. What to do is decided by `telebridge_fleet::plan` (pure);
//! this module only asks, sends, downloads and remembers.
//!
//! Off until `fleet.server` is set; a reload that changes `[fleet]` takes effect at the next
//! turn. The action being installed is remembered in the state directory
//! (`fleet-pending.json`), so that the daemon in the new slot, or the old one RAUC fell back
//! to, reports how it ended.

mod about;
mod fetch;

pub use about::{box_version, BOARD_NAME};

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::Fleet;
use telebridge_contract::daemon::DaemonStatus;
use telebridge_contract::fleet::{FleetBoard, FleetState, FleetView};
use telebridge_contract::host::{Host, UpdateState};
use telebridge_contract::machine::State;
use telebridge_fleet::ddi::{self, Attributes};

use about::attributes;
use telebridge_fleet::plan::{decide, Do, Event, Facts, Job, Pending, Stage};
use telebridge_http::{self as http, Target};
use telebridge_web::{AppState, ConfigStore};
use tokio::sync::watch;
use tracing::{info, warn};

/// How long a request to the server may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// Between polls while the server cannot be reached.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(30);
/// Reports kept while the server cannot take them.
const UNSENT_MAX: usize = 32;

/// Starts the client over the panel's state; it ends when `stop` turns true.
pub fn spawn(state: &AppState, stop: watch::Receiver<bool>) {
    let (tx, rx) = mpsc::channel();
    let client = Client {
        store: state.store.clone(),
        status: state.daemon.status(),
        host: state.host.clone(),
        board: state.fleet.clone(),
        pending_file: pending_file(&state.store),
        stage: Stage::Idle,
        unsent: VecDeque::new(),
        tx,
        rx,
        download_stop: None,
        healthy_since: None,
        told: None,
        started: false,
        unreachable: None,
        cancelled: VecDeque::new(),
    };
    if let Err(e) = std::thread::Builder::new().name("fleet".into()).spawn(move || client.run(&stop)) {
        warn!(error = %e, "cannot start the fleet client");
    }
}

/// Where the action being installed is remembered: the state directory (systemd's
/// `STATE_DIRECTORY`, on the data partition), else beside the configuration file.
fn pending_file(store: &ConfigStore) -> Option<PathBuf> {
    let dir = std::env::var_os("STATE_DIRECTORY")
        .map(PathBuf::from)
        .or_else(|| store.path().and_then(|p| p.parent().map(PathBuf::from)))?;
    Some(dir.join("fleet-pending.json"))
}

struct Client {
    store: Arc<ConfigStore>,
    status: watch::Receiver<DaemonStatus>,
    host: Arc<dyn Host>,
    board: Arc<FleetBoard>,
    pending_file: Option<PathBuf>,
    stage: Stage,
    /// Reports not yet taken by the server: (URL, JSON).
    unsent: VecDeque<(String, String)>,
    tx: mpsc::Sender<Event>,
    rx: mpsc::Receiver<Event>,
    download_stop: Option<Arc<AtomicBool>>,
    healthy_since: Option<Instant>,
    /// The attributes last told to the server.
    told: Option<Attributes>,
    started: bool,
    /// Why the server could not be used at the last poll.
    unreachable: Option<String>,
    /// Actions the server cancelled: a poll that still links one is not taken up again.
    cancelled: VecDeque<String>,
}

impl Client {
    fn run(mut self, stop: &watch::Receiver<bool>) {
        let mut next_poll = Instant::now();
        let mut was: Option<Fleet> = None;
        while !*stop.borrow() {
            let Some(fleet) = self.store.running().and_then(|c| c.fleet) else {
                if was.take().is_some() {
                    info!("fleet updates off");
                }
                self.board.update(|v| *v = FleetView::default());
                std::thread::sleep(Duration::from_secs(2));
                continue;
            };
            if was.as_ref() != Some(&fleet) {
                info!(server = %fleet.label(), controller = %fleet.controller_id, "fleet updates from this server");
                self.told = None;
                next_poll = Instant::now();
                was = Some(fleet.clone());
            }
            self.keep_health();
            if !self.started {
                self.started = true;
                if let Some(p) = self.remembered() {
                    self.step(&fleet, Event::Started(p));
                }
            }
            if Instant::now() >= next_poll {
                next_poll = Instant::now() + self.poll(&fleet);
            }
            self.step(&fleet, Event::Tick);
            self.watch_install(&fleet);
            self.flush(&fleet);
            if let Ok(event) = self.rx.recv_timeout(Duration::from_secs(1)) {
                self.step(&fleet, event);
            }
        }
    }

    /// Healthy: the daemon runs without a failure the user must look at.
    fn keep_health(&mut self) {
        let state = self.status.borrow().machine.state;
        if matches!(state, State::Error | State::Booting) {
            self.healthy_since = None;
        } else {
            self.healthy_since.get_or_insert_with(Instant::now);
        }
    }

    fn facts(&self, fleet: &Fleet) -> Facts {
        Facts {
            live: self.status.borrow().running,
            update_on_air: fleet.update_on_air,
            version: box_version(),
            healthy_for: self.healthy_since.map_or(Duration::ZERO, |t| t.elapsed()),
        }
    }

    /// One decision, and what it asks done.
    fn step(&mut self, fleet: &Fleet, event: Event) {
        let facts = self.facts(fleet);
        let (stage, todo) = decide(std::mem::take(&mut self.stage), event, &facts);
        self.stage = stage;
        for d in todo {
            self.act(fleet, d);
        }
        self.show(fleet, &facts);
    }

    fn act(&mut self, fleet: &Fleet, d: Do) {
        match d {
            Do::Feedback { url, execution, finished, details } => {
                info!(execution = ?execution, finished = ?finished, details = %details.join("; "), "fleet: report");
                // .../deploymentBase/{id}/feedback or .../cancelAction/{id}/feedback
                let id = url.rsplit('/').nth(1).unwrap_or_default().to_string();
                self.board.update(|v| v.message = details.join("; "));
                if self.unsent.len() < UNSENT_MAX {
                    self.unsent.push_back((url, ddi::feedback(&id, execution, finished, None, &details)));
                }
                self.flush(fleet);
            }
            Do::Download(a) => {
                let stop = Arc::new(AtomicBool::new(false));
                self.download_stop = Some(stop.clone());
                let (tx, board, server, auth) =
                    (self.tx.clone(), self.board.clone(), target(fleet, ""), fleet.auth.header());
                let bundle = self.host.bundle_path();
                let spawned = std::thread::Builder::new().name("fleet-fetch".into()).spawn(move || {
                    let result = bundle.map_err(|e| e.to_string()).and_then(|path| {
                        let progress = |have, of| board.update(|v| v.downloaded = Some((have, of)));
                        fetch::fetch(&a, &server, auth.as_deref(), &path, &stop, &progress)
                    });
                    let _ = tx.send(Event::Downloaded(result));
                });
                if let Err(e) = spawned {
                    let _ = self.tx.send(Event::Downloaded(Err(format!("cannot start the download: {e}"))));
                }
            }
            Do::StopDownload => {
                if let Some(stop) = self.download_stop.take() {
                    stop.store(true, Ordering::Relaxed);
                }
                if let Ok(path) = self.host.bundle_path() {
                    let _ = std::fs::remove_file(fetch::part_path(&path));
                }
            }
            Do::Install => {
                let asked = self.host.bundle_path().and_then(|p| self.host.install(&p));
                if let Err(e) = asked {
                    let _ = self.tx.send(Event::Installed(Err(e.to_string())));
                }
            }
            Do::Remember(p) => self.remember(p.as_ref()),
        }
    }

    /// While the helper installs: its verdict, when it comes.
    fn watch_install(&mut self, fleet: &Fleet) {
        if !matches!(self.stage, Stage::Installing(_)) {
            return;
        }
        let status = self.host.update_status();
        match status.state {
            UpdateState::Installed => self.step(fleet, Event::Installed(Ok(()))),
            UpdateState::Failed => self.step(fleet, Event::Installed(Err(status.message))),
            UpdateState::Installing | UpdateState::Idle => {}
        }
    }

    fn remembered(&self) -> Option<Pending> {
        let text = std::fs::read_to_string(self.pending_file.as_ref()?).ok()?;
        serde_json::from_str(&text).map_err(|e| warn!(error = %e, "fleet: the remembered action is unreadable")).ok()
    }

    fn remember(&self, p: Option<&Pending>) {
        let Some(file) = &self.pending_file else { return };
        let result = match p {
            Some(p) => serde_json::to_vec(p)
                .map_err(std::io::Error::other)
                .and_then(|json| telebridge_config::write_secret_file(file, &json)),
            None => std::fs::remove_file(file).or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            }),
        };
        if let Err(e) = result {
            warn!(file = %file.display(), error = %e, "fleet: cannot remember the action being installed");
        }
    }

    /// One poll: the box's resource, then what its links name. Returns when to poll again.
    fn poll(&mut self, fleet: &Fleet) -> Duration {
        let poll =
            match self.get(fleet, &fleet.controller_path()).and_then(|b| ddi::read_poll(&b).map_err(|e| e.to_string()))
            {
                Ok(p) => p,
                Err(e) => {
                    if self.unreachable.as_ref() != Some(&e) {
                        warn!(error = %e, "fleet: the server cannot be used");
                    }
                    self.board.update(|v| v.message = e.clone());
                    self.unreachable = Some(e);
                    return UNREACHABLE_RETRY;
                }
            };
        if self.unreachable.take().is_some() {
            info!(server = %fleet.label(), "fleet: the server answers");
            self.board.update(|v| v.message.clear());
        }
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.board.update(|v| v.last_answer_unix = Some(unix));
        let config = self.store.running();
        let (name, role) = config.as_ref().map_or(("", ""), |c| (c.name.as_str(), c.role.name()));
        let attrs = attributes(name, role, &box_version());
        if poll.config_data.is_some() || self.told.as_ref() != Some(&attrs) {
            let path = poll.config_data.clone().unwrap_or_else(|| format!("{}/configData", fleet.controller_path()));
            match self.send(fleet, "PUT", &path, &ddi::config_data(&attrs)) {
                Ok(()) => self.told = Some(attrs),
                Err(e) => warn!(error = %e, "fleet: the attributes were not taken"),
            }
        }
        if let Some(href) = &poll.cancel {
            match self.get(fleet, href).and_then(|b| ddi::read_cancel(&b).map_err(|e| e.to_string())) {
                Ok(cancel) => {
                    if !self.cancelled.contains(&cancel.stop) {
                        if self.cancelled.len() >= 8 {
                            self.cancelled.pop_front();
                        }
                        self.cancelled.push_back(cancel.stop.clone());
                    }
                    self.step(fleet, Event::Cancel { cancel, feedback: format!("{}/feedback", without_query(href)) });
                }
                Err(e) => warn!(error = %e, "fleet: the cancel cannot be read"),
            }
        }
        if let Some(href) = &poll.deployment {
            match self.get(fleet, href).and_then(|b| ddi::read_assignment(&b).map_err(|e| e.to_string())) {
                Ok(assignment) if self.cancelled.contains(&assignment.action) => {}
                Ok(assignment) => {
                    let job = Job { assignment, feedback: format!("{}/feedback", without_query(href)) };
                    self.step(fleet, Event::Assigned(job));
                }
                Err(e) => warn!(error = %e, "fleet: the deployment cannot be used"),
            }
        }
        poll.sleep
    }

    /// Sends the reports in order, until one is not taken.
    /// A report the server refuses as a client error (the action is gone) is dropped, not sent
    /// again for ever in front of the others.
    fn flush(&mut self, fleet: &Fleet) {
        while let Some((url, json)) = self.unsent.front().cloned() {
            match self.exchange(fleet, "POST", &url, json.as_bytes()) {
                Ok(r) if (200..300).contains(&r.status) => {}
                Ok(r) if refused_for_good(r.status) => {
                    warn!(status = r.status, report = %without_query(&url), "fleet: the server refused a report; dropped");
                }
                Ok(r) => {
                    warn!(status = r.status, "fleet: a report was not taken; sending it again later");
                    return;
                }
                Err(e) => {
                    warn!(error = %e, "fleet: a report was not taken; sending it again later");
                    return;
                }
            }
            self.unsent.pop_front();
        }
    }

    fn get(&self, fleet: &Fleet, href: &str) -> Result<Vec<u8>, String> {
        let r = self.request(fleet, "GET", href, b"")?;
        Ok(r.body)
    }

    fn send(&self, fleet: &Fleet, method: &str, href: &str, json: &str) -> Result<(), String> {
        self.request(fleet, method, href, json.as_bytes()).map(|_| ())
    }

    /// One request to the server; anything but a 2xx is an error in words.
    fn request(&self, fleet: &Fleet, method: &str, href: &str, body: &[u8]) -> Result<http::Response, String> {
        let r = self.exchange(fleet, method, href, body)?;
        match r.status {
            200..=299 => Ok(r),
            401 | 403 => Err(format!(
                "{} refused the box ({}): check fleet.target_token or fleet.gateway_token",
                fleet.label(),
                r.status
            )),
            404 if method == "GET" && href == fleet.controller_path() => {
                Err(format!("{} does not know the box as {:?} (404)", fleet.label(), fleet.controller_id))
            }
            s => Err(format!("{} answered {method} {} with {s}", fleet.label(), without_query(href))),
        }
    }

    /// One exchange with the server (never elsewhere: its token goes with it), whatever its status.
    fn exchange(&self, fleet: &Fleet, method: &str, href: &str, body: &[u8]) -> Result<http::Response, String> {
        let server = target(fleet, "");
        let to = server.resolve(href).ok_or_else(|| format!("the server's link {href:?} cannot be read"))?;
        if (to.host.as_str(), to.port) != (server.host.as_str(), server.port) {
            return Err(format!("the server's link {href:?} points to another server; not followed"));
        }
        let auth = fleet.auth.header();
        let mut headers = vec![("Accept", "application/json")];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        if let Some(a) = &auth {
            headers.push(("Authorization", a));
        }
        http::send(&to, &http::request_bytes(method, &to, &headers, body), TIMEOUT)
    }

    /// The panel's view of where the client stands.
    fn show(&self, fleet: &Fleet, facts: &Facts) {
        let (state, action) = match &self.stage {
            Stage::Idle if self.unreachable.is_some() => (FleetState::Unreachable, None),
            Stage::Idle => (FleetState::Idle, None),
            Stage::Downloading(j) => (FleetState::Downloading, Some(j)),
            Stage::Ready { job, .. } => (FleetState::Waiting, Some(job)),
            Stage::Installing(j) => (FleetState::Installing, Some(j)),
            Stage::Booting(_) => (FleetState::Installing, None),
            Stage::Confirming(_) => (FleetState::Confirming, None),
        };
        let action =
            action.map(|j| (j.assignment.action.clone(), j.assignment.version.clone())).or(match &self.stage {
                Stage::Booting(p) | Stage::Confirming(p) => Some((p.action.clone(), p.version.clone())),
                _ => None,
            });
        self.board.update(|v| {
            v.state = state;
            v.server = fleet.label();
            v.controller_id = fleet.controller_id.clone();
            v.version = facts.version.clone();
            if state != FleetState::Downloading {
                v.downloaded = None;
            }
            v.action = action;
        });
    }
}

/// The server as a request target, at `path`.
fn target(fleet: &Fleet, path: &str) -> Target {
    Target {
        secure: fleet.secure,
        tls_verify: fleet.tls_verify,
        host: fleet.host.clone(),
        port: fleet.port,
        path: path.to_string(),
    }
}

/// Whether a report answered `status` will never be taken, however often it is sent: a client
/// error, but for the token (fixed by the operator), a timeout and too many requests.
fn refused_for_good(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 401 | 403 | 408 | 429)
}

fn without_query(href: &str) -> &str {
    href.split(['?', '#']).next().unwrap_or(href)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_dropped_only_when_the_server_will_never_take_it() {
        for gone in [400, 404, 409, 410, 422] {
            assert!(refused_for_good(gone), "{gone}");
        }
        for again in [200, 401, 403, 408, 429, 500, 502, 503] {
            assert!(!refused_for_good(again), "{again}");
        }
    }
}
