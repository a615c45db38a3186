//! The tally light: whether this box's picture is on air. The control room says so through the
//! API (`POST /api/tally`, a cue that stays until changed) or the vision mixer's tally output on
//! the tally input (a GPIO pin, while its contact is closed), or the paired box says it is live
//! (its signed messages on the bridge's connection, four a second: the light goes out when
//! they stop). Pure: fed cues, levels, messages and the time.

use serde::Serialize;
use telebridge_gpio::LedPattern;

/// A far box's "live" counts this long after its last message (its messages come every 250 ms;
/// a connection that drops takes the light out within this).
pub const FAR_FRESH_MS: u64 = 1_000;

/// The panel's LEDs: the state machine's four (power, link, live, error) and the tally.
pub fn panel(status: [LedPattern; 4], tally: LedPattern) -> [LedPattern; telebridge_gpio::LEDS] {
    let [power, link, live, error] = status;
    [power, link, live, error, tally]
}

/// The tally as the status shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TallyStatus {
    /// On air: the light is on.
    pub on_air: bool,
    /// The API's cue.
    pub cue: bool,
    /// The tally input (the vision mixer's contact) is active.
    pub wired: bool,
    /// The paired box is live (heard within [`FAR_FRESH_MS`]).
    pub far_live: bool,
}

/// The tally's state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    cue: bool,
    wired: bool,
    /// What the paired box last said, and when (ms on the daemon's clock).
    far: Option<(bool, u64)>,
}

impl Tally {
    /// The API's cue: on air or not.
    pub fn cue(&mut self, on_air: bool) {
        self.cue = on_air;
    }

    /// The tally input's level: on air while the mixer's contact is closed.
    pub fn wired(&mut self, on_air: bool) {
        self.wired = on_air;
    }

    /// The paired box said it is live (or not) at `now_ms`.
    pub fn far(&mut self, live: bool, now_ms: u64) {
        self.far = Some((live, now_ms));
    }

    /// The tally at `now_ms`.
    pub fn status(&self, now_ms: u64) -> TallyStatus {
        let far_live = self.far.is_some_and(|(live, at)| live && now_ms.saturating_sub(at) <= FAR_FRESH_MS);
        TallyStatus { on_air: self.cue || self.wired || far_live, cue: self.cue, wired: self.wired, far_live }
    }

    /// The tally LED's pattern at `now_ms`: steady while on air.
    pub fn pattern(&self, now_ms: u64) -> LedPattern {
        if self.status(now_ms).on_air {
            LedPattern::On
        } else {
            LedPattern::Off
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cue_holds_and_the_far_box_counts_while_its_messages_come() {
        let mut t = Tally::default();
        assert_eq!(t.status(0), TallyStatus::default());
        t.far(true, 1_000);
        assert_eq!(t.status(1_400), TallyStatus { on_air: true, cue: false, wired: false, far_live: true });
        assert_eq!(t.pattern(1_400), LedPattern::On);
        // Messages stopped (the connection dropped): out after FAR_FRESH_MS.
        assert!(t.status(1_000 + FAR_FRESH_MS).on_air);
        assert!(!t.status(1_001 + FAR_FRESH_MS).on_air);
        // The far box said it stopped: out at once.
        t.far(false, 3_000);
        assert!(!t.status(3_000).on_air);
        // The cue holds whatever the far box says.
        t.cue(true);
        assert_eq!(t.status(60_000), TallyStatus { on_air: true, cue: true, wired: false, far_live: false });
        t.cue(false);
        assert_eq!(t.pattern(60_000), LedPattern::Off);
        // The mixer's contact: on air while closed, whatever the cue.
        t.wired(true);
        assert_eq!(t.status(61_000), TallyStatus { on_air: true, cue: false, wired: true, far_live: false });
        assert_eq!(t.pattern(61_000), LedPattern::On);
        t.wired(false);
        assert!(!t.status(62_000).on_air);
    }
}
