//! `telebridge-bench`: the field's measurements reproduced with our own box, each run side by
//! side in one process so machine noise cancels in the comparisons. Writes CSV and PNG under
//! bench/out and prints a Markdown table for docs/benchmarks.md.
//!
//! `--quick` is for CI: short runs that check each benchmark works and gives sane figures.

mod fanout;
mod plot;
mod srt_4g;

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
    /// One encoder listening, 1, 10, 25, 50 decoders calling: CPU, memory, expected against
    /// actual bandwidth (the Raspberry Pi server study's table).
    Fanout,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.out)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match args.bench {
        Bench::Srt4g => runtime.block_on(srt_4g::run(&args.profiles, &args.out, args.quick)),
        Bench::Fanout => fanout::run(&args.out, args.quick),
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
