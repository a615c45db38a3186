//! Capacity traces: the bottleneck's rate over time, the same for every run that replays it.
//!
//! A trace is a list of points (seconds from the link's start, kbit/s), each rate holding until
//! the next point; before the first point the link has its profile's rate. Traces come from a
//! spec string (`--trace`, a profile's `trace`):
//!
//! - `steps:8000@0,2000@20,5000@50`: rates and the second each starts;
//! - `fade:8000-1500@10-70`: from one rate to another, linearly between two times (a point
//!   every 100 ms);
//! - `4g:5000@120:7`: a cellular uplink around a mean rate for so many seconds, from a seed (a
//!   point every 100 ms; see [`CapacityTrace::cellular`]);
//! - `file:PATH`: a CSV file of `t_s,rate_kbps` lines (`#` comments and a header line allowed),
//!   the format [`CapacityTrace::to_csv`] writes, so a trace measured elsewhere can be replayed.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::rng::Rng;

/// Why a trace spec or file could not be used: the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace {spec:?}: {message}")]
pub struct TraceError {
    /// The spec (or file line) as given.
    pub spec: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// The bottleneck's rate over time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CapacityTrace {
    /// (start, seconds; rate, kbit/s), in time order.
    points: Vec<(f64, f64)>,
}

/// Between two points of a fade or a cellular trace.
const SAMPLE_S: f64 = 0.1;

impl CapacityTrace {
    /// From points (start in seconds, kbit/s), which must be in time order with rates > 0.
    pub fn from_points(points: Vec<(f64, f64)>) -> Result<Self, String> {
        if points.is_empty() {
            return Err("no points".into());
        }
        for w in points.windows(2) {
            if w[1].0 < w[0].0 {
                return Err(format!("{} s comes after {} s: points must be in time order", w[1].0, w[0].0));
            }
        }
        if let Some(&(t, r)) = points.iter().find(|&&(t, r)| !(t >= 0.0 && r > 0.0 && t.is_finite() && r.is_finite())) {
            return Err(format!("{r} kbit/s at {t} s: times must be 0 or more, rates more than 0"));
        }
        Ok(Self { points })
    }

    /// The rate in force at `now`; `None` before the first point.
    pub fn rate_at(&self, now: Duration) -> Option<f64> {
        let t = now.as_secs_f64();
        let i = self.points.partition_point(|&(at, _)| at <= t);
        (i > 0).then(|| self.points[i - 1].1)
    }

    /// The points.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// When the last point starts, seconds.
    pub fn last_change_s(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.0)
    }

    /// Rates that hold from given seconds.
    pub fn steps(points: &[(f64, f64)]) -> Result<Self, String> {
        Self::from_points(points.to_vec())
    }

    /// From `from` kbit/s at `t0` to `to` at `t1`, linearly, a point every 100 ms.
    pub fn fade(from: f64, to: f64, t0: f64, t1: f64) -> Result<Self, String> {
        if t1 <= t0 {
            return Err(format!("the fade ends at {t1} s, not after it starts at {t0} s"));
        }
        let n = ((t1 - t0) / SAMPLE_S).round() as usize;
        let points = (0..=n).map(|i| (t0 + i as f64 * SAMPLE_S, from + (to - from) * i as f64 / n as f64)).collect();
        Self::from_points(points)
    }

    /// A cellular uplink around `mean_kbps` for `seconds`, a point every 100 ms, from `seed`.
    ///
    /// The model, from what the SRT-over-4G study and drive tests show (capacity swinging by
    /// several times within seconds, and deep fades at cell edges and handovers): the log of the
    /// rate follows an AR(1) process, correlated over about two seconds (rho 0.95 per 100 ms),
    /// with a spread of 0.35 (one standard deviation: x0.7 to x1.4); on top, a fade (shadowing
    /// or a handover) starts with probability 1.5 % per 100 ms (about every 7 s) and lasts
    /// 0.5-3 s, during which the rate is 15-40 % of what it would be. Rates stay within 10 % and
    /// 250 % of the mean. The same seed gives the same trace on every machine.
    pub fn cellular(mean_kbps: f64, seconds: f64, seed: u64) -> Result<Self, String> {
        if !(mean_kbps > 0.0 && seconds > 0.0) {
            return Err(format!("a mean of {mean_kbps} kbit/s over {seconds} s: both must be more than 0"));
        }
        let mut rng = Rng::new(seed);
        let (rho, sigma) = (0.95f64, 0.35f64);
        let mut x = 0.0f64;
        let mut fade_left = 0u32;
        let mut depth = 1.0;
        let n = (seconds / SAMPLE_S).ceil() as usize;
        let mut points = Vec::with_capacity(n);
        for i in 0..n {
            x = rho * x + sigma * (1.0 - rho * rho).sqrt() * rng.normal();
            if fade_left == 0 && rng.unit() < 0.015 {
                fade_left = 5 + (rng.unit() * 25.0) as u32;
                depth = 0.15 + rng.unit() * 0.25;
            }
            let fade = if fade_left > 0 {
                fade_left -= 1;
                depth
            } else {
                1.0
            };
            let rate = (mean_kbps * (x - sigma * sigma / 2.0).exp() * fade).clamp(mean_kbps * 0.1, mean_kbps * 2.5);
            points.push((i as f64 * SAMPLE_S, rate.round()));
        }
        Self::from_points(points)
    }

    /// Parses a spec (see the module's documentation).
    pub fn parse(spec: &str) -> Result<Self, TraceError> {
        let bad = |message: String| TraceError { spec: spec.to_string(), message };
        let (kind, rest) = spec.split_once(':').ok_or_else(|| {
            bad("expected steps:RATE@S,..., fade:FROM-TO@S0-S1, 4g:MEAN@SECONDS:SEED or file:PATH".into())
        })?;
        let num = |s: &str, what: &str| -> Result<f64, TraceError> {
            s.trim().parse::<f64>().map_err(|_| bad(format!("{what} {s:?} is not a number")))
        };
        match kind {
            "steps" => {
                let mut points = Vec::new();
                for part in rest.split(',') {
                    let (rate, at) = part
                        .split_once('@')
                        .ok_or_else(|| bad(format!("{part:?}: expected RATE@SECONDS, e.g. 2000@20")))?;
                    points.push((num(at, "the time")?, num(rate, "the rate")?));
                }
                Self::steps(&points).map_err(bad)
            }
            "fade" => {
                let (rates, times) =
                    rest.split_once('@').ok_or_else(|| bad("expected FROM-TO@S0-S1, e.g. 8000-1500@10-70".into()))?;
                let (from, to) = rates.split_once('-').ok_or_else(|| bad(format!("{rates:?}: expected FROM-TO")))?;
                let (t0, t1) = times.split_once('-').ok_or_else(|| bad(format!("{times:?}: expected S0-S1")))?;
                Self::fade(num(from, "the rate")?, num(to, "the rate")?, num(t0, "the time")?, num(t1, "the time")?)
                    .map_err(bad)
            }
            "4g" => {
                let mut it = rest.split(':');
                let (mean, secs) = it
                    .next()
                    .and_then(|m| m.split_once('@'))
                    .ok_or_else(|| bad("expected MEAN@SECONDS:SEED, e.g. 5000@120:1".into()))?;
                let seed = it.next().ok_or_else(|| bad("expected MEAN@SECONDS:SEED: the seed is missing".into()))?;
                let seed =
                    seed.trim().parse::<u64>().map_err(|_| bad(format!("the seed {seed:?} is not a whole number")))?;
                Self::cellular(num(mean, "the mean")?, num(secs, "the length")?, seed).map_err(bad)
            }
            "file" => Self::from_csv_file(Path::new(rest)),
            other => Err(bad(format!("{other:?} is not one of steps, fade, 4g, file"))),
        }
    }

    /// Reads a CSV file of `t_s,rate_kbps` lines.
    pub fn from_csv_file(path: &Path) -> Result<Self, TraceError> {
        let spec = format!("file:{}", path.display());
        let text =
            std::fs::read_to_string(path).map_err(|e| TraceError { spec: spec.clone(), message: e.to_string() })?;
        Self::from_csv(&text).map_err(|message| TraceError { spec, message })
    }

    /// Parses `t_s,rate_kbps` lines (a header line and `#` comments are skipped).
    pub fn from_csv(text: &str) -> Result<Self, String> {
        let mut points = Vec::new();
        let mut header_allowed = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            // The first line that is not a comment may be a header (t_s,rate_kbps).
            if std::mem::take(&mut header_allowed) && line.starts_with(|c: char| c.is_ascii_alphabetic()) {
                continue;
            }
            let (t, r) =
                line.split_once(',').ok_or_else(|| format!("line {}: {line:?} is not t_s,rate_kbps", n + 1))?;
            let t = t.trim().parse::<f64>().map_err(|_| format!("line {}: the time {t:?} is not a number", n + 1))?;
            let r = r.trim().parse::<f64>().map_err(|_| format!("line {}: the rate {r:?} is not a number", n + 1))?;
            points.push((t, r));
        }
        Self::from_points(points)
    }

    /// The trace as CSV (`t_s,rate_kbps`), which [`CapacityTrace::from_csv`] reads back.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("t_s,rate_kbps\n");
        for (t, r) in &self.points {
            let _ = writeln!(s, "{t:.1},{r}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_until_the_next_one() {
        let t = CapacityTrace::parse("steps:8000@0,2000@20,5000@50").unwrap();
        assert_eq!(t.rate_at(Duration::from_secs(0)), Some(8000.0));
        assert_eq!(t.rate_at(Duration::from_secs_f64(19.9)), Some(8000.0));
        assert_eq!(t.rate_at(Duration::from_secs(20)), Some(2000.0));
        assert_eq!(t.rate_at(Duration::from_secs(300)), Some(5000.0));
        let late = CapacityTrace::parse("steps:2000@5").unwrap();
        assert_eq!(late.rate_at(Duration::from_secs(1)), None, "the profile's rate before the first point");
    }

    #[test]
    fn a_fade_goes_linearly() {
        let t = CapacityTrace::parse("fade:8000-2000@10-70").unwrap();
        assert_eq!(t.rate_at(Duration::from_secs(10)), Some(8000.0));
        assert!((t.rate_at(Duration::from_secs(40)).unwrap() - 5000.0).abs() < 1.0);
        assert_eq!(t.rate_at(Duration::from_secs(100)), Some(2000.0));
    }

    #[test]
    fn a_cellular_trace_swings_fades_and_repeats_by_seed() {
        let a = CapacityTrace::cellular(5000.0, 300.0, 1).unwrap();
        let b = CapacityTrace::parse("4g:5000@300:1").unwrap();
        let c = CapacityTrace::cellular(5000.0, 300.0, 2).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let rates: Vec<f64> = a.points().iter().map(|p| p.1).collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!((3500.0..6000.0).contains(&mean), "mean {mean}");
        // Swings by several times, and deep fades.
        let max = rates.iter().cloned().fold(0.0, f64::max);
        let min = rates.iter().cloned().fold(f64::MAX, f64::min);
        assert!(max / min > 4.0, "{min}..{max}");
        let faded = rates.iter().filter(|&&r| r < mean * 0.4).count();
        assert!(faded > 30, "{faded} points under 40 % of the mean");
        assert!(rates.iter().all(|&r| (500.0..=12_500.0).contains(&r)));
        // Within a second the rate changes, but not from one extreme to the other each step.
        let big_jumps = rates.windows(2).filter(|w| (w[1] / w[0]).ln().abs() > 1.0).count();
        assert!(big_jumps < rates.len() / 20, "{big_jumps} jumps of more than x2.7 in 100 ms");
    }

    #[test]
    fn csv_round_trips() {
        let a = CapacityTrace::cellular(3000.0, 20.0, 9).unwrap();
        assert_eq!(CapacityTrace::from_csv(&a.to_csv()).unwrap().points().len(), a.points().len());
        let b = CapacityTrace::from_csv("# a comment\nt_s,rate_kbps\n0,8000\n12.5,3000 # drop\n").unwrap();
        assert_eq!(b.points(), &[(0.0, 8000.0), (12.5, 3000.0)]);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let e = |s: &str| CapacityTrace::parse(s).unwrap_err().to_string();
        assert_eq!(e("ramp:1"), "trace \"ramp:1\": \"ramp\" is not one of steps, fade, 4g, file");
        assert_eq!(e("steps:8000"), "trace \"steps:8000\": \"8000\": expected RATE@SECONDS, e.g. 2000@20");
        assert_eq!(
            e("steps:8000@10,2000@5"),
            "trace \"steps:8000@10,2000@5\": 5 s comes after 10 s: points must be in time order"
        );
        assert_eq!(
            e("fade:8000-2000@70-10"),
            "trace \"fade:8000-2000@70-10\": the fade ends at 10 s, not after it starts at 70 s"
        );
        assert_eq!(e("4g:5000@60"), "trace \"4g:5000@60\": expected MEAN@SECONDS:SEED: the seed is missing");
        assert_eq!(e("steps:0@0"), "trace \"steps:0@0\": 0 kbit/s at 0 s: times must be 0 or more, rates more than 0");
        assert!(CapacityTrace::from_csv("0,8000\n1,x\n").unwrap_err().contains("line 2: the rate \"x\""));
    }
}
