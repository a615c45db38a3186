//! The `telebridge` command line as a library, for its two binaries: `telebridge` (every
//! command) and `telebridge-relay` (the SRT gateway alone, without GStreamer; see
//! [`relay_cmd`]).

mod args;
mod cli;
mod discover_cmd;
mod duration;
mod exit;
mod flags;
mod meet_cmd;
pub mod relay_cmd;
mod run;

use std::process::ExitCode;

pub use args::Cli;

/// Logs to stderr (and the panel's log view): info, or warnings only with `quiet`;
/// `RUST_LOG` wins.
pub fn init_logging(quiet: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if quiet { "warn" } else { "info" }));
    // Colours only on a terminal: files, journald and the panel's log view get plain text.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| telebridge_web::logs::TeeWriter)
        .with_target(false)
        .with_ansi(tty);
    // Under systemd, journald stamps the time itself and shows no colours.
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        fmt.without_time().with_ansi(false).init();
    } else {
        fmt.init();
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> ExitCode {
    cli::run(cli)
}
