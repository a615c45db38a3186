//! `telebridge-bench`: the field's measurements reproduced with our own box, each run side by
//! side in one process so machine noise cancels in the comparisons. Writes CSV and PNG under
//! bench/out and prints a Markdown table for docs/benchmarks.md.
//!
//! `--quick` is for CI: short runs that check each benchmark works and gives sane figures.

mod abr;
mod bond;
mod fanout;
mod golive;
mod idle;
mod lipsync;
mod monitor;
mod monitor_glass;
mod panel;
mod plot;
mod reader;
mod roundtrip;
mod rtmp_srt;
mod soak;
mod srt_4g;
mod throughput;
mod transport;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "telebridge-bench", about = "Reproduce the field's measurements with our own box")]
struct Args {
    /// Short runs with sanity checks (CI).
    #[arg(long, global = true)]
    quick: bool,
    /// Where CSV and PNG files go.
    #[arg(long, global = true, default_value = "bench/out")]
    out: PathBuf,
    /// The link profiles.
    #[arg(long, global = true, default_value = "bench/links.toml")]
    profiles: PathBuf,
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// The SRT-over-4G study: 8 Mbit/s with a 10 Mbit/s ceiling on the 4g-fixed profile, SRT
    /// latency 750 ms against 1200 ms: lost, retransmitted and dropped packets and RTT over time.
    #[command(name = "srt-4g")]
    Srt4g,
    /// Adaptive bitrate on capacity traces (steps, a fade, two 4G uplinks, a trace file): a
    /// fixed bitrate, belacoder's rule and ours with the same encoder, link and receiver.
    Abr {
        /// Only these traces (by name: steps, fade, 4g-1, 4g-2, venue-file), to look at one.
        #[arg(long, value_delimiter = ',')]
        traces: Vec<String>,
        /// Only these modes (fixed, belacoder, ours); the verdict needs belacoder and ours.
        #[arg(long, value_delimiter = ',')]
        modes: Vec<String>,
        /// Runs each trace and mode this many times: the table gives the median and the
        /// spread (runs of one law differ by tens of frames on the 4G traces).
        #[arg(long, default_value_t = 1)]
        repeats: usize,
    },
    /// Bonding over three uplinks (two 4G traces with an outage each, a marginal link whose
    /// round trip swings 100-1200 ms): ours against srtla_send with belacoder's rule, same
    /// encoder, links and receiver. The srtla sender needs SRTLA_SRC (BELABOX/srtla's source).
    Bond {
        /// Minutes per run.
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// SRT latencies to run at, ms.
        #[arg(long, value_delimiter = ',', default_value = "2000")]
        latencies: Vec<u32>,
        /// Only these senders (ours, srtla); the quick form runs ours only unless named.
        #[arg(long, value_delimiter = ',')]
        senders: Vec<String>,
    },
    /// One encoder listening, 1, 10, 25, 50 decoders calling: CPU, memory, expected against
    /// actual bandwidth (the Raspberry Pi server study's table).
    Fanout,
    /// Press to first packet: Go live through the API, time the receiver's first byte; the
    /// first press of a daemon's life and the later ones.
    #[command(name = "go-live")]
    GoLive {
        /// The telebridge binary to measure (default: the one built beside this benchmark).
        #[arg(long)]
        telebridge: Option<PathBuf>,
    },
    /// The appliance daemon at rest (not live): RSS and CPU, with simulated GPIO and with none.
    Idle,
    /// The live monitor's cost: an encoder live at 720p30 watched by 0, 1, 2 and 4 WebRTC
    /// viewers that do not decode; the daemon's CPU and memory per viewer, the encoder's fps.
    Monitor,
    /// Lip sync: the sound-to-picture offset of the test sources' flash and beep, our encoder
    /// to our decoder and to ffmpeg, and ffmpeg's sources to our decoder, at 720p30 and
    /// 1080p30, over loopback and a lossy link.
    Lipsync,
    /// Glass-to-glass latency, SRT against RTMP, per profile (the RTMP-vs-SRT study's test).
    Latency {
        /// SRT latency as multiples of the profile's RTT, one side-by-side run each (Haivision's
        /// presets are 1.5, 2.5 and 4; at least 120 ms whatever the factor).
        #[arg(long, value_delimiter = ',', default_value = "4,2.5,1.5")]
        rtt_factors: Vec<f64>,
    },
    /// Highest sustainable bitrate, SRT against RTMP, per profile: 1, 2, 6, 10, 20 Mbit/s.
    Bitrate,
    /// Throughput against added delay, 0 to 40 ms in 1 ms steps, TCP and SRT (the VPN study's
    /// method: three 10 s transfers per step).
    Throughput {
        /// Transfers per step (the study's method: 3).
        #[arg(long, default_value_t = 3)]
        runs: u64,
    },
    /// The daemon live for an hour through the 4g-fixed link (without its outages) to a decoder,
    /// its panel polled as a browser does: memory and open files each minute, gaps in the picture.
    Soak {
        /// How long, in minutes.
        #[arg(long, default_value_t = 60)]
        minutes: u64,
    },
    /// The telebridge's round trip glass to glass: two bridge boxes through the link emulator,
    /// each reading its own timecode back from the other's picture (metro-17ms and
    /// transatlantic-100ms, 720p30 and 1080p30).
    #[command(name = "round-trip")]
    RoundTrip {
        /// x264's speed preset on both boxes.
        #[arg(long, default_value = "superfast")]
        x264_preset: String,
        /// Only these sizes (WxH).
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<String>,
        /// Only these link profiles.
        #[arg(long, value_delimiter = ',')]
        links: Vec<String>,
    },
    /// Our SRT transport (`telebridge relay`) against srt-live-transmit on the same link and
    /// stream: CPU seconds per GB and losses, sender and receiver.
    Transport,
    /// Plays an RTMP stream and prints each frame's latency from its timecode (used by the
    /// latency and bitrate benchmarks, inside the link's namespace).
    #[command(name = "tcp-send", hide = true)]
    TcpSend {
        /// HOST:PORT
        addr: String,
        /// How long to send.
        #[arg(long)]
        seconds: f64,
    },
    /// Counts bytes from one TCP connection (or stdin) and prints `bytes seconds`.
    #[command(hide = true)]
    Sink {
        /// Listen here for one TCP connection instead of reading stdin.
        #[arg(long)]
        tcp: Option<String>,
    },
    #[command(name = "rtmp-read", hide = true)]
    RtmpRead {
        /// rtmp://HOST:PORT/APP/KEY
        url: String,
        /// How long to read.
        #[arg(long)]
        seconds: f64,
    },
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match args.bench {
        Bench::Srt4g => runtime.block_on(srt_4g::run(&args.profiles, &args.out, args.quick)),
        Bench::Abr { traces, modes, repeats } => {
            runtime.block_on(abr::run(&args.out, args.quick, &traces, &modes, repeats))
        }
        Bench::Bond { minutes, latencies, senders } => {
            runtime.block_on(bond::run(&args.out, args.quick, minutes, &latencies, &senders))
        }
        Bench::Fanout => fanout::run(&args.out, args.quick),
        Bench::Idle => idle::run(args.quick),
        Bench::Monitor => monitor::run(args.quick),
        Bench::Lipsync => runtime.block_on(lipsync::run(&args.profiles, &args.out, args.quick)),
        Bench::GoLive { telebridge } => golive::run(args.quick, telebridge),
        Bench::Latency { rtt_factors } => {
            runtime.block_on(rtmp_srt::latency(&args.profiles, &args.out, args.quick, &rtt_factors))
        }
        Bench::Bitrate => runtime.block_on(rtmp_srt::bitrate(&args.profiles, &args.out, args.quick)),
        Bench::Soak { minutes } => runtime.block_on(soak::run(&args.profiles, &args.out, args.quick, minutes)),
        Bench::Transport => runtime.block_on(transport::run(&args.profiles, &args.out, args.quick)),
        Bench::RoundTrip { x264_preset, sizes, links } => runtime.block_on(roundtrip::run(
            &args.profiles,
            &args.out,
            args.quick,
            &roundtrip::Choice { x264_preset, sizes, links },
        )),
        Bench::Throughput { runs } => runtime.block_on(throughput::run(&args.profiles, &args.out, args.quick, runs)),
        Bench::TcpSend { addr, seconds } => throughput::tcp_send(&addr, seconds),
        Bench::Sink { tcp } => throughput::sink(tcp.as_deref()),
        Bench::RtmpRead { url, seconds } => reader::run(&url, seconds),
    }
}

/// The telebridge binary built beside this one (`cargo build [--release] --bins`).
pub fn telebridge() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().map(|d| d.join("telebridge")).filter(|p| p.exists());
    path.ok_or_else(|| {
        anyhow::anyhow!("telebridge is not built beside {}: run cargo build --bins first", exe.display())
    })
}

/// Spawns a command with stdout to a file, stderr discarded.
pub fn spawn_to(cmd: &mut Command, stdout: &Path) -> anyhow::Result<Child> {
    Ok(cmd.stdin(Stdio::null()).stdout(std::fs::File::create(stdout)?).stderr(Stdio::null()).spawn()?)
}

/// A UDP port that was free a moment ago.
pub fn free_udp_port() -> anyhow::Result<u16> {
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The JSON lines of a `--stats json` run.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// CPU time of a process so far, in clock ticks (1/100 s).
pub fn ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("").split_whitespace().collect();
    Ok(fields.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0))
}

/// A process's resident memory now, kB.
pub fn rss_kb(pid: u32) -> u64 {
    proc_status_kb(pid, "VmRSS")
}

/// A field of /proc/PID/status in kB (VmRSS, VmHWM).
pub fn proc_status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
