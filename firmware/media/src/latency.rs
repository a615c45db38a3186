//! Glass-to-glass latency from timecodes read at the output: p50, p95 and max over a window.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Percentiles over the last few seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Frames measured in the window.
    pub samples: usize,
}

/// A sliding window of latency samples.
#[derive(Debug, Clone)]
pub struct LatencyWindow {
    window: Duration,
    samples: VecDeque<(Instant, f64)>,
}

impl LatencyWindow {
    /// Keeps samples for `window`.
    pub fn new(window: Duration) -> Self {
        Self { window, samples: VecDeque::new() }
    }

    /// Adds a measurement taken at `now`.
    pub fn push(&mut self, now: Instant, latency_ms: f64) {
        self.samples.push_back((now, latency_ms));
        while self.samples.front().is_some_and(|(t, _)| now.duration_since(*t) > self.window) {
            self.samples.pop_front();
        }
    }

    /// Percentiles of what is in the window as of `now`; `None` if nothing was measured.
    pub fn summary(&self, now: Instant) -> Option<LatencySummary> {
        let mut v: Vec<f64> =
            self.samples.iter().filter(|(t, _)| now.duration_since(*t) <= self.window).map(|(_, l)| *l).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let pick = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        let r = |x: f64| (x * 10.0).round() / 10.0;
        Some(LatencySummary {
            p50_ms: r(pick(0.5)),
            p95_ms: r(pick(0.95)),
            max_ms: r(v[v.len() - 1]),
            samples: v.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_the_window() {
        let t0 = Instant::now();
        let mut w = LatencyWindow::new(Duration::from_secs(5));
        for i in 0..100 {
            w.push(t0, f64::from(i));
        }
        let s = w.summary(t0).unwrap();
        assert_eq!((s.p50_ms, s.p95_ms, s.max_ms, s.samples), (50.0, 94.0, 99.0, 100));
        // Six seconds later the old samples are gone.
        let t1 = t0 + Duration::from_secs(6);
        w.push(t1, 300.0);
        let s = w.summary(t1).unwrap();
        assert_eq!((s.p50_ms, s.samples), (300.0, 1));
        assert!(LatencyWindow::new(Duration::from_secs(1)).summary(t1).is_none());
    }
}
