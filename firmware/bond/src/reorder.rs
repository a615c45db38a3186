//! The receiver's reorder buffer: packets of one bonded connection arrive over uplinks of
//! different delays, out of order; SRT takes every gap for a loss and asks for it again at once
//! (a 20 ms difference between two 4G links made a quarter of the packets "lost" in the
//! bonding benchmark). So a packet that comes after a gap waits, at most `wait`, for the gap to
//! fill; SRT sees the stream in order and reports only what is really missing.
//!
//! The wait is learnt: each gap filled by a late packet (not a resend) sets it to 1.25 x that
//! packet's lateness + 10 ms if that is more; it halves every 10 s down to `MIN_WAIT`, and never
//! exceeds the bound it was given (a third of the SRT latency: a loss must still leave SRT time
//! to resend). Resends and control packets are never held, and a resend handed on ahead of
//! the gap counts as there when the stream reaches it. No packet is held longer than the wait
//! from its own arrival. A pure state machine.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// The shortest wait.
pub const MIN_WAIT: Duration = Duration::from_millis(20);
/// How often the learnt wait halves.
const DECAY_EVERY: Duration = Duration::from_secs(10);
/// Most packets held (about 2.6 MB); past it the oldest gap is given up.
const MAX_HELD: usize = 2000;

/// The reorder buffer of one bonded connection.
#[derive(Debug)]
pub struct Reorder {
    next: Option<u32>,
    /// Packets held, with when each arrived.
    held: HashMap<u32, (Vec<u8>, Instant)>,
    /// Resends handed on at once while ahead of `next`: when the stream reaches them they are
    /// no gap. (Taken for gaps, each held what followed for a whole wait, one after another:
    /// in the bonding bench the packets after a fade's resends reached SRT 2 s late, and it
    /// gave them up.)
    passed: HashSet<u32>,
    /// When the earliest packet still held arrived.
    gap_since: Option<Instant>,
    wait: Duration,
    max_wait: Duration,
    last_decay: Option<Instant>,
    held_total: u64,
    gaps_given_up: u64,
}

/// What the buffer did, for status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReorderStatus {
    /// The wait learnt now, ms.
    pub wait_ms: u64,
    /// Packets held so far.
    pub held: u64,
    /// Gaps given up on (left to SRT).
    pub gaps_given_up: u64,
}

fn ahead(seq: u32, of: u32) -> u32 {
    seq.wrapping_sub(of) & 0x7fff_ffff
}

impl Reorder {
    /// A buffer that waits at most `max_wait`.
    pub fn new(max_wait: Duration) -> Self {
        Reorder {
            next: None,
            held: HashMap::new(),
            passed: HashSet::new(),
            gap_since: None,
            wait: MIN_WAIT.min(max_wait),
            max_wait,
            last_decay: None,
            held_total: 0,
            gaps_given_up: 0,
        }
    }

    /// Its figures.
    pub fn status(&self) -> ReorderStatus {
        ReorderStatus {
            wait_ms: self.wait.as_millis() as u64,
            held: self.held_total,
            gaps_given_up: self.gaps_given_up,
        }
    }

    /// A data packet `seq` (`resent`: SRT's retransmission flag): the packets to hand to SRT
    /// now, in order.
    pub fn push(&mut self, seq: u32, resent: bool, data: Vec<u8>, now: Instant) -> Vec<Vec<u8>> {
        self.decay(now);
        let Some(next) = self.next else {
            self.next = Some(seq.wrapping_add(1) & 0x7fff_ffff);
            return vec![data];
        };
        let d = ahead(seq, next);
        if d >= 0x4000_0000 {
            // Before what is expected: late or a duplicate; SRT sorts it out.
            return vec![data];
        }
        if d == 0 {
            if !resent {
                if let Some(since) = self.gap_since {
                    let learnt = now.saturating_duration_since(since).mul_f64(1.25) + Duration::from_millis(10);
                    self.wait = self.wait.max(learnt).min(self.max_wait);
                }
            }
            let mut out = vec![data];
            self.advance(seq, &mut out);
            return out;
        }
        if resent || self.max_wait.is_zero() {
            if !self.max_wait.is_zero() && self.passed.len() < MAX_HELD {
                self.passed.insert(seq);
            }
            return vec![data];
        }
        if self.held.is_empty() {
            self.gap_since = Some(now);
        }
        self.held.entry(seq).or_insert((data, now));
        self.held_total += 1;
        if self.held.len() > MAX_HELD {
            return self.give_up();
        }
        Vec::new()
    }

    /// Gaps waited on for longer than the wait are given up: what follows them goes on.
    pub fn due(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while self.gap_since.is_some_and(|t| now.saturating_duration_since(t) >= self.wait) {
            out.extend(self.give_up());
        }
        out
    }

    /// When [`Self::due`] next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        self.gap_since.map(|t| t + self.wait)
    }

    fn give_up(&mut self) -> Vec<Vec<u8>> {
        let Some(next) = self.next else { return Vec::new() };
        let Some(&first) = self.held.keys().min_by_key(|&&s| ahead(s, next)) else {
            self.gap_since = None;
            return Vec::new();
        };
        self.gaps_given_up += 1;
        let mut out = Vec::new();
        if let Some((p, _)) = self.held.remove(&first) {
            out.push(p);
        }
        self.advance(first, &mut out);
        out
    }

    /// `seq` went out: what follows it in order goes too.
    fn advance(&mut self, seq: u32, out: &mut Vec<Vec<u8>>) {
        let mut next = seq.wrapping_add(1) & 0x7fff_ffff;
        loop {
            if let Some((p, _)) = self.held.remove(&next) {
                out.push(p);
            } else if !self.passed.remove(&next) {
                break;
            }
            next = next.wrapping_add(1) & 0x7fff_ffff;
        }
        self.next = Some(next);
        // Resends handed on that the stream went past (a gap given up) are forgotten.
        self.passed.retain(|&s| ahead(s, next) < 0x4000_0000);
        // A gap remains if anything is still held: it counts from the earliest arrival held.
        self.gap_since = self.held.values().map(|&(_, at)| at).min();
    }

    fn decay(&mut self, now: Instant) {
        match self.last_decay {
            None => self.last_decay = Some(now),
            Some(t) if now.saturating_duration_since(t) >= DECAY_EVERY => {
                self.last_decay = Some(now);
                self.wait = (self.wait / 2).max(MIN_WAIT).min(self.max_wait);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn seqs(out: &[Vec<u8>]) -> Vec<u8> {
        out.iter().map(|p| p[0]).collect()
    }

    #[test]
    fn a_late_packet_fills_its_gap_and_the_stream_goes_on_in_order() {
        let t = Instant::now();
        let mut r = Reorder::new(200 * MS);
        assert_eq!(seqs(&r.push(1, false, vec![1], t)), [1]);
        assert!(r.push(3, false, vec![3], t).is_empty());
        assert!(r.push(4, false, vec![4], t + MS).is_empty());
        assert_eq!(r.deadline(), Some(t + MIN_WAIT));
        assert!(r.due(t + 5 * MS).is_empty());
        assert_eq!(seqs(&r.push(2, false, vec![2], t + 8 * MS)), [2, 3, 4]);
        assert_eq!(r.deadline(), None);
        // It learnt: 8 ms late -> 20 ms wait stays (1.25 x 8 + 10 = 20).
        assert_eq!(r.status().wait_ms, 20);
    }

    #[test]
    fn a_gap_never_filled_is_given_up_after_the_wait() {
        let t = Instant::now();
        let mut r = Reorder::new(200 * MS);
        r.push(10, false, vec![10], t);
        assert!(r.push(12, false, vec![12], t).is_empty());
        assert!(r.push(13, false, vec![13], t).is_empty());
        assert!(r.due(t + 19 * MS).is_empty());
        assert_eq!(seqs(&r.due(t + 20 * MS)), [12, 13]);
        assert_eq!(r.status().gaps_given_up, 1);
        // The missing one, resent by SRT later, goes straight on.
        assert_eq!(seqs(&r.push(11, true, vec![11], t + 90 * MS)), [11]);
    }

    #[test]
    fn the_wait_learns_from_late_packets_within_its_bound_and_decays() {
        let t = Instant::now();
        let mut r = Reorder::new(100 * MS);
        r.push(1, false, vec![1], t);
        r.push(3, false, vec![3], t);
        r.push(2, false, vec![2], t + 40 * MS);
        assert_eq!(r.status().wait_ms, 60);
        r.push(5, false, vec![5], t + 50 * MS);
        r.push(4, false, vec![4], t + 150 * MS);
        assert_eq!(r.status().wait_ms, 100, "bounded");
        // A resend filling a gap teaches nothing (its lateness is a round trip, not reordering).
        let mut q = Reorder::new(100 * MS);
        q.push(1, false, vec![1], t);
        q.push(3, false, vec![3], t);
        q.push(2, true, vec![2], t + 80 * MS);
        assert_eq!(q.status().wait_ms, 20);
        // Ten seconds on, halved.
        r.push(6, false, vec![6], t + 10_200 * MS);
        assert_eq!(r.status().wait_ms, 50);
    }

    #[test]
    fn a_resend_handed_on_ahead_of_a_gap_is_no_gap_when_the_stream_reaches_it() {
        let t = Instant::now();
        let mut r = Reorder::new(200 * MS);
        r.push(1, false, vec![1], t);
        assert!(r.push(3, false, vec![3], t).is_empty(), "2 missing");
        assert_eq!(seqs(&r.push(4, true, vec![4], t)), [4], "a resend goes on at once");
        assert_eq!(seqs(&r.push(2, false, vec![2], t + 5 * MS)), [2, 3]);
        // 4 went on already: 5 is next in order, not held behind a gap at 4.
        assert_eq!(seqs(&r.push(5, false, vec![5], t + 6 * MS)), [5]);
        assert_eq!(r.deadline(), None);
    }

    #[test]
    fn no_packet_is_held_longer_than_the_wait_from_its_arrival() {
        // Two gaps one after the other: the second does not wait a whole wait again after the
        // first is given up, only what is left of its own packet's.
        let t = Instant::now();
        let mut r = Reorder::new(200 * MS);
        r.push(1, false, vec![1], t);
        r.push(3, false, vec![3], t);
        r.push(5, false, vec![5], t + 10 * MS);
        assert_eq!(seqs(&r.due(t + MIN_WAIT)), [3]);
        assert_eq!(r.deadline(), Some(t + 10 * MS + MIN_WAIT));
        assert_eq!(seqs(&r.due(t + 10 * MS + MIN_WAIT)), [5]);
        assert_eq!(r.status().gaps_given_up, 2);
    }

    #[test]
    fn resends_duplicates_and_wraps_pass() {
        let t = Instant::now();
        let mut r = Reorder::new(50 * MS);
        r.push(0x7fff_fffe, false, vec![1], t);
        assert_eq!(seqs(&r.push(0x7fff_ffff, false, vec![2], t)), [2]);
        assert_eq!(seqs(&r.push(0, false, vec![3], t)), [3]);
        assert_eq!(seqs(&r.push(0x7fff_ffff, false, vec![4], t)), [4], "a duplicate goes on");
        assert_eq!(seqs(&r.push(5, true, vec![5], t)), [5], "a resend is never held");
        let mut off = Reorder::new(Duration::ZERO);
        off.push(1, false, vec![1], t);
        assert_eq!(seqs(&off.push(3, false, vec![3], t)), [3], "a zero wait holds nothing");
    }
}
