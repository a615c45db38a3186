//! `telebridge`: the command line. It parses arguments, sets up logging and signals, and hands
//! over to the appliance crate.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = telebridge::Cli::parse();
    telebridge::init_logging(cli.quiet);
    telebridge::run(cli)
}
