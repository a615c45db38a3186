//! `telebridge relay`: an SRT gateway. SRT to SRT and to recordings needs neither GStreamer nor
//! GLib, whose libraries alone cost a process about 3.4 MB of memory before doing anything;
//! so when no output is RTMP, `telebridge relay` hands over (exec, same process, same
//! arguments) to `telebridge-relay`, a binary built from the same code that does not link them.
//! With an RTMP output, or without that binary next to it, it relays itself.

use std::process::ExitCode;
use std::sync::Arc;

use telebridge_appliance::outputs::{needs_gstreamer, start_any, start_without_gstreamer, OutputStarter};
use telebridge_config::{Config, OutputSpec};

use crate::args::{Cli, Command, RelayArgs, StatsFormat};
use crate::exit::{bad_input, print_json, print_summary, run_async, shutdown_signal};
use crate::flags::Flags;

/// The lean binary's name, looked for next to the running one.
pub const LEAN_BINARY: &str = "telebridge-relay";

/// `telebridge relay`: hands over to [`LEAN_BINARY`] when it can, else relays here.
pub(crate) fn relay(args: RelayArgs) -> ExitCode {
    if let Some(ports) = &args.meet {
        return crate::meet_cmd::meet(ports);
    }
    let Some((input, outputs)) = parse(&args) else { return ExitCode::from(2) };
    let gstreamer = outputs.iter().any(|(_, spec)| needs_gstreamer(spec));
    if !gstreamer && std::env::var_os("TELEBRIDGE_RELAY_IN_PROCESS").is_none() {
        if let Some(lean) = std::env::current_exe().ok().and_then(|p| Some(p.parent()?.join(LEAN_BINARY))) {
            if lean.is_file() {
                use std::os::unix::process::CommandExt;
                // Only returns if the exec failed; then relay here.
                let err = std::process::Command::new(&lean).args(std::env::args_os().skip(1)).exec();
                tracing::debug!(error = %err, binary = %lean.display(), "cannot hand over to the lean relay");
            }
        }
    }
    run(&args, input, outputs, start_any)
}

/// `telebridge-relay`: the same command line as `telebridge relay`, without GStreamer.
pub fn lean(cli: Cli) -> ExitCode {
    let Command::Relay(args) = cli.command else {
        return bad_input(format!("{LEAN_BINARY} only relays: run `{LEAN_BINARY} relay --input ... --output ...`"));
    };
    if let Err(e) = telebridge_srt::check_library() {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    tracing::info!(libsrt = %telebridge_srt::library::describe(), "libsrt");
    if let Some(ports) = &args.meet {
        return crate::meet_cmd::meet(ports);
    }
    let Some((input, outputs)) = parse(&args) else { return ExitCode::from(2) };
    run(&args, input, outputs, start_without_gstreamer)
}

type Outputs = Vec<(String, OutputSpec)>;

/// The input URL and the validated outputs; `None` after printing what is wrong.
fn parse(args: &RelayArgs) -> Option<(telebridge_config::SrtUrl, Outputs)> {
    let input = match telebridge_config::SrtUrl::parse(args.input.as_deref().unwrap_or_default()) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("error: --input: {e}");
            return None;
        }
    };
    // The outputs go through the same validation as the configuration file's.
    let mut config = Config::default();
    let mut flags = Flags::default();
    flags.outputs(&mut config, &args.outputs);
    match config.validate() {
        Ok(v) => Some((input, v.outputs)),
        Err(errs) => {
            for e in flags.name(&errs) {
                eprintln!("error: {e}");
            }
            None
        }
    }
}

fn run(args: &RelayArgs, input: telebridge_config::SrtUrl, outputs: Outputs, start_output: OutputStarter) -> ExitCode {
    let json = args.stats == Some(StatsFormat::Json);
    let on_sample: Option<telebridge_appliance::roles::relay::RelaySampleCallback> =
        if json { Some(Arc::new(print_json)) } else { None };
    let options = telebridge_appliance::RelayOptions {
        input,
        outputs,
        queue_bytes: (args.max_bitrate_kbps * 1000 / 8).max(256 * 1024),
        duration: args.duration,
        bond_listen: args.bond_listen,
        on_sample,
        start_output,
    };
    run_async(telebridge_appliance::run_relay(options, shutdown_signal()), |summary| print_summary(json, &summary))
}
