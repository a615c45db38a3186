//! The appliance's state machine: a pure function of (state, event, now) that returns the next
//! state and what to do. The daemon feeds it button presses, API commands, the outputs' states
//! and the pipeline's fate; the LEDs are a pure function of the result.
//!
//! ```text
//! booting ──booted──► ready ──press / api live──► going live ──every link up──► live
//!                       ▲                            │    ▲                       │
//!                       │◄── press / hold 3 s / api ─┤    └── links reconnect ────┤
//!                       │                            ▼                            ▼
//!                       └──── press / api ◄──── error ◄── pipeline failed ── degraded (a link retrying,
//!                                                                              or no input signal)
//! ```

use crate::gpio::{ButtonEvent, LedPattern};
use serde::Serialize;

/// Where the box is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Starting up.
    Booting,
    /// Idle, ready to go live.
    Ready,
    /// Started; no link up yet.
    GoingLive,
    /// On air, every link up.
    Live,
    /// On air, but a link is retrying or the input signal is missing.
    Degraded,
    /// Stopped by a failure the user must look at.
    Error,
}

impl State {
    /// Every state, in the order the history codes them.
    pub const ALL: [State; 6] =
        [State::Booting, State::Ready, State::GoingLive, State::Live, State::Degraded, State::Error];

    /// The state's word, as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            State::Booting => "booting",
            State::Ready => "ready",
            State::GoingLive => "going_live",
            State::Live => "live",
            State::Degraded => "degraded",
            State::Error => "error",
        }
    }

    /// Whether media runs in this state.
    pub fn running(self) -> bool {
        matches!(self, State::GoingLive | State::Live | State::Degraded)
    }
}

/// How the links (outputs, or the decoder's input) stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Links {
    /// How many.
    pub total: u32,
    /// Up and carrying the stream.
    pub connected: u32,
    /// Calling, or listening for a caller.
    pub connecting: u32,
    /// Lost and retrying, or given up.
    pub retrying: u32,
}

/// What happens to the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Start-up done; go live at once if the configuration says so.
    Booted {
        /// `start_live`.
        start_live: bool,
    },
    /// The go-live button.
    Button(ButtonEvent),
    /// The API or panel asks to go live or stop.
    Api {
        /// Live or not.
        live: bool,
    },
    /// The links' latest standing (once a second while running).
    Links(Links),
    /// The input signal came or went (HDMI plugged or unplugged).
    Signal(bool),
    /// The pipeline failed; the words say why.
    Failed(String),
    /// The media stopped by itself without an error.
    Stopped,
}

/// What the daemon must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Start the role's media (encoder and outputs, or decoder).
    Start,
    /// Stop it.
    Stop,
    /// Show the setup code and address on the HDMI output.
    ShowSetup,
}

/// The whole state: where, since when, why, and what the links and signal last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// Where.
    pub state: State,
    /// Since when, ms on the daemon's clock.
    pub since_ms: u64,
    /// Why, in words, when not ready or live.
    pub reason: Option<String>,
    /// The links' last standing.
    pub links: Links,
    /// Whether the input has a signal.
    pub signal: bool,
    /// The setup code is on screen until this time (ms).
    pub setup_until_ms: Option<u64>,
}

/// Why a box with no output is not on air.
pub const NO_OUTPUTS: &str = "no outputs: nothing is sent; add an output (SRT, RTMP or a recording)";

/// How long a 10 s hold shows the setup code (and blinks every LED), ms.
pub const SETUP_SHOW_MS: u64 = 10_000;

impl Machine {
    /// A box that is starting.
    pub fn new(now_ms: u64) -> Self {
        Self {
            state: State::Booting,
            since_ms: now_ms,
            reason: None,
            links: Links::default(),
            signal: true,
            setup_until_ms: None,
        }
    }

    fn to(&self, state: State, reason: Option<String>, now_ms: u64) -> Self {
        let since_ms = if state == self.state { self.since_ms } else { now_ms };
        Self { state, since_ms, reason, ..self.clone() }
    }

    /// The running state the links and signal call for.
    fn evaluate(&self, now_ms: u64) -> Self {
        let l = self.links;
        let (state, reason) = if !self.signal {
            (State::Degraded, Some("no input signal".to_string()))
        } else if l.retrying > 0 && l.connected == 0 && self.state == State::GoingLive {
            // Never on air yet: still going live (the live LED stays dark), saying why.
            (State::GoingLive, Some(format!("{} of {} links retrying", l.retrying, l.total)))
        } else if l.retrying > 0 {
            (State::Degraded, Some(format!("{} of {} links retrying", l.retrying, l.total)))
        } else if l.total == 0 {
            // Nothing to send to (every output, recordings included, is counted): not on air,
            // whatever the encoder does (issue 58: an encoder with no outputs showed "Live").
            (State::GoingLive, Some(NO_OUTPUTS.to_string()))
        } else if l.connected > 0 {
            (State::Live, None)
        } else {
            (State::GoingLive, Some("waiting for the link".to_string()))
        };
        self.to(state, reason, now_ms)
    }

    /// The next state and the actions, for `event` at `now_ms`.
    pub fn step(&self, event: &Event, now_ms: u64) -> (Machine, Vec<Action>) {
        let start = |m: &Machine| {
            let mut next = m.to(State::GoingLive, Some("starting".into()), now_ms);
            next.links = Links::default();
            (next, vec![Action::Start])
        };
        let stop = |m: &Machine| {
            let mut next = m.to(State::Ready, None, now_ms);
            next.links = Links::default();
            (next, vec![Action::Stop])
        };
        let same = |m: &Machine| (m.clone(), vec![]);
        match (self.state, event) {
            (State::Booting, Event::Booted { start_live: true }) => start(self),
            (State::Booting, Event::Booted { start_live: false }) => (self.to(State::Ready, None, now_ms), vec![]),
            (_, Event::Button(ButtonEvent::HoldSetup)) => {
                let mut next = self.clone();
                next.setup_until_ms = Some(now_ms + SETUP_SHOW_MS);
                (next, vec![Action::ShowSetup])
            }
            (State::Ready | State::Error, Event::Button(ButtonEvent::Press) | Event::Api { live: true }) => start(self),
            (s, Event::Button(ButtonEvent::Press | ButtonEvent::HoldStop) | Event::Api { live: false })
                if s.running() =>
            {
                stop(self)
            }
            (s, Event::Links(l)) if s.running() => {
                let mut m = self.clone();
                m.links = *l;
                (m.evaluate(now_ms), vec![])
            }
            (s, Event::Signal(present)) => {
                let mut m = self.clone();
                m.signal = *present;
                if s.running() {
                    (m.evaluate(now_ms), vec![])
                } else {
                    (m, vec![])
                }
            }
            (s, Event::Failed(why)) if s.running() || s == State::Booting => {
                let mut next = self.to(State::Error, Some(why.clone()), now_ms);
                next.links = Links::default();
                (next, vec![Action::Stop])
            }
            (s, Event::Stopped) if s.running() => {
                let mut next = self.to(State::Ready, Some("the media stopped".into()), now_ms);
                next.links = Links::default();
                (next, vec![])
            }
            _ => same(self),
        }
    }

    /// The LEDs for this state at `now_ms`: power, link, live, error.
    pub fn leds(&self, now_ms: u64) -> [LedPattern; 4] {
        use LedPattern::*;
        if self.setup_until_ms.is_some_and(|until| now_ms < until) {
            return [FastBlink; 4];
        }
        let link = match self.state {
            State::Booting | State::Ready | State::Error => Off,
            _ if self.links.retrying > 0 => DoubleBlink,
            _ if self.links.total > 0 && self.links.connected == self.links.total => On,
            _ => SlowBlink,
        };
        let live = if matches!(self.state, State::Live | State::Degraded) { On } else { Off };
        let error = if self.state == State::Error { FastBlink } else { Off };
        let power = if self.state == State::Booting { SlowBlink } else { On };
        [power, link, live, error]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use ButtonEvent::*;
    use LedPattern::*;

    fn links(total: u32, connected: u32, connecting: u32, retrying: u32) -> Event {
        Event::Links(Links { total, connected, connecting, retrying })
    }

    /// Runs events from boot; returns the machine and every action.
    fn run(events: &[Event]) -> (Machine, Vec<Action>) {
        let mut m = Machine::new(0);
        let mut actions = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let (next, a) = m.step(e, (i as u64 + 1) * 1000);
            m = next;
            actions.extend(a);
        }
        (m, actions)
    }

    const BOOT: Event = Event::Booted { start_live: false };

    #[test]
    fn boot_to_ready_or_straight_to_live() {
        let (m, a) = run(&[BOOT]);
        assert_eq!((m.state, a), (State::Ready, vec![]));
        let (m, a) = run(&[Event::Booted { start_live: true }]);
        assert_eq!((m.state, a), (State::GoingLive, vec![Start]));
    }

    #[test]
    fn press_goes_live_and_links_decide_live_or_degraded() {
        let (m, a) = run(&[BOOT, Event::Button(Press)]);
        assert_eq!((m.state, a), (State::GoingLive, vec![Start]));
        assert_eq!(m.since_ms, 2000);
        let (m, _) = run(&[BOOT, Event::Button(Press), links(2, 0, 2, 0)]);
        assert_eq!(m.state, State::GoingLive);
        let (m, _) = run(&[BOOT, Event::Button(Press), links(2, 2, 0, 0)]);
        assert_eq!((m.state, m.reason), (State::Live, None));
        // One of two up, the other still calling: on air.
        let (m, _) = run(&[BOOT, Event::Button(Press), links(2, 1, 1, 0)]);
        assert_eq!(m.state, State::Live);
        let (m, _) = run(&[BOOT, Event::Button(Press), links(2, 2, 0, 0), links(2, 1, 0, 1)]);
        assert_eq!((m.state, m.reason.as_deref()), (State::Degraded, Some("1 of 2 links retrying")));
        assert_eq!(m.since_ms, 4000);
        // Back when the link returns.
        let (m, _) = run(&[BOOT, Event::Button(Press), links(2, 1, 0, 1), links(2, 2, 0, 0)]);
        assert_eq!(m.state, State::Live);
        // A link that never came up and retries: still going live, not on air (before, the
        // state went between going live and degraded at each retry, and the live LED with it).
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 0, 1, 0), links(1, 0, 0, 1)]);
        assert_eq!((m.state, m.reason.as_deref()), (State::GoingLive, Some("1 of 1 links retrying")));
        assert_eq!(m.leds(m.since_ms), [On, DoubleBlink, Off, Off]);
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 0, 0, 1), links(1, 0, 1, 0), links(1, 0, 0, 1)]);
        assert_eq!(m.state, State::GoingLive);
        // On air once, then lost: degraded, the live LED still lit.
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 1, 0, 0), links(1, 0, 0, 1)]);
        assert_eq!((m.state, m.reason.as_deref()), (State::Degraded, Some("1 of 1 links retrying")));
        assert_eq!(m.leds(m.since_ms), [On, DoubleBlink, On, Off]);
        // A recording alone is an output: live once it records.
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 1, 0, 0)]);
        assert_eq!(m.state, State::Live);
        // No output at all: nothing is on air, and the box says why (issue 58: "Live").
        let (m, _) = run(&[BOOT, Event::Button(Press), links(0, 0, 0, 0)]);
        assert_eq!((m.state, m.reason.as_deref()), (State::GoingLive, Some(NO_OUTPUTS)));
        assert_eq!(m.leds(m.since_ms), [On, SlowBlink, Off, Off], "neither the link nor the live LED lit");
    }

    #[test]
    fn every_way_to_stop() {
        for stop in [Event::Button(Press), Event::Button(HoldStop), Event::Api { live: false }] {
            for running in [vec![], vec![links(1, 1, 0, 0)], vec![links(1, 0, 0, 1)]] {
                let mut events = vec![BOOT, Event::Api { live: true }];
                events.extend(running);
                events.push(stop.clone());
                let (m, a) = run(&events);
                assert_eq!((m.state, a.last()), (State::Ready, Some(&Stop)), "{events:?}");
                assert_eq!(m.links, Links::default());
            }
        }
    }

    #[test]
    fn hold_stop_and_api_stop_do_nothing_when_idle() {
        for e in [Event::Button(HoldStop), Event::Api { live: false }, links(1, 1, 0, 0), Event::Stopped] {
            let (m, a) = run(&[BOOT, e.clone()]);
            assert_eq!((m.state, a), (State::Ready, vec![]), "{e:?}");
        }
        // Going live twice starts once.
        let (m, a) = run(&[BOOT, Event::Api { live: true }, Event::Api { live: true }]);
        assert_eq!((m.state, a), (State::GoingLive, vec![Start]));
    }

    #[test]
    fn failure_is_an_error_until_the_user_acts() {
        let (m, a) = run(&[BOOT, Event::Button(Press), Event::Failed("capture device gone".into())]);
        assert_eq!((m.state, m.reason.as_deref(), a), (State::Error, Some("capture device gone"), vec![Start, Stop]));
        let (m, _) = run(&[BOOT, Event::Button(Press), Event::Failed("x".into()), links(1, 1, 0, 0)]);
        assert_eq!(m.state, State::Error, "a late stats sample does not clear the error");
        let (m, a) = run(&[BOOT, Event::Button(Press), Event::Failed("x".into()), Event::Button(Press)]);
        assert_eq!((m.state, a), (State::GoingLive, vec![Start, Stop, Start]));
        let (m, _) = run(&[BOOT, Event::Button(Press), Event::Failed("x".into()), Event::Api { live: true }]);
        assert_eq!(m.state, State::GoingLive);
        // A failure while starting up is an error too; while idle it changes nothing.
        assert_eq!(run(&[Event::Failed("no config".into())]).0.state, State::Error);
        assert_eq!(run(&[BOOT, Event::Failed("late".into())]).0.state, State::Ready);
    }

    #[test]
    fn media_that_ends_by_itself_returns_to_ready() {
        let (m, a) = run(&[BOOT, Event::Button(Press), links(1, 1, 0, 0), Event::Stopped]);
        assert_eq!((m.state, a), (State::Ready, vec![Start]));
    }

    #[test]
    fn losing_the_signal_degrades_and_its_return_restores() {
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 1, 0, 0), Event::Signal(false)]);
        assert_eq!((m.state, m.reason.as_deref()), (State::Degraded, Some("no input signal")));
        let (m, _) = run(&[BOOT, Event::Button(Press), links(1, 1, 0, 0), Event::Signal(false), Event::Signal(true)]);
        assert_eq!(m.state, State::Live);
        // Idle: remembered, not acted on; going live then starts degraded.
        let (m, _) = run(&[BOOT, Event::Signal(false)]);
        assert_eq!((m.state, m.signal), (State::Ready, false));
        let (m, _) = run(&[BOOT, Event::Signal(false), Event::Button(Press), links(1, 1, 0, 0)]);
        assert_eq!(m.state, State::Degraded);
    }

    #[test]
    fn a_ten_second_hold_shows_setup_in_any_state() {
        for before in [vec![], vec![Event::Button(Press)], vec![Event::Button(Press), Event::Failed("x".into())]] {
            let mut events = vec![BOOT];
            events.extend(before);
            let state_before = run(&events).0.state;
            events.push(Event::Button(HoldSetup));
            let (m, a) = run(&events);
            assert_eq!(a.last(), Some(&ShowSetup));
            assert_eq!(m.state, state_before);
            let at = events.len() as u64 * 1000;
            assert_eq!(m.setup_until_ms, Some(at + SETUP_SHOW_MS));
            assert_eq!(m.leds(at + 1), [FastBlink; 4]);
            assert_ne!(m.leds(at + SETUP_SHOW_MS), [FastBlink; 4]);
        }
    }

    #[test]
    fn led_language() {
        let leds = |events: &[Event]| run(events).0.leds(100_000);
        assert_eq!(Machine::new(0).leds(0), [SlowBlink, Off, Off, Off], "booting");
        assert_eq!(leds(&[BOOT]), [On, Off, Off, Off], "ready");
        assert_eq!(leds(&[BOOT, Event::Button(Press)]), [On, SlowBlink, Off, Off], "connecting");
        assert_eq!(leds(&[BOOT, Event::Button(Press), links(1, 0, 1, 0)]), [On, SlowBlink, Off, Off]);
        assert_eq!(leds(&[BOOT, Event::Button(Press), links(1, 1, 0, 0)]), [On, On, On, Off], "live");
        assert_eq!(
            leds(&[BOOT, Event::Button(Press), links(2, 1, 1, 0)]),
            [On, SlowBlink, On, Off],
            "one still calling"
        );
        assert_eq!(leds(&[BOOT, Event::Button(Press), links(2, 1, 0, 1)]), [On, DoubleBlink, On, Off], "retrying");
        assert_eq!(leds(&[BOOT, Event::Button(Press), links(1, 1, 0, 0)]), [On, On, On, Off], "recording only");
        assert_eq!(leds(&[BOOT, Event::Button(Press), links(0, 0, 0, 0)]), [On, SlowBlink, Off, Off], "no output");
        assert_eq!(leds(&[BOOT, Event::Button(Press), Event::Failed("x".into())]), [On, Off, Off, FastBlink], "error");
    }

    #[test]
    fn state_names_are_the_apis_words() {
        for st in State::ALL {
            assert_eq!(serde_json::to_value(st).ok(), Some(serde_json::Value::from(st.name())));
        }
    }
}
