//! The tally light: whether this box's picture is on air.
//!
//! An encoder (or decoder) is on air when the control room says so through the API (`POST
//! /api/tally`, a cue that stays until changed) or the vision mixer's tally output closes the
//! tally input (a GPIO pin). In a bridge the picture that matters is the one the far box
//! receives: a bridge is on air when the paired box says it has taken this box's picture (its
//! operator's cue, or its mixer's contact, sent as signed messages on the bridge's connection
//! four times a second; the light goes out when they stop). A bridge's own cue and contact are
//! what it tells the paired box. Both boxes being live tells nobody anything. Pure: fed cues,
//! levels, messages and the time.

use telebridge_gpio::LedPattern;

/// A far box's "taken" counts this long after its last message (its messages come every 250
/// ms; a connection that drops takes the light out within this).
pub const FAR_FRESH_MS: u64 = 1_000;

/// The panel's LEDs: the state machine's four (power, link, live, error) and the tally.
pub fn panel(status: [LedPattern; 4], tally: LedPattern) -> [LedPattern; telebridge_gpio::LEDS] {
    let [power, link, live, error] = status;
    [power, link, live, error, tally]
}

pub use telebridge_contract::daemon::TallyStatus;

/// The tally's state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    cue: bool,
    wired: bool,
    /// What the paired box last said, and when (ms on the daemon's clock).
    far: Option<(bool, u64)>,
    bridge: bool,
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

    /// The paired box said it has this box's picture on air (or not) at `now_ms`.
    pub fn far(&mut self, taken: bool, now_ms: u64) {
        self.far = Some((taken, now_ms));
    }

    /// Whether the box is a bridge (what its cue and contact mean).
    pub fn set_bridge(&mut self, bridge: bool) {
        self.bridge = bridge;
    }

    /// The tally at `now_ms`.
    pub fn status(&self, now_ms: u64) -> TallyStatus {
        let taken_by_far =
            self.bridge && self.far.is_some_and(|(on, at)| on && now_ms.saturating_sub(at) <= FAR_FRESH_MS);
        let local = self.cue || self.wired;
        TallyStatus {
            on_air: if self.bridge { taken_by_far } else { local },
            cue: self.cue,
            wired: self.wired,
            taken_by_far,
            takes_far: self.bridge && local,
        }
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
    fn an_encoder_is_on_air_by_its_cue_or_its_mixer_contact() {
        let mut t = Tally::default();
        assert_eq!(t.status(0), TallyStatus::default());
        t.far(true, 1_000);
        assert!(!t.status(1_000).on_air, "no paired box speaks for an encoder");
        t.cue(true);
        assert_eq!(t.status(60_000), TallyStatus { on_air: true, cue: true, ..TallyStatus::default() });
        t.cue(false);
        assert_eq!(t.pattern(60_000), LedPattern::Off);
        t.wired(true);
        assert_eq!(t.status(61_000), TallyStatus { on_air: true, wired: true, ..TallyStatus::default() });
        assert_eq!(t.pattern(61_000), LedPattern::On);
        t.wired(false);
        assert!(!t.status(62_000).on_air);
    }

    #[test]
    fn a_bridge_is_on_air_when_the_far_box_takes_its_picture_and_its_own_cue_goes_to_the_far_box() {
        let mut t = Tally::default();
        t.set_bridge(true);
        t.far(true, 1_000);
        let s = t.status(1_400);
        assert_eq!(s, TallyStatus { on_air: true, taken_by_far: true, ..TallyStatus::default() });
        assert_eq!(t.pattern(1_400), LedPattern::On);
        // Messages stopped (the connection dropped): out after FAR_FRESH_MS.
        assert!(t.status(1_000 + FAR_FRESH_MS).on_air);
        assert!(!t.status(1_001 + FAR_FRESH_MS).on_air);
        // The far box let go: out at once.
        t.far(false, 3_000);
        assert!(!t.status(3_000).on_air);
        // This box's cue (or contact) takes the far box's picture: said to it, not lit here.
        t.cue(true);
        assert_eq!(t.status(4_000), TallyStatus { cue: true, takes_far: true, ..TallyStatus::default() });
        t.cue(false);
        t.wired(true);
        assert_eq!(t.status(5_000), TallyStatus { wired: true, takes_far: true, ..TallyStatus::default() });
    }
}
