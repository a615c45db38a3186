//! Benchmark 6: fan-out, in the table layout of the Raspberry Pi server study (connections, CPU,
//! memory, expected against actual bandwidth). One encoder listens; 1, 10, 25, 50 decoders call
//! it at once (`--sink fake`); streams are 320x180 at 580 kbit/s video, the study's rate per
//! connection. The encoder's CPU and RSS are read from /proc over the steady state.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;

struct Row {
    callers: usize,
    connected: u64,
    cpu_pct: f64,
    rss_mb: f64,
    expected_mbps: f64,
    actual_mbps: f64,
    decoders_with_video: usize,
}

fn one(out: &Path, callers: usize, seconds: u64) -> anyhow::Result<Row> {
    let bin = crate::telebridge()?;
    let port = crate::free_udp_port()?;
    let enc_out = out.join(format!("fanout-{callers}-encoder.jsonl"));
    let total = seconds + 8;
    let mut encoder = crate::spawn_to(
        Command::new(&bin)
            .args(["-q", "encode", "--bitrate-mode", "fixed", "--source", "test", "--size", "320x180"])
            .args(["--bitrate-kbps", "580", "--stats", "json"])
            .args(["--output", &format!("srt://:{port}?mode=listener"), "--duration", &format!("{total}s")]),
        &enc_out,
    )?;
    std::thread::sleep(Duration::from_millis(800));
    let mut decoders = Vec::new();
    for i in 0..callers {
        let path = out.join(format!("fanout-{callers}-decoder{i}.jsonl"));
        decoders.push(crate::spawn_to(
            Command::new(&bin).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
                "--input",
                &format!("srt://127.0.0.1:{port}"),
                "--duration",
                &format!("{}s", total - 2),
            ]),
            &path,
        )?);
    }
    // Steady state: from 4 s after the last caller started, for `seconds`.
    std::thread::sleep(Duration::from_secs(4));
    let pid = encoder.id();
    let (t0, sent0) = (crate::ticks(pid)?, std::time::Instant::now());
    let mut rss = Vec::new();
    for _ in 0..seconds {
        std::thread::sleep(Duration::from_secs(1));
        rss.push(crate::rss_kb(pid));
    }
    let cpu_pct = (crate::ticks(pid)? - t0) as f64 / 100.0 / sent0.elapsed().as_secs_f64() * 100.0;
    let enc_status = encoder.wait()?;
    for d in &mut decoders {
        let _ = d.wait();
    }
    anyhow::ensure!(enc_status.success(), "encoder {enc_status}");
    // Bandwidth: the listener's send rate summed over its callers (libsrt's own estimate),
    // averaged over the steady state.
    let lines = crate::json_lines(&enc_out);
    let (from, to) = (6.0, 6.0 + seconds as f64);
    let rates: Vec<f64> = lines
        .iter()
        .filter(|l| l["t"].as_f64().is_some_and(|t| (from..=to).contains(&t)))
        .filter_map(|l| l["outputs"][0]["srt"]["send_rate_mbps"].as_f64())
        .collect();
    let actual_mbps = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
    let connected = lines.iter().filter_map(|l| l["outputs"][0]["callers"].as_u64()).max().unwrap_or(0);
    let decoders_with_video = (0..callers)
        .filter(|i| {
            crate::json_lines(&out.join(format!("fanout-{callers}-decoder{i}.jsonl")))
                .iter()
                .find_map(|l| l.get("summary").cloned())
                .is_some_and(|s| s["decoder"]["frames_decoded"].as_u64().unwrap_or(0) > 100)
        })
        .count();
    // 580 kbit/s video + 128 kbit/s AAC + MPEG-TS overhead (~4 %) per caller.
    let expected_mbps = callers as f64 * (580.0 + 128.0) * 1.04 / 1000.0;
    let rss_mb = rss.iter().sum::<u64>() as f64 / rss.len().max(1) as f64 / 1024.0;
    Ok(Row { callers, connected, cpu_pct, rss_mb, expected_mbps, actual_mbps, decoders_with_video })
}

/// Runs each caller count and prints the table; in quick mode checks the figures.
pub fn run(out: &Path, quick: bool) -> anyhow::Result<()> {
    let counts: &[usize] = if quick { &[1, 3] } else { &[1, 10, 25, 50] };
    let seconds = if quick { 5 } else { 15 };
    let mut rows = Vec::new();
    for &n in counts {
        eprintln!("fan-out: {n} callers, {seconds} s ...");
        rows.push(one(out, n, seconds).with_context(|| format!("{n} callers"))?);
    }
    println!("| callers | connected | encoder CPU (1 core = 100 %) | encoder RSS | expected bandwidth | actual bandwidth | decoders with video |");
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} % | {:.1} MB | {:.2} Mbit/s | {:.2} Mbit/s | {} / {} |",
            r.callers,
            r.connected,
            r.cpu_pct,
            r.rss_mb,
            r.expected_mbps,
            r.actual_mbps,
            r.decoders_with_video,
            r.callers
        );
    }
    let xs: Vec<f64> = rows.iter().map(|r| r.callers as f64).collect();
    let (rss_per, _, rss_r2) = fit(&xs, &rows.iter().map(|r| r.rss_mb).collect::<Vec<_>>());
    let (cpu_per, _, cpu_r2) = fit(&xs, &rows.iter().map(|r| r.cpu_pct).collect::<Vec<_>>());
    println!(
        "\nPer caller (least squares over {} to {} callers): RSS {:.2} MB (r2 {:.3}), CPU {:.2} % of a core (r2 {:.3})",
        counts[0],
        counts[counts.len() - 1],
        rss_per,
        rss_r2,
        cpu_per,
        cpu_r2
    );
    if quick {
        for r in &rows {
            anyhow::ensure!(r.connected as usize == r.callers, "{} callers, {} connected", r.callers, r.connected);
            anyhow::ensure!(
                r.decoders_with_video == r.callers,
                "{} of {} decoders got video",
                r.decoders_with_video,
                r.callers
            );
            let ratio = r.actual_mbps / r.expected_mbps;
            anyhow::ensure!(
                (0.7..1.5).contains(&ratio),
                "{} callers: {:.2} Mbit/s sent for {:.2} expected",
                r.callers,
                r.actual_mbps,
                r.expected_mbps
            );
        }
        eprintln!("quick check passed: every caller connected, got video, and the bandwidth matches");
    }
    Ok(())
}

/// Least-squares line through (x, y): (slope, intercept, r²).
fn fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return (0.0, ys.first().copied().unwrap_or(0.0), 1.0);
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let syy: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let r2 = if sxx > 0.0 && syy > 0.0 { sxy * sxy / (sxx * syy) } else { 1.0 };
    (slope, my - slope * mx, r2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fit_finds_the_line() {
        let (slope, intercept, r2) = super::fit(&[1.0, 10.0, 25.0, 50.0], &[65.5, 68.2, 72.7, 80.2]);
        assert!((slope - 0.3).abs() < 1e-9 && (intercept - 65.2).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-9);
        let (_, _, r2) = super::fit(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]);
        assert!(r2 < 0.9, "{r2}");
    }
}
