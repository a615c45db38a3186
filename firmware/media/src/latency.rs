//! Glass-to-glass latency from timecodes read at the output: p50, p95 and max over a window.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub use telebridge_contract::measure::LatencySummary;

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

/// Buckets of 0.1 ms up to this latency, then of 10 ms.
const FINE_MS: f64 = 6_000.0;
/// The latest latency a bucket holds; later frames count in the last bucket.
const LAST_MS: f64 = 60_000.0;
const FINE_BUCKETS: usize = (FINE_MS * 10.0) as usize;
const BUCKETS: usize = FINE_BUCKETS + ((LAST_MS - FINE_MS) / 10.0) as usize + 1;

/// Latency over a whole run, however long, in fixed memory: a histogram (0.1 ms buckets up to
/// 6 s, 10 ms buckets up to 60 s; about 260 KB once the first frame is measured) and the exact
/// largest. A window of every frame grew by 2.6 MB an hour at 30 fps (a decoder box running for
/// a day would have held 62 MB), which the soak showed.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    counts: Vec<u32>,
    total: u64,
    max_ms: f64,
}

impl LatencyHistogram {
    fn bucket(ms: f64) -> usize {
        let ms = ms.clamp(0.0, LAST_MS);
        if ms < FINE_MS {
            (ms * 10.0) as usize
        } else {
            (FINE_BUCKETS + ((ms - FINE_MS) / 10.0) as usize).min(BUCKETS - 1)
        }
    }

    /// The middle of bucket `i`, ms.
    fn value(i: usize) -> f64 {
        if i < FINE_BUCKETS {
            i as f64 / 10.0 + 0.05
        } else {
            FINE_MS + (i - FINE_BUCKETS) as f64 * 10.0 + 5.0
        }
    }

    /// Adds a measurement.
    pub fn push(&mut self, latency_ms: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        let b = Self::bucket(latency_ms);
        self.counts[b] = self.counts[b].saturating_add(1);
        self.total += 1;
        self.max_ms = self.max_ms.max(latency_ms);
    }

    /// Percentiles of everything measured; `None` if nothing was.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.total == 0 {
            return None;
        }
        let pick = |q: f64| {
            // The same rank as the window's: the value at index round((n - 1) * q).
            let rank = ((self.total - 1) as f64 * q).round() as u64;
            let mut seen = 0u64;
            for (i, c) in self.counts.iter().enumerate() {
                seen += u64::from(*c);
                if seen > rank {
                    return Self::value(i).min(self.max_ms);
                }
            }
            self.max_ms
        };
        let r = |x: f64| (x * 10.0).round() / 10.0;
        Some(LatencySummary {
            p50_ms: r(pick(0.5)),
            p95_ms: r(pick(0.95)),
            max_ms: r(self.max_ms),
            samples: self.total as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_run_in_fixed_memory_gives_the_windows_percentiles() {
        let t0 = Instant::now();
        let mut w = LatencyWindow::new(Duration::from_secs(5));
        let mut h = LatencyHistogram::default();
        for i in 0..100 {
            w.push(t0, f64::from(i) + 0.25);
            h.push(f64::from(i) + 0.25);
        }
        let (a, b) = (w.summary(t0).unwrap(), h.summary().unwrap());
        assert_eq!((b.samples, b.max_ms), (a.samples, a.max_ms));
        assert!((a.p50_ms - b.p50_ms).abs() <= 0.1 && (a.p95_ms - b.p95_ms).abs() <= 0.1, "{a:?} {b:?}");
        // A day at 30 fps: the memory does not move.
        let size = h.counts.len();
        for i in 0..(86_400 * 30) {
            h.push(f64::from(i % 900));
        }
        assert_eq!(h.counts.len(), size);
        assert_eq!(h.summary().unwrap().samples, 100 + 86_400 * 30);
        // Very late frames land in the coarse buckets; the largest stays exact.
        let mut late = LatencyHistogram::default();
        late.push(7_123.0);
        late.push(7_123.0);
        late.push(90_000.0);
        let s = late.summary().unwrap();
        assert_eq!((s.p50_ms, s.max_ms), (7_125.0, 90_000.0));
        assert!(LatencyHistogram::default().summary().is_none());
    }

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
