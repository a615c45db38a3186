//! Command-line interface. Exit codes: 0 done, 1 failed while running, 2 bad input (the one
//! line printed names what to fix).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use telebridge_appliance::RunOptions;
use telebridge_config::Config;

use crate::exit::{bad_input, print_json, print_summary, run_async, shutdown_signal};
use crate::flags::Flags;

/// Telebridge: a Raspberry Pi as a broadcast-grade SRT video link.
#[derive(Debug, Parser)]
#[command(name = "telebridge", version, about)]
pub struct Cli {
    /// Only warnings and errors on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The appliance: run the configured role (encoder or decoder), serve the panel and API, drive
    /// the status LEDs and the go-live button, and talk to systemd (READY, WATCHDOG).
    Run(RunArgs),
    /// Capture, encode to H.264 and send MPEG-TS over SRT to every --output at once.
    Encode(Box<EncodeArgs>),
    /// Receive SRT, decode, and show it (HDMI, a window, a file, or nowhere), with a slate when
    /// nothing arrives and glass-to-glass latency when the sender burns in timecodes.
    Decode(DecodeArgs),
    /// Receive one SRT stream and pass it on untouched to every --output at once (SRT, RTMP(S),
    /// recording): an SRT gateway.
    Relay(RelayArgs),
    /// Our encoder into our decoder on this machine (optionally through an emulated link): a
    /// table of configured SRT latency against measured glass-to-glass latency.
    Measure(MeasureArgs),
    /// Check or print the configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Show which H.264 encoder this machine would use, and why.
    Encoders {
        /// Configuration file whose video.encoder preference applies.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Report every problem in a configuration file, each naming the field, value and what is allowed.
    Check {
        /// The file to check.
        file: PathBuf,
    },
    /// Print the default configuration as a commented TOML file.
    Default,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StatsFormat {
    /// One JSON object a second on stdout, and a summary at exit.
    Json,
}

#[derive(Debug, Args)]
struct MeasureArgs {
    /// A link profile to go through (from --profiles), e.g. metro-17ms or 4g-fixed.
    #[arg(long)]
    link: Option<String>,
    /// The link profiles file.
    #[arg(long, default_value = "bench/links.toml")]
    profiles: PathBuf,
    /// Sizes, comma-separated.
    #[arg(long, default_value = "1280x720,1920x1080")]
    sizes: String,
    /// Bitrates in kbit/s, comma-separated.
    #[arg(long, default_value = "4000")]
    bitrates_kbps: String,
    /// SRT latency, ms.
    #[arg(long, default_value_t = 120)]
    latency_ms: u32,
    /// Frames per second.
    #[arg(long, default_value_t = 30)]
    fps: u32,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 12)]
    seconds: u64,
    /// x264 speed preset.
    #[arg(long, default_value = "superfast")]
    x264_preset: String,
    /// aac | none
    #[arg(long, default_value = "aac")]
    audio: String,
    /// Print JSON rows instead of a Markdown table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct DecodeArgs {
    /// srt://:PORT?mode=listener&latency=MS&passphrase=... (or a caller or rendezvous URL).
    #[arg(long)]
    input: String,
    /// auto | kms | window | fake | file:PATH
    #[arg(long, default_value = "auto")]
    sink: String,
    /// discard | alsa:DEVICE
    #[arg(long, default_value = "discard")]
    audio_out: String,
    /// The box's name, shown on the slate.
    #[arg(long, default_value = "telebridge")]
    name: String,
    /// Re-encode what is shown and send it to this SRT URL, so that the first box can measure
    /// the round trip A -> B -> A with its own clock.
    #[arg(long)]
    loop_to: Option<String>,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    duration: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Configuration file (default /etc/telebridge/telebridge.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Simulate the hardware: test source, simulated GPIO (shown and pressed through
    /// /api/sim/*), headless decoder sink; the panel on 127.0.0.1:8080 unless --http says.
    #[arg(long)]
    sim: bool,
    /// Where the panel and API listen, ADDRESS:PORT (web.listen).
    #[arg(long)]
    http: Option<String>,
    /// encoder | decoder (role).
    #[arg(long)]
    role: Option<String>,
    /// The box's name (name).
    #[arg(long)]
    name: Option<String>,
    /// test | v4l2:/dev/videoN | libcamera (video.source).
    #[arg(long)]
    source: Option<String>,
    /// An output (repeat for several); replaces the file's outputs.
    #[arg(long = "output")]
    outputs: Vec<String>,
    /// The decoder's SRT input (decoder.input).
    #[arg(long)]
    input: Option<String>,
    /// Go live at once (start_live).
    #[arg(long)]
    start_live: bool,
}

#[derive(Debug, Args)]
struct RelayArgs {
    /// srt://:PORT?mode=listener&latency=MS (or a caller or rendezvous URL).
    #[arg(long)]
    input: String,
    /// srt://..., rtmp(s)://HOST/APP/KEY or file:/PATH.ts; repeat for several.
    #[arg(long = "output", required = true)]
    outputs: Vec<String>,
    /// Buffer per output in kbit/s of stream it must hold for a second.
    #[arg(long, default_value_t = 20_000)]
    max_bitrate_kbps: u64,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    duration: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
struct EncodeArgs {
    /// Configuration file to start from (flags override it); built-in defaults otherwise.
    #[arg(long)]
    config: Option<PathBuf>,
    /// test | v4l2:/dev/videoN | libcamera
    #[arg(long)]
    source: Option<String>,
    /// Encoded size, WIDTHxHEIGHT (e.g. 1280x720).
    #[arg(long)]
    size: Option<String>,
    /// Frames per second.
    #[arg(long)]
    fps: Option<u32>,
    /// Video bitrate in kbit/s.
    #[arg(long)]
    bitrate_kbps: Option<u32>,
    /// Keyframe interval in ms.
    #[arg(long)]
    keyframe_ms: Option<u32>,
    /// auto | v4l2h264enc | x264enc | openh264enc
    #[arg(long)]
    encoder: Option<String>,
    /// x264 speed preset (ultrafast .. medium).
    #[arg(long)]
    x264_preset: Option<String>,
    /// aac | none
    #[arg(long)]
    audio: Option<String>,
    /// test | alsa:DEVICE
    #[arg(long)]
    audio_source: Option<String>,
    /// srt://HOST:PORT?mode=caller|listener|rendezvous&latency=MS&passphrase=...&pbkeylen=16|24|32&streamid=...
    /// Repeat for several outputs; replaces the file's outputs.
    #[arg(long = "output")]
    outputs: Vec<String>,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    duration: Option<std::time::Duration>,
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Config(ConfigCommand::Default) => {
            print!("{}", telebridge_config::EXAMPLE_TOML);
            ExitCode::SUCCESS
        }
        Command::Config(ConfigCommand::Check { file }) => config_check(&file),
        Command::Encoders { config } => encoders(config),
        Command::Encode(args) => encode(*args),
        Command::Decode(args) => decode(args),
        Command::Measure(args) => measure(args),
        Command::Relay(args) => relay(args),
        Command::Run(args) => crate::run::run(args.into()),
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
    let valid = match config.validate() {
        Ok(v) => v,
        Err(errs) => {
            for e in flags.name(&errs) {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
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

fn relay(args: RelayArgs) -> ExitCode {
    let input = match telebridge_config::SrtUrl::parse(&args.input) {
        Ok(u) => u,
        Err(e) => return bad_input(format!("--input: {e}")),
    };
    // The outputs go through the same validation as the configuration file's.
    let mut config = Config::default();
    let mut flags = Flags::default();
    flags.outputs(&mut config, &args.outputs);
    let valid = match config.validate() {
        Ok(v) => v,
        Err(errs) => {
            for e in flags.name(&errs) {
                eprintln!("error: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let json = args.stats == Some(StatsFormat::Json);
    let on_sample: Option<telebridge_appliance::relay_role::RelaySampleCallback> =
        if json { Some(Arc::new(print_json)) } else { None };
    let options = telebridge_appliance::RelayOptions {
        input,
        outputs: valid.outputs,
        queue_bytes: (args.max_bitrate_kbps * 1000 / 8).max(256 * 1024),
        duration: args.duration,
        on_sample,
    };
    run_async(telebridge_appliance::run_relay(options, shutdown_signal()), |summary| print_summary(json, &summary))
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
        Some(name) => match linkemu::Profiles::load(&args.profiles).and_then(|p| p.get(name).cloned()) {
            Ok(p) => Some(p),
            Err(e) => return bad_input(format!("--link: {e}")),
        },
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
    };
    run_async(telebridge_appliance::run_decoder(options, shutdown_signal()), |summary| print_summary(json, &summary))
}
