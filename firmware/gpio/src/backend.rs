//! Where the pins are: the Raspberry Pi's GPIO through the kernel's character device
//! (`/dev/gpiochip0`, via linux-embedded-hal), simulated pins whose state the API shows and whose
//! button it presses, or none.

use embedded_hal::digital::{ErrorType, InputPin, OutputPin};
use telebridge_config::{GpioBackend, GpioPins};

use crate::{Inputs, LedPattern, Panel, LEDS};

/// Why the GPIO could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum GpioError {
    /// No character device.
    #[error("no GPIO chip at {path}: this is not a Raspberry Pi or its kernel has no GPIO character device; set gpio.backend = \"sim\" or \"none\"")]
    NoChip {
        /// The path tried.
        path: String,
    },
    /// A line could not be requested.
    #[error("GPIO {pin} ({role}) on {chip}: {message}")]
    Line {
        /// The chip.
        chip: String,
        /// BCM number.
        pin: u32,
        /// What it is for.
        role: &'static str,
        /// The kernel's words.
        message: String,
    },
    /// The Pi backend on a system without the character device API.
    #[error("gpio.backend = \"pi\" needs Linux")]
    NotLinux,
}

pub use telebridge_contract::gpio::{SimBoard, SimState};

/// A simulated LED.
#[derive(Debug)]
pub struct SimLed {
    board: SimBoard,
    index: usize,
}

/// A simulated input: the button (high while pressed) or the tally input (high while on air).
#[derive(Debug)]
pub struct SimButton {
    board: SimBoard,
    tally: bool,
}

impl SimButton {
    fn high(&self) -> bool {
        let s = self.board.state();
        if self.tally {
            s.tally_in
        } else {
            s.button_pressed
        }
    }
}

impl ErrorType for SimLed {
    type Error = core::convert::Infallible;
}

impl OutputPin for SimLed {
    fn set_low(&mut self) -> Result<(), Self::Error> {
        self.board.set_led(self.index, false);
        Ok(())
    }

    fn set_high(&mut self) -> Result<(), Self::Error> {
        self.board.set_led(self.index, true);
        Ok(())
    }
}

impl ErrorType for SimButton {
    type Error = core::convert::Infallible;
}

impl InputPin for SimButton {
    fn is_high(&mut self) -> Result<bool, Self::Error> {
        Ok(self.high())
    }

    fn is_low(&mut self) -> Result<bool, Self::Error> {
        Ok(!self.high())
    }
}

#[cfg(target_os = "linux")]
type PiPin = linux_embedded_hal::CdevPin;

/// The pins the daemon drives.
pub enum Board {
    /// The Raspberry Pi's GPIO.
    #[cfg(target_os = "linux")]
    Pi(Box<Panel<PiPin, PiPin>>),
    /// Simulated.
    Sim(Box<Panel<SimLed, SimButton>>, SimBoard),
    /// Nothing fitted.
    None,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Board({})", self.name())
    }
}

impl Board {
    /// Opens the backend the settings name (`auto`: the Pi's GPIO when this is a Pi and the chip
    /// exists, otherwise none).
    pub fn open(pins: &GpioPins) -> Result<Board, GpioError> {
        match pins.backend {
            GpioBackend::None => Ok(Board::None),
            GpioBackend::Sim => {
                let board = SimBoard::default();
                let leds = std::array::from_fn(|index| Some(SimLed { board: board.clone(), index }));
                let button = SimButton { board: board.clone(), tally: false };
                let tally = SimButton { board: board.clone(), tally: true };
                Ok(Board::Sim(Box::new(Panel::new(leds, Some(button), false).with_tally_in(Some(tally), false)), board))
            }
            GpioBackend::Pi => open_pi(pins),
            GpioBackend::Auto => {
                let is_pi =
                    std::fs::read_to_string("/proc/device-tree/model").is_ok_and(|m| m.starts_with("Raspberry Pi"));
                if is_pi && std::path::Path::new(&pins.chip).exists() {
                    open_pi(pins)
                } else {
                    Ok(Board::None)
                }
            }
        }
    }

    /// The backend's name.
    pub fn name(&self) -> &'static str {
        match self {
            #[cfg(target_os = "linux")]
            Board::Pi(_) => "pi",
            Board::Sim(..) => "sim",
            Board::None => "none",
        }
    }

    /// The simulated board, when this is one.
    pub fn sim(&self) -> Option<SimBoard> {
        match self {
            Board::Sim(_, b) => Some(b.clone()),
            _ => None,
        }
    }

    /// Lights the LEDs for `now_ms` and reads the inputs.
    pub fn tick(&mut self, now_ms: u64, patterns: &[LedPattern; LEDS]) -> Result<Inputs, String> {
        match self {
            #[cfg(target_os = "linux")]
            Board::Pi(p) => p.tick(now_ms, patterns),
            Board::Sim(p, _) => p.tick(now_ms, patterns),
            Board::None => Ok(Inputs::default()),
        }
    }
}

#[cfg(target_os = "linux")]
fn open_pi(pins: &GpioPins) -> Result<Board, GpioError> {
    use linux_embedded_hal::gpio_cdev::{Chip, LineRequestFlags};
    if !std::path::Path::new(&pins.chip).exists() {
        return Err(GpioError::NoChip { path: pins.chip.clone() });
    }
    let mut chip = Chip::new(&pins.chip).map_err(|_| GpioError::NoChip { path: pins.chip.clone() })?;
    let mut line = |pin: u32, role: &'static str, flags: LineRequestFlags| {
        let err =
            |e: &dyn std::fmt::Display| GpioError::Line { chip: pins.chip.clone(), pin, role, message: e.to_string() };
        let handle = chip.get_line(pin).map_err(|e| err(&e))?.request(flags, 0, "telebridge").map_err(|e| err(&e))?;
        PiPin::new(handle).map_err(|e| err(&e))
    };
    let names = ["power LED", "link LED", "live LED", "error LED", "tally LED"];
    let mut leds: [Option<PiPin>; LEDS] = Default::default();
    for (i, pin) in pins.leds.iter().enumerate() {
        if let Some(p) = pin {
            leds[i] = Some(line(*p, names[i], LineRequestFlags::OUTPUT)?);
        }
    }
    let button = match pins.button {
        Some(p) => Some(line(p, "button", LineRequestFlags::INPUT)?),
        None => None,
    };
    let tally_in = match pins.tally_in {
        Some(p) => Some(line(p, "tally input", LineRequestFlags::INPUT)?),
        None => None,
    };
    let talk = match pins.talk_button {
        Some(p) => Some(line(p, "talk button", LineRequestFlags::INPUT)?),
        None => None,
    };
    let panel = Panel::new(leds, button, pins.button_active_low)
        .with_tally_in(tally_in, pins.tally_in_active_low)
        .with_talk_button(talk, pins.button_active_low);
    Ok(Board::Pi(Box::new(panel)))
}

#[cfg(not(target_os = "linux"))]
fn open_pi(_pins: &GpioPins) -> Result<Board, GpioError> {
    Err(GpioError::NotLinux)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ButtonEvent;

    fn pins(backend: GpioBackend, chip: &str) -> GpioPins {
        GpioPins {
            backend,
            chip: chip.into(),
            leds: [Some(5), Some(6), Some(13), Some(19), None],
            button: Some(26),
            button_active_low: true,
            tally_in: Some(21),
            tally_in_active_low: true,
            talk_button: Some(16),
        }
    }

    #[test]
    fn the_pi_backend_without_a_chip_says_what_to_do() {
        let err = Board::open(&pins(GpioBackend::Pi, "/nonexistent/gpiochip0")).unwrap_err().to_string();
        assert!(err.contains("no GPIO chip at /nonexistent/gpiochip0"), "{err}");
        assert!(err.contains("gpio.backend = \"sim\" or \"none\""), "{err}");
    }

    #[test]
    fn auto_on_a_machine_without_the_chip_is_none() {
        let b = Board::open(&pins(GpioBackend::Auto, "/nonexistent/gpiochip0")).unwrap();
        assert_eq!(b.name(), "none");
    }

    #[test]
    fn the_simulated_board_shows_leds_and_takes_presses() {
        let mut b = Board::open(&pins(GpioBackend::Sim, "")).unwrap();
        let sim = b.sim().unwrap();
        let on = [LedPattern::On, LedPattern::Off, LedPattern::On, LedPattern::Off, LedPattern::On];
        assert_eq!(b.tick(0, &on).unwrap().button, None);
        assert_eq!(sim.state().leds, [true, false, true, false, true]);
        sim.set_button(true);
        for t in (0..=200).step_by(10) {
            assert_eq!(b.tick(t, &on).unwrap().button, None);
        }
        sim.set_button(false);
        let events: Vec<_> = (210..=300).step_by(10).filter_map(|t| b.tick(t, &on).unwrap().button).collect();
        assert_eq!(events, [ButtonEvent::Press]);
        assert_eq!(b.tick(310, &on).unwrap().tally_in, Some(false));
        sim.set_tally_in(true);
        let on_air = (320..=400).step_by(10).find(|t| b.tick(*t, &on).unwrap().tally_in == Some(true));
        assert_eq!(on_air, Some(350), "the simulated tally contact, debounced");
    }
}
