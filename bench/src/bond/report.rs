//! The bonding benchmark's figures from what the decoder printed and what each uplink was
//! offered (linkemu's counters every 100 ms), its table and its quick-form checks.

use std::sync::Arc;
use std::time::Duration;
use telebridge_sync::Locked;

use linkemu::relay::DirectionCounters;

use super::{Sender, Uplink};

/// (seconds since the links started, datagrams offered to each uplink so far).
pub type Offered = Vec<(f64, Vec<u64>)>;

/// The datagrams offered to each uplink, every 100 ms from the links' start.
pub struct OfferedLog {
    task: tokio::task::JoinHandle<()>,
    rows: Arc<std::sync::Mutex<Offered>>,
}

impl OfferedLog {
    /// Stops logging and returns the rows.
    pub async fn finish(self) -> Offered {
        self.task.abort();
        let _ = self.task.await;
        std::mem::take(&mut *self.rows.locked())
    }
}

/// Starts logging the uplinks' forward counters.
pub fn spawn_offered_log(links: Vec<Arc<DirectionCounters>>) -> OfferedLog {
    let rows: Arc<std::sync::Mutex<Offered>> = Arc::default();
    let r = rows.clone();
    let start = tokio::time::Instant::now();
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let row = links.iter().map(|l| l.snapshot().offered).collect();
            r.locked().push((start.elapsed().as_secs_f64(), row));
        }
    });
    OfferedLog { task, rows }
}

/// One run's figures.
#[derive(Debug, Clone)]
pub struct Run {
    /// Who sent.
    pub sender: Sender,
    /// SRT latency, ms.
    pub latency_ms: u32,
    /// Length, s.
    pub seconds: f64,
    /// Mean bitrate that reached the decoder, kbit/s.
    pub mean_kbps: f64,
    /// Its 10th percentile over the seconds, kbit/s.
    pub p10_kbps: f64,
    /// Mean summed capacity of the uplinks, kbit/s.
    pub capacity_kbps: f64,
    /// Frames lost for good.
    pub frames_lost: u64,
    /// Runs of seconds with frames missing.
    pub glitches: u64,
    /// Per uplink with an outage: how long the sender kept sending into it, s (`None`: all along).
    pub dead_sending_s: Vec<(String, Option<f64>)>,
    /// Share of the datagrams each uplink was offered, percent.
    pub shares: Vec<(String, f64)>,
    /// What arrived each second: (s since the encoder started, kbit/s).
    pub arrived: Vec<(f64, f64)>,
    /// How often per minute the uplink carrying most of a second's datagrams changed.
    pub switches_per_min: f64,
}

impl Run {
    /// Glitches per 10 minutes.
    pub fn glitches_per_10min(&self) -> f64 {
        self.glitches as f64 * 600.0 / self.seconds.max(1.0)
    }
}

/// The run's figures.
pub fn figures(
    sender: Sender,
    latency_ms: u32,
    seconds: f64,
    ups: &[Uplink],
    dec: &[serde_json::Value],
    offered: &[(f64, Vec<u64>)],
) -> Run {
    let rows: Vec<(f64, u64, u64)> = dec
        .iter()
        .filter_map(|l| {
            Some((
                l["t"].as_f64()?,
                l["input"]["bytes"].as_u64()?,
                l["decoder"]["frames_missing"].as_u64().unwrap_or(0),
            ))
        })
        .collect();
    let summary = dec.iter().find_map(|l| l.get("summary")).cloned().unwrap_or_default();
    // The decoder's clock starts about a second before the encoder's.
    let t0 = rows.iter().find(|r| r.1 > 0).map_or(0.0, |r| r.0 - 1.0);
    let arrived: Vec<(f64, f64)> = rows
        .windows(2)
        .map(|w| (w[1].0 - t0, w[1].1.saturating_sub(w[0].1) as f64 * 8.0 / 1000.0 / (w[1].0 - w[0].0).max(0.1)))
        .filter(|(t, _)| *t >= 0.0 && *t <= seconds)
        .collect();
    let mut per_second: Vec<f64> = arrived.iter().map(|a| a.1).collect();
    let total = rows.last().map_or(0, |r| r.1);
    let mut glitches = 0;
    let mut in_glitch = false;
    for w in rows.windows(2) {
        let missing = w[1].2 > w[0].2;
        if missing && !in_glitch {
            glitches += 1;
        }
        in_glitch = missing;
    }
    per_second.retain(|k| *k > 0.0);
    per_second.sort_by(f64::total_cmp);
    let p10 = per_second.get(per_second.len() / 10).copied().unwrap_or(0.0);
    let steps = (seconds * 10.0) as usize;
    let capacity = (0..steps).map(|i| ups.iter().map(|u| u.capacity_at(i as f64 / 10.0)).sum::<f64>()).sum::<f64>()
        / steps.max(1) as f64;
    let last = offered.last().map(|r| r.1.clone()).unwrap_or_default();
    let all: u64 = last.iter().sum();
    Run {
        sender,
        latency_ms,
        seconds,
        mean_kbps: total as f64 * 8.0 / 1000.0 / seconds,
        p10_kbps: p10,
        capacity_kbps: capacity,
        frames_lost: summary["decoder"]["frames_missing"].as_u64().unwrap_or(0),
        glitches,
        dead_sending_s: ups
            .iter()
            .enumerate()
            .filter_map(|(i, u)| Some((u.name.to_string(), sending_into_dead(offered, i, u.outage?))))
            .collect(),
        shares: ups
            .iter()
            .enumerate()
            .map(|(i, u)| (u.name.to_string(), last.get(i).copied().unwrap_or(0) as f64 * 100.0 / all.max(1) as f64))
            .collect(),
        arrived,
        switches_per_min: switches(offered) * 60.0 / seconds.max(1.0),
    }
}

/// Changes of the uplink offered the most datagrams, second by second.
fn switches(offered: &[(f64, Vec<u64>)]) -> f64 {
    let seconds: Vec<&(f64, Vec<u64>)> = offered.iter().step_by(10).collect();
    let leaders: Vec<Option<usize>> = seconds
        .windows(2)
        .map(|w| {
            let sent: Vec<u64> = w[1].1.iter().zip(&w[0].1).map(|(b, a)| b.saturating_sub(*a)).collect();
            // A second with next to nothing sent has no leader.
            (sent.iter().sum::<u64>() > 20).then(|| (0..sent.len()).max_by_key(|&i| sent[i])).flatten()
        })
        .collect();
    let known: Vec<usize> = leaders.into_iter().flatten().collect();
    known.windows(2).filter(|w| w[0] != w[1]).count() as f64
}

/// One plot per latency: the summed capacity and what arrived of each sender's stream.
pub fn plots(runs: &[Run], ups: &[Uplink], out: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut latencies: Vec<u32> = runs.iter().map(|r| r.latency_ms).collect();
    latencies.dedup();
    let mut made = Vec::new();
    for latency in latencies {
        let seconds = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
        let capacity = (0..(seconds as usize))
            .map(|t| (t as f64, ups.iter().map(|u| u.capacity_at(t as f64)).sum::<f64>()))
            .collect();
        let mut series = vec![crate::plot::Series { label: "summed capacity".into(), points: capacity }];
        for r in runs.iter().filter(|r| r.latency_ms == latency) {
            series.push(crate::plot::Series {
                label: format!("{}: arrived", r.sender.name()),
                points: r.arrived.clone(),
            });
        }
        let path = out.join(format!("bond-{latency}.png"));
        let title = format!("bonding over three uplinks, SRT latency {latency} ms");
        crate::plot::lines(&path, &title, "seconds", "kbit/s", &series)?;
        made.push(path);
    }
    Ok(made)
}

/// How long after an outage began uplink `i` was still offered data (more than 30 datagrams a
/// second over half a second: keepalives and registrations are fewer); `None` if all along.
fn sending_into_dead(offered: &[(f64, Vec<u64>)], i: usize, (at, len): (f64, f64)) -> Option<f64> {
    let at_or_after = |t: f64| offered.iter().position(|r| r.0 >= t);
    let start = at_or_after(at)?;
    for k in start..offered.len() {
        let (t, ref row) = offered[k];
        if t >= at + len {
            return None;
        }
        let later = offered.get(k + 5)?;
        let sent = later.1[i].saturating_sub(row[i]);
        if (sent as f64) < 30.0 * (later.0 - t) {
            return Some(t - at);
        }
    }
    None
}

/// One run as a line for the log.
pub fn row(r: &Run) -> String {
    let dead: Vec<String> = r
        .dead_sending_s
        .iter()
        .map(|(n, s)| format!("{n} {}", s.map_or("all along".to_string(), |s| format!("{s:.1} s"))))
        .collect();
    let shares: Vec<String> = r.shares.iter().map(|(n, s)| format!("{n} {s:.0} %")).collect();
    format!(
        "| {} | {} ms | {:.0} kbit/s (p10 {:.0}) | {:.0} % | {} | {:.1} | {} | {} | {:.1} |",
        r.sender.name(),
        r.latency_ms,
        r.mean_kbps,
        r.p10_kbps,
        r.mean_kbps * 100.0 / r.capacity_kbps.max(1.0),
        r.frames_lost,
        r.glitches_per_10min(),
        dead.join(", "),
        shares.join(", "),
        r.switches_per_min,
    )
}

/// The Markdown table.
pub fn table(runs: &[Run], ups: &[Uplink]) -> String {
    let mut s = String::from(
        "| sender | SRT latency | bitrate arrived (p10) | of the summed capacity | frames lost for good | glitches / 10 min | kept sending into a dead uplink | share per uplink | leading uplink changes / min |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        s.push_str(&row(r));
        s.push('\n');
    }
    let about: Vec<String> = ups
        .iter()
        .map(|u| {
            let out = u.outage.map_or(String::new(), |(at, len)| format!(", out {len:.0} s at {at:.0} s"));
            format!("{} ({}, {:.0} ms, {} % loss{out})", u.name, u.addr, u.rtt_ms, u.loss_pct)
        })
        .collect();
    s.push_str(&format!("\nUplinks: {}; the marginal one's round trip swings 100-1200 ms.", about.join("; ")));
    // The lowest latency at which each sender lost no frame.
    for sender in [Sender::Ours, Sender::Srtla] {
        let clean = runs.iter().filter(|r| r.sender == sender && r.frames_lost == 0).map(|r| r.latency_ms).min();
        if runs.iter().any(|r| r.sender == sender) {
            let said = clean.map_or("none of those run".to_string(), |l| format!("{l} ms"));
            s.push_str(&format!("\nLowest SRT latency with no frame lost, {}: {said}.", sender.name()));
        }
    }
    s
}

/// The quick form's checks: the stream arrived, every uplink carried some, the dead ones were
/// noticed.
pub fn sane(runs: &[Run]) -> anyhow::Result<()> {
    for r in runs {
        anyhow::ensure!(r.mean_kbps > 300.0, "{}: only {:.0} kbit/s arrived", r.sender.name(), r.mean_kbps);
        for (name, share) in &r.shares {
            anyhow::ensure!(*share > 1.0, "{}: uplink {name} carried {share:.1} % of the datagrams", r.sender.name());
        }
        for (name, s) in &r.dead_sending_s {
            anyhow::ensure!(s.is_some(), "{}: kept sending into {name} all through its outage", r.sender.name());
        }
    }
    Ok(())
}
