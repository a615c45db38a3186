//! Drives the LEDs and reads the button through embedded-hal 1.0 pins: each tick lights
//! every LED as its pattern says (writing only on change) and turns the button's raw level into
//! debounced press and hold events.

use embedded_hal::digital::{InputPin, OutputPin};
use serde::Serialize;

use crate::{ButtonEvent, ButtonTracker, Debouncer, LedPattern, DEBOUNCE_MS};

/// The LEDs by role, in the order of the pattern array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Led {
    /// On while the daemon runs.
    Power = 0,
    /// The link: connecting, connected, retrying.
    Link = 1,
    /// On air.
    Live = 2,
    /// Needs attention.
    Error = 3,
    /// The tally: this box's picture is on air (told by the API or by the paired box).
    Tally = 4,
}

/// How many LEDs a panel drives (the configuration's count).
pub const LEDS: usize = telebridge_config::GPIO_LEDS;

impl Led {
    /// All of them, in array order.
    pub const ALL: [Led; LEDS] = [Led::Power, Led::Link, Led::Live, Led::Error, Led::Tally];

    /// The LED's name, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            Led::Power => "power",
            Led::Link => "link",
            Led::Live => "live",
            Led::Error => "error",
            Led::Tally => "tally",
        }
    }
}

/// LEDs and a button on some pins.
#[derive(Debug)]
pub struct Panel<O, I> {
    leds: [Option<O>; LEDS],
    lit: [Option<bool>; LEDS],
    button: Option<I>,
    active_low: bool,
    debounce: Debouncer,
    tracker: ButtonTracker,
}

impl<O: OutputPin, I: InputPin> Panel<O, I> {
    /// A panel; `None` for parts not fitted. `active_low`: the button reads low when pressed.
    pub fn new(leds: [Option<O>; LEDS], button: Option<I>, active_low: bool) -> Self {
        Self {
            leds,
            lit: [None; LEDS],
            button,
            active_low,
            debounce: Debouncer::new(false, DEBOUNCE_MS),
            tracker: ButtonTracker::default(),
        }
    }

    /// Lights the LEDs for `now_ms` and reads the button; call every few milliseconds.
    pub fn tick(&mut self, now_ms: u64, patterns: &[LedPattern; LEDS]) -> Result<Option<ButtonEvent>, String> {
        for (i, pattern) in patterns.iter().enumerate() {
            let want = pattern.level(now_ms);
            if let Some(pin) = self.leds[i].as_mut() {
                if self.lit[i] != Some(want) {
                    let r = if want { pin.set_high() } else { pin.set_low() };
                    r.map_err(|e| format!("LED {:?}: {e:?}", Led::ALL[i]))?;
                    self.lit[i] = Some(want);
                }
            }
        }
        let Some(button) = self.button.as_mut() else { return Ok(None) };
        let high = button.is_high().map_err(|e| format!("button: {e:?}"))?;
        let pressed = high != self.active_low;
        self.debounce.update(pressed, now_ms);
        Ok(self.tracker.update(self.debounce.level(), now_ms))
    }

    /// Which LEDs are lit now (as last written).
    pub fn lit(&self) -> [bool; LEDS] {
        self.lit.map(|l| l.unwrap_or(false))
    }

    /// Gives the pins back (tests check their transactions).
    pub fn release(self) -> ([Option<O>; LEDS], Option<I>) {
        (self.leds, self.button)
    }
}

#[cfg(test)]
mod tests {
    use embedded_hal_mock::eh1::digital::{Mock, State, Transaction as T};

    use super::*;
    use LedPattern::*;

    const PATTERNS: [LedPattern; LEDS] = [On, SlowBlink, Off, FastBlink, Off];

    #[test]
    fn leds_are_written_only_when_their_level_changes() {
        let power = Mock::new(&[T::set(State::High)]);
        // Slow blink: high at 0, low from 500.
        let link = Mock::new(&[T::set(State::High), T::set(State::Low)]);
        let live = Mock::new(&[T::set(State::Low)]);
        // Fast blink, 125 ms on and off: high at 0, low at 130, high at 260, low at 499, high at 500.
        let error = Mock::new(&[
            T::set(State::High),
            T::set(State::Low),
            T::set(State::High),
            T::set(State::Low),
            T::set(State::High),
        ]);
        let mut panel: Panel<Mock, Mock> =
            Panel::new([Some(power), Some(link), Some(live), Some(error), None], None, true);
        for t in [0, 10, 100, 130, 260, 499, 500] {
            assert_eq!(panel.tick(t, &PATTERNS).unwrap(), None);
        }
        assert_eq!(panel.lit(), [true, false, false, true, false]);
        let (leds, _) = panel.release();
        for mut l in leds.into_iter().flatten() {
            l.done();
        }
    }

    #[test]
    fn an_active_low_button_press_is_debounced_and_reported_on_release() {
        // Pulled up (high) when idle; a bounce, then held low for 200 ms, then released.
        let levels = [
            (0, State::High),
            (5, State::Low),
            (7, State::High),
            (9, State::Low),
            (20, State::Low),
            (45, State::Low),
            (100, State::Low),
            (209, State::Low),
            (210, State::High),
            (240, State::High),
            (260, State::High),
        ];
        let button = Mock::new(&levels.iter().map(|(_, s)| T::get(*s)).collect::<Vec<_>>());
        let mut panel: Panel<Mock, Mock> = Panel::new([None, None, None, None, None], Some(button), true);
        let mut events = Vec::new();
        for (t, _) in levels {
            if let Some(e) = panel.tick(t, &PATTERNS).unwrap() {
                events.push((t, e));
            }
        }
        // Down counted at 45 (9 + 30 ms held... settled from 9), up at 240, one Press.
        assert_eq!(events, [(240, ButtonEvent::Press)]);
        let (_, button) = panel.release();
        button.unwrap().done();
    }

    #[test]
    fn an_unfitted_led_is_skipped() {
        let live = Mock::new(&[T::set(State::Low)]);
        let mut panel: Panel<Mock, Mock> = Panel::new([None, None, Some(live), None, None], None, true);
        panel.tick(0, &PATTERNS).unwrap();
        panel.tick(600, &PATTERNS).unwrap();
        let (leds, _) = panel.release();
        for mut l in leds.into_iter().flatten() {
            l.done();
        }
    }
}
