//! Press and hold: a press shorter than [`HOLD_STOP_MS`] toggles live; holding for
//! [`HOLD_STOP_MS`] stops; holding for [`HOLD_SETUP_MS`] shows the setup code. Holds fire while
//! the button is still down, so the box answers without waiting for the release.

pub use telebridge_contract::gpio::{ButtonEvent, HOLD_SETUP_MS, HOLD_STOP_MS};

/// Turns debounced levels (pressed or not) into [`ButtonEvent`]s.
#[derive(Debug, Clone, Default)]
pub struct ButtonTracker {
    down_since: Option<u64>,
    fired_stop: bool,
    fired_setup: bool,
}

impl ButtonTracker {
    /// Feeds the debounced state at `now_ms` (call it often, also while nothing changes).
    pub fn update(&mut self, pressed: bool, now_ms: u64) -> Option<ButtonEvent> {
        match (pressed, self.down_since) {
            (true, None) => {
                *self = Self { down_since: Some(now_ms), fired_stop: false, fired_setup: false };
                None
            }
            (true, Some(since)) => {
                let held = now_ms.saturating_sub(since);
                if held >= HOLD_SETUP_MS && !self.fired_setup {
                    self.fired_setup = true;
                    self.fired_stop = true;
                    Some(ButtonEvent::HoldSetup)
                } else if held >= HOLD_STOP_MS && !self.fired_stop {
                    self.fired_stop = true;
                    Some(ButtonEvent::HoldStop)
                } else {
                    None
                }
            }
            (false, Some(_)) => {
                let short = !self.fired_stop;
                self.down_since = None;
                short.then_some(ButtonEvent::Press)
            }
            (false, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(presses: &[(bool, u64)]) -> Vec<(u64, ButtonEvent)> {
        let mut b = ButtonTracker::default();
        let mut out = Vec::new();
        let mut level = false;
        let mut it = presses.iter().peekable();
        for t in (0..=20_000).step_by(10) {
            while let Some((l, at)) = it.peek() {
                if *at <= t {
                    level = *l;
                    it.next();
                } else {
                    break;
                }
            }
            if let Some(e) = b.update(level, t) {
                out.push((t, e));
            }
        }
        out
    }

    #[test]
    fn a_short_press_toggles_on_release() {
        assert_eq!(run(&[(true, 100), (false, 400)]), [(400, ButtonEvent::Press)]);
        assert_eq!(run(&[(true, 100), (false, 3_090)]), [(3_090, ButtonEvent::Press)]);
    }

    #[test]
    fn a_three_second_hold_stops_while_held_and_the_release_does_nothing() {
        assert_eq!(run(&[(true, 100), (false, 5_000)]), [(3_100, ButtonEvent::HoldStop)]);
    }

    #[test]
    fn a_ten_second_hold_stops_then_shows_setup() {
        assert_eq!(
            run(&[(true, 0), (false, 12_000)]),
            [(3_000, ButtonEvent::HoldStop), (10_000, ButtonEvent::HoldSetup)]
        );
    }

    #[test]
    fn two_presses_are_two_events() {
        assert_eq!(
            run(&[(true, 0), (false, 200), (true, 500), (false, 700)]),
            [(200, ButtonEvent::Press), (700, ButtonEvent::Press)]
        );
    }
}
