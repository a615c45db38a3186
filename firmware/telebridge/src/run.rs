//! `telebridge run`: the appliance daemon with its panel, LEDs, button and systemd protocol.

use std::path::PathBuf;
use std::process::ExitCode;

use telebridge_appliance::daemon::{self, DaemonOptions};
use telebridge_appliance::sd_notify;
use telebridge_config::Config;
use tracing::{error, info};

use crate::exit::{bad_input, shutdown_signal};
use crate::flags::Flags;

/// What the command line asked for.
#[derive(Debug)]
pub struct RunRequest {
    pub config: Option<PathBuf>,
    pub sim: bool,
    pub http: Option<String>,
    pub role: Option<String>,
    pub name: Option<String>,
    pub source: Option<String>,
    pub outputs: Vec<String>,
    pub input: Option<String>,
    pub start_live: bool,
}

/// The file to read: the one given, or the default path when it exists.
fn config_path(req: &RunRequest) -> Option<PathBuf> {
    match &req.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(telebridge_config::DEFAULT_PATH)).filter(|p| p.exists()),
    }
}

/// What `--sim` and the flags change in the file's configuration, and which fields a flag set
/// (so that errors name the flag). Applied at start and again at every reload.
fn overrides(req: &RunRequest, mut c: Config) -> (Config, Flags) {
    if req.sim {
        c = daemon::simulate(c);
        c.web.listen = "127.0.0.1:8080".into();
    }
    let mut f = Flags::default();
    f.string(&mut c.web.listen, req.http.as_ref(), "web.listen", "--http");
    f.string(&mut c.role, req.role.as_ref(), "role", "--role");
    f.string(&mut c.name, req.name.as_ref(), "name", "--name");
    f.string(&mut c.video.source, req.source.as_ref(), "video.source", "--source");
    f.string(&mut c.decoder.input, req.input.as_ref(), "decoder.input", "--input");
    f.outputs(&mut c, &req.outputs);
    if req.start_live {
        c.start_live = true;
    }
    (c, f)
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(req: RunRequest) -> ExitCode {
    let path = config_path(&req);
    let file = match &path {
        Some(p) => match telebridge_config::load(p) {
            Ok(c) => c,
            Err(e) => return bad_input(e),
        },
        None => Config::default(),
    };
    let (with_flags, flags) = overrides(&req, file.clone());
    let config = match with_flags.validate() {
        Ok(v) => v,
        Err(errs) => {
            for e in flags.name(&errs) {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    // GStreamer reads its plugin registry before the main loop turns (and before systemd is told
    // the daemon is ready): on a first boot it scans every plugin, seconds on a small board,
    // which the watchdog must not take for a hung main loop.
    let started = std::time::Instant::now();
    if let Err(e) = telebridge_media::init() {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    info!(ms = started.elapsed().as_millis() as u64, "GStreamer ready");
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listen = config.http_listen;
        let pair_listen = config.pair_listen;
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => l,
            Err(e) => {
                let field = flags.flag_for("web.listen").unwrap_or("web.listen");
                return bad_input(format!("{field}: cannot listen on {listen}: {e}"));
            }
        };
        let listen = listener.local_addr().unwrap_or(listen);
        let pair_listener = match pair_listen {
            Some(addr) => match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => Some(l),
                Err(e) => return bad_input(format!("web.pair_listen: cannot listen on {addr}: {e}")),
            },
            None => None,
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop_tx.send(true);
        });
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let req = std::sync::Arc::new(req);
        let r = req.clone();
        let apply_overrides: telebridge_appliance::daemon::Overrides = std::sync::Arc::new(move |c| overrides(&r, c).0);
        let pairing = std::sync::Arc::new(telebridge_web::Pairing::load(
            &config.name,
            path.as_deref().map(telebridge_web::pairing_path),
        ));
        let peer_link = pairing.link(&config);
        let options = DaemonOptions { config, peer_link };
        let (handle, daemon_task) = match daemon::start(options, stopped(stop_rx.clone())) {
            Ok(d) => d,
            Err(e) => return bad_input(e),
        };
        let heartbeat = handle.heartbeat.clone();
        let path_for_id = path.clone();
        let store = std::sync::Arc::new(telebridge_appliance::ConfigStore::new(
            path,
            file,
            apply_overrides,
            handle.commands.clone(),
        ));
        reload_on_sighup(store.clone());
        let seed = telebridge_web::Nearby::seed(path_for_id.as_deref());
        let nearby = std::sync::Arc::new(telebridge_web::Nearby::start(listen, &seed));
        let state = telebridge_web::AppState::with_pairing(handle, store, pairing, nearby.clone());
        if let Some(l) = pair_listener {
            // Pairing alone, on a port of its own (to forward from the internet instead of the panel's).
            info!(address = %l.local_addr().map_or_else(|_| "?".into(), |a| a.to_string()), "serving pairing alone");
            tokio::spawn(telebridge_web::serve(
                l,
                telebridge_web::pair_router(state.clone()),
                stopped(stop_rx.clone()),
            ));
        }
        let web = tokio::spawn(telebridge_web::serve(listener, telebridge_web::router(state), stopped(stop_rx)));
        info!(panel = %format!("http://{listen}/"), "serving the panel and API");
        println!("panel: http://{listen}/");
        tell_systemd(heartbeat);
        let _ = daemon_task.await;
        // A goodbye on the network, so the other boxes' lists drop this one at once.
        let _ = tokio::task::spawn_blocking(move || nearby.stop()).await;
        match web.await {
            Ok(Err(e)) => {
                error!(error = %e, "the panel's server failed");
                ExitCode::FAILURE
            }
            _ => ExitCode::SUCCESS,
        }
    })
}

/// Tells systemd the daemon is ready, and starts its watchdog's keep-alive when it asks for one
/// (fed only while the main loop turns: `heartbeat`).
fn tell_systemd(heartbeat: telebridge_appliance::sd_notify::Heartbeat) {
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
fn reload_on_sighup(store: std::sync::Arc<telebridge_appliance::ConfigStore>) {
    if let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                store.reload().await;
            }
        });
    }
}
