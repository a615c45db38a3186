//! `telebridge`: the command line. It parses arguments, sets up logging and signals, and hands
//! over to the appliance crate.

mod args;
mod cli;
mod duration;
mod exit;
mod flags;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = args::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if args.quiet { "warn" } else { "info" }));
    // Colours only on a terminal: files, journald and the panel's log view get plain text.
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| telebridge_appliance::logs::TeeWriter)
        .with_target(false)
        .with_ansi(tty);
    // Under systemd, journald stamps the time itself and shows no colours.
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        fmt.without_time().with_ansi(false).init();
    } else {
        fmt.init();
    }
    cli::run(args)
}
