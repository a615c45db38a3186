//! What each run leaves: its CSV, and for reading the rate traces, the link's own log (what
//! was offered, delivered and dropped at the bottleneck, every 100 ms) and the encoder's stats.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use linkemu::relay::DirectionCounters;
use linkemu::CapacityTrace;
use telebridge_appliance::StatsSample;

use super::Second;

/// Logs the link's forward direction to `path` every 100 ms from now (the trace's clock, which
/// starts with the relay), with the wall clock that the rate traces also carry, until aborted.
pub(super) fn spawn_link_log(
    forward: Arc<DirectionCounters>,
    trace: CapacityTrace,
    path: PathBuf,
) -> tokio::task::JoinHandle<()> {
    let start = tokio::time::Instant::now();
    tokio::spawn(async move {
        let Ok(mut file) = std::fs::File::create(&path) else { return };
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let t = start.elapsed();
            let line = serde_json::json!({
                "t": t.as_secs_f64(),
                "unix_s": telebridge_rate::unix_seconds(),
                "capacity_kbps": trace.rate_at(t),
                "forward": forward.snapshot(),
            });
            let _ = writeln!(file, "{line}");
        }
    })
}

/// Writes the encoder's stats, a line a second (libsrt's counters of the output among them).
pub(super) fn write_encoder_log(samples: &[StatsSample], path: PathBuf) -> std::io::Result<()> {
    let lines: String = samples.iter().filter_map(|e| serde_json::to_string(e).ok()).map(|l| l + "\n").collect();
    std::fs::write(path, lines)
}

/// The run's seconds as CSV.
pub(super) fn csv(rows: &[Second]) -> String {
    let mut s = String::from("t_s,capacity_kbps,chosen_video_kbps,arrived_kbps,frames_missing\n");
    for r in rows {
        let _ =
            writeln!(s, "{:.1},{:.0},{:.0},{:.0},{}", r.t, r.capacity_kbps, r.chosen_kbps, r.arrived_kbps, r.missing);
    }
    s
}
