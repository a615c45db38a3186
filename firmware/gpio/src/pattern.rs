//! The LED language: what each pattern looks like over time.

use serde::Serialize;

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
