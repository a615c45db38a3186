//! What the box measures of its own pictures and sound, as it reports it: glass-to-glass
//! latency and lip sync over a window (media measures; the status and the panel carry these).

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

/// EBU R37: the sound at most 60 ms after the picture (-) and 40 ms before it (+).
pub const TOLERANCE_MS: (f64, f64) = (-60.0, 40.0);

/// The offset of the events of the last few seconds, ms: picture time less sound time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AvOffsetSummary {
    /// Median, ms.
    pub p50_ms: f64,
    /// Most negative (sound furthest behind), ms.
    pub min_ms: f64,
    /// Most positive (sound furthest ahead), ms.
    pub max_ms: f64,
    /// The one furthest from zero, with its sign, ms.
    pub worst_ms: f64,
    /// Events measured.
    pub events: usize,
    /// Whether every one is within EBU R37 ([`TOLERANCE_MS`]).
    pub within_tolerance: bool,
}

impl AvOffsetSummary {
    /// Summary of offsets, ms; `None` if there are none.
    pub fn of(offsets: &[f64]) -> Option<Self> {
        if offsets.is_empty() {
            return None;
        }
        let mut v = offsets.to_vec();
        v.sort_by(f64::total_cmp);
        let r = |x: f64| (x * 10.0).round() / 10.0;
        let (min, max) = (v[0], v[v.len() - 1]);
        let worst = if min.abs() > max.abs() { min } else { max };
        Some(Self {
            p50_ms: r(v[(v.len() - 1) / 2]),
            min_ms: r(min),
            max_ms: r(max),
            worst_ms: r(worst),
            events: v.len(),
            within_tolerance: min >= TOLERANCE_MS.0 && max <= TOLERANCE_MS.1,
        })
    }
}
