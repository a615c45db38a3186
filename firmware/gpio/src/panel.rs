//! Drives the LEDs and reads the inputs through embedded-hal 1.0 pins: each tick lights every
//! LED as its pattern says (writing only on change), turns the button's raw level into debounced
//! press and hold events, and reads the tally input (a vision mixer's contact), debounced.

use embedded_hal::digital::{InputPin, OutputPin};

use crate::{ButtonEvent, ButtonTracker, Debouncer, Led, LedPattern, DEBOUNCE_MS, LEDS};

/// What the inputs said at one tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inputs {
    /// A press or hold of the go-live button, when one ended or crossed its time.
    pub button: Option<ButtonEvent>,
    /// The tally input's debounced level (`true`: on air); `None` when none is wired.
    pub tally_in: Option<bool>,
    /// The talk button's debounced level (`true`: held); `None` when none is fitted.
    pub talk: Option<bool>,
}

/// A debounced input: its pin, which level means active, its debouncer.
#[derive(Debug)]
struct Input<I> {
    pin: I,
    active_low: bool,
    debounce: Debouncer,
}

impl<I: InputPin> Input<I> {
    fn new(pin: I, active_low: bool) -> Self {
        Self { pin, active_low, debounce: Debouncer::new(false, DEBOUNCE_MS) }
    }

    /// Reads the pin at `now_ms`; the debounced level (`true`: active).
    fn read(&mut self, now_ms: u64, what: &str) -> Result<bool, String> {
        let high = self.pin.is_high().map_err(|e| format!("{what}: {e:?}"))?;
        self.debounce.update(high != self.active_low, now_ms);
        Ok(self.debounce.level())
    }
}

/// LEDs, a button and a tally input on some pins.
#[derive(Debug)]
pub struct Panel<O, I> {
    leds: [Option<O>; LEDS],
    lit: [Option<bool>; LEDS],
    button: Option<Input<I>>,
    tracker: ButtonTracker,
    tally_in: Option<Input<I>>,
    talk: Option<Input<I>>,
}

impl<O: OutputPin, I: InputPin> Panel<O, I> {
    /// A panel; `None` for parts not fitted. `active_low`: the button reads low when pressed.
    pub fn new(leds: [Option<O>; LEDS], button: Option<I>, active_low: bool) -> Self {
        Self {
            leds,
            lit: [None; LEDS],
            button: button.map(|pin| Input::new(pin, active_low)),
            tracker: ButtonTracker::default(),
            tally_in: None,
            talk: None,
        }
    }

    /// With a tally input on `pin` (`active_low`: on air when it reads low).
    pub fn with_tally_in(mut self, pin: Option<I>, active_low: bool) -> Self {
        self.tally_in = pin.map(|pin| Input::new(pin, active_low));
        self
    }

    /// With talkback's talk button on `pin` (`active_low`: held when it reads low).
    pub fn with_talk_button(mut self, pin: Option<I>, active_low: bool) -> Self {
        self.talk = pin.map(|pin| Input::new(pin, active_low));
        self
    }

    /// Lights the LEDs for `now_ms` and reads the inputs; call every few milliseconds.
    pub fn tick(&mut self, now_ms: u64, patterns: &[LedPattern; LEDS]) -> Result<Inputs, String> {
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
        let mut inputs = Inputs::default();
        if let Some(button) = self.button.as_mut() {
            let down = button.read(now_ms, "button")?;
            inputs.button = self.tracker.update(down, now_ms);
        }
        if let Some(tally) = self.tally_in.as_mut() {
            inputs.tally_in = Some(tally.read(now_ms, "tally input")?);
        }
        if let Some(talk) = self.talk.as_mut() {
            inputs.talk = Some(talk.read(now_ms, "talk button")?);
        }
        Ok(inputs)
    }

    /// Which LEDs are lit now (as last written).
    pub fn lit(&self) -> [bool; LEDS] {
        self.lit.map(|l| l.unwrap_or(false))
    }

    /// Gives the pins back (tests check their transactions).
    pub fn release(self) -> ([Option<O>; LEDS], Option<I>, Option<I>, Option<I>) {
        (self.leds, self.button.map(|b| b.pin), self.tally_in.map(|t| t.pin), self.talk.map(|t| t.pin))
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
            assert_eq!(panel.tick(t, &PATTERNS).unwrap(), Inputs::default());
        }
        assert_eq!(panel.lit(), [true, false, false, true, false]);
        let (leds, _, _, _) = panel.release();
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
            if let Some(e) = panel.tick(t, &PATTERNS).unwrap().button {
                events.push((t, e));
            }
        }
        // Down counted at 45 (9 + 30 ms held... settled from 9), up at 240, one Press.
        assert_eq!(events, [(240, ButtonEvent::Press)]);
        let (_, button, _, _) = panel.release();
        button.unwrap().done();
    }

    #[test]
    fn the_tally_input_is_on_air_while_the_mixer_holds_it_low_and_ignores_a_glitch() {
        // Pulled up when idle; a 5 ms glitch; the mixer's contact closes at 100 and opens at 400.
        let levels = [
            (0, State::High),
            (50, State::Low),
            (55, State::High),
            (100, State::Low),
            (120, State::Low),
            (140, State::Low),
            (400, State::High),
            (420, State::High),
            (440, State::High),
        ];
        let tally = Mock::new(&levels.iter().map(|(_, s)| T::get(*s)).collect::<Vec<_>>());
        let mut panel: Panel<Mock, Mock> =
            Panel::new([None, None, None, None, None], None, true).with_tally_in(Some(tally), true);
        let seen: Vec<(u64, Option<bool>)> =
            levels.iter().map(|(t, _)| (*t, panel.tick(*t, &PATTERNS).unwrap().tally_in)).collect();
        assert_eq!(seen.iter().find(|(_, on)| *on == Some(true)).map(|(t, _)| *t), Some(140), "{seen:?}");
        assert!(seen.iter().all(|(t, on)| *t >= 100 || *on == Some(false)), "the glitch is ignored: {seen:?}");
        assert_eq!(seen.last().map(|(_, on)| *on), Some(Some(false)), "off when the contact opens: {seen:?}");
        let (_, _, tally, _) = panel.release();
        tally.unwrap().done();
    }

    #[test]
    fn the_talk_button_is_held_while_down() {
        let levels = [
            (0, State::High),
            (10, State::Low),
            (30, State::Low),
            (45, State::Low),
            (500, State::High),
            (540, State::High),
        ];
        let talk = Mock::new(&levels.iter().map(|(_, s)| T::get(*s)).collect::<Vec<_>>());
        let mut panel: Panel<Mock, Mock> =
            Panel::new([None, None, None, None, None], None, true).with_talk_button(Some(talk), true);
        let held: Vec<Option<bool>> = levels.iter().map(|(t, _)| panel.tick(*t, &PATTERNS).unwrap().talk).collect();
        assert_eq!(held, [Some(false), Some(false), Some(false), Some(true), Some(true), Some(false)]);
        let (_, _, _, talk) = panel.release();
        talk.unwrap().done();
    }

    #[test]
    fn an_unfitted_led_is_skipped() {
        let live = Mock::new(&[T::set(State::Low)]);
        let mut panel: Panel<Mock, Mock> = Panel::new([None, None, Some(live), None, None], None, true);
        panel.tick(0, &PATTERNS).unwrap();
        panel.tick(600, &PATTERNS).unwrap();
        let (leds, _, _, _) = panel.release();
        for mut l in leds.into_iter().flatten() {
            l.done();
        }
    }
}
