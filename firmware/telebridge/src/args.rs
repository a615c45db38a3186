//! The command line's words: commands, their arguments, their help.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Telebridge: a Raspberry Pi as a broadcast-grade SRT video link.
#[derive(Debug, Parser)]
#[command(name = "telebridge", version, about)]
pub struct Cli {
    /// Only warnings and errors on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// The appliance: run the configured role (encoder, decoder or bridge), serve the panel and API, drive
    /// the status LEDs and the go-live button, and talk to systemd (READY, WATCHDOG).
    Run(RunArgs),
    /// Capture, encode to H.264 and send MPEG-TS over SRT to every --output at once.
    Encode(Box<EncodeArgs>),
    /// Receive SRT, decode, and show it (HDMI, a window, a file, or nowhere), with a slate when
    /// nothing arrives and glass-to-glass latency when the sender burns in timecodes.
    Decode(DecodeArgs),
    /// Both at once over one SRT connection (--link): send this box's picture and sound, show
    /// and record what the other end sends; with the test source, measure the round trip glass
    /// to glass (the other end returns this box's timecode). What `run` does in the bridge role,
    /// without the panel and the pairing.
    Bridge(Box<BridgeArgs>),
    /// Receive one SRT stream and pass it on untouched to every --output at once (SRT, RTMP(S),
    /// recording): an SRT gateway.
    Relay(RelayArgs),
    /// Our encoder into our decoder on this machine (optionally through an emulated link): a
    /// table of configured SRT latency against measured glass-to-glass latency.
    Measure(MeasureArgs),
    /// List the Telebridge boxes on the local network (mDNS, _telebridge._udp): name, role,
    /// pairing state and the panel's address to open or pair with.
    Discover(DiscoverArgs),
    /// Check or print the configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Show which H.264 encoder this machine would use, and why.
    Encoders {
        /// Configuration file whose video.encoder preference applies.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the manual page (roff), made from this command line's own help (the Debian
    /// package installs it as telebridge(1): `man telebridge`).
    Man,
}

#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// How long to listen for answers (e.g. 3s, 500ms; at most 60s).
    #[arg(long, default_value = "3s", value_parser = crate::duration::parse)]
    pub wait: std::time::Duration,
    /// Ask on the interface that holds this address only (default: every one but loopback).
    #[arg(long)]
    pub on: Option<std::net::IpAddr>,
    /// One JSON object per box instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Report every problem in a configuration file, each naming the field, value and what is allowed.
    Check {
        /// The file to check.
        file: PathBuf,
    },
    /// Print the default configuration as a commented TOML file.
    Default,
    /// Lay the settings of FILE over the box's (those FILE names change, the rest stay), check
    /// the result and save it atomically; nothing is written when a setting is wrong.
    Apply {
        /// The settings to take (e.g. telebridge.toml on the boot partition).
        file: PathBuf,
        /// The box's configuration file.
        #[arg(long, default_value = telebridge_config::DEFAULT_PATH)]
        to: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatsFormat {
    /// One JSON object a second on stdout, and a summary at exit.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct MeasureArgs {
    /// A link profile to go through, e.g. metro-17ms or 4g-fixed (the built-in profiles: lan,
    /// metro-17ms, transatlantic-100ms, us-west-180ms, sydney-360ms, 4g-fixed, vpn-sweep; or
    /// those of --profiles).
    #[arg(long)]
    pub(crate) link: Option<String>,
    /// A link profiles file instead of the built-in profiles (bench/links.toml's form).
    #[arg(long)]
    pub(crate) profiles: Option<PathBuf>,
    /// Sizes, comma-separated.
    #[arg(long, default_value = "1280x720,1920x1080")]
    pub(crate) sizes: String,
    /// Bitrates in kbit/s, comma-separated.
    #[arg(long, default_value = "4000")]
    pub(crate) bitrates_kbps: String,
    /// SRT latency, ms.
    #[arg(long, default_value_t = 120)]
    pub(crate) latency_ms: u32,
    /// Frames per second.
    #[arg(long, default_value_t = 30)]
    pub(crate) fps: u32,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 12)]
    pub(crate) seconds: u64,
    /// x264 speed preset.
    #[arg(long, default_value = "superfast")]
    pub(crate) x264_preset: String,
    /// aac | opus | none
    #[arg(long, default_value = "aac")]
    pub(crate) audio: String,
    /// Print JSON rows instead of a Markdown table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DecodeArgs {
    /// srt://:PORT?mode=listener&latency=MS&passphrase=... (or a caller or rendezvous URL).
    #[arg(long)]
    pub(crate) input: String,
    /// auto | kms | window | fake | file:PATH
    #[arg(long, default_value = "auto")]
    pub(crate) sink: String,
    /// discard | alsa:DEVICE
    #[arg(long, default_value = "discard")]
    pub(crate) audio_out: String,
    /// The box's name, shown on the slate.
    #[arg(long, default_value = "telebridge")]
    pub(crate) name: String,
    /// Re-encode what is shown and send it to this SRT URL, so that the first box can measure
    /// the round trip A -> B -> A with its own clock.
    #[arg(long)]
    pub(crate) loop_to: Option<String>,
    /// Also take bonded senders (srtla's protocol: Telebridge's `bond=`, srtla_send) on this UDP
    /// port (PORT or ADDRESS:PORT) and hand them to the input, which then listens.
    #[arg(long, value_parser = parse_listen)]
    pub(crate) bond_listen: Option<std::net::SocketAddr>,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    pub(crate) stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    pub(crate) duration: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Configuration file (default /etc/telebridge/telebridge.toml when it exists).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Simulate the hardware: test source, simulated GPIO (shown and pressed through
    /// /api/sim/*), headless decoder sink; the panel on 127.0.0.1:8080 unless --http says.
    #[arg(long)]
    pub(crate) sim: bool,
    /// Where the panel and API listen, ADDRESS:PORT (web.listen).
    #[arg(long)]
    pub(crate) http: Option<String>,
    /// encoder | decoder | bridge (role).
    #[arg(long)]
    pub(crate) role: Option<String>,
    /// The box's name (name).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// test | v4l2:/dev/videoN | libcamera (video.source).
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// An output (repeat for several); replaces the file's outputs.
    #[arg(long = "output")]
    pub(crate) outputs: Vec<String>,
    /// The decoder's SRT input (decoder.input).
    #[arg(long)]
    pub(crate) input: Option<String>,
    /// Go live at once (start_live).
    #[arg(long)]
    pub(crate) start_live: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BridgeArgs {
    /// The connection: srt://HOST:PORT?mode=caller&passphrase=...&pbkeylen=32, or
    /// srt://:PORT?mode=listener&..., or a rendezvous URL (bridge.link).
    #[arg(long)]
    pub(crate) link: String,
    /// auto | kms | window | fake | file:PATH (decoder.sink).
    #[arg(long, default_value = "auto")]
    pub(crate) sink: String,
    /// Record what arrives: file:/DIR/NAME.ts (bridge.record).
    #[arg(long)]
    pub(crate) record: Option<String>,
    /// The box's name, shown on the slate.
    #[arg(long)]
    pub(crate) name: Option<String>,
    #[command(flatten)]
    pub(crate) encode: EncodeArgs,
}

#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// srt://:PORT?mode=listener&latency=MS (or a caller or rendezvous URL).
    #[arg(long, required_unless_present = "meet")]
    pub(crate) input: Option<String>,
    /// srt://..., rtmp(s)://HOST/APP/KEY or file:/PATH.ts; repeat for several.
    #[arg(long = "output", required_unless_present = "meet")]
    pub(crate) outputs: Vec<String>,
    /// Instead: the meeting point of paired boxes that cannot reach each other, on these UDP
    /// ports (FIRST-LAST; a pair uses one). It forwards datagrams between the two boxes of a
    /// pair: it sees their addresses and their packets' sizes and timing, not the picture or
    /// the sound (AES-256 end to end, with a key it never has).
    #[arg(long, conflicts_with_all = ["input", "outputs"])]
    pub(crate) meet: Option<String>,
    /// Also take bonded senders (srtla's protocol: Telebridge's `bond=`, srtla_send, Moblin,
    /// BELABOX) on this UDP port (PORT or ADDRESS:PORT) and hand their stream to the input,
    /// which then listens: `--input srt://:PORT2?mode=listener`.
    #[arg(long, value_parser = parse_listen, conflicts_with = "meet")]
    pub(crate) bond_listen: Option<std::net::SocketAddr>,
    /// Buffer per output in kbit/s of stream it must hold for a second.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) max_bitrate_kbps: u64,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    pub(crate) stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    pub(crate) duration: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub(crate) struct EncodeArgs {
    /// Configuration file to start from (flags override it); built-in defaults otherwise.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// test | v4l2:/dev/videoN | libcamera
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// Encoded size, WIDTHxHEIGHT (e.g. 1280x720).
    #[arg(long)]
    pub(crate) size: Option<String>,
    /// Frames per second.
    #[arg(long)]
    pub(crate) fps: Option<u32>,
    /// Video bitrate in kbit/s (with an adaptive bitrate, the most).
    #[arg(long)]
    pub(crate) bitrate_kbps: Option<u32>,
    /// adaptive (the default: the bitrate follows what the SRT links carry) | fixed.
    #[arg(long)]
    pub(crate) bitrate_mode: Option<String>,
    /// The least an adaptive bitrate goes down to, kbit/s.
    #[arg(long)]
    pub(crate) min_bitrate_kbps: Option<u32>,
    /// Keyframe interval in ms.
    #[arg(long)]
    pub(crate) keyframe_ms: Option<u32>,
    /// auto | v4l2h264enc | x264enc | openh264enc
    #[arg(long)]
    pub(crate) encoder: Option<String>,
    /// x264 speed preset (ultrafast .. medium).
    #[arg(long)]
    pub(crate) x264_preset: Option<String>,
    /// auto (opus in the bridge role, aac otherwise) | aac | opus | none.
    #[arg(long)]
    pub(crate) audio: Option<String>,
    /// test | alsa:DEVICE
    #[arg(long)]
    pub(crate) audio_source: Option<String>,
    /// An SRT address, srt://HOST:PORT, with optional query keys: mode (caller, listener or
    /// rendezvous), latency (ms), passphrase, pbkeylen (16, 24 or 32), streamid. For example
    /// srt://relay.example:9000?mode=caller&latency=200. Repeat for several outputs; replaces
    /// the file's outputs.
    #[arg(long = "output")]
    pub(crate) outputs: Vec<String>,
    /// Print statistics once a second.
    #[arg(long, value_enum)]
    pub(crate) stats: Option<StatsFormat>,
    /// Stop after this long (10s, 2m, ...).
    #[arg(long, value_parser = crate::duration::parse)]
    pub(crate) duration: Option<std::time::Duration>,
}

/// `PORT` (every address) or `ADDRESS:PORT`.
fn parse_listen(s: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([0, 0, 0, 0], port)));
    }
    s.parse().map_err(|_| format!("{s:?} is neither a port nor ADDRESS:PORT (e.g. 5000 or 0.0.0.0:5000)"))
}
