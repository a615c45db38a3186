//! Adaptive bitrate on changing links: our encoder through the link emulator, with the same
//! seeded capacity traces, three ways: a fixed bitrate, belacoder's rule (the baseline, in
//! `belacoder.rs`) and ours (`telebridge_rate::Adaptive`, as configured by default,
//! and with the frame rate halved under its floor, to choose that setting's default). The
//! encoder runs in this process (so the baseline can drive it), the link emulator too, our
//! decoder in its own; per run: the frames a viewer does not see (lost for good at the receiver,
//! gaps in the burnt-in timecode, and left out on purpose at half the frame rate), seconds with
//! any loss, the mean and 10th percentile of the bitrate that arrived, the time to recover after
//! a capacity drop; per trace a plot of what each sent against the capacity.

mod belacoder;
mod logs;
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use telebridge_sync::Locked;

use anyhow::Context;
use linkemu::{CapacityTrace, Impairment, LinkParams};
use telebridge_appliance::{RunOptions, StatsSample};
use telebridge_rate::{Bounds, LawFactory, RateLaw};

use crate::plot::{self, Series};
use report::{figures, Figures};

/// The most the encoder sends, and the least (video, kbit/s); the same for every mode.
const MAX_KBPS: u32 = 6000;
const MIN_KBPS: u32 = 500;

/// A trace and the link around it.
struct Case {
    name: &'static str,
    about: &'static str,
    rtt_ms: f64,
    jitter_ms: f64,
    loss_pct: f64,
    queue_ms: f64,
    latency_ms: u32,
    seconds: f64,
    trace: CapacityTrace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fixed,
    Belacoder,
    /// Ours with the configuration's defaults.
    Ours,
    /// Ours with the frame rate halved under the floor (`video.frame_rate_step_down`).
    OursHalfRate,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Fixed => "fixed 6 Mbit/s",
            Mode::Belacoder => "belacoder's rule",
            Mode::Ours => "ours",
            Mode::OursHalfRate => "ours, half frame rate under the floor",
        }
    }
    fn file(self) -> &'static str {
        match self {
            Mode::Fixed => "fixed",
            Mode::Belacoder => "belacoder",
            Mode::Ours => "ours",
            Mode::OursHalfRate => "ours-half-rate",
        }
    }
}

/// One second of a run.
#[derive(Debug, Clone)]
struct Second {
    t: f64,
    /// What the encoder was asked for (video, kbit/s; at half the frame rate, half its bitrate).
    chosen_kbps: f64,
    /// What arrived at the receiver (the whole stream, kbit/s).
    arrived_kbps: f64,
    /// Frames lost for good so far at the receiver.
    missing: u64,
    /// The link's capacity then, kbit/s.
    capacity_kbps: f64,
}

struct Run {
    mode: Mode,
    seconds: Vec<Second>,
    frames_missing: u64,
    /// Frames the encoder left out on purpose (the frame rate stepped down under the floor).
    frames_skipped: u64,
}

fn cases(quick: bool, traces_dir: &Path) -> anyhow::Result<Vec<Case>> {
    let t = |s: &str| CapacityTrace::parse(s).map_err(anyhow::Error::from);
    if quick {
        return Ok(vec![Case {
            name: "steps-quick",
            about: "8 -> 2 -> 5 Mbit/s, 8 s each",
            rtt_ms: 60.0,
            jitter_ms: 2.0,
            loss_pct: 0.1,
            queue_ms: 250.0,
            latency_ms: 500,
            seconds: 26.0,
            trace: t("steps:8000@0,2000@8,5000@16")?,
        }]);
    }
    let venue = traces_dir.join("venue-uplink.csv");
    Ok(vec![
        Case {
            name: "steps",
            about: "8 -> 2 -> 5 Mbit/s (a venue line shared with others, then freed)",
            rtt_ms: 60.0,
            jitter_ms: 2.0,
            loss_pct: 0.1,
            queue_ms: 250.0,
            latency_ms: 500,
            seconds: 80.0,
            trace: t("steps:8000@0,2000@20,5000@50")?,
        },
        Case {
            name: "fade",
            about: "8 fading to 1.5 Mbit/s over a minute (driving out of coverage)",
            rtt_ms: 60.0,
            jitter_ms: 2.0,
            loss_pct: 0.1,
            queue_ms: 250.0,
            latency_ms: 500,
            seconds: 80.0,
            trace: t("fade:8000-1500@10-70")?,
        },
        Case {
            name: "4g-1",
            about: "4G uplink around 5 Mbit/s, seed 1 (the 4g-fixed link: 150 ms, 0.3 % loss, 300 ms buffer)",
            rtt_ms: 150.0,
            jitter_ms: 4.0,
            loss_pct: 0.3,
            queue_ms: 300.0,
            latency_ms: 1000,
            seconds: 120.0,
            trace: t("4g:5000@120:1")?,
        },
        Case {
            name: "4g-2",
            about: "4G uplink around 5 Mbit/s, seed 2",
            rtt_ms: 150.0,
            jitter_ms: 4.0,
            loss_pct: 0.3,
            queue_ms: 300.0,
            latency_ms: 1000,
            seconds: 120.0,
            trace: t("4g:5000@120:2")?,
        },
        Case {
            name: "venue-file",
            about: "a trace file (bench/traces/venue-uplink.csv): a 10 Mbit/s line that others fill at times",
            rtt_ms: 30.0,
            jitter_ms: 1.0,
            loss_pct: 0.05,
            queue_ms: 150.0,
            latency_ms: 400,
            seconds: 90.0,
            trace: CapacityTrace::from_csv_file(&venue)?,
        },
    ])
}

fn law(mode: Mode) -> (Option<LawFactory>, Option<Duration>, &'static str) {
    match mode {
        Mode::Fixed => (None, None, "fixed"),
        Mode::Ours | Mode::OursHalfRate => (None, None, "adaptive"),
        Mode::Belacoder => {
            let (f, step) = belacoder_law();
            (Some(f), Some(step), "fixed")
        }
    }
}

/// The benchmarks' encoder, in this process (so belacoder's rule can drive it): the 720p30 test
/// source, at most MAX_KBPS and at least MIN_KBPS of video.
pub(crate) struct Encoder {
    /// `fixed` (with a law of the bench's own, or none) or `adaptive` (ours).
    pub bitrate_mode: &'static str,
    /// Ours with the frame rate halved under its floor.
    pub half_rate: bool,
    /// A law of the bench's own (belacoder's) and its step.
    pub rate_law: Option<LawFactory>,
    pub rate_step: Option<Duration>,
    /// How long.
    pub seconds: f64,
}

impl Encoder {
    /// Encodes to the SRT `url`, the law's steps in `rate_trace`; its one-second samples.
    pub async fn run(self, url: String, rate_trace: PathBuf) -> anyhow::Result<Vec<StatsSample>> {
        let mut config = telebridge_config::Config::default();
        config.video.source = "test".into();
        config.video.width = 1280;
        config.video.height = 720;
        config.video.bitrate_kbps = MAX_KBPS;
        config.video.min_bitrate_kbps = MIN_KBPS;
        config.video.frame_rate_step_down = self.half_rate;
        config.video.bitrate_mode = self.bitrate_mode.into();
        config.outputs = vec![telebridge_config::OutputConfig::new(url)];
        let config = config.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let samples: Arc<Mutex<Vec<StatsSample>>> = Arc::default();
        let s = samples.clone();
        let options = RunOptions {
            duration: Some(Duration::from_secs_f64(self.seconds)),
            on_sample: Some(Arc::new(move |x: &StatsSample| s.locked().push(x.clone()))),
            rate_law: self.rate_law,
            rate_step: self.rate_step,
            // What the law saw and chose, step by step, for every run.
            rate_trace: Some(rate_trace),
            ..RunOptions::default()
        };
        telebridge_appliance::run_encoder(config, options, std::future::pending::<()>())
            .await
            .map_err(|e| anyhow::anyhow!("the encoder: {e}"))?;
        let samples = samples.locked().clone();
        Ok(samples)
    }
}

/// belacoder's rule as a law for our encoder, and its step (the bonding benchmark's baseline
/// runs it too).
pub(crate) fn belacoder_law() -> (LawFactory, Duration) {
    let f: LawFactory = Box::new(|b: Bounds| Box::new(belacoder::Belacoder::new(b)) as Box<dyn RateLaw>);
    (f, belacoder::STEP)
}

async fn one(case: &Case, mode: Mode, out: &Path, repeat: Option<usize>) -> anyhow::Result<Run> {
    let bin = crate::telebridge()?;
    let port = crate::free_udp_port()?;
    let tag = match repeat {
        Some(k) => format!("abr-{}-{}-{k}", case.name, mode.file()),
        None => format!("abr-{}-{}", case.name, mode.file()),
    };
    let dec_out = out.join(format!("{tag}-decoder.jsonl"));
    let mut decoder = crate::spawn_to(
        Command::new(&bin).args(["-q", "decode", "--sink", "fake", "--stats", "json"]).args([
            "--input",
            &format!("srt://:{port}?mode=listener&latency={}", case.latency_ms),
            "--duration",
            &format!("{}s", case.seconds as u64 + 5),
        ]),
        &dec_out,
    )?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let params = LinkParams {
        one_way_delay: Duration::from_secs_f64(case.rtt_ms / 2000.0),
        jitter: Duration::from_secs_f64(case.jitter_ms / 1000.0),
        loss_pct: case.loss_pct,
        rate_kbps: 0.0,
        queue: Duration::from_secs_f64(case.queue_ms / 1000.0),
        ..LinkParams::default()
    };
    // The trace starts with the encoder: the same seconds of capacity for every mode.
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse()?,
        format!("127.0.0.1:{port}").parse()?,
        Impairment::new(params.clone(), Vec::new(), 11).with_trace(case.trace.clone()),
        Impairment::new(params, Vec::new(), 12),
    )
    .await?;
    // What the link did, every 100 ms from its start (the trace's clock).
    let link_log =
        logs::spawn_link_log(relay.forward.clone(), case.trace.clone(), out.join(format!("{tag}-link.jsonl")));

    let (rate_law, rate_step, bitrate_mode) = law(mode);
    let url = format!("srt://127.0.0.1:{}?latency={}", relay.listen.port(), case.latency_ms);
    let encoder =
        Encoder { bitrate_mode, half_rate: mode == Mode::OursHalfRate, rate_law, rate_step, seconds: case.seconds };
    let enc = encoder.run(url, out.join(format!("{tag}-rate.jsonl"))).await?;
    let status = tokio::task::spawn_blocking(move || decoder.wait()).await??;
    anyhow::ensure!(status.success(), "the decoder: {status}");
    link_log.abort();
    drop(relay);

    logs::write_encoder_log(&enc, out.join(format!("{tag}-encoder.jsonl")))?;
    let dec = crate::json_lines(&dec_out);
    let dec_rows: Vec<(f64, u64, u64)> = dec
        .iter()
        .filter_map(|l| {
            Some((
                l["t"].as_f64()?,
                l["input"]["bytes"].as_u64().unwrap_or(0),
                l["decoder"]["frames_missing"].as_u64().unwrap_or(0),
            ))
        })
        .collect();
    let summary = dec.iter().find_map(|l| l.get("summary").cloned()).unwrap_or_default();
    // The decoder started 0.7 s before the encoder: its clock is ahead by that.
    let offset = 0.7;
    let mut seconds = Vec::new();
    for w in dec_rows.windows(2) {
        let t = w[1].0 - offset;
        if t < 0.0 || t > case.seconds {
            continue;
        }
        let dt = (w[1].0 - w[0].0).max(0.1);
        let chosen = enc
            .iter()
            .rev()
            .find(|e| e.t <= t)
            .map(|e| e.rate.as_ref().map_or(f64::from(MAX_KBPS), |r| f64::from(r.video_kbps / r.one_frame_in.max(1))))
            .unwrap_or(f64::from(MAX_KBPS));
        seconds.push(Second {
            t,
            chosen_kbps: chosen,
            arrived_kbps: w[1].1.saturating_sub(w[0].1) as f64 * 8.0 / 1000.0 / dt,
            missing: w[1].2,
            capacity_kbps: case.trace.rate_at(Duration::from_secs_f64(t.max(0.0))).unwrap_or(0.0),
        });
    }
    std::fs::write(out.join(format!("{tag}.csv")), logs::csv(&seconds))?;
    Ok(Run {
        mode,
        seconds,
        frames_missing: summary["decoder"]["frames_missing"].as_u64().unwrap_or(0),
        frames_skipped: enc.last().map_or(0, |e| e.encoder.frames_skipped),
    })
}

/// Runs every trace three ways, writes CSV and PNG, prints the table.
/// `only_traces` and `only_modes` (by name; empty: all) pick some, to look at one closely;
/// `repeats` runs each that many times (the table then gives medians and spreads).
pub async fn run(
    out: &Path,
    quick: bool,
    only_traces: &[String],
    only_modes: &[String],
    repeats: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(repeats >= 1, "--repeats: {repeats}; at least 1");
    let traces_dir = PathBuf::from("bench/traces");
    let mut cases = cases(quick, &traces_dir)?;
    if !only_traces.is_empty() {
        let names: Vec<&str> = cases.iter().map(|c| c.name).collect();
        for t in only_traces {
            anyhow::ensure!(
                names.contains(&t.as_str()),
                "--traces: no trace {t:?}; the traces are {}",
                names.join(", ")
            );
        }
        cases.retain(|c| only_traces.iter().any(|t| t == c.name));
    }
    let all = [Mode::Fixed, Mode::Belacoder, Mode::Ours, Mode::OursHalfRate];
    for m in only_modes {
        anyhow::ensure!(
            all.iter().any(|a| a.file() == m),
            "--modes: no mode {m:?}; the modes are {}",
            all.map(Mode::file).join(", ")
        );
    }
    // The quick form checks the mechanism: the half-rate variant only when named.
    let modes: Vec<Mode> = all
        .into_iter()
        .filter(|a| match only_modes.is_empty() {
            true => !quick || *a != Mode::OursHalfRate,
            false => only_modes.iter().any(|m| m == a.file()),
        })
        .collect();
    println!("{}", report::HEADER);
    let mut verdicts = Vec::new();
    for case in &cases {
        std::fs::write(out.join(format!("abr-{}-trace.csv", case.name)), case.trace.to_csv())?;
        // (mode, its runs): the plot shows each mode's first.
        let mut all_runs: Vec<Vec<Run>> = Vec::new();
        for &mode in &modes {
            let mut runs = Vec::new();
            for k in 1..=repeats {
                eprintln!(
                    "{} ({}), {}, {} s, run {k} of {repeats} ...",
                    case.name,
                    case.about,
                    mode.label(),
                    case.seconds
                );
                let tag = (repeats > 1).then_some(k);
                runs.push(one(case, mode, out, tag).await.with_context(|| format!("{} {}", case.name, mode.label()))?);
            }
            all_runs.push(runs);
        }
        let mut series = vec![Series {
            label: "capacity".into(),
            points: case.trace.points().iter().filter(|p| p.0 <= case.seconds).map(|p| (p.0, p.1)).collect(),
        }];
        for r in all_runs.iter().filter_map(|runs| runs.first()) {
            series.push(Series {
                label: format!("{}: arrived", r.mode.label()),
                points: r.seconds.iter().map(|s| (s.t, s.arrived_kbps)).collect(),
            });
        }
        plot::lines(
            &out.join(format!("abr-{}.png", case.name)),
            &format!("{}: what arrived against the capacity", case.name),
            "seconds",
            "kbit/s",
            &series,
        )?;
        let figs: Vec<Vec<Figures>> =
            all_runs.iter().map(|runs| runs.iter().map(|r| figures(r, &case.trace)).collect()).collect();
        for (mode, f) in modes.iter().zip(&figs) {
            println!("{}", report::row(case.name, *mode, f));
        }
        verdicts.push((case.name, figs, all_runs));
    }
    println!(
        "\nCSV and plots: {0}/abr-TRACE-MODE.csv, {0}/abr-TRACE.png; traces: {0}/abr-TRACE-trace.csv",
        out.display()
    );
    for (name, f, _) in &verdicts {
        let of = |m: Mode| modes.iter().position(|&x| x == m).map(|i| &f[i]);
        if let (Some(b), Some(o)) = (of(Mode::Belacoder), of(Mode::Ours)) {
            println!("{}", report::verdict(name, b, o));
        }
        if let (Some(o), Some(h)) = (of(Mode::Ours), of(Mode::OursHalfRate)) {
            println!("{}", report::half_rate(name, o, h));
        }
    }
    if quick && modes == [Mode::Fixed, Mode::Belacoder, Mode::Ours] {
        let (_, f, runs) = &verdicts[0];
        let (f, runs): (Vec<&Figures>, Vec<&Run>) =
            (f.iter().map(|x| &x[0]).collect(), runs.iter().map(|x| &x[0]).collect());
        // The mechanism works: a fixed 6 Mbit/s over the 2 Mbit/s part loses frames; ours goes
        // under 2 Mbit/s there and above it again once the link has 5.
        anyhow::ensure!(f[0].lost > 0, "a fixed 6 Mbit/s over a 2 Mbit/s link lost nothing: the trace did not apply");
        let ours = &runs[2].seconds;
        let low = ours.iter().filter(|s| (8.0..16.0).contains(&s.t)).map(|s| s.chosen_kbps).fold(f64::MAX, f64::min);
        let high = ours.iter().filter(|s| s.t >= 20.0).map(|s| s.chosen_kbps).fold(0.0, f64::max);
        anyhow::ensure!(low < 2000.0, "ours never went under the 2 Mbit/s link: {low} kbit/s at least");
        anyhow::ensure!(high > 2200.0, "ours did not come back up on the 5 Mbit/s link: {high} kbit/s at most");
        eprintln!("quick check passed: the trace applies, ours follows it down ({low:.0}) and up ({high:.0} kbit/s)");
    }
    Ok(())
}
