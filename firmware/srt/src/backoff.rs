//! Capped exponential backoff for reconnecting: a pure function of the attempt number.

use std::time::Duration;

/// Delays between reconnect attempts: `first`, doubling, never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub first: Duration,
    /// The cap.
    pub max: Duration,
}

impl Default for Backoff {
    /// 200 ms, 400 ms, 800 ms, then every 1.5 s: a receiver that comes back is found fast, and a
    /// dead one costs one handshake every 1.5 s.
    fn default() -> Self {
        Self { first: Duration::from_millis(200), max: Duration::from_millis(1500) }
    }
}

impl Backoff {
    /// The delay before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let shift = attempt.saturating_sub(1).min(16);
        self.first.saturating_mul(1 << shift).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_then_caps() {
        let b = Backoff::default();
        let ms: Vec<u128> = (1..=6).map(|a| b.delay(a).as_millis()).collect();
        assert_eq!(ms, [200, 400, 800, 1500, 1500, 1500]);
        assert_eq!(b.delay(u32::MAX), b.max);
        assert_eq!(b.delay(0), b.first);
    }
}
