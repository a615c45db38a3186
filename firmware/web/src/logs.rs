//! The last log lines, kept in memory for the panel's System page (`GET /api/logs`): the
//! daemon's log goes to stderr (journald) and, through [`TeeWriter`] (which the binary installs),
//! into a small ring.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;
use telebridge_sync::Locked;

/// Lines kept.
pub const LINES: usize = 300;

static RING: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// The last `n` log lines, oldest first.
pub fn tail(n: usize) -> Vec<String> {
    let ring = RING.locked();
    ring.iter().skip(ring.len().saturating_sub(n)).cloned().collect()
}

fn keep(text: &[u8]) {
    let mut ring = RING.locked();
    for line in String::from_utf8_lossy(text).lines().filter(|l| !l.is_empty()) {
        if ring.len() == LINES {
            ring.pop_front();
        }
        ring.push_back(line.to_string());
    }
}

/// A log writer: stderr, and the ring. Each event is written whole, so lines are not split.
#[derive(Debug, Default, Clone, Copy)]
pub struct TeeWriter;

impl Write for TeeWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        keep(buf);
        std::io::stderr().write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_lines() {
        for i in 0..LINES + 5 {
            TeeWriter.write_all(format!("line {i}\n").as_bytes()).unwrap();
        }
        let t = tail(3);
        assert_eq!(t, [format!("line {}", LINES + 2), format!("line {}", LINES + 3), format!("line {}", LINES + 4)]);
        assert_eq!(tail(10_000).len(), LINES);
    }
}
