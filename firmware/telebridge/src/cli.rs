//! Command-line interface. Exit codes: 0 done, 1 failed while running, 2 bad input (the one
//! line printed names what to fix).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use telebridge_appliance::RunOptions;
use telebridge_config::Config;

use crate::args::{BridgeArgs, Cli, Command, ConfigCommand, DecodeArgs, EncodeArgs, MeasureArgs, RunArgs, StatsFormat};
use crate::exit::{bad_input, print_json, print_summary, run_async, shutdown_signal};
use crate::flags::Flags;

/// Runs the parsed command.
pub fn run(cli: Cli) -> ExitCode {
    let uses_srt = !matches!(cli.command, Command::Config(_) | Command::Encoders { .. } | Command::Man);
    if uses_srt {
        // libsrt's statistics are read through structures laid out for one version: refuse
        // another in words rather than read garbage (issue 36, finding 8).
        if let Err(e) = telebridge_srt::check_library() {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        tracing::info!(libsrt = %telebridge_srt::library::describe(), "libsrt");
    }
    match cli.command {
        Command::Config(ConfigCommand::Default) => {
            print!("{}", telebridge_config::EXAMPLE_TOML);
            ExitCode::SUCCESS
        }
        Command::Config(ConfigCommand::Check { file }) => config_check(&file),
        Command::Config(ConfigCommand::Apply { file, to }) => config_apply(&file, &to),
        Command::Encoders { config } => encoders(config),
        Command::Man => man(),
        Command::Encode(args) => encode(*args),
        Command::Decode(args) => decode(args),
        Command::Bridge(args) => bridge(*args),
        Command::Measure(args) => measure(args),
        Command::Relay(args) => crate::relay_cmd::relay(args),
        Command::Discover(args) => crate::discover_cmd::discover(args),
        Command::Run(args) => crate::run::run(args.into()),
    }
}

/// telebridge(1): the top command with each command's words, from clap's own definitions.
fn man() -> ExitCode {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut out = Vec::new();
    let mut page = |c: &clap::Command, top: bool| -> std::io::Result<()> {
        let man = clap_mangen::Man::new(c.clone());
        if top {
            // Not `render`: its list of subcommands names pages (telebridge-run(1), ...) that do
            // not exist; each command is a section of this one page instead.
            man.render_title(&mut out)?;
            man.render_name_section(&mut out)?;
            man.render_synopsis_section(&mut out)?;
            man.render_description_section(&mut out)?;
            man.render_options_section(&mut out)
        } else {
            // Each command as a section of the one page: its name, words and options.
            out.extend_from_slice(format!(".SH \"TELEBRIDGE {}\"\n", c.get_name().to_uppercase()).as_bytes());
            man.render_description_section(&mut out)?;
            man.render_options_section(&mut out)
        }
    };
    let mut result = page(&cmd, true);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        result = result.and_then(|()| page(sub, false));
    }
    result = result.and_then(|()| clap_mangen::Man::new(cmd.clone()).render_version_section(&mut out));
    match result {
        Ok(()) => {
            use std::io::Write;
            let _ = std::io::stdout().write_all(&out);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write the manual page: {e}");
            ExitCode::FAILURE
        }
    }
}

fn config_check(file: &std::path::Path) -> ExitCode {
    let config = match telebridge_config::load(file) {
        Ok(c) => c,
        Err(e @ telebridge_config::LoadError::Parse { .. }) => {
            // Every wrong type and unknown field, a line each, as the validator's problems are.
            eprintln!("{e}");
            return ExitCode::from(2);
        }
        Err(e) => return bad_input(e),
    };
    match config.validate() {
        Ok(_) => {
            println!("{}: ok", file.display());
            ExitCode::SUCCESS
        }
        Err(errs) => {
            for e in &errs.0 {
                eprintln!("{}: {e}", file.display());
            }
            ExitCode::from(2)
        }
    }
}

fn config_apply(file: &std::path::Path, to: &std::path::Path) -> ExitCode {
    let overlay = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => return bad_input(format!("cannot read {}: {e}", file.display())),
    };
    let base = match std::fs::read_to_string(to) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return bad_input(format!("cannot read {}: {e}", to.display())),
    };
    let merged = match telebridge_config::overlay(&base, &overlay) {
        Ok(c) => c,
        Err(errs) => {
            for e in &errs {
                eprintln!("{}: {e}", file.display());
            }
            return ExitCode::from(2);
        }
    };
    if let Err(errs) = merged.clone().validate() {
        for e in &errs.0 {
            eprintln!("{}: {e}", file.display());
        }
        return ExitCode::from(2);
    }
    match telebridge_config::save_atomic(to, &merged) {
        Ok(()) => {
            println!("{}: took the settings of {}", to.display(), file.display());
            ExitCode::SUCCESS
        }
        Err(e) => bad_input(format!("cannot write {}: {e}", to.display())),
    }
}

fn encoders(config: Option<PathBuf>) -> ExitCode {
    let config = match load_or_default(config.as_deref()).and_then(|c| c.validate().map_err(|e| e.to_string())) {
        Ok(c) => c,
        Err(e) => return bad_input(e),
    };
    if let Err(e) = telebridge_media::init() {
        return bad_input(e);
    }
    let platform = telebridge_media::Platform::detect();
    println!("platform: {}", platform.describe());
    for kind in [
        telebridge_media::EncoderKind::V4l2h264enc,
        telebridge_media::EncoderKind::X264enc,
        telebridge_media::EncoderKind::Openh264enc,
    ] {
        let state = if telebridge_media::has_element(kind.element()) { "installed" } else { "not installed" };
        println!("{:<12} {state}", kind.element());
    }
    match telebridge_appliance::select_encoder(&config) {
        Ok(choice) => {
            println!("chosen: {} ({})", choice.kind, choice.reason);
            ExitCode::SUCCESS
        }
        Err(e) => bad_input(e),
    }
}

fn load_or_default(path: Option<&std::path::Path>) -> Result<Config, String> {
    match path {
        Some(p) => telebridge_config::load(p).map_err(|e| e.to_string()),
        None => Ok(Config::default()),
    }
}

/// The `encode` flags over the file's configuration.
fn encode_flags(config: &mut Config, a: &EncodeArgs) -> Result<Flags, String> {
    let mut f = Flags::default();
    f.string(&mut config.video.source, a.source.as_ref(), "video.source", "--source");
    f.size(config, a.size.as_ref())?;
    f.number(&mut config.video.fps, a.fps, "video.fps", "--fps");
    f.number(&mut config.video.bitrate_kbps, a.bitrate_kbps, "video.bitrate_kbps", "--bitrate-kbps");
    f.string(&mut config.video.bitrate_mode, a.bitrate_mode.as_ref(), "video.bitrate_mode", "--bitrate-mode");
    f.number(&mut config.video.min_bitrate_kbps, a.min_bitrate_kbps, "video.min_bitrate_kbps", "--min-bitrate-kbps");
    f.number(&mut config.video.keyframe_ms, a.keyframe_ms, "video.keyframe_ms", "--keyframe-ms");
    f.string(&mut config.video.encoder, a.encoder.as_ref(), "video.encoder", "--encoder");
    f.string(&mut config.video.x264_preset, a.x264_preset.as_ref(), "video.x264_preset", "--x264-preset");
    f.string(&mut config.audio.codec, a.audio.as_ref(), "audio.codec", "--audio");
    f.string(&mut config.audio.source, a.audio_source.as_ref(), "audio.source", "--audio-source");
    f.outputs(config, &a.outputs);
    Ok(f)
}

fn encode(args: EncodeArgs) -> ExitCode {
    let mut config = match load_or_default(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return bad_input(e),
    };
    let flags = match encode_flags(&mut config, &args) {
        Ok(f) => f,
        Err(e) => return bad_input(e),
    };
    let Some(valid) = validate(&config, &flags) else { return ExitCode::from(2) };
    if valid.outputs.is_empty() {
        return bad_input(
            "no output: give --output srt://HOST:PORT or srt://:PORT?mode=listener (or outputs in --config)",
        );
    }
    let json = args.stats == Some(StatsFormat::Json);
    let on_sample: Option<telebridge_appliance::SampleCallback> = if json { Some(Arc::new(print_json)) } else { None };
    let options = RunOptions { duration: args.duration, on_sample, ..Default::default() };
    run_async(telebridge_appliance::run_encoder(valid, options, shutdown_signal()), |summary| {
        print_summary(json, &summary)
    })
}

/// The configuration validated, or `None` after printing every problem, each naming the flag
/// that set the field.
fn validate(config: &Config, flags: &Flags) -> Option<telebridge_config::ValidConfig> {
    match config.validate() {
        Ok(v) => Some(v),
        Err(errs) => {
            for e in flags.name(&errs) {
                eprintln!("error: {e}");
            }
            None
        }
    }
}

fn bridge(args: BridgeArgs) -> ExitCode {
    let mut config = match load_or_default(args.encode.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return bad_input(e),
    };
    let mut flags = match encode_flags(&mut config, &args.encode) {
        Ok(f) => f,
        Err(e) => return bad_input(e),
    };
    config.role = "bridge".into();
    flags.string(&mut config.bridge.link, Some(&args.link), "bridge.link", "--link");
    flags.string(&mut config.decoder.sink, Some(&args.sink), "decoder.sink", "--sink");
    flags.string(&mut config.bridge.record, args.record.as_ref(), "bridge.record", "--record");
    flags.string(&mut config.name, args.name.as_ref(), "name", "--name");
    let Some(valid) = validate(&config, &flags) else { return ExitCode::from(2) };
    let Some(link) = valid.bridge.link.clone() else { return bad_input("--link: give the connection's srt:// URL") };
    let json = args.encode.stats == Some(StatsFormat::Json);
    let on_sample: Option<telebridge_appliance::BridgeSampleCallback> =
        if json { Some(Arc::new(print_json)) } else { None };
    let options = telebridge_appliance::BridgeOptions {
        link: Ok(telebridge_pairing::PeerRoute::only(link)),
        on_control: None,
        duration: args.encode.duration,
        on_sample,
        commands: None,
        preview: None,
        received_preview: None,
        levels: None,
        monitor: None,
        signal_gate: None,
        on_air: None,
        talk: None,
    };
    run_async(telebridge_appliance::run_bridge(valid, options, shutdown_signal()), |summary| {
        print_summary(json, &summary)
    })
}

impl From<RunArgs> for crate::run::RunRequest {
    fn from(a: RunArgs) -> Self {
        crate::run::RunRequest {
            config: a.config,
            sim: a.sim,
            http: a.http,
            role: a.role,
            name: a.name,
            source: a.source,
            outputs: a.outputs,
            input: a.input,
            start_live: a.start_live,
        }
    }
}

fn measure(args: MeasureArgs) -> ExitCode {
    let mut sizes = Vec::new();
    for s in args.sizes.split(',') {
        match s.split_once('x').and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?))) {
            Some(wh) => sizes.push(wh),
            None => return bad_input(format!("--sizes: {s:?} is not WIDTHxHEIGHT")),
        }
    }
    let mut bitrates_kbps = Vec::new();
    for b in args.bitrates_kbps.split(',') {
        match b.parse() {
            Ok(v) => bitrates_kbps.push(v),
            Err(_) => return bad_input(format!("--bitrates-kbps: {b:?} is not a number")),
        }
    }
    let link = match &args.link {
        Some(name) => {
            match linkemu::Profiles::load_or_shipped(args.profiles.as_deref()).and_then(|p| p.get(name).cloned()) {
                Ok(p) => Some(p),
                Err(e) => return bad_input(format!("--link: {e}")),
            }
        }
        None => None,
    };
    let plan = telebridge_appliance::measure::MeasurePlan {
        sizes,
        bitrates_kbps,
        srt_latency_ms: args.latency_ms,
        seconds: args.seconds,
        fps: args.fps,
        link,
        x264_preset: args.x264_preset,
        audio: args.audio,
    };
    let json = args.json;
    run_async(telebridge_appliance::measure::measure(&plan), |rows| {
        if json {
            for r in &rows {
                if let Ok(line) = serde_json::to_string(r) {
                    println!("{line}");
                }
            }
        } else {
            print!("{}", telebridge_appliance::measure::table(&rows));
        }
    })
}

fn decode(args: DecodeArgs) -> ExitCode {
    let input = match telebridge_config::SrtUrl::parse(&args.input) {
        Ok(u) => u,
        Err(e) => return bad_input(format!("--input: {e}")),
    };
    let sink = match telebridge_config::DecoderSink::parse(&args.sink) {
        Ok(s) => telebridge_media::display::SinkKind::from_config(&s),
        Err(e) => return bad_input(format!("--sink: {e}")),
    };
    let audio = match telebridge_config::AudioOut::parse(&args.audio_out) {
        Ok(a) => a,
        Err(e) => return bad_input(format!("--audio-out: {e}")),
    };
    let loop_to = match args.loop_to.as_deref().map(telebridge_config::SrtUrl::parse).transpose() {
        Ok(u) => u,
        Err(e) => return bad_input(format!("--loop-to: {e}")),
    };
    let json = args.stats == Some(StatsFormat::Json);
    let on_sample: Option<telebridge_appliance::DecodeSampleCallback> =
        if json { Some(Arc::new(print_json)) } else { None };
    let options = telebridge_appliance::DecodeOptions {
        name: args.name,
        input,
        sink,
        audio,
        duration: args.duration,
        on_sample,
        loop_to,
        peer: None,
        echo: None,
        peer_name: None,
        preview: None,
        levels: None,
        monitor: None,
        on_air: None,
    };
    let bond = match args.bond_listen.map(|l| telebridge_appliance::roles::relay::start_bond(l, &options.input)) {
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.exit_code());
        }
        None => None,
    };
    let code = run_async(telebridge_appliance::run_decoder(options, shutdown_signal()), |summary| {
        print_summary(json, &summary)
    });
    if let Some(b) = bond {
        b.stop();
    }
    code
}
