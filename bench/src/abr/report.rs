//! The table and the verdict, over one run of each trace and mode or several (`--repeats`:
//! runs of one law differ by tens of frames on the 4G traces, so a change is judged on the
//! median, with the spread beside it, and says whether the two laws' ranges overlap; equal
//! medians are decided by the runs' sum). The
//! verdict counts what a viewer misses: frames lost for good and frames left out on purpose
//! at half the frame rate alike.

use linkemu::CapacityTrace;

use super::{Mode, Run, Second};

/// The table's head.
pub(super) const HEADER: &str = "| trace | mode | frames not shown | of which lost for good | of which left out (half frame rate) | seconds with loss | mean kbit/s arrived | p10 kbit/s | worst recovery after a drop |\n|---|---|---|---|---|---|---|---|---|";

/// Figures of one run.
pub(super) struct Figures {
    pub lost: u64,
    /// Frames left out on purpose (half the frame rate under the floor).
    pub skipped: u64,
    pub lossy_seconds: usize,
    pub mean_kbps: f64,
    pub p10_kbps: f64,
    pub recovery_s: Option<f64>,
}

impl Figures {
    /// What the viewer misses: frames lost for good and frames left out.
    pub fn not_shown(&self) -> u64 {
        self.lost + self.skipped
    }
}

/// The drops of a trace: times where the capacity falls by 40 % or more within a second.
fn drops(trace: &CapacityTrace) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    let p = trace.points();
    for (i, &(t, r)) in p.iter().enumerate() {
        // The highest rate in force during the second before (the point before it included).
        let before = p[..i]
            .iter()
            .rev()
            .enumerate()
            .take_while(|&(k, &(u, _))| k == 0 || t - u <= 1.0)
            .map(|(_, &(_, x))| x)
            .fold(0.0, f64::max);
        if before > 0.0 && r <= before * 0.6 && out.last().is_none_or(|&l| t - l > 5.0) {
            out.push(t);
        }
    }
    out
}

pub(super) fn figures(run: &Run, trace: &CapacityTrace) -> Figures {
    let rows: Vec<&Second> = run.seconds.iter().filter(|s| s.t >= 2.0).collect();
    let lossy_seconds = run.seconds.windows(2).filter(|w| w[1].missing > w[0].missing).count();
    let mut rates: Vec<f64> = rows.iter().map(|s| s.arrived_kbps).collect();
    rates.sort_by(f64::total_cmp);
    let mean_kbps = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
    let p10_kbps = rates.get(rates.len() / 10).copied().unwrap_or(0.0);
    let worst = worst_recovery(&run.seconds, &drops(trace));
    Figures {
        lost: run.frames_missing,
        skipped: run.frames_skipped,
        lossy_seconds,
        mean_kbps,
        p10_kbps,
        recovery_s: worst,
    }
}

/// The middle value (the lower of the two middle ones for an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// A figure of one run, or of several as "median (lowest-highest)".
fn cell(figs: &[Figures], f: impl Fn(&Figures) -> f64, digits: usize) -> String {
    let xs: Vec<f64> = figs.iter().map(f).collect();
    let m = median(xs.clone());
    if xs.len() < 2 {
        return format!("{m:.digits$}");
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{m:.digits$} ({lo:.digits$}-{hi:.digits$})")
}

/// A drop with less of the run after it than this is left out of the recovery: three calm
/// seconds may not fit before the end (4g-1's last drop is 4.4 s before it), which is not a
/// link that never recovered.
const RECOVERY_ROOM_S: f64 = 10.0;

/// The worst recovery over `drops` (infinite: never; None: no drop to judge). Recovery: from a
/// drop until the first second from which 3 s pass with nothing lost and the encoder asking for
/// no more than the link carries.
fn worst_recovery(seconds: &[Second], drops: &[f64]) -> Option<f64> {
    let end = seconds.last().map_or(0.0, |s| s.t);
    let mut worst: Option<f64> = None;
    for &d in drops.iter().filter(|&&d| end - d >= RECOVERY_ROOM_S) {
        let after: Vec<&Second> = seconds.iter().filter(|s| s.t >= d).collect();
        let stream = |video: f64| (video + 128.0) * telebridge_rate::TS_OVERHEAD;
        let ok = |s: &Second, prev: u64| s.missing == prev && stream(s.chosen_kbps) <= s.capacity_kbps;
        let mut found = None;
        for i in 0..after.len() {
            let window = &after[i..after.len().min(i + 3)];
            if window.len() < 3 {
                break;
            }
            let base = if i == 0 { after[0].missing } else { after[i - 1].missing };
            if window.iter().all(|s| ok(s, base)) {
                found = Some(after[i].t - d);
                break;
            }
        }
        let r = found.unwrap_or(f64::INFINITY);
        worst = Some(worst.map_or(r, |w: f64| w.max(r)));
    }
    worst
}

/// The median of the frames not shown, of the mean bitrate and of the p10 bitrate.
pub(super) fn medians(figs: &[Figures]) -> (f64, f64, f64) {
    (
        median(figs.iter().map(|f| f.not_shown() as f64).collect()),
        median(figs.iter().map(|f| f.mean_kbps).collect()),
        median(figs.iter().map(|f| f.p10_kbps).collect()),
    )
}

/// One line of the table.
pub(super) fn row(trace: &str, mode: Mode, figs: &[Figures]) -> String {
    // The worst recovery over the runs (never: infinite).
    let worst =
        figs.iter().filter_map(|f| f.recovery_s).fold(None, |w: Option<f64>, r| Some(w.map_or(r, |w| w.max(r))));
    let rec = match worst {
        None => "no drop".to_string(),
        Some(x) if x.is_finite() => format!("{x:.0} s"),
        Some(_) => "never".to_string(),
    };
    format!(
        "| {trace} | {} | {} | {} | {} | {} | {} | {} | {rec} |",
        mode.label(),
        cell(figs, |f| f.not_shown() as f64, 0),
        cell(figs, |f| f.lost as f64, 0),
        cell(figs, |f| f.skipped as f64, 0),
        cell(figs, |f| f.lossy_seconds as f64, 0),
        cell(figs, |f| f.mean_kbps, 0),
        cell(figs, |f| f.p10_kbps, 0),
    )
}

/// Whether the runs tell `a` (fewer frames not shown) from `b`: every run of `a` showed more
/// frames than every run of `b`. One run each tells nothing.
fn told_apart(a: &[Figures], b: &[Figures]) -> bool {
    let worst_a = a.iter().map(Figures::not_shown).max();
    let best_b = b.iter().map(Figures::not_shown).min();
    a.len() > 1 && b.len() > 1 && matches!((worst_a, best_b), (Some(x), Some(y)) if x < y)
}

/// The runs' words: "medians of N runs", and whether the ranges overlap.
fn spread_words(a: &[Figures], b: &[Figures]) -> String {
    if a.len() < 2 || b.len() < 2 {
        return " (one run each: the 4G traces need repeats to judge)".to_string();
    }
    let apart = told_apart(a, b) || told_apart(b, a);
    format!(
        " (medians of {} runs; {})",
        a.len().min(b.len()),
        if apart { "the ranges do not overlap" } else { "the ranges overlap: not told apart" }
    )
}

/// The bar on one trace: ours shows at least as many frames as belacoder's rule (lost
/// and left out counted) at a mean bitrate at least as high; on the 4G traces strictly more
/// frames (medians over the repeats). The p10 bitrate is said beside.
/// Equal medians are decided by the frames not shown over all the runs together: a trace where
/// most runs lose nothing has a median of 0 whatever the rare run loses.
pub(super) fn verdict(name: &str, belacoder: &[Figures], ours: &[Figures]) -> String {
    use std::cmp::Ordering;
    let ((bn, bm, bp), (on, om, op)) = (medians(belacoder), medians(ours));
    let (bt, ot) = (total(belacoder), total(ours));
    let by_total = on == bn && belacoder.len() > 1 && ours.len() > 1;
    let order = if by_total { ot.cmp(&bt) } else { on.total_cmp(&bn) };
    let words = match order {
        Ordering::Less => "beats",
        Ordering::Equal if name.starts_with("4g") => "only EQUALS (the 4G bar is strictly more frames)",
        Ordering::Equal => "equals",
        Ordering::Greater => "LOSES TO",
    };
    let totals = if by_total { format!("; over all runs {ot} vs {bt}") } else { String::new() };
    format!(
        "{name}: ours {words} belacoder's rule on frames not shown ({on} vs {bn}{totals}), {} on mean bitrate ({om:.0} vs {bm:.0} kbit/s; p10 {op:.0} vs {bp:.0}){}",
        if om >= bm { "at least" } else { "UNDER" },
        spread_words(ours, belacoder),
    )
}

/// The frames not shown over all the runs together.
fn total(figs: &[Figures]) -> u64 {
    figs.iter().map(Figures::not_shown).sum()
}

/// The choice of `video.frame_rate_step_down`'s default: the half frame rate is worth having
/// only where it shows more frames than the full rate (medians over the repeats).
pub(super) fn half_rate(name: &str, full: &[Figures], half: &[Figures]) -> String {
    let ((fnot, fm, _), (hnot, hm, _)) = (medians(full), medians(half));
    let words = if hnot < fnot {
        "the half frame rate shows more frames"
    } else if hnot > fnot {
        "the half frame rate shows fewer frames"
    } else {
        "the half frame rate shows as many frames"
    };
    format!("{name}: {words} ({hnot} vs {fnot} not shown; mean {hm:.0} vs {fm:.0} kbit/s){}", spread_words(half, full))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(lost: u64, mean: f64) -> Figures {
        Figures { lost, skipped: 0, lossy_seconds: 1, mean_kbps: mean, p10_kbps: mean / 2.0, recovery_s: Some(3.0) }
    }

    fn left_out(f: Figures, skipped: u64) -> Figures {
        Figures { skipped, ..f }
    }

    #[test]
    fn one_run_reads_as_before_several_as_median_and_spread() {
        assert_eq!(
            row("4g-1", Mode::Ours, &[left_out(f(12, 1500.0), 5)]),
            "| 4g-1 | ours | 17 | 12 | 5 | 1 | 1500 | 750 | 3 s |"
        );
        let three = [f(40, 1400.0), f(12, 1500.0), f(90, 1300.0)];
        assert_eq!(
            row("4g-1", Mode::Ours, &three),
            "| 4g-1 | ours | 40 (12-90) | 40 (12-90) | 0 (0-0) | 1 (1-1) | 1400 (1300-1500) | 700 (650-750) | 3 s |"
        );
        assert_eq!(medians(&three), (40.0, 1400.0, 700.0));
    }

    #[test]
    fn the_verdict_is_on_the_medians_of_frames_not_shown() {
        let bela = [f(10, 700.0), f(150, 600.0), f(30, 800.0)];
        let ours = [f(25, 1400.0), f(20, 1500.0), f(200, 1300.0)];
        let v = verdict("4g-1", &bela, &ours);
        assert!(v.starts_with("4g-1: ours beats belacoder's rule on frames not shown (25 vs 30)"), "{v}");
        assert!(v.contains("p10 700 vs 350"), "{v}");
        assert!(v.ends_with("(medians of 3 runs; the ranges overlap: not told apart)"), "{v}");
        assert!(verdict("4g-2", &[f(5, 700.0)], &[f(5, 900.0)]).contains("only EQUALS"), "4G needs strictly fewer");
        assert!(verdict("fade", &[f(0, 700.0)], &[f(0, 900.0)]).contains("ours equals"));
        assert!(verdict("4g-2", &[f(5, 700.0)], &[f(6, 900.0)]).contains("LOSES TO"));
        assert!(verdict("steps", &[f(5, 700.0)], &[f(5, 600.0)]).contains("UNDER"));
        // Frames left out count: 2 lost + 30 left out is worse than 20 lost.
        let v = verdict("4g-2", &[f(20, 700.0), f(22, 700.0)], &[left_out(f(2, 900.0), 30), left_out(f(3, 900.0), 28)]);
        assert!(v.contains("LOSES TO belacoder's rule on frames not shown (31 vs 20)"), "{v}");
        assert!(v.ends_with("the ranges do not overlap)"), "{v}");
        // Equal medians: the runs together decide, and the words say so.
        let (bela, ours) = ([f(0, 700.0), f(0, 700.0), f(3, 700.0)], [f(0, 900.0), f(1, 900.0), f(0, 900.0)]);
        let v = verdict("4g-2", &bela, &ours);
        assert!(
            v.starts_with("4g-2: ours beats belacoder's rule on frames not shown (0 vs 0; over all runs 1 vs 3)"),
            "{v}"
        );
        let v = verdict("4g-2", &ours, &bela);
        assert!(v.contains("LOSES TO belacoder's rule on frames not shown (0 vs 0; over all runs 3 vs 1)"), "{v}");
        assert!(verdict("4g-2", &ours, &ours).contains("only EQUALS"));
    }

    #[test]
    fn the_half_rate_is_judged_on_frames_shown() {
        let full = [f(40, 1300.0), f(50, 1250.0), f(60, 1200.0)];
        let half = [left_out(f(10, 1350.0), 150), left_out(f(20, 1300.0), 180), left_out(f(5, 1320.0), 140)];
        let v = half_rate("4g-1", &full, &half);
        assert_eq!(
            v,
            "4g-1: the half frame rate shows fewer frames (160 vs 50 not shown; mean 1320 vs 1250 kbit/s) (medians of 3 runs; the ranges do not overlap)"
        );
        assert!(half_rate("steps", &full, &full).contains("as many frames"));
    }

    /// One second a row: (t, chosen video kbit/s, frames lost so far, capacity kbit/s).
    fn run(rows: &[(f64, f64, u64, f64)]) -> Vec<Second> {
        rows.iter()
            .map(|&(t, chosen_kbps, missing, capacity_kbps)| Second {
                t,
                chosen_kbps,
                arrived_kbps: chosen_kbps,
                missing,
                capacity_kbps,
            })
            .collect()
    }

    #[test]
    fn recovery_is_to_three_calm_seconds_and_leaves_out_a_drop_too_near_the_end() {
        // A drop at 10 s: over the link until 13, lost frames at 14, calm from 15.
        let mut rows: Vec<(f64, f64, u64, f64)> = (0..40).map(|t| (f64::from(t), 1000.0, 0, 3000.0)).collect();
        for r in &mut rows[10..14] {
            r.1 = 4000.0;
        }
        for r in &mut rows[14..] {
            r.2 = 5;
        }
        assert_eq!(worst_recovery(&run(&rows), &[10.0]), Some(5.0));
        // A drop 4 s before the end, over the link to the end: three calm seconds could not
        // fit, so it is left out, not counted as "never".
        let mut late = rows.clone();
        for r in &mut late[36..] {
            r.1 = 4000.0;
        }
        assert_eq!(worst_recovery(&run(&late), &[10.0, 36.0]), Some(5.0));
        // Over the link from a drop to the end, with room to recover: never.
        for r in &mut rows[20..] {
            r.1 = 4000.0;
        }
        assert_eq!(worst_recovery(&run(&rows), &[10.0, 20.0]), Some(f64::INFINITY));
        assert_eq!(worst_recovery(&run(&rows), &[]), None);
    }
}
