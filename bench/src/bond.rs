//! Bonding on three uplinks (issue 38): two 4G links with their own seeded capacity traces and
//! a 10 s outage each, and a marginal link whose round trip swings between 100 and 1200 ms,
//! replayed identically (linkemu's links told apart by the uplinks' source addresses) for two
//! senders with the same encoder, links and receiver (`telebridge relay --bond-listen` into our
//! decoder): ours (`bond=` with our adaptive bitrate) and srtla_send classic from BELABOX/srtla
//! (built from `SRTLA_SRC` in the run's setup) with belacoder's rule. Per run: the bitrate that
//! arrived and its share of the summed capacity, frames lost for good, glitches (runs of
//! seconds with frames missing) per 10 minutes, how long each sender kept sending into a dead
//! uplink, and the share each uplink carried.

mod report;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use linkemu::impairment::LinkEvent;
use linkemu::{CapacityTrace, Impairment, LinkParams};

pub use report::Run;

/// One uplink of the scenario.
pub struct Uplink {
    /// Its name in the table.
    pub name: &'static str,
    /// The sender's source address for it.
    pub addr: &'static str,
    /// Its capacity over time, kbit/s (forward).
    pub trace: CapacityTrace,
    /// Round trip, ms (the marginal link's swings come as events).
    pub rtt_ms: f64,
    /// Random loss, percent.
    pub loss_pct: f64,
    /// When it is out (loss 100 % both ways): (start s, length s).
    pub outage: Option<(f64, f64)>,
    /// Timed round-trip changes.
    pub swings: Vec<LinkEvent>,
}

impl Uplink {
    /// Capacity at `t` s, 0 while out.
    pub fn capacity_at(&self, t: f64) -> f64 {
        if self.outage.is_some_and(|(at, len)| t >= at && t < at + len) {
            return 0.0;
        }
        self.trace.rate_at(Duration::from_secs_f64(t.max(0.0))).unwrap_or(0.0)
    }

    fn impairments(&self, seed: u64) -> (Impairment, Impairment) {
        let params = LinkParams {
            one_way_delay: Duration::from_secs_f64(self.rtt_ms / 2000.0),
            jitter: Duration::from_millis(4),
            loss_pct: self.loss_pct,
            queue: Duration::from_millis(300),
            ..LinkParams::default()
        };
        let mut events = self.swings.clone();
        if let Some((at_s, for_s)) = self.outage {
            events.push(LinkEvent {
                at_s,
                for_s,
                rtt_ms: None,
                jitter_ms: None,
                loss_pct: Some(100.0),
                rate_kbps: None,
            });
        }
        let forward = Impairment::new(params.clone(), events.clone(), seed).with_trace(self.trace.clone());
        (forward, Impairment::new(params, events, seed + 100))
    }
}

/// The scenario over `seconds`.
pub fn uplinks(seconds: f64) -> anyhow::Result<Vec<Uplink>> {
    let t = |e: String| anyhow::anyhow!(e);
    // The marginal link: a new round trip between 100 and 1200 ms every 3 s, seeded.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut swings = Vec::new();
    let mut at = 0.0;
    while at < seconds {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let rtt = 100.0 + (rng % 1101) as f64;
        swings.push(LinkEvent {
            at_s: at,
            for_s: 3.0,
            rtt_ms: Some(rtt),
            jitter_ms: None,
            loss_pct: None,
            rate_kbps: None,
        });
        at += 3.0;
    }
    Ok(vec![
        Uplink {
            name: "4g-a",
            addr: "127.0.0.2",
            trace: CapacityTrace::cellular(2500.0, seconds, 1).map_err(t)?,
            rtt_ms: 60.0,
            loss_pct: 0.3,
            outage: Some((seconds * 0.4, 10.0)),
            swings: Vec::new(),
        },
        Uplink {
            name: "4g-b",
            addr: "127.0.0.3",
            trace: CapacityTrace::cellular(2500.0, seconds, 2).map_err(t)?,
            rtt_ms: 80.0,
            loss_pct: 0.3,
            outage: Some((seconds * 0.7, 10.0)),
            swings: Vec::new(),
        },
        Uplink {
            name: "marginal",
            addr: "127.0.0.4",
            trace: CapacityTrace::steps(&[(0.0, 1500.0)]).map_err(t)?,
            rtt_ms: 400.0,
            loss_pct: 1.0,
            outage: None,
            swings,
        },
    ])
}

/// Which sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// Our `bond=` output with our adaptive bitrate.
    Ours,
    /// srtla_send with belacoder's rule.
    Srtla,
}

impl Sender {
    /// Its name on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Sender::Ours => "ours",
            Sender::Srtla => "srtla",
        }
    }

    fn parse(s: &str) -> anyhow::Result<Self> {
        match s {
            "ours" => Ok(Sender::Ours),
            "srtla" => Ok(Sender::Srtla),
            _ => anyhow::bail!("--senders: {s:?} is not one of ours, srtla"),
        }
    }
}

/// srtla_send built from `SRTLA_SRC` under `out`.
fn build_srtla(out: &Path) -> anyhow::Result<PathBuf> {
    let src = std::env::var_os("SRTLA_SRC").map(PathBuf::from).context(
        "the srtla sender needs BELABOX/srtla's source: SRTLA_SRC=DIR (git clone https://github.com/BELABOX/srtla)",
    )?;
    let build = out.join("srtla");
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build)?;
    let copy = if src.join("Makefile").is_file() {
        Command::new("cp").arg("-r").arg(src.join(".")).arg(&build).status()?
    } else {
        let script = format!("git -C '{}' archive HEAD | tar -x -C '{}'", src.display(), build.display());
        Command::new("sh").arg("-c").arg(script).status()?
    };
    anyhow::ensure!(copy.success(), "cannot copy srtla's source from {}", src.display());
    let made = Command::new("make").arg("-C").arg(&build).arg("srtla_send").output()?;
    anyhow::ensure!(made.status.success(), "srtla does not build: {}", String::from_utf8_lossy(&made.stderr));
    Ok(build.join("srtla_send"))
}

/// Waits until UDP `port` is bound on this machine (a listener is ready).
async fn bound(port: u16) {
    let hex = format!(":{port:04X}");
    for _ in 0..100 {
        let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
        if table.lines().any(|l| l.split_whitespace().nth(1).is_some_and(|a| a.ends_with(&hex))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One run of one sender at one SRT latency.
async fn one(sender: Sender, latency_ms: u32, seconds: f64, out: &Path, srtla: Option<&Path>) -> anyhow::Result<Run> {
    let bin = crate::telebridge()?;
    let tag = format!("bond-{}-{latency_ms}", sender.name());
    let (dec_port, bond_port, input_port) = (crate::free_udp_port()?, crate::free_udp_port()?, crate::free_udp_port()?);
    let dec_out = out.join(format!("{tag}-decoder.jsonl"));
    let mut decoder = crate::spawn_to(
        Command::new(&bin).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
            "--input",
            &format!("srt://:{dec_port}?mode=listener&latency=200"),
            "--duration",
            &format!("{}s", seconds as u64 + 8),
        ]),
        &dec_out,
    )?;
    bound(dec_port).await;
    let mut relay = crate::spawn_to(
        Command::new(&bin)
            .args(["-q", "relay", "--stats", "json", "--bond-listen", &format!("127.0.0.1:{bond_port}")])
            .args([
                "--input",
                &format!("srt://:{input_port}?mode=listener&latency={latency_ms}"),
                "--output",
                &format!("srt://127.0.0.1:{dec_port}?latency=200"),
            ]),
        &out.join(format!("{tag}-relay.jsonl")),
    )?;
    bound(bond_port).await;
    let ups = uplinks(seconds)?;
    let links: Vec<(IpAddr, Impairment, Impairment)> = ups
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let (f, r) = u.impairments(11 + i as u64);
            Ok((u.addr.parse()?, f, r))
        })
        .collect::<anyhow::Result<_>>()?;
    let emu =
        linkemu::relay::start_multi("127.0.0.1:0".parse()?, format!("127.0.0.1:{bond_port}").parse()?, links).await?;
    let offered = report::spawn_offered_log(emu.links.iter().map(|l| l.forward.clone()).collect());
    let addrs: Vec<&str> = ups.iter().map(|u| u.addr).collect();
    let mut srtla_child = None;
    let (url, law) = match sender {
        Sender::Ours => {
            (format!("srt://127.0.0.1:{}?bond={}&latency={latency_ms}", emu.listen.port(), addrs.join(",")), None)
        }
        Sender::Srtla => {
            let ips = out.join("srtla-ips");
            std::fs::write(&ips, addrs.join("\n") + "\n")?;
            let local = crate::free_udp_port()?;
            let mut cmd = Command::new(srtla.context("srtla_send not built")?);
            cmd.args([&local.to_string(), "127.0.0.1", &emu.listen.port().to_string()]).arg(&ips);
            srtla_child = Some(crate::spawn_to(&mut cmd, &out.join(format!("{tag}-srtla.log")))?);
            bound(local).await;
            (format!("srt://127.0.0.1:{local}?latency={latency_ms}"), Some(crate::abr::belacoder_law()))
        }
    };
    let (rate_law, rate_step) = law.map_or((None, None), |(f, s)| (Some(f), Some(s)));
    let bitrate_mode = if rate_law.is_some() { "fixed" } else { "adaptive" };
    let encoder = crate::abr::Encoder { bitrate_mode, half_rate: false, rate_law, rate_step, seconds };
    encoder.run(url, out.join(format!("{tag}-rate.jsonl"))).await?;
    let status = tokio::task::spawn_blocking(move || decoder.wait()).await??;
    anyhow::ensure!(status.success(), "the decoder: {status}");
    let offered = offered.finish().await;
    let _ = relay.kill();
    let _ = relay.wait();
    if let Some(mut c) = srtla_child {
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(emu);
    let dec = crate::json_lines(&dec_out);
    Ok(report::figures(sender, latency_ms, seconds, &ups, &dec, &offered))
}

/// Runs the scenario for each sender and latency, prints the table.
pub async fn run(out: &Path, quick: bool, minutes: f64, latencies: &[u32], senders: &[String]) -> anyhow::Result<()> {
    let seconds = if quick { 40.0 } else { minutes * 60.0 };
    let senders: Vec<Sender> = match (quick, senders.is_empty()) {
        (true, true) => vec![Sender::Ours],
        (_, true) => vec![Sender::Ours, Sender::Srtla],
        _ => senders.iter().map(|s| Sender::parse(s)).collect::<anyhow::Result<_>>()?,
    };
    let srtla = if senders.contains(&Sender::Srtla) { Some(build_srtla(out)?) } else { None };
    let mut runs = Vec::new();
    for &latency in latencies {
        for &sender in &senders {
            eprintln!("bond: {} at SRT latency {latency} ms, {seconds} s ...", sender.name());
            let run = one(sender, latency, seconds, out, srtla.as_deref()).await.with_context(|| sender.name())?;
            eprintln!("{}", report::row(&run));
            runs.push(run);
        }
    }
    let ups = uplinks(seconds)?;
    println!("{}", report::table(&runs, &ups));
    for p in report::plots(&runs, &ups, out)? {
        println!("Plot: {}", p.display());
    }
    if quick {
        report::sane(&runs)?;
    }
    Ok(())
}
