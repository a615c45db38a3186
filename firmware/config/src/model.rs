//! The configuration file's model. Defaults live only in the `Default` impls; the shipped
//! example file (`telebridge.example.toml`) equals them, and a test keeps it so.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The whole configuration of one box.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The box's name: shown on the slate, the panel and in the logs.
    pub name: String,
    /// What `telebridge run` does: `encoder` (capture and send), `decoder` (receive and show) or
    /// `bridge` (both at once, with the paired box, over one SRT connection).
    pub role: String,
    /// Go live as soon as the box has started, without waiting for the button or the panel.
    pub start_live: bool,
    /// Picture: source, format and H.264 encoder.
    pub video: VideoConfig,
    /// Sound: source and codec.
    pub audio: AudioConfig,
    /// Where the encoded stream goes; any number, all at once.
    pub outputs: Vec<OutputConfig>,
    /// The decoder role: what to receive and where to show it.
    pub decoder: DecoderConfig,
    /// The bridge role: the connection to the paired box.
    pub bridge: BridgeConfig,
    /// The panel and API.
    pub web: WebConfig,
    /// Status LEDs and the go-live button.
    pub gpio: GpioConfig,
    /// Talkback with the paired box (push to talk).
    pub talkback: crate::TalkbackConfig,
    /// Updates from a fleet server (hawkBit's device API).
    pub fleet: crate::FleetConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "telebridge".to_string(),
            role: "encoder".to_string(),
            start_live: false,
            video: VideoConfig::default(),
            audio: AudioConfig::default(),
            outputs: Vec::new(),
            decoder: DecoderConfig::default(),
            bridge: BridgeConfig::default(),
            web: WebConfig::default(),
            gpio: GpioConfig::default(),
            talkback: crate::TalkbackConfig::default(),
            fleet: crate::FleetConfig::default(),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.redacted();
        f.debug_struct("Config")
            .field("name", &c.name)
            .field("role", &c.role)
            .field("start_live", &c.start_live)
            .field("video", &c.video)
            .field("audio", &c.audio)
            .field("outputs", &c.outputs)
            .field("decoder", &c.decoder)
            .field("bridge", &c.bridge)
            .field("web", &c.web)
            .field("gpio", &c.gpio)
            .field("talkback", &c.talkback)
            .field("fleet", &c.fleet)
            .finish()
    }
}

/// The picture and its H.264 encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VideoConfig {
    /// `test`, `v4l2:/dev/videoN` (HDMI bridge, USB capture, UVC camera) or `libcamera`.
    pub source: String,
    /// Encoded width in pixels (even, 160-1920).
    pub width: u32,
    /// Encoded height in pixels (even, 120-1080).
    pub height: u32,
    /// Frames per second (9-60; the Pi's hardware encoder hangs below 9).
    pub fps: u32,
    /// Target video bitrate (x264enc `bitrate`, v4l2h264enc `video_bitrate`), kbit/s; with an
    /// adaptive bitrate, the most it goes to.
    pub bitrate_kbps: u32,
    /// `adaptive` (the default): the bitrate follows what the SRT links carry, between
    /// `min_bitrate_kbps` and `bitrate_kbps`; or `fixed`.
    pub bitrate_mode: String,
    /// The least an adaptive bitrate goes down to at the full frame rate, kbit/s (the default,
    /// 500, follows a lower `bitrate_kbps`).
    pub min_bitrate_kbps: u32,
    /// On a link that carries less than that floor, an adaptive bitrate gives the encoder one
    /// frame in two (half the frame rate, each frame with the floor's bits) rather than lose
    /// frames on the way; at 20 frames a second or more. Off by default: on the 4G traces it
    /// left out more frames than it saved (`telebridge-bench abr`, docs/benchmarks.md).
    pub frame_rate_step_down: bool,
    /// Time between keyframes (x264enc `key-int-max`, v4l2h264enc `h264_i_frame_period`), ms.
    pub keyframe_ms: u32,
    /// `auto`, `v4l2h264enc`, `x264enc` or `openh264enc`.
    pub encoder: String,
    /// x264's `speed-preset` when x264enc is used: ultrafast .. medium.
    pub x264_preset: String,
}

impl Default for VideoConfig {
    fn default() -> Self {
        Self {
            source: "test".to_string(),
            width: 1280,
            height: 720,
            fps: 30,
            bitrate_kbps: 4000,
            bitrate_mode: "adaptive".to_string(),
            min_bitrate_kbps: 500,
            frame_rate_step_down: false,
            keyframe_ms: 1000,
            encoder: "auto".to_string(),
            x264_preset: "superfast".to_string(),
        }
    }
}

/// The sound and its encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AudioConfig {
    /// `test` (a beep once a second, in step with a flash in the test picture) or `alsa:DEVICE`
    /// (`alsa:hw:CARD=tc358743` for HDMI audio).
    pub source: String,
    /// `auto` (Opus in the bridge role, AAC otherwise), `aac`, `opus` (least delay: a
    /// Telebridge box, ffmpeg or VLC at the other end) or `none`.
    pub codec: String,
    /// Sound bitrate, kbit/s (32-320).
    pub bitrate_kbps: u32,
    /// How much later the sound plays than it was captured, ms (-500 to 500): for a source
    /// known to be off, e.g. a camera whose picture lags its microphone. Negative plays it earlier.
    pub delay_ms: i32,
}

impl Default for AudioConfig {
    fn default() -> Self {
        Self { source: "test".to_string(), codec: "auto".to_string(), bitrate_kbps: 128, delay_ms: 0 }
    }
}

/// The decoder role.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecoderConfig {
    /// The SRT stream to receive: `srt://:PORT?mode=listener&latency=MS` or a caller URL.
    pub input: String,
    /// Where the picture goes: `auto`, `kms` (HDMI), `window`, `fake` or `file:PATH`.
    pub sink: String,
    /// Where the sound goes: `discard` or `alsa:DEVICE`.
    pub audio_out: String,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        Self {
            input: "srt://:9000?mode=listener&latency=200".to_string(),
            sink: "auto".to_string(),
            audio_out: "discard".to_string(),
        }
    }
}

impl fmt::Debug for DecoderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecoderConfig")
            .field("input", &crate::srt_url::redact_query(&self.input))
            .field("sink", &self.sink)
            .field("audio_out", &self.audio_out)
            .finish()
    }
}

/// The bridge role: this box sends its picture to the paired box and shows the paired box's
/// (the decoder section's sink and audio output), both over one SRT connection.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BridgeConfig {
    /// The UDP port of the connection: the box that listens listens on it, the other calls it.
    pub port: u16,
    /// The least SRT latency the box chooses, ms.
    pub min_latency_ms: u32,
    /// The SRT latency: `auto` (chosen before each connection from the round trip and loss
    /// measured on the last one: 3 x RTT up to 1 % loss, 4 x up to 3 %, 5 x up to 7 %, 6 x
    /// beyond; the first from the round trip measured while pairing) or ms (20-8000) to pin it.
    /// SRT uses the larger of the two boxes' figures.
    pub latency: String,
    /// A link made by hand instead of by pairing (`srt://...`, both directions on it); empty to
    /// use the pairing.
    pub link: String,
    /// Record what arrives from the paired box (`file:/DIR/NAME-%Y%m%d-%H%M%S.ts?segment=10m`);
    /// empty for none.
    pub record: String,
    /// Ask the router (UPnP) to pass the port to this box when it listens.
    pub port_mapping: bool,
    /// A meeting point both paired boxes can reach (`telebridge relay --meet` on a public host),
    /// `HOST:FIRST-LAST`, tried last when they cannot reach each other; empty for none. Set the
    /// same on both boxes.
    pub relay: String,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self {
            port: 7700,
            min_latency_ms: 40,
            latency: "auto".to_string(),
            link: String::new(),
            record: String::new(),
            port_mapping: true,
            relay: String::new(),
        }
    }
}

impl fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("port", &self.port)
            .field("min_latency_ms", &self.min_latency_ms)
            .field("latency", &self.latency)
            .field("link", &crate::srt_url::redact_query(&self.link))
            .field("record", &self.record)
            .field("port_mapping", &self.port_mapping)
            .field("relay", &self.relay)
            .finish()
    }
}

/// The panel and API.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// Address and port the panel listens on.
    pub listen: String,
    /// Address and port of a listener that serves pairing alone (another box's hello and
    /// confirmation, nothing of the panel), for pairing across sites without exposing the panel;
    /// empty for none (pairing is then served on `listen` only).
    pub pair_listen: String,
    /// The panel password as an argon2 hash (set through the panel; empty until first setup).
    pub password_hash: String,
    /// A read-only bearer token for `/metrics` (Prometheus) and the live monitor (a monitor
    /// wall's player); empty for none.
    pub metrics_token: String,
    /// Where the one-time setup code is written at first start (the boot partition).
    pub setup_code_file: String,
    /// Whether the box announces itself on the local network by mDNS (`_telebridge._udp`:
    /// its name, role, pairing state and panel port), so other boxes' Pair pages and
    /// `telebridge discover` list it.
    pub announce: bool,
    /// How many browsers may watch the live monitor at once (WebRTC, each a connection of its
    /// own from the box); 0 switches it off.
    pub monitor_viewers: u32,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            listen: "0.0.0.0:80".to_string(),
            pair_listen: String::new(),
            password_hash: String::new(),
            metrics_token: String::new(),
            setup_code_file: "/boot/firmware/telebridge-setup.txt".to_string(),
            announce: true,
            monitor_viewers: 4,
        }
    }
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("listen", &self.listen)
            .field("pair_listen", &self.pair_listen)
            .field("password_hash", &if self.password_hash.is_empty() { "" } else { "****" })
            .field("metrics_token", &if self.metrics_token.is_empty() { "" } else { "****" })
            .field("setup_code_file", &self.setup_code_file)
            .field("announce", &self.announce)
            .field("monitor_viewers", &self.monitor_viewers)
            .finish()
    }
}

/// What the API shows in place of a secret that is set, and takes back as "unchanged".
pub const HIDDEN: &str = "****";

impl Config {
    /// The configuration as the API shows it: every secret that is set (SRT passphrases of the
    /// outputs and of the decoder's input, RTMP keys, the password hash, the metrics token, the
    /// fleet server's tokens)
    /// replaced by `****`.
    pub fn redacted(&self) -> Config {
        let mut c = self.clone();
        for o in &mut c.outputs {
            o.url = crate::output_url::redact(&crate::srt_url::redact_query(&o.url));
        }
        c.decoder.input = crate::srt_url::redact_query(&c.decoder.input);
        c.bridge.link = crate::srt_url::redact_query(&c.bridge.link);
        for s in
            [&mut c.web.password_hash, &mut c.web.metrics_token, &mut c.fleet.target_token, &mut c.fleet.gateway_token]
        {
            if !s.is_empty() {
                *s = HIDDEN.to_string();
            }
        }
        c
    }

    /// Takes a configuration that came back from the API and puts the secrets it left as `****`
    /// back from `running`: an output keeps its secret when its URL, redacted, is unchanged.
    pub fn with_secrets_from(mut self, running: &Config) -> Config {
        for o in &mut self.outputs {
            if o.url.contains(HIDDEN) {
                if let Some(old) = running.outputs.iter().find(|r| same_but_order(&r.redacted_url(), &o.url)) {
                    o.url = old.url.clone();
                }
            }
        }
        if self.decoder.input.contains(HIDDEN)
            && crate::srt_url::redact_query(&running.decoder.input) == self.decoder.input
        {
            self.decoder.input = running.decoder.input.clone();
        }
        if self.bridge.link.contains(HIDDEN) && crate::srt_url::redact_query(&running.bridge.link) == self.bridge.link {
            self.bridge.link = running.bridge.link.clone();
        }
        if self.web.password_hash == HIDDEN {
            self.web.password_hash = running.web.password_hash.clone();
        }
        if self.web.metrics_token == HIDDEN {
            self.web.metrics_token = running.web.metrics_token.clone();
        }
        if self.fleet.target_token == HIDDEN {
            self.fleet.target_token = running.fleet.target_token.clone();
        }
        if self.fleet.gateway_token == HIDDEN {
            self.fleet.gateway_token = running.fleet.gateway_token.clone();
        }
        self
    }
}

/// Whether two URLs are the same but for the order of their query's parameters (a form may
/// write them back in its own order).
fn same_but_order(a: &str, b: &str) -> bool {
    let parts = |u: &str| {
        let (head, query) = u.split_once('?').unwrap_or((u, ""));
        let mut q: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        q.sort_unstable();
        (head.to_string(), q.join("&"))
    };
    parts(a) == parts(b)
}

/// Status LEDs and the go-live button: roles mapped to BCM GPIO numbers (-1 = not fitted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpioConfig {
    /// `auto` (the Pi's GPIO when the chip exists, else none), `pi`, `sim` or `none`.
    pub backend: String,
    /// The GPIO character device.
    pub chip: String,
    /// Power LED: on while the daemon runs.
    pub led_power: i32,
    /// Link LED: slow blink connecting, on connected, double blink retrying.
    pub led_link: i32,
    /// Live LED: on while on air.
    pub led_live: i32,
    /// Error LED: fast blink when the box needs attention.
    pub led_error: i32,
    /// Tally LED (red): on while this box's picture is on air, as the API, the tally input or
    /// the paired box says.
    pub led_tally: i32,
    /// The go-live button.
    pub button: i32,
    /// The button pulls the pin to ground when pressed (wire it to GND, with a pull-up).
    pub button_active_low: bool,
    /// A tally input from a vision mixer's tally output (a contact or open collector per
    /// camera): while it is active this box's picture is on air. -1 = not wired.
    pub tally_in: i32,
    /// The tally input is active low (the mixer's contact pulls the pin to ground; a pull-up).
    pub tally_in_active_low: bool,
    /// Talkback's talk button (push to talk, wired as the go-live button is). -1 = not fitted.
    pub talk_button: i32,
}

impl Default for GpioConfig {
    fn default() -> Self {
        Self {
            backend: "auto".to_string(),
            chip: "/dev/gpiochip0".to_string(),
            led_power: 5,
            led_link: 6,
            led_live: 13,
            led_error: 19,
            led_tally: -1,
            button: 26,
            button_active_low: true,
            tally_in: -1,
            tally_in_active_low: true,
            talk_button: -1,
        }
    }
}

/// One destination of the encoded stream.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// `srt://HOST:PORT?mode=caller|listener|rendezvous&latency=MS&passphrase=...&pbkeylen=16|24|32&streamid=...`
    pub url: String,
    /// A short name for the panel and logs; defaults to the URL without secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl OutputConfig {
    /// An output with just a URL.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), name: None }
    }

    /// The URL with its secrets as `****`.
    pub fn redacted_url(&self) -> String {
        crate::output_url::redact(&crate::srt_url::redact_query(&self.url))
    }
}

impl fmt::Debug for OutputConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputConfig")
            .field("url", &crate::output_url::redact(&crate::srt_url::redact_query(&self.url)))
            .field("name", &self.name)
            .finish()
    }
}
