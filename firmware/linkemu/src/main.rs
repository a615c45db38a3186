//! `linkemu`: relay UDP through an emulated link.
//!
//! `linkemu --listen 127.0.0.1:9000 --target 127.0.0.1:9001 --profile 4g-fixed` relays UDP;
//! `linkemu --netns tb --profile 4g-fixed` joins two network namespaces (`tb-a` at 198.18.0.1,
//! `tb-b` at 198.18.0.2) through the link for TCP: run programs in them with `ip netns exec`.
//! The profile comes from the built-in profiles (bench/links.toml as built) or `--profiles FILE`; `--rtt-ms`, `--jitter-ms`,
//! `--loss-pct` and `--rate-kbps` override it. Prints the counters as one JSON line a second.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use linkemu::{Impairment, LinkProfile, Profiles};

#[derive(Debug, Parser)]
#[command(name = "linkemu", version, about = "Relay UDP through an emulated network link")]
struct Args {
    /// Address to listen on (UDP relay mode).
    #[arg(long, required_unless_present = "netns")]
    listen: Option<SocketAddr>,
    /// Where to forward (UDP relay mode).
    #[arg(long, required_unless_present = "netns")]
    target: Option<SocketAddr>,
    /// IP mode: create namespaces PREFIX-a and PREFIX-b joined through the link (needs root).
    #[arg(long, conflicts_with_all = ["listen", "target"])]
    netns: Option<String>,
    /// Profile name from the profiles file.
    #[arg(long)]
    profile: Option<String>,
    /// A profiles file instead of the built-in profiles (bench/links.toml as built).
    #[arg(long)]
    profiles: Option<PathBuf>,
    /// Round-trip time to add, ms.
    #[arg(long)]
    rtt_ms: Option<f64>,
    /// One-way delay standard deviation, ms.
    #[arg(long)]
    jitter_ms: Option<f64>,
    /// Random loss each direction, percent.
    #[arg(long)]
    loss_pct: Option<f64>,
    /// Bottleneck rate each direction, kbit/s.
    #[arg(long)]
    rate_kbps: Option<f64>,
    /// The bottleneck's rate over time, forward only (the uplink): steps:8000@0,2000@20,...,
    /// fade:8000-1500@10-70, 4g:MEAN@SECONDS:SEED or file:PATH (t_s,rate_kbps lines).
    #[arg(long)]
    trace: Option<String>,
    /// Seed: the same seed repeats the same drops.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many seconds.
    #[arg(long)]
    seconds: Option<f64>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut profile = match &args.profile {
        Some(name) => Profiles::load_or_shipped(args.profiles.as_deref())?.get(name)?.clone(),
        None => LinkProfile {
            name: "custom".into(),
            source: String::new(),
            rtt_ms: 0.0,
            jitter_ms: 0.0,
            reorder: false,
            loss_pct: 0.0,
            burst_loss: None,
            rate_kbps: 0.0,
            queue_ms: None,
            events: Vec::new(),
            sweep_rtt_ms: None,
            trace: None,
        },
    };
    if let Some(v) = args.rtt_ms {
        profile.rtt_ms = v;
    }
    if let Some(v) = args.jitter_ms {
        profile.jitter_ms = v;
    }
    if let Some(v) = args.loss_pct {
        profile.loss_pct = v;
    }
    if let Some(v) = args.rate_kbps {
        profile.rate_kbps = v;
    }
    if let Some(t) = &args.trace {
        profile.trace = Some(t.clone());
    }
    let mut forward = Impairment::new(profile.params(), profile.events.clone(), args.seed);
    if let Some(trace) = profile.capacity_trace()? {
        forward = forward.with_trace(trace);
    }
    let reverse = Impairment::new(profile.params(), profile.events.clone(), args.seed.wrapping_add(1));
    let started = std::time::Instant::now();
    if let Some(prefix) = &args.netns {
        let link = linkemu::ip_mode::start(prefix, forward, reverse).await.context("creating the namespaces")?;
        eprintln!(
            "linkemu: {} ({}) <-> {} ({}) through {:?}; Ctrl-C removes them",
            link.ns_a,
            linkemu::ip_mode::ADDR_A,
            link.ns_b,
            linkemu::ip_mode::ADDR_B,
            profile.name
        );
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            let stats =
                linkemu::relay::RelayStats { forward: link.forward.snapshot(), reverse: link.reverse.snapshot() };
            println!("{}", serde_json_line(started.elapsed().as_secs_f64(), &stats));
            if args.seconds.is_some_and(|s| started.elapsed().as_secs_f64() >= s) {
                break;
            }
        }
        return Ok(());
    }
    let (Some(listen), Some(target)) = (args.listen, args.target) else {
        anyhow::bail!("give --listen and --target, or --netns")
    };
    let relay = linkemu::relay::start(listen, target, forward, reverse)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    eprintln!("linkemu: {} -> {target} through {:?}", relay.listen, profile.name);
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        println!("{}", serde_json_line(started.elapsed().as_secs_f64(), &relay.stats()));
        if args.seconds.is_some_and(|s| started.elapsed().as_secs_f64() >= s) {
            break;
        }
    }
    Ok(())
}

fn serde_json_line(t: f64, s: &linkemu::relay::RelayStats) -> String {
    let d = |d: &linkemu::relay::DirectionStats| {
        format!(
            "{{\"offered\":{},\"delivered\":{},\"bytes_delivered\":{},\"dropped_random\":{},\"dropped_burst\":{},\"dropped_queue\":{}}}",
            d.offered, d.delivered, d.bytes_delivered, d.dropped_random, d.dropped_burst, d.dropped_queue
        )
    };
    format!("{{\"t\":{t:.1},\"forward\":{},\"reverse\":{}}}", d(&s.forward), d(&s.reverse))
}
