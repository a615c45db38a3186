//! A debouncer: a new level counts only once the raw input has held it for [`DEBOUNCE_MS`].

/// How long a level must hold, ms (switch contacts bounce for 1-20 ms).
pub const DEBOUNCE_MS: u64 = 30;

/// Turns a bouncing input into clean level changes.
#[derive(Debug, Clone)]
pub struct Debouncer {
    stable: bool,
    candidate: Option<(bool, u64)>,
    hold_ms: u64,
}

impl Debouncer {
    /// Starts at `level`, needing `hold_ms` of a new level before reporting it.
    pub fn new(level: bool, hold_ms: u64) -> Self {
        Self { stable: level, candidate: None, hold_ms }
    }

    /// The debounced level.
    pub fn level(&self) -> bool {
        self.stable
    }

    /// Feeds a raw reading taken at `now_ms`; returns the new level when it changes.
    pub fn update(&mut self, raw: bool, now_ms: u64) -> Option<bool> {
        if raw == self.stable {
            self.candidate = None;
            return None;
        }
        match self.candidate {
            Some((level, since)) if level == raw => {
                if now_ms.saturating_sub(since) >= self.hold_ms {
                    self.stable = raw;
                    self.candidate = None;
                    return Some(raw);
                }
            }
            _ => self.candidate = Some((raw, now_ms)),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounces_are_ignored_and_a_held_level_counts_once() {
        let mut d = Debouncer::new(false, DEBOUNCE_MS);
        // Contact bounce: on/off every 2 ms for 10 ms, never stable for 30 ms.
        for t in 0..10 {
            assert_eq!(d.update(t % 2 == 0, t * 2), None, "t={t}");
        }
        // Then held down: reported once, DEBOUNCE_MS after it settled.
        assert_eq!(d.update(true, 20), None);
        assert_eq!(d.update(true, 49), None);
        assert_eq!(d.update(true, 50), Some(true));
        assert_eq!(d.update(true, 60), None);
        assert!(d.level());
        // A 10 ms glitch low does not release it.
        assert_eq!(d.update(false, 100), None);
        assert_eq!(d.update(false, 110), None);
        assert_eq!(d.update(true, 111), None);
        assert_eq!(d.update(false, 200), None);
        assert_eq!(d.update(false, 230), Some(false));
    }
}
