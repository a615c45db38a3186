//! `telebridge run`: the appliance daemon with its panel, LEDs, button and systemd protocol.

use std::path::PathBuf;
use std::process::ExitCode;

use telebridge_appliance::daemon::{self, DaemonOptions};
use telebridge_appliance::sd_notify;
use telebridge_config::{Config, OutputConfig};
use tracing::{error, info};

use crate::cli::bad_input;

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

/// The configuration to start with: the file (given, or the default path when it exists, or
/// the defaults), then `--sim`, then the flags. Errors name the flag when a flag set the field.
/// Which configuration fields a flag set: (field, flag).
type FlagsUsed = Vec<(&'static str, &'static str)>;

fn configuration(req: &RunRequest) -> Result<(Config, Option<PathBuf>, FlagsUsed), String> {
    let path = match &req.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(telebridge_config::DEFAULT_PATH)).filter(|p| p.exists()),
    };
    let mut c = match &path {
        Some(p) => telebridge_config::load(p).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if req.sim {
        c = daemon::simulate(c);
        c.web.listen = "127.0.0.1:8080".into();
    }
    let mut flags = Vec::new();
    let mut set = |target: &mut String, value: &Option<String>, field: &'static str, flag: &'static str| {
        if let Some(v) = value {
            *target = v.clone();
            flags.push((field, flag));
        }
    };
    set(&mut c.web.listen, &req.http, "web.listen", "--http");
    set(&mut c.role, &req.role, "role", "--role");
    set(&mut c.name, &req.name, "name", "--name");
    set(&mut c.video.source, &req.source, "video.source", "--source");
    set(&mut c.decoder.input, &req.input, "decoder.input", "--input");
    if !req.outputs.is_empty() {
        c.outputs = req.outputs.iter().map(OutputConfig::new).collect();
        flags.push(("outputs", "--output"));
    }
    if req.start_live {
        c.start_live = true;
    }
    Ok((c, path, flags))
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(req: RunRequest) -> ExitCode {
    let (raw, path, flags) = match configuration(&req) {
        Ok(c) => c,
        Err(e) => return bad_input(e),
    };
    let config = match raw.validate() {
        Ok(v) => v,
        Err(errs) => {
            for e in crate::cli::name_flags(&errs, &flags) {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listen = config.http_listen;
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => l,
            Err(e) => {
                let field = if flags.iter().any(|(f, _)| *f == "web.listen") { "--http" } else { "web.listen" };
                return bad_input(format!("{field}: cannot listen on {listen}: {e}"));
            }
        };
        let listen = listener.local_addr().unwrap_or(listen);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            crate::cli::shutdown_signal().await;
            let _ = stop_tx.send(true);
        });
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let options = DaemonOptions { config, config_path: path, sim: req.sim };
        let (handle, daemon_task) = match daemon::start(options, stopped(stop_rx.clone())) {
            Ok(d) => d,
            Err(e) => return bad_input(e),
        };
        let heartbeat = handle.heartbeat.clone();
        let web = tokio::spawn(telebridge_web::serve(listener, telebridge_web::router(handle), stopped(stop_rx)));
        info!(panel = %format!("http://{listen}/"), "serving the panel and API");
        println!("panel: http://{listen}/");
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
        let _ = daemon_task.await;
        match web.await {
            Ok(Err(e)) => {
                error!(error = %e, "the panel's server failed");
                ExitCode::FAILURE
            }
            _ => ExitCode::SUCCESS,
        }
    })
}
