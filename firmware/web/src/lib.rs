//! The HTTP side of the box: the REST API over the appliance daemon (and the panel). Every
//! request that changes something needs a session and passes a CSRF check; until the first
//! password is set, only the setup endpoints answer. Under `--sim` it also shows the simulated
//! GPIO and presses its button (the simulated hardware needs no login, as a real button does not).

pub mod auth;
pub mod backup;
pub mod history;
pub mod metrics;
pub mod server;

mod account;
mod body;
mod config_api;
pub mod config_store;
pub mod daemon;
pub mod device;
mod error;
mod live;
pub mod logs;
mod middleware;
pub mod nearby;
pub mod pair_client;
pub mod pairing;
mod panel;
pub mod reach;
mod sim;
mod update;
pub mod whep;

use std::sync::Arc;

use axum::middleware as mw;
use axum::routing::{get, post};
use axum::Router;
use telebridge_contract::daemon::DaemonCommand;
use telebridge_contract::host::Host;
use telebridge_contract::nearby::NearbyBoxes;

pub use crate::config_store::{ConfigStore, StoreError};
use tracing::warn;

use crate::auth::Auth;
pub use crate::daemon::Daemon;
pub use crate::error::ApiError;
use crate::history::History;
pub use crate::nearby::NotLooking;
pub use crate::pairing::Pairing;
pub use crate::panel::{panel_size, OPENAPI};
pub use server::serve;

/// Everything the handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The daemon.
    pub daemon: Arc<dyn Daemon>,
    /// The editable configuration.
    pub store: Arc<ConfigStore>,
    /// Sessions, attempts, setup code.
    pub auth: Arc<Auth>,
    /// The one thread that checks and hashes passwords.
    pub checker: auth::Checker,
    /// One row a second for 24 h.
    pub history: Arc<History>,
    /// The pairing with another box.
    pub pairing: Arc<Pairing>,
    /// The boxes on the local network.
    pub nearby: Arc<dyn NearbyBoxes>,
    /// The machine under the daemon: reboot, updates, the setup code file.
    pub host: Arc<dyn Host>,
    /// Where the box's devices are read (`/`; a made-up tree in tests).
    pub devices_root: Arc<std::path::PathBuf>,
    /// Where the box stands with its fleet server (written by the appliance's fleet client).
    pub fleet: Arc<telebridge_contract::fleet::FleetBoard>,
}

impl AppState {
    /// State for a daemon; when no password is set yet, makes the one-time setup code, logs it
    /// and writes it to `web.setup_code_file`. Starts nothing: what runs beside the requests is the box's wiring's (`telebridge_appliance::house`).
    pub fn new(daemon: impl Daemon, store: Arc<ConfigStore>, host: Arc<dyn Host>) -> Self {
        let file = store.file();
        let pairing = Pairing::load(&file.name, store.path().map(pairing_path));
        Self::with_pairing(daemon, store, host, Arc::new(pairing), Arc::new(NotLooking("not started".into())))
    }

    /// As [`AppState::new`], with the pairing already read (the daemon started with its link)
    /// and discovery started.
    pub fn with_pairing(
        daemon: impl Daemon,
        store: Arc<ConfigStore>,
        host: Arc<dyn Host>,
        pairing: Arc<Pairing>,
        nearby: Arc<dyn NearbyBoxes>,
    ) -> Self {
        let daemon: Arc<dyn Daemon> = Arc::new(daemon);
        let file = store.file();
        let code = file.web.password_hash.is_empty().then(auth::new_setup_code);
        if let Some(code) = &code {
            // The one secret that is logged, by design: it is how the owner gets in the first time.
            warn!(setup_code = %code, "first start: no password yet; open the panel and enter this setup code");
            host.publish_setup_code(&file.web.setup_code_file, Some(code));
        }
        if let Some(code) = &code {
            let text = format!("Setup code: {code}\nOpen the panel and enter it to choose a password.");
            let _ = daemon.commands().try_send(DaemonCommand::SetupText(Some(text)));
        }
        if code.is_none() {
            host.publish_setup_code(&file.web.setup_code_file, None);
        }
        Self {
            daemon,
            store,
            auth: Arc::new(Auth::new(code)),
            checker: auth::Checker::start(),
            history: Arc::new(History::default()),
            pairing,
            nearby,
            host,
            devices_root: Arc::new("/".into()),
            fleet: Arc::default(),
        }
    }
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    let panel = panel::PANEL.iter().fold(Router::new(), |r, (path, _, _)| r.route(path, get(panel::panel_file)));
    let open = panel
        .route("/healthz", get(live::healthz))
        .route("/api/setup", get(account::setup_status).post(account::setup))
        .route("/api/session", post(account::login).delete(account::logout))
        .route("/metrics", get(live::metrics_handler))
        .route("/api/openapi.json", get(panel::openapi))
        .route("/api/pair/hello", post(pairing::hello))
        .route("/api/pair/confirm", post(pairing::confirm))
        // A session or the read-only token (a monitor wall): checked by the handlers.
        .route("/api/whep/{feed}", post(whep::offer))
        .route("/api/whep/{feed}/{id}", axum::routing::delete(whep::end));
    let protected = Router::new()
        .route("/api/status", get(live::status))
        .route("/api/config", get(config_api::get_config).put(config_api::put_config))
        .route("/api/config/backup", get(config_api::backup_config))
        .route("/api/config/restore", post(config_api::restore_config))
        .route("/api/live", post(live::live))
        .route("/api/tally", post(live::tally))
        .route("/api/talk", post(live::talk))
        .route("/api/events", get(live::events))
        .route("/api/stats.csv", get(live::stats_csv))
        .route("/api/logs", get(live::logs))
        .route("/api/preview.jpg", get(live::preview))
        .route("/api/preview-received.jpg", get(live::preview_received))
        .route("/api/password", post(account::change_password))
        .route("/api/reboot", post(update::reboot))
        .route("/api/update", get(update::status).post(update::upload))
        .route("/api/fleet", get(update::fleet))
        .route("/api/pairing", get(pairing::get_pairing).delete(pairing::unpair))
        .route("/api/pairing/open", post(pairing::open))
        .route("/api/pairing/join", post(pairing::join))
        .route("/api/discovered", get(nearby::discovered))
        .route("/api/devices", get(config_api::devices))
        .route_layer(mw::from_fn_with_state(state.clone(), middleware::require_session));
    let mut r = open.merge(protected);
    if state.daemon.sim().is_some() {
        r = r
            .route("/api/sim/gpio", get(sim::sim_gpio))
            .route("/api/sim/button", post(sim::sim_button))
            .route("/api/sim/tally-in", post(sim::sim_tally_in))
            .route("/api/sim/stall", post(sim::sim_stall))
            .route("/api/sim/signal", post(sim::sim_signal));
    }
    r.layer(mw::from_fn_with_state(state.clone(), middleware::csrf))
        .layer(mw::from_fn(middleware::no_store))
        .with_state(state)
}

/// The routes of the pairing port (`web.pair_listen`): another box's hello and confirmation,
/// and nothing of the panel (no login, no settings), so that pairing across sites needs only this
/// port forwarded, never the panel's.
pub fn pair_router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(live::healthz))
        .route("/api/pair/hello", post(pairing::hello))
        .route("/api/pair/confirm", post(pairing::confirm))
        .layer(mw::from_fn_with_state(state.clone(), middleware::csrf))
        .layer(mw::from_fn(middleware::no_store))
        .with_state(state)
}

/// Where a box keeps its pairing: beside its configuration file.
pub fn pairing_path(config: &std::path::Path) -> std::path::PathBuf {
    config.with_file_name("pairing.toml")
}

/// The header a non-browser client sends instead of an `Origin`.
pub const CSRF_HEADER: &str = "x-telebridge-csrf";

/// The header that carries a backup's password (never a query string, which gets logged).
pub const BACKUP_PASSWORD_HEADER: &str = "x-backup-password";
