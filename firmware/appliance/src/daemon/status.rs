//! What the daemon publishes: its status for the API, the input as shown, what needs the
//! user's attention.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use telebridge_config::{Role, ValidConfig};
use telebridge_gpio::LedPattern;

use crate::daemon::sample::{LinkView, MediaSample};
use crate::daemon::state::Machine;

/// What the daemon is doing, for the API and the panel.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonStatus {
    /// The box's name.
    pub name: String,
    /// `encoder`, `decoder` or `bridge`.
    pub role: &'static str,
    /// State, reason, links.
    pub machine: Machine,
    /// Since when, ms since the Unix epoch.
    pub since_unix_ms: u64,
    /// What each LED shows (power, link, live, error).
    pub led_patterns: [LedPattern; telebridge_gpio::LEDS],
    /// The tally light: on air, and why.
    pub tally: crate::daemon::tally::TallyStatus,
    /// Talkback with the paired box.
    pub talk: crate::roles::talkback::TalkStatus,
    /// The GPIO backend.
    pub gpio: &'static str,
    /// The latest one-second sample of the running media (serialised as `--stats json` prints it).
    pub media: Option<MediaSample>,
    /// Media runs (going live, live or degraded): the panel's button says Stop.
    pub running: bool,
    /// The links as the panel lists them (outputs, or the decoder's input).
    pub links: Vec<LinkView>,
    /// Seconds since the daemon started.
    pub uptime_s: u64,
    /// Settings that were changed and wait for the next start.
    pub pending_restart: Vec<&'static str>,
    /// What the HDMI output shows instead of a picture, if anything.
    pub screen: Option<String>,
    /// The input: whether it has a signal, and the format configured.
    pub input: InputInfo,
    /// What needs the user's attention, in words.
    pub alerts: Vec<String>,
    /// Long presses of the button that asked for a pairing code (bridge role), since start.
    pub pairing_requests: u64,
}

/// What the status is made of, besides what it derives (the input, the alerts, whether the
/// media runs): [`DaemonStatus::of`].
pub(super) struct StatusParts<'a> {
    pub(super) config: &'a ValidConfig,
    pub(super) machine: &'a Machine,
    pub(super) since_unix_ms: u64,
    pub(super) led_patterns: [LedPattern; telebridge_gpio::LEDS],
    pub(super) tally: crate::daemon::tally::TallyStatus,
    pub(super) talk: crate::roles::talkback::TalkStatus,
    pub(super) gpio: &'static str,
    pub(super) media: Option<&'a MediaSample>,
    pub(super) links: Vec<LinkView>,
    pub(super) uptime_s: u64,
    pub(super) pending_restart: &'a [&'static str],
    pub(super) screen: Option<String>,
    pub(super) pairing_requests: u64,
}

impl DaemonStatus {
    /// The status from its parts: the one place it is built (at the start and at each publish).
    pub(super) fn of(p: StatusParts<'_>) -> Self {
        DaemonStatus {
            name: p.config.name.clone(),
            role: p.config.role.name(),
            machine: p.machine.clone(),
            since_unix_ms: p.since_unix_ms,
            led_patterns: p.led_patterns,
            tally: p.tally,
            talk: p.talk,
            gpio: p.gpio,
            media: p.media.cloned(),
            running: p.machine.state.running(),
            links: p.links,
            uptime_s: p.uptime_s,
            pending_restart: p.pending_restart.to_vec(),
            screen: p.screen,
            input: input_info(p.config, p.machine),
            alerts: alerts(p.machine, p.media, p.pending_restart),
            pairing_requests: p.pairing_requests,
        }
    }
}

/// The input as the status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct InputInfo {
    /// A signal is present (an HDMI source plugged and sending; always for the test pattern).
    pub signal: bool,
    /// The source and format (encoder), or the SRT input (decoder).
    pub format: String,
}

fn input_info(config: &ValidConfig, machine: &Machine) -> InputInfo {
    let p = &config.picture;
    let format = match config.role {
        Role::Encoder => {
            format!("{} {}x{} {} fps, {} kbit/s", config.video_source, p.width, p.height, p.fps, p.bitrate_kbps)
        }
        Role::Decoder => config.decoder_input.to_string(),
        Role::Bridge => format!(
            "{} {}x{} {} fps, {} kbit/s, to and from the paired box",
            config.video_source, p.width, p.height, p.fps, p.bitrate_kbps
        ),
    };
    InputInfo { signal: machine.signal, format }
}

/// What needs attention: an error, no signal, links that are down and why (and SRT latency
/// advice, see [`MediaSample::alerts`]), settings waiting for a restart.
fn alerts(machine: &Machine, media: Option<&MediaSample>, pending: &[&'static str]) -> Vec<String> {
    let mut out = Vec::new();
    if machine.state == crate::daemon::state::State::Error {
        out.push(format!("stopped: {}", machine.reason.as_deref().unwrap_or("the media failed")));
    }
    if !machine.signal {
        out.push("no input signal: check the HDMI source and cable".into());
    }
    out.extend(media.map(MediaSample::alerts).unwrap_or_default());
    for p in pending {
        out.push(format!("{p} changed: it takes effect after a restart"));
    }
    out
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
