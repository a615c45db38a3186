//! Lip sync: the test source's sound and picture carry the same events, and the decoder reads
//! the offset between them.
//!
//! Once a second the picture flashes a white block in its bottom-right corner (black the rest of
//! the time) for one frame, the first to start at or after a whole second of its presentation
//! time, and the sound is a 1 kHz beep for [`BEEP`] from that frame's start (silence the rest of
//! the time): the sound follows the picture's frames ([`FrameGrid`]), which a live source starts
//! anywhere in a second. Nothing but ffmpeg is
//! needed to read them from a recording (`scripts/av-offset`); the decoder reads them from the
//! presentation times it plays the frames and samples at ([`AvMeter`]).
//!
//! The offset is the picture's time less the sound's: positive when the sound comes first
//! (ITU-R BT.1359's sign). EBU R37 allows the sound at most 40 ms before the picture and 60 ms
//! after it: [`TOLERANCE_MS`].

use std::collections::VecDeque;
use std::time::Duration;

/// How often an event comes.
pub const PERIOD: Duration = Duration::from_secs(1);
/// How long the beep lasts.
pub const BEEP: Duration = Duration::from_millis(100);
/// The beep's pitch, Hz.
pub const BEEP_HZ: f64 = 1000.0;
/// The beep's amplitude (full scale 1).
pub const BEEP_AMPLITUDE: f32 = 0.3;
pub use telebridge_contract::measure::{AvOffsetSummary, TOLERANCE_MS};
/// A flash and a beep further apart than this are not the same event.
const PAIR_WITHIN_NS: i64 = 400_000_000;
/// Sound louder than this is the beep.
const LOUD: f32 = 0.08;
/// The beep starts after this much quiet.
const QUIET_BEFORE_NS: u64 = 200_000_000;
const WHITE: u8 = 235;
const BLACK: u8 = 16;

/// Where the flash is: `(x, y, width, height)` in pixels of a `width` x `height` frame, the
/// bottom-right eighth each way, on even pixels (chroma subsampling).
pub fn flash_rect(width: usize, height: usize) -> (usize, usize, usize, usize) {
    let (w, h) = ((width / 8) & !1, (height / 8) & !1);
    (width - w, height - h, w, h)
}

/// Whether the frame presented at `pts` for `duration` carries the flash: the first to start at
/// or after a whole second.
pub fn is_flash_frame(pts: Duration, duration: Duration) -> bool {
    pts.as_nanos() % PERIOD.as_nanos() < duration.as_nanos()
}

/// Where the picture's frames fall: one frame's start and the frames' duration, ns. The test
/// source's frames are counted from its first, so every frame starts a whole number of
/// durations from any one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameGrid {
    /// A frame's presentation time, ns.
    pub pts: u64,
    /// The frames' duration, ns.
    pub duration: u64,
}

impl FrameGrid {
    /// The start of the first frame at or after `t`, ns.
    pub fn first_at_or_after(&self, t: u64) -> u64 {
        let d = i128::from(self.duration.max(1));
        let since = i128::from(t) - i128::from(self.pts);
        let frames = since.div_euclid(d) + i128::from(since.rem_euclid(d) != 0);
        (i128::from(self.pts) + frames * d).max(0) as u64
    }
}

/// The test source's grid, written by its picture and read by its sound.
pub type SharedGrid = std::sync::Arc<std::sync::Mutex<Option<FrameGrid>>>;

/// Paints the flash block into plane `plane` (0 luma, 1 and 2 the half-size chroma of I420) of
/// a `width` x `height` frame: white when `on`, black otherwise; grey chroma.
pub fn stamp_flash(plane: usize, data: &mut [u8], stride: usize, width: usize, height: usize, on: bool) {
    let (x, y, w, h) = flash_rect(width, height);
    let (sx, sy, sw, sh, value) =
        if plane == 0 { (x, y, w, h, if on { WHITE } else { BLACK }) } else { (x / 2, y / 2, w / 2, h / 2, 128) };
    for row in sy..sy + sh {
        let start = row * stride + sx;
        if let Some(line) = data.get_mut(start..start + sw) {
            line.fill(value);
        }
    }
}

/// Whether a luma plane shows the flash: `Some(true)` if the middle of its block is white,
/// `Some(false)` if black, `None` if it is neither (a picture without the marks) or too small.
pub fn reads_flash(luma: &[u8], stride: usize, width: usize, height: usize) -> Option<bool> {
    let (x, y, w, h) = flash_rect(width, height);
    if w < 4 || h < 4 {
        return None;
    }
    let (mut sum, mut n) = (0u64, 0u64);
    for row in y + h / 4..y + h - h / 4 {
        let start = row * stride + x + w / 4;
        for &px in luma.get(start..start + w / 2)? {
            sum += u64::from(px);
            n += 1;
        }
    }
    match sum / n.max(1) {
        m if m >= 180 => Some(true),
        m if m <= 60 => Some(false),
        _ => None,
    }
}

/// The beep's samples: `out` is interleaved with `channels`, at `rate`, its first sample at
/// `pts` ns; the beep for [`BEEP`] from the start of each flashed frame of `grid`, silence
/// elsewhere (all silence while the picture's grid is not known).
pub fn fill_beep(out: &mut [f32], channels: usize, rate: u32, pts: u64, grid: Option<FrameGrid>) {
    let channels = channels.max(1);
    let period = PERIOD.as_nanos() as u64;
    let beep = BEEP.as_nanos() as u64;
    let mut event = None::<(u64, u64)>;
    for (i, frame) in out.chunks_mut(channels).enumerate() {
        let t = pts + (i as u128 * 1_000_000_000 / u128::from(rate.max(1))) as u64;
        let v = match grid {
            Some(g) => {
                let second = t - t % period;
                let start = match event {
                    Some((s, e)) if s == second => e,
                    _ => {
                        let e = g.first_at_or_after(second);
                        event = Some((second, e));
                        e
                    }
                };
                if t >= start && t - start < beep {
                    let secs = (t - start) as f64 / 1e9;
                    (2.0 * std::f64::consts::PI * BEEP_HZ * secs).sin() as f32 * BEEP_AMPLITUDE
                } else {
                    0.0
                }
            }
            None => 0.0,
        };
        frame.fill(v);
    }
}

/// Finds the flash in successive frames: one white frame between black ones (a picture without
/// the marks, or a bright corner that stays, is no flash). Reported when the frame after it is
/// seen to be black again.
#[derive(Debug, Clone, Default)]
pub struct FlashDetector {
    was_black: bool,
    white: Option<u64>,
}

impl FlashDetector {
    /// The frame at `pts` read as [`reads_flash`] did; `Some(start)` when it ends a flash that
    /// started at `start`.
    pub fn frame(&mut self, pts: u64, read: Option<bool>) -> Option<u64> {
        let ended = match (self.white.take(), read) {
            (Some(start), Some(false)) => Some(start),
            _ => None,
        };
        if read == Some(true) && self.was_black {
            self.white = Some(pts);
        }
        self.was_black = read == Some(false);
        ended
    }
}

/// Finds beeps in sound: a loud stretch of 60 to 160 ms (the beep is [`BEEP`]) after
/// `QUIET_BEFORE_NS` of quiet, reported with its onset once 30 ms of quiet end it.
#[derive(Debug, Clone, Default)]
pub struct BeepDetector {
    /// The last loud sample, ns.
    last_loud: Option<u64>,
    /// Where the quiet began, before anything was loud.
    quiet_since: Option<u64>,
    /// The onset of the loud stretch under way, if it came after enough quiet.
    onset: Option<u64>,
}

const BEEP_MIN_NS: u64 = 60_000_000;
const BEEP_MAX_NS: u64 = 160_000_000;
const BEEP_ENDS_AFTER_NS: u64 = 30_000_000;

impl BeepDetector {
    /// Samples `data` (interleaved, `channels`, `rate`), the first at `pts` ns: the onsets of
    /// the beeps that ended in them.
    pub fn samples(&mut self, data: &[f32], channels: usize, rate: u32, pts: u64) -> Vec<u64> {
        let channels = channels.max(1);
        let mut beeps = Vec::new();
        for (i, frame) in data.chunks(channels).enumerate() {
            let t = pts + (i as u128 * 1_000_000_000 / u128::from(rate.max(1))) as u64;
            // Time going back is a new stream: what was heard before says nothing.
            if self.last_loud.is_some_and(|l| t < l) || self.quiet_since.is_some_and(|q| t < q) {
                *self = Self::default();
            }
            let loud = frame.iter().any(|s| s.abs() > LOUD);
            if !loud {
                match self.last_loud {
                    None => {
                        self.quiet_since.get_or_insert(t);
                    }
                    Some(last) if t - last >= BEEP_ENDS_AFTER_NS => {
                        if let Some(onset) = self.onset.take() {
                            if (BEEP_MIN_NS..=BEEP_MAX_NS).contains(&(last - onset)) {
                                beeps.push(onset);
                            }
                        }
                    }
                    Some(_) => {}
                }
                continue;
            }
            // A gap in the times (sound lost on the way) counts as quiet.
            let quiet_from = self.last_loud.or(self.quiet_since);
            if quiet_from.is_some_and(|q| t - q >= QUIET_BEFORE_NS) {
                self.onset = Some(t);
            }
            self.last_loud = Some(t);
        }
        beeps
    }
}

/// One measured event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AvEvent {
    /// When it was measured (the caller's clock, ns): for windows.
    pub at: u64,
    /// Picture less sound, ms.
    pub offset_ms: f64,
}

/// Pairs flashes with beeps (both in one stream's presentation times, ns) and keeps the
/// offsets of the last `window`. Pure: the caller says when (`now`, any monotonic ns).
#[derive(Debug, Clone)]
pub struct AvMeter {
    window: u64,
    /// The latest mark's time, either kind.
    latest: Option<u64>,
    flashes: VecDeque<u64>,
    beeps: VecDeque<u64>,
    events: VecDeque<AvEvent>,
    total: u64,
    whole: OffsetHistogram,
}

/// Offsets over a whole run in fixed memory: 0.5 ms buckets over +-1 s (16 KB), the exact
/// extremes.
#[derive(Debug, Clone, Default)]
struct OffsetHistogram {
    counts: Vec<u32>,
    n: u64,
    min: f64,
    max: f64,
}

const HALF_MS_BUCKETS: usize = 4001;

impl OffsetHistogram {
    fn push(&mut self, ms: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; HALF_MS_BUCKETS];
            (self.min, self.max) = (ms, ms);
        }
        let i = ((ms.clamp(-1000.0, 1000.0) + 1000.0) * 2.0).round() as usize;
        self.counts[i.min(HALF_MS_BUCKETS - 1)] += 1;
        self.n += 1;
        self.min = self.min.min(ms);
        self.max = self.max.max(ms);
    }

    fn summary(&self) -> Option<AvOffsetSummary> {
        if self.n == 0 {
            return None;
        }
        // The same rank as AvOffsetSummary::of: the lower median.
        let rank = (self.n - 1) / 2;
        let mut seen = 0u64;
        let mut p50 = self.max;
        for (i, c) in self.counts.iter().enumerate() {
            seen += u64::from(*c);
            if seen > rank {
                p50 = (i as f64 / 2.0 - 1000.0).clamp(self.min, self.max);
                break;
            }
        }
        let r = |x: f64| (x * 10.0).round() / 10.0;
        let worst = if self.min.abs() > self.max.abs() { self.min } else { self.max };
        Some(AvOffsetSummary {
            p50_ms: r(p50),
            min_ms: r(self.min),
            max_ms: r(self.max),
            worst_ms: r(worst),
            events: self.n as usize,
            within_tolerance: self.min >= TOLERANCE_MS.0 && self.max <= TOLERANCE_MS.1,
        })
    }
}

impl AvMeter {
    /// Keeps the offsets of the last `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            window: window.as_nanos() as u64,
            latest: None,
            flashes: VecDeque::new(),
            beeps: VecDeque::new(),
            events: VecDeque::new(),
            total: 0,
            whole: OffsetHistogram::default(),
        }
    }

    /// A new stream (a reconnect, a restarted sender): its times have nothing to do with the
    /// last one's, so unpaired marks are forgotten (the measured offsets stay).
    pub fn new_stream(&mut self) {
        self.flashes.clear();
        self.beeps.clear();
        self.latest = None;
    }

    /// A flash at `pts`, seen at `now`.
    pub fn flash(&mut self, pts: u64, now: u64) -> Option<AvEvent> {
        self.went_back(pts);
        self.flashes.push_back(pts);
        self.pair(now)
    }

    /// A beep onset at `pts`, heard at `now`.
    pub fn beep(&mut self, pts: u64, now: u64) -> Option<AvEvent> {
        self.went_back(pts);
        self.beeps.push_back(pts);
        self.pair(now)
    }

    /// A mark well before the latest of either kind: the sender's times started again (its
    /// restart, a new picture size), and what is waiting to pair belongs to the old times.
    fn went_back(&mut self, pts: u64) {
        if self.latest.is_some_and(|l| pts + 2 * (PAIR_WITHIN_NS as u64) < l) {
            self.new_stream();
        }
        self.latest = Some(self.latest.map_or(pts, |l| l.max(pts)));
    }

    fn pair(&mut self, now: u64) -> Option<AvEvent> {
        let mut found = None;
        while let (Some(&f), Some(&b)) = (self.flashes.front(), self.beeps.front()) {
            let d = f as i64 - b as i64;
            if d.abs() <= PAIR_WITHIN_NS {
                self.flashes.pop_front();
                self.beeps.pop_front();
                let e = AvEvent { at: now, offset_ms: d as f64 / 1e6 };
                self.events.push_back(e);
                self.whole.push(e.offset_ms);
                self.total += 1;
                found = Some(e);
            } else if f < b {
                // A flash whose beep was lost (or a beep whose flash was).
                self.flashes.pop_front();
            } else {
                self.beeps.pop_front();
            }
        }
        // Marks the other side never answers do not pile up.
        while self.flashes.len() > 8 {
            self.flashes.pop_front();
        }
        while self.beeps.len() > 8 {
            self.beeps.pop_front();
        }
        while self.events.front().is_some_and(|e| now.saturating_sub(e.at) > self.window) {
            self.events.pop_front();
        }
        found
    }

    /// The offsets of the last `window` as of `now`.
    pub fn summary(&self, now: u64) -> Option<AvOffsetSummary> {
        let v: Vec<f64> =
            self.events.iter().filter(|e| now.saturating_sub(e.at) <= self.window).map(|e| e.offset_ms).collect();
        AvOffsetSummary::of(&v)
    }

    /// The offsets since the start (in fixed memory: the median to 0.5 ms).
    pub fn whole_summary(&self) -> Option<AvOffsetSummary> {
        self.whole.summary()
    }

    /// The latest event.
    pub fn last(&self) -> Option<AvEvent> {
        self.events.back().copied()
    }

    /// Events measured since the start.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_flash_is_on_the_frame_that_holds_each_whole_second() {
        // Frame times as GStreamer's sources count them: n seconds / 30, rounded.
        let at = |n: u64| Duration::from_nanos(n * 1_000_000_000 / 30);
        let frame = at(1);
        let flashed: Vec<u64> = (0..90u64).filter(|n| is_flash_frame(at(*n), frame)).collect();
        assert_eq!(flashed, vec![0, 30, 60]);
        // A source whose frames do not start on the second: the first to start after it.
        let off = Duration::from_millis(10);
        let flashed: Vec<u64> = (0..60u64).filter(|n| is_flash_frame(off + at(*n), frame)).collect();
        assert_eq!(flashed, vec![0, 30]);
        let grid = FrameGrid { pts: (off + at(40)).as_nanos() as u64, duration: frame.as_nanos() as u64 };
        assert_eq!(grid.first_at_or_after(1_000_000_000), (off + at(30)).as_nanos() as u64 + 3);
        assert_eq!(grid.first_at_or_after(grid.pts), grid.pts);
        assert_eq!(grid.first_at_or_after(grid.pts + 1), grid.pts + grid.duration);
    }

    #[test]
    fn a_stamped_flash_reads_back_and_nothing_else_does() {
        let (w, h) = (1280usize, 720usize);
        let mut y = vec![90u8; w * h];
        let mut u = vec![60u8; w * h / 4];
        let mut v = vec![200u8; w * h / 4];
        assert_eq!(reads_flash(&y, w, w, h), None, "a grey picture has no marks");
        for (i, (data, stride)) in [(&mut y[..], w), (&mut u[..], w / 2), (&mut v[..], w / 2)].into_iter().enumerate() {
            stamp_flash(i, data, stride, w, h, true);
        }
        assert_eq!(reads_flash(&y, w, w, h), Some(true));
        assert_eq!(u[(h / 2 - 1) * w / 2 + w / 2 - 1], 128);
        stamp_flash(0, &mut y, w, w, h, false);
        assert_eq!(reads_flash(&y, w, w, h), Some(false));
        // The rest of the picture is untouched.
        assert_eq!(y[0], 90);
        assert_eq!(reads_flash(&y, w, 16, 16), None);
        // A flash is one white frame between black ones: not after a picture without marks,
        // not a corner that stays white.
        let mut d = FlashDetector::default();
        let reads = [None, Some(true), Some(false), Some(true), Some(false), Some(true), Some(true), Some(false)];
        let found: Vec<u64> = reads.iter().enumerate().filter_map(|(i, r)| d.frame(i as u64, *r)).collect();
        assert_eq!(found, vec![3]);
    }

    #[test]
    fn the_beep_starts_with_each_flashed_frame_and_the_detector_finds_it_there() {
        let rate = 48_000;
        // Frames every 1/30 s from 3.4 ms: the flashed ones start at 1.0034 s, 2.0034 s.
        let grid = FrameGrid { pts: 3_400_000, duration: 33_333_333 };
        let mut det = BeepDetector::default();
        let mut onsets = Vec::new();
        // 3 s of sound in 10 ms buffers (as audiotestsrc makes them), stereo.
        for k in 0..300u64 {
            let pts = k * 10 * MS;
            let mut buf = vec![0f32; 480 * 2];
            fill_beep(&mut buf, 2, rate, pts, Some(grid));
            onsets.extend(det.samples(&buf, 2, rate, pts));
        }
        // The first beep, 3.4 ms in, has no quiet before it; the last ends after the 3 s.
        assert_eq!(onsets.len(), 2, "{onsets:?}");
        for (o, s) in onsets.iter().zip([1u64, 2]) {
            let start = grid.first_at_or_after(s * 1000 * MS);
            assert!(*o >= start && o - start < MS / 2, "onset {o} for the frame at {start}");
        }
        let mut buf = vec![0f32; 4800];
        fill_beep(&mut buf, 1, rate, 1050 * MS, Some(grid));
        assert!(buf[..2400].iter().any(|s| s.abs() > 0.2), "inside the beep");
        // The beep ends 100 ms after the frame at 1.0034 s: 53.4 ms (2563 samples) in.
        assert!(buf[2570..].iter().all(|s| *s == 0.0), "after it");
        fill_beep(&mut buf, 1, rate, 1050 * MS, None);
        assert!(buf.iter().all(|s| *s == 0.0), "no grid, no beep");
        // A tone that goes on (a voice, music) is no beep; nor is a click.
        let mut det = BeepDetector::default();
        let mut found = Vec::new();
        for k in 0..300u64 {
            let loud = (50..150).contains(&k) || k == 200;
            let buf = vec![if loud { 0.5f32 } else { 0.0 }; 480];
            found.extend(det.samples(&buf, 1, rate, k * 10 * MS));
        }
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn flashes_pair_with_beeps_and_lost_ones_are_skipped() {
        let mut m = AvMeter::new(Duration::from_secs(10));
        let s = 1000 * MS;
        // Sound 30 ms late: picture less sound is -30.
        assert_eq!(m.flash(s, s), None);
        assert_eq!(m.beep(s + 30 * MS, s).map(|e| e.offset_ms), Some(-30.0));
        // A flash whose beep was lost, then a pair with the sound 10 ms early.
        m.flash(2 * s, 2 * s);
        m.beep(3 * s - 10 * MS, 3 * s);
        assert_eq!(m.flash(3 * s, 3 * s).map(|e| e.offset_ms), Some(10.0));
        let sum = m.summary(3 * s).unwrap();
        assert_eq!((sum.events, sum.min_ms, sum.max_ms, sum.worst_ms), (2, -30.0, 10.0, -30.0));
        assert!(sum.within_tolerance);
        // Sound 70 ms late is out of tolerance.
        m.flash(4 * s, 4 * s);
        assert_eq!(m.beep(4 * s + 70 * MS, 4 * s).map(|e| e.offset_ms), Some(-70.0));
        assert!(!m.summary(4 * s).unwrap().within_tolerance);
        // 20 s later the window is empty; the whole run's figures stay.
        assert_eq!(m.summary(24 * s), None);
        assert_eq!(m.total(), 3);
        let whole = m.whole_summary().unwrap();
        assert_eq!((whole.p50_ms, whole.min_ms, whole.max_ms, whole.events), (-30.0, -70.0, 10.0, 3));
        // The sender's times start again (a restart, a new size) with no gap the decoder
        // notices: the old stream's waiting beep does not take the new stream's flash.
        m.beep(5 * s + 20 * MS, 5 * s);
        m.flash(100 * MS, 6 * s);
        assert_eq!(m.beep(100 * MS + 5 * MS, 6 * s).map(|e| e.offset_ms), Some(-5.0));
        // A new stream said so by the decoder: an unpaired mark of the old one is dropped.
        m.flash(7 * s, 7 * s);
        m.new_stream();
        m.beep(7 * s + 300 * MS, 8 * s);
        assert_eq!(m.flash(7 * s + 310 * MS, 8 * s).map(|e| e.offset_ms), Some(10.0));
    }

    #[test]
    fn tolerance_is_r37s() {
        assert!(AvOffsetSummary::of(&[-60.0, 40.0]).unwrap().within_tolerance);
        assert!(!AvOffsetSummary::of(&[-60.5]).unwrap().within_tolerance);
        assert!(!AvOffsetSummary::of(&[40.5]).unwrap().within_tolerance);
        assert_eq!(AvOffsetSummary::of(&[]), None);
    }
}
