//! `telebridge-relay`: the SRT gateway of `telebridge relay`, same code and command line, in a
//! binary that links neither GStreamer nor GLib (SRT and recordings need neither). `telebridge
//! relay` hands over to it by itself when no output is RTMP.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = telebridge::Cli::parse();
    telebridge::init_logging(cli.quiet);
    telebridge::relay_cmd::lean(cli)
}
