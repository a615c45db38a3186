//! Status LEDs, the go-live button and the tally input. Everything that decides (LED patterns over time, the
//! debouncer, press and hold) is pure and tested without hardware; [`Panel`] drives any
//! embedded-hal 1.0 pins with it; [`backend`] opens the Raspberry Pi's pins (kernel GPIO
//! character device), simulated pins, or none.

pub mod backend;
mod button;
mod debounce;
mod panel;

pub use button::{ButtonEvent, ButtonTracker, HOLD_SETUP_MS, HOLD_STOP_MS};
pub use debounce::{Debouncer, DEBOUNCE_MS};
pub use panel::{Inputs, Panel};
pub use telebridge_contract::gpio::LedPattern;
pub use telebridge_contract::gpio::{Led, LEDS};
