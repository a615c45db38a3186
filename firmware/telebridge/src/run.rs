//! `telebridge run`: the appliance daemon with its panel, LEDs, button and systemd protocol.

use std::path::PathBuf;
use std::process::ExitCode;

use telebridge_appliance::daemon;
use telebridge_appliance::house::{self, HouseError, HouseOptions};
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
    let options = HouseOptions { config, file, path, overrides: std::sync::Arc::new(move |c| overrides(&req, c).0) };
    runtime.block_on(async move {
        let house = match house::start(options, shutdown_signal()).await {
            Ok(h) => h,
            Err(HouseError::Listen { field, address, message }) => {
                let field = flags.flag_for(field).unwrap_or(field);
                return bad_input(format!("{field}: cannot listen on {address}: {message}"));
            }
            Err(e) => return bad_input(e),
        };
        println!("panel: http://{}/", house.panel);
        match house.finished().await {
            Err(e) => {
                error!(error = %e, "the panel's server failed");
                ExitCode::FAILURE
            }
            Ok(()) => ExitCode::SUCCESS,
        }
    })
}
