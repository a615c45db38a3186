//! What the daemon publishes: its status for the API, the input as shown, what needs the
//! user's attention.

use std::time::{SystemTime, UNIX_EPOCH};

use telebridge_config::{Role, ValidConfig};
use telebridge_contract::sound::StreamLevels;
use telebridge_gpio::LedPattern;

use crate::daemon::sample::{LinkView, MediaSample};
use crate::daemon::state::Machine;

pub use telebridge_contract::daemon::DaemonStatus;

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
    /// The sound's meters as they read now.
    pub(super) sound: Vec<StreamLevels>,
    /// The live monitor's viewers.
    pub(super) viewers: Vec<telebridge_contract::monitor::ViewerInfo>,
}

/// The status from its parts: the one place it is built (at the start and at each publish).
pub(super) fn status_of(p: StatusParts<'_>) -> DaemonStatus {
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
        alerts: alerts(p.machine, p.media, p.pending_restart, &p.sound),
        pairing_requests: p.pairing_requests,
        sound: p.sound,
        viewers: p.viewers,
    }
}

pub use telebridge_contract::daemon::InputInfo;

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
/// advice, see [`MediaSample::alerts`]), a running stream's long silence, settings waiting for
/// a restart.
fn alerts(
    machine: &Machine,
    media: Option<&MediaSample>,
    pending: &[&'static str],
    sound: &[StreamLevels],
) -> Vec<String> {
    let mut out = Vec::new();
    if machine.state == crate::daemon::state::State::Error {
        out.push(format!("stopped: {}", machine.reason.as_deref().unwrap_or("the media failed")));
    }
    if !machine.signal {
        out.push("no input signal: check the HDMI source and cable".into());
    }
    out.extend(media.map(MediaSample::alerts).unwrap_or_default());
    out.extend(sound.iter().filter_map(StreamLevels::silence_alert));
    for p in pending {
        out.push(format!("{p} changed: it takes effect after a restart"));
    }
    out
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
