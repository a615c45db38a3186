//! The dips a link took lately, for our law: on a link that keeps fading, how high the rate
//! may rise between fades. A pure record of (time, rate) events, stepped by the law.

use std::collections::VecDeque;
use std::time::Duration;

/// How long a dip (a capacity drop, or an overload) is remembered ...
const DIP_MEMORY: Duration = Duration::from_secs(30);
/// ... cuts within this of the last one being the same dip ...
const DIP_GAP: Duration = Duration::from_secs(3);
/// ... and on a link that dipped twice within DIP_MEMORY (a cellular one: fades every few
/// seconds), the rate rises no further than this many times the lowest rate a dip brought it
/// to. The next fade comes before the law can see it: what was sent at more than the link
/// then carries waits on the way and at home (the 4G traces: 20-50 frames lost at each fade
/// taken at 3-4 Mbit/s from a link that fell to 0.5-1.2).
pub const DIP_HEADROOM: f64 = 2.5;
/// Cuts that together take off this share of the rate or more are a dip, whatever path they
/// came by (a queueing cut takes 8 % off, or more to go 10 % under what the link carried: a
/// series this deep found the link far under the rate).
const DEEP_CUT: f64 = 0.3;

/// The dips of the last DIP_MEMORY.
#[derive(Debug, Clone, Default)]
pub struct Dips {
    /// (when the last cut of a dip was, the lowest rate it brought), oldest first.
    dips: VecDeque<(Duration, f64)>,
    /// The last rise was held back by the bound.
    held: bool,
    /// The milder cuts lately, as one series: (when the last was, the rate before the first).
    series: Option<(Duration, f64)>,
}

impl Dips {
    /// A deep cut (a capacity drop, an overload) brought the rate to `rate`.
    pub fn deep_cut(&mut self, now: Duration, rate: f64) {
        match self.dips.back_mut() {
            Some((t, r)) if now.saturating_sub(*t) <= DIP_GAP => {
                *t = now;
                *r = r.min(rate);
            }
            _ => self.dips.push_back((now, rate)),
        }
    }

    /// A milder cut brought the rate from `from` to `rate`: part of a dip when soon after one's
    /// cut, and a dip of its own when the bound held the rate (the link still fades) or when it
    /// and the cuts within DIP_GAP before it took off DEEP_CUT or more (a 4G fade read through
    /// the round trip, not as a capacity drop: in a rate trace of 4g-1 a fade cut 1.42 Mbit/s
    /// to 0.71 so, 10 s after the last dip; not counted, it left one dip in memory and no
    /// bound, and the rate climbed to 5.8 Mbit/s in 18 s, straight into the next fade, where 46
    /// frames were lost; in another, two cuts of 22 % each, 1.14 to 0.69).
    pub fn cut(&mut self, now: Duration, from: f64, rate: f64) {
        let start = match self.series {
            Some((t, start)) if now.saturating_sub(t) <= DIP_GAP => start,
            _ => from,
        };
        self.series = Some((now, start));
        let deep = rate <= start * (1.0 - DEEP_CUT);
        if deep || self.held || self.dips.back().is_some_and(|&(t, _)| now.saturating_sub(t) <= DIP_GAP) {
            self.deep_cut(now, rate);
        }
    }

    /// How high a rise to `wanted` may go, kbit/s (infinite unless the link dipped twice lately).
    pub fn bound(&mut self, now: Duration, wanted: f64) -> f64 {
        while self.dips.front().is_some_and(|&(t, _)| now.saturating_sub(t) > DIP_MEMORY) {
            self.dips.pop_front();
        }
        let bound = if self.dips.len() < 2 {
            f64::INFINITY
        } else {
            self.dips.iter().map(|&(_, r)| r).fold(f64::INFINITY, f64::min) * DIP_HEADROOM
        };
        self.held = wanted > bound;
        bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn two_dips_bound_the_rises_until_the_older_is_forgotten() {
        let mut d = Dips::default();
        d.deep_cut(S(10), 800.0);
        assert_eq!(d.bound(S(11), 5000.0), f64::INFINITY, "one dip is no fading link");
        // Cuts within 3 s of a dip's are the same dip: its lowest counts.
        d.deep_cut(S(20), 1200.0);
        d.cut(S(22), 700.0, 600.0);
        assert_eq!(d.bound(S(23), 5000.0), 600.0 * DIP_HEADROOM);
        // A mild cut far from any dip, the bound not holding: not a dip.
        d.bound(S(24), 1000.0);
        d.cut(S(30), 320.0, 300.0);
        assert_eq!(d.bound(S(31), 1000.0), 600.0 * DIP_HEADROOM);
        // 30 s after the first dip's last cut, one dip is left: no bound.
        assert_eq!(d.bound(S(41), 1000.0), f64::INFINITY);
    }

    #[test]
    fn a_cut_at_the_bound_keeps_the_fading_link_remembered() {
        let mut d = Dips::default();
        d.deep_cut(S(0), 500.0);
        d.deep_cut(S(10), 500.0);
        // The bound holds a rise; a fade then cuts mildly: a dip of its own.
        assert!(d.bound(S(20), 1300.0) < 1300.0);
        d.cut(S(25), 760.0, 700.0);
        // (Without it, only the dip of 10 s would be left at 35 s: no bound.)
        assert_eq!(d.bound(S(35), 2000.0), 500.0 * DIP_HEADROOM, "the dips of 10 and 25 s");
        assert_eq!(d.bound(S(41), 2000.0), f64::INFINITY, "only that of 25 s is left");
    }

    #[test]
    fn a_deep_queueing_cut_far_from_any_dip_is_a_dip() {
        let mut d = Dips::default();
        d.deep_cut(S(30), 400.0);
        assert_eq!(d.bound(S(35), 1500.0), f64::INFINITY);
        // 10 s later a fade is read through the round trip: 1422 to 706 kbit/s, one cut.
        d.cut(S(40), 1422.0, 706.0);
        assert_eq!(d.bound(S(45), 1500.0), 400.0 * DIP_HEADROOM, "the dips of 30 and 40 s");
        // A cut of 25 % so far from a dip is not one ...
        let mut e = Dips::default();
        e.deep_cut(S(30), 400.0);
        e.cut(S(40), 1000.0, 750.0);
        assert_eq!(e.bound(S(45), 1500.0), f64::INFINITY);
        // ... nor two of 8 % 5 s apart (a rise finding its ceiling twice) ...
        e.cut(S(44), 1000.0, 920.0);
        e.cut(S(49), 920.0, 846.0);
        assert_eq!(e.bound(S(50), 1500.0), f64::INFINITY);
        // ... but two of 22 % within a second are, from the rate before the first.
        e.cut(S(54), 1136.0, 882.0);
        e.cut(S(55), 882.0, 686.0);
        assert_eq!(e.bound(S(56), 1500.0), 400.0 * DIP_HEADROOM, "the dips of 30 and 55 s");
    }
}
