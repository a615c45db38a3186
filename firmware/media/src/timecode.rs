//! A machine-readable timecode burnt into the top of each test-pattern frame, read back from
//! decoded frames to measure glass-to-glass latency.
//!
//! The code is 80 bits in two rows of 40 square cells across the full width (32 px cells at
//! 1280 wide), black or white in luma, so it survives H.264 at the lowest bitrate the encoder
//! allows: 8 sync bits, a 24-bit frame counter, the capture time in microseconds (wall clock,
//! low 40 bits) and a CRC-8 over counter and time.
//!
//! A bridge box burns a second strip under its own: the far box's latest timecode as this box
//! read it from the picture it shows (its [`Echo`]). The far box reads its own timecode back
//! from that strip and has the round trip, glass to glass, on its own clock alone.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use telebridge_sync::Locked;

/// Cells per row.
pub const COLUMNS: usize = 40;
/// Rows of cells.
pub const ROWS: usize = 2;
const SYNC: u8 = 0b1010_0101;
const TIME_BITS: u32 = 40;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
const FRAME_MASK: u32 = (1 << 24) - 1;
const WHITE: u8 = 235;
const BLACK: u8 = 16;

/// What one frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timecode {
    /// Frame counter (24 bits, wraps).
    pub frame: u32,
    /// Capture time: microseconds since the Unix epoch, low 40 bits (wraps every 12.7 days).
    pub capture_us: u64,
}

impl Timecode {
    /// A timecode for frame `frame` captured now.
    pub fn now(frame: u32) -> Self {
        Self { frame: frame & FRAME_MASK, capture_us: now_us() & TIME_MASK }
    }

    /// Time from capture to `now_us` (same wall clock), in microseconds, wrap-safe.
    pub fn age_us(&self, now_us: u64) -> u64 {
        (now_us & TIME_MASK).wrapping_sub(self.capture_us) & TIME_MASK
    }

    fn bits(&self) -> [bool; COLUMNS * ROWS] {
        let payload = (u64::from(self.frame & FRAME_MASK) << TIME_BITS) | (self.capture_us & TIME_MASK);
        let crc = crc8(&payload.to_be_bytes()[1..]);
        let mut bits = [false; COLUMNS * ROWS];
        let mut i = 0;
        let mut put = |value: u64, n: u32| {
            for b in (0..n).rev() {
                bits[i] = (value >> b) & 1 == 1;
                i += 1;
            }
        };
        put(u64::from(SYNC), 8);
        put(payload, 64);
        put(u64::from(crc), 8);
        bits
    }
}

/// Microseconds since the Unix epoch on this machine's wall clock.
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Size of one cell in pixels for a frame `width` wide.
pub fn cell_size(width: usize) -> usize {
    (width / COLUMNS).max(1)
}

/// Height of the strip the timecode occupies.
pub fn strip_height(width: usize) -> usize {
    cell_size(width) * ROWS
}

/// Which strip: this box's own timecode (the top one), or the far box's echoed back under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strip {
    /// The sender's own timecode.
    Own,
    /// The far box's timecode, returned.
    Echo,
}

impl Strip {
    fn first_row(self) -> usize {
        match self {
            Strip::Own => 0,
            Strip::Echo => ROWS,
        }
    }
}

/// Writes `tc` into a luma plane (`stride` bytes a row).
pub fn stamp_luma(luma: &mut [u8], stride: usize, width: usize, height: usize, tc: &Timecode) {
    stamp_strip(luma, stride, width, height, tc, Strip::Own);
}

/// Writes `tc` into strip `strip` of a luma plane.
pub fn stamp_strip(luma: &mut [u8], stride: usize, width: usize, height: usize, tc: &Timecode, strip: Strip) {
    let cell = cell_size(width);
    if strip_height(width) * (strip.first_row() / ROWS + 1) > height {
        return;
    }
    for (i, bit) in tc.bits().iter().enumerate() {
        let (col, row) = (i % COLUMNS, i / COLUMNS + strip.first_row());
        let value = if *bit { WHITE } else { BLACK };
        for y in row * cell..(row + 1) * cell {
            let start = y * stride + col * cell;
            if let Some(line) = luma.get_mut(start..start + cell) {
                line.fill(value);
            }
        }
    }
}

/// Reads a timecode back from a luma plane; `None` if there is none or it is damaged.
pub fn read_luma(luma: &[u8], stride: usize, width: usize, height: usize) -> Option<Timecode> {
    read_strip(luma, stride, width, height, Strip::Own)
}

/// Reads the timecode of strip `strip`.
pub fn read_strip(luma: &[u8], stride: usize, width: usize, height: usize, strip: Strip) -> Option<Timecode> {
    let cell = cell_size(width);
    if strip_height(width) * (strip.first_row() / ROWS + 1) > height || cell < 2 {
        return None;
    }
    let top = strip.first_row() * cell;
    // Average the middle half of each cell, away from edges the codec smears.
    let (lo, hi) = (cell / 4, cell - cell / 4);
    let mut means = [0u32; COLUMNS * ROWS];
    for (i, mean) in means.iter_mut().enumerate() {
        let (col, row) = (i % COLUMNS, i / COLUMNS);
        let (mut sum, mut n) = (0u32, 0u32);
        for y in top + row * cell + lo..top + row * cell + hi {
            let start = y * stride + col * cell;
            for &px in luma.get(start + lo..start + hi)? {
                sum += u32::from(px);
                n += 1;
            }
        }
        *mean = sum / n.max(1);
    }
    // Threshold halfway between the sync pattern's ones and zeros.
    let (mut ones, mut zeros, mut n1, mut n0) = (0u32, 0u32, 0u32, 0u32);
    for (b, mean) in means.iter().take(8).enumerate() {
        if (SYNC >> (7 - b)) & 1 == 1 {
            ones += mean;
            n1 += 1;
        } else {
            zeros += mean;
            n0 += 1;
        }
    }
    let (ones, zeros) = (ones / n1, zeros / n0);
    if ones < zeros + 64 {
        return None;
    }
    let threshold = (ones + zeros) / 2;
    let bits: Vec<bool> = means.iter().map(|m| *m > threshold).collect();
    let take = |from: usize, n: usize| bits[from..from + n].iter().fold(0u64, |acc, b| (acc << 1) | u64::from(*b));
    if take(0, 8) as u8 != SYNC {
        return None;
    }
    let payload = take(8, 64);
    let crc = take(72, 8) as u8;
    if crc8(&payload.to_be_bytes()[1..]) != crc {
        return None;
    }
    Some(Timecode { frame: (payload >> TIME_BITS) as u32 & FRAME_MASK, capture_us: payload & TIME_MASK })
}

/// CRC-8 (polynomial 0x07).
fn crc8(data: &[u8]) -> u8 {
    let mut crc = 0u8;
    for &byte in data {
        crc ^= byte;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 { (crc << 1) ^ 0x07 } else { crc << 1 };
        }
    }
    crc
}

/// How long a timecode read from the far box's picture is worth returning: older, the far box
/// is no longer shown and its time would read as a long round trip.
pub const ECHO_FRESH: Duration = Duration::from_millis(500);

/// The far box's latest timecode as this box read it, for its encoder to burn back.
#[derive(Debug, Clone, Default)]
pub struct Echo(Arc<Mutex<Option<(Timecode, Instant)>>>);

impl Echo {
    /// This box showed a frame carrying `tc` at `now`.
    pub fn heard(&self, tc: Timecode, now: Instant) {
        *self.0.locked() = Some((tc, now));
    }

    /// What to burn back into a frame captured at `now`: the latest timecode, if fresh.
    pub fn fresh(&self, now: Instant) -> Option<Timecode> {
        let latest = *self.0.locked();
        latest.filter(|(_, at)| now.saturating_duration_since(*at) <= ECHO_FRESH).map(|(tc, _)| tc)
    }
}

/// Frames that never reached the screen, from the counters of those that did. A frame shown
/// with a strip the codec smeared past reading was not lost: the frames between two read
/// counters are missing only beyond those shown unread.
#[derive(Debug, Default)]
pub struct Gaps {
    last: Option<u32>,
    unread_since: u64,
    unread: u64,
}

impl Gaps {
    /// A decoded frame and its counter, if read. Returns the frames missing just before it.
    pub fn frame(&mut self, read: Option<u32>) -> u64 {
        let Some(now) = read else {
            self.unread_since += 1;
            self.unread += u64::from(self.last.is_some());
            return 0;
        };
        let gap = self.last.map_or(1, |prev| now.wrapping_sub(prev) & FRAME_MASK);
        let unread = std::mem::take(&mut self.unread_since);
        self.last = Some(now);
        // Backwards or far ahead: a new sender, not a loss.
        if gap == 0 || gap >= 1000 {
            return 0;
        }
        u64::from(gap - 1).saturating_sub(unread)
    }

    /// Frames shown whose counter could not be read, once one was (a sender without the test
    /// pattern has none to read).
    pub fn unread(&self) -> u64 {
        self.unread
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_frame_shown_unread_is_not_missing_and_one_never_shown_is() {
        let mut g = Gaps::default();
        assert_eq!(g.frame(Some(10)), 0);
        assert_eq!(g.frame(Some(11)), 0);
        // 12 shown, its strip unread: 13 follows, nothing missing.
        assert_eq!(g.frame(None), 0);
        assert_eq!(g.frame(Some(13)), 0);
        // 14 and 15 never shown.
        assert_eq!(g.frame(Some(16)), 2);
        // One shown unread among three gone by: two missing.
        assert_eq!(g.frame(None), 0);
        assert_eq!(g.frame(Some(20)), 2);
        assert_eq!(g.unread(), 2);
        // The counter wraps at 24 bits.
        let mut g = Gaps::default();
        g.frame(None);
        assert_eq!(g.unread(), 0, "no test pattern yet");
        g.frame(Some(FRAME_MASK));
        assert_eq!(g.frame(Some(1)), 1);
        // A sender that starts again (backwards, or far ahead) is not a loss.
        assert_eq!(g.frame(Some(0)), 0);
        assert_eq!(g.frame(Some(5000)), 0);
        assert_eq!(g.frame(Some(5001)), 0);
    }

    fn frame(width: usize, height: usize, fill: u8) -> Vec<u8> {
        vec![fill; width * height]
    }

    #[test]
    fn stamp_then_read() {
        let (w, h) = (1280, 720);
        let mut y = frame(w, h, 100);
        let tc = Timecode { frame: 1234, capture_us: 987_654_321 };
        stamp_luma(&mut y, w, w, h, &tc);
        assert_eq!(read_luma(&y, w, w, h), Some(tc));
    }

    #[test]
    fn the_echo_strip_sits_under_the_own_one_and_each_reads_back_alone() {
        let (w, h) = (640, 360);
        let mut y = frame(w, h, 100);
        let own = Timecode { frame: 7, capture_us: 1_000 };
        let echo = Timecode { frame: 9_999, capture_us: 555_555 };
        stamp_luma(&mut y, w, w, h, &own);
        assert_eq!(read_strip(&y, w, w, h, Strip::Echo), None, "no echo burnt yet");
        stamp_strip(&mut y, w, w, h, &echo, Strip::Echo);
        assert_eq!((read_luma(&y, w, w, h), read_strip(&y, w, w, h, Strip::Echo)), (Some(own), Some(echo)));
        // Too small a picture for two strips: nothing is written, nothing read.
        let (w, h) = (160, 12);
        let mut tiny = frame(w, h, 100);
        stamp_strip(&mut tiny, w, w, h, &echo, Strip::Echo);
        assert_eq!(read_strip(&tiny, w, w, h, Strip::Echo), None);
    }

    #[test]
    fn an_echo_is_returned_only_while_fresh() {
        let e = Echo::default();
        let t0 = Instant::now();
        assert_eq!(e.fresh(t0), None);
        let tc = Timecode { frame: 1, capture_us: 2 };
        e.heard(tc, t0);
        assert_eq!(e.fresh(t0 + ECHO_FRESH), Some(tc));
        assert_eq!(e.fresh(t0 + ECHO_FRESH + Duration::from_millis(1)), None);
    }

    #[test]
    fn blank_or_random_picture_reads_nothing() {
        let (w, h) = (640, 360);
        assert_eq!(read_luma(&frame(w, h, 16), w, w, h), None);
        let noise: Vec<u8> = (0..w * h).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(read_luma(&noise, w, w, h), None);
    }

    #[test]
    fn age_wraps() {
        let tc = Timecode { frame: 0, capture_us: TIME_MASK - 10 };
        assert_eq!(tc.age_us(5), 16);
    }

    proptest! {
        /// Survives noise of +-40 luma levels and a stride wider than the picture.
        #[test]
        fn survives_noise(frame_no in 0u32..(1 << 24), t in 0u64..(1 << 40), seed in 0u64..1000, width in prop::sample::select(vec![320usize, 640, 1280, 1920])) {
            let height = width * 9 / 16;
            let stride = width + 64;
            let mut y = vec![128u8; stride * height];
            let tc = Timecode { frame: frame_no, capture_us: t };
            stamp_luma(&mut y, stride, width, height, &tc);
            let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            for px in y.iter_mut() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let delta = ((s >> 33) % 81) as i32 - 40;
                *px = (i32::from(*px) + delta).clamp(0, 255) as u8;
            }
            prop_assert_eq!(read_luma(&y, stride, width, height), Some(tc));
        }
    }
}
