//! `telebridge`: the command line. It parses arguments, sets up logging and signals, and hands
//! over to the appliance crate.

mod cli;
mod duration;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(if args.quiet { "warn" } else { "info" }));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    cli::run(args)
}
