//! The box's front as the daemon and the panel see it: the LEDs by role and how each shows a
//! state, and what the user did with the go-live button (the gpio crate drives the pins).

use std::sync::{Arc, Mutex};

use serde::Serialize;

/// A hold this long stops, ms.
pub const HOLD_STOP_MS: u64 = 3_000;
/// A hold this long shows the setup code and address, ms.
pub const HOLD_SETUP_MS: u64 = 10_000;

/// What the user did with the button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ButtonEvent {
    /// Pressed and released within 3 s: toggle live.
    Press,
    /// Held 3 s: stop.
    HoldStop,
    /// Held 10 s: show the setup code.
    HoldSetup,
}

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
    /// The tally: this box's picture is on air (told by the API, the tally input or the paired
    /// box).
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

/// How an LED shows a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LedPattern {
    /// Dark.
    Off,
    /// Lit.
    On,
    /// 1 Hz, half on: connecting.
    SlowBlink,
    /// Two 120 ms flashes a second: retrying.
    DoubleBlink,
    /// 4 Hz: needs attention.
    FastBlink,
}

impl LedPattern {
    /// Whether the LED is lit `t_ms` milliseconds into the pattern (any clock that counts ms).
    pub fn level(self, t_ms: u64) -> bool {
        let phase = t_ms % 1000;
        match self {
            LedPattern::Off => false,
            LedPattern::On => true,
            LedPattern::SlowBlink => phase < 500,
            LedPattern::DoubleBlink => phase < 120 || (240..360).contains(&phase),
            LedPattern::FastBlink => phase % 250 < 125,
        }
    }
}

/// The simulated board's state: what the LEDs show, whether the button is down and whether the
/// tally input is active.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SimState {
    /// power, link, live, error, tally.
    pub leds: [bool; LEDS],
    /// The button is held down.
    pub button_pressed: bool,
    /// The vision mixer's tally contact is closed (this box on air).
    pub tally_in: bool,
}

/// A simulated board shared between the pins and the API.
#[derive(Debug, Clone, Default)]
pub struct SimBoard(Arc<Mutex<SimState>>);

impl SimBoard {
    fn lock(&self) -> std::sync::MutexGuard<'_, SimState> {
        // The state is three plain fields: whatever a panicking holder left is still whole.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state now.
    pub fn state(&self) -> SimState {
        *self.lock()
    }

    /// Holds the button down (`true`) or lets it go.
    pub fn set_button(&self, pressed: bool) {
        self.lock().button_pressed = pressed;
    }

    /// Closes the mixer's tally contact (`true`) or opens it.
    pub fn set_tally_in(&self, on_air: bool) {
        self.lock().tally_in = on_air;
    }

    /// Lights LED `index` (`true`) or darkens it: the simulated pins' side.
    pub fn set_led(&self, index: usize, lit: bool) {
        if let Some(led) = self.lock().leds.get_mut(index) {
            *led = lit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LedPattern::*;

    fn lit_ms(p: super::LedPattern) -> usize {
        (0..1000).filter(|t| p.level(*t)).count()
    }

    #[test]
    fn duty_cycles() {
        assert_eq!(lit_ms(Off), 0);
        assert_eq!(lit_ms(On), 1000);
        assert_eq!(lit_ms(SlowBlink), 500);
        assert_eq!(lit_ms(DoubleBlink), 240);
        assert_eq!(lit_ms(FastBlink), 500);
    }

    #[test]
    fn shapes() {
        // Slow: one rising edge a second; double: two; fast: four.
        let edges = |p: super::LedPattern| (1..=2000).filter(|t| p.level(*t) && !p.level(t - 1)).count();
        assert_eq!(edges(SlowBlink), 2);
        assert_eq!(edges(DoubleBlink), 4);
        assert_eq!(edges(FastBlink), 8);
        assert!(DoubleBlink.level(0) && !DoubleBlink.level(150) && DoubleBlink.level(250) && !DoubleBlink.level(500));
    }
}
