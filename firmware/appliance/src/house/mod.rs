//! The one place that wires the box (`telebridge run`): it binds the panel's ports, starts the
//! daemon, the editable configuration and its reload on SIGHUP, discovery and this box's
//! announcement, the pairing's tasks, the fleet client, the history the panel graphs, the panel itself and the
//! systemd protocol, and stops them in order. The binary parses its arguments and calls
//! [`start`]; the web crate only serves handlers over the contract's `Daemon`.

pub mod fleet;
pub mod host;
pub mod tasks;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use telebridge_config::{Config, Overrides, ValidConfig};
use telebridge_discovery::{Announcement, BoxId, Nearby, PairingState};
use telebridge_web::{AppState, ConfigStore, Pairing};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{error, info};

use crate::daemon::sd_notify::{self, Heartbeat};
use crate::daemon::{self, DaemonOptions};

/// How often this box's announcement is compared with its state (a change is announced at the
/// next turn).
const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);

/// What the box runs with.
pub struct HouseOptions {
    /// The configuration as the daemon runs it: validated, with the command line's overrides.
    pub config: ValidConfig,
    /// The file's configuration, as read (without the overrides): what the panel edits.
    pub file: Config,
    /// Where it was read from (none: kept in memory); the pairing is kept beside it.
    pub path: Option<PathBuf>,
    /// The command line's overrides, applied again at every reload and save.
    pub overrides: Overrides,
}

impl std::fmt::Debug for HouseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HouseOptions")
            .field("name", &self.config.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why the box could not start.
#[derive(Debug, thiserror::Error)]
pub enum HouseError {
    /// A port to listen on is taken or not ours.
    #[error("{field}: cannot listen on {address}: {message}")]
    Listen {
        /// The configuration's field (`web.listen`, `web.pair_listen`).
        field: &'static str,
        /// The address.
        address: SocketAddr,
        /// The system's words.
        message: String,
    },
    /// The daemon could not start (its GPIO, its media).
    #[error(transparent)]
    Daemon(#[from] crate::AppError),
}

/// The running box.
pub struct House {
    /// Where the panel answers.
    pub panel: SocketAddr,
    daemon: JoinHandle<()>,
    web: JoinHandle<std::io::Result<()>>,
    nearby: Arc<Nearby>,
}

impl std::fmt::Debug for House {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("House").field("panel", &self.panel).finish_non_exhaustive()
    }
}

/// Starts everything the box runs; it stops when `stop` completes ([`House::finished`] waits).
pub async fn start(
    options: HouseOptions,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<House, HouseError> {
    let HouseOptions { config, file, path, overrides } = options;
    let panel_listener = bind("web.listen", config.http_listen).await?;
    let panel = panel_listener.local_addr().unwrap_or(config.http_listen);
    let pair_listener = match config.pair_listen {
        Some(address) => Some(bind("web.pair_listen", address).await?),
        None => None,
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    let pairing = Arc::new(Pairing::load(&config.name, path.as_deref().map(telebridge_web::pairing_path)));
    let peer_link = pairing.link(&config);
    let (handle, daemon) = daemon::start(DaemonOptions { config, peer_link }, stopped(stop_rx.clone()))?;
    let heartbeat = handle.heartbeat.clone();
    let store = Arc::new(ConfigStore::new(path.clone(), file, overrides, handle.commands.clone()));
    reload_on_sighup(store.clone());
    let nearby = Arc::new(Nearby::start(panel, &Nearby::seed(path.as_deref())));
    let state = AppState::with_pairing(handle, store, Arc::new(host::RootHelper), pairing, nearby.clone());
    tasks::spawn(&state);
    fleet::spawn(&state, stop_rx.clone());
    keep_announcement(&state, nearby.clone());
    if let Some(l) = pair_listener {
        // Pairing alone, on a port of its own (to forward from the internet instead of the panel's).
        info!(address = %l.local_addr().map_or_else(|_| "?".into(), |a| a.to_string()), "serving pairing alone");
        tokio::spawn(telebridge_web::serve(l, telebridge_web::pair_router(state.clone()), stopped(stop_rx.clone())));
    }
    let web = tokio::spawn(telebridge_web::serve(panel_listener, telebridge_web::router(state), stopped(stop_rx)));
    info!(panel = %format!("http://{panel}/"), "serving the panel and API");
    tell_systemd(heartbeat);
    Ok(House { panel, daemon, web, nearby })
}

impl House {
    /// Waits until the box has stopped: the daemon, then this box's goodbye on the network, then
    /// the panel. `Err` when the panel's server failed.
    pub async fn finished(self) -> std::io::Result<()> {
        let _ = self.daemon.await;
        // A goodbye on the network, so the other boxes' lists drop this one at once.
        let nearby = self.nearby;
        let _ = tokio::task::spawn_blocking(move || nearby.stop()).await;
        match self.web.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }
}

async fn bind(field: &'static str, address: SocketAddr) -> Result<TcpListener, HouseError> {
    TcpListener::bind(address).await.map_err(|e| HouseError::Listen { field, address, message: e.to_string() })
}

/// Completes when the box is asked to stop.
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// What this box announces now: its running configuration (`None` when it does not validate),
/// its pairing state, its id and its panel's port; `None` when `web.announce` is off.
fn announcement(
    config: Option<&ValidConfig>,
    pairing: PairingState,
    id: &BoxId,
    panel_port: u16,
) -> Option<Announcement> {
    let config = config?;
    config.raw.web.announce.then(|| Announcement {
        id: id.clone(),
        name: config.name.clone(),
        role: config.role,
        pairing,
        panel_port,
    })
}

/// Keeps this box's announcement up to date while the box runs (when discovery runs).
fn keep_announcement(state: &AppState, nearby: Arc<Nearby>) {
    if !nearby.runs() {
        return;
    }
    let state = state.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(ANNOUNCE_EVERY);
        loop {
            tick.tick().await;
            let config = state.store.running();
            let what = announcement(config.as_ref(), state.pairing.announced_state(), nearby.id(), nearby.panel_port());
            let nearby = nearby.clone();
            // A change says goodbye first, which waits for mdns-sd's thread.
            let _ = tokio::task::spawn_blocking(move || nearby.announce(what.as_ref())).await;
        }
    });
}

/// Tells systemd the box is ready, and starts its watchdog's keep-alive when it asks for one
/// (fed only while the main loop turns: `heartbeat`).
fn tell_systemd(heartbeat: Heartbeat) {
    match sd_notify::notify("READY=1") {
        Ok(true) => info!("told systemd we are ready"),
        Ok(false) => {}
        Err(e) => error!(error = %e, "cannot notify systemd"),
    }
    if let Some(interval) = sd_notify::watchdog_interval() {
        info!(interval_ms = interval.as_millis() as u64, "systemd watchdog enabled");
        if let Err(e) = sd_notify::spawn_watchdog(interval, heartbeat) {
            error!(error = %e, "cannot start the watchdog thread");
        }
    }
}

/// SIGHUP (systemctl reload): read the file again, restart only what changed.
fn reload_on_sighup(store: Arc<ConfigStore>) {
    if let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                store.reload().await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_says_the_running_name_role_pairing_and_port_and_nothing_when_off() {
        let mut file = Config { name: "studio-a".into(), ..Config::default() };
        let id = BoxId::from_seed("machine /etc/telebridge.toml");
        let on = file.validate().expect("valid");
        let a = announcement(Some(&on), PairingState::Open, &id, 8080).expect("announced by default");
        assert_eq!((a.name.as_str(), a.role, a.pairing, a.panel_port), ("studio-a", on.role, PairingState::Open, 8080));
        assert_eq!(a.id, id);
        file.web.announce = false;
        let off = file.validate().expect("valid");
        assert!(announcement(Some(&off), PairingState::Open, &id, 8080).is_none(), "web.announce off");
        assert!(announcement(None, PairingState::Open, &id, 8080).is_none(), "a configuration that does not run");
    }
}
