//! Checks a [`Config`] and turns it into a [`ValidConfig`] (the types are in [`crate::valid`]),
//! reporting every problem at once. The command line, the file loader and the REST API all go
//! through here.

use std::fmt;
use std::time::Duration;

pub use crate::bridge::{meet_slot, MeetHello, MeetToken, RelaySpec, MEET_SLOT_SECS};
use crate::srt_url::redact_query;
use crate::valid::{BridgeSettings, GpioBackend, GpioPins, OutputSpec, Picture, Role, ValidConfig};
use crate::{
    AudioCodec, AudioOut, AudioSource, BitrateMode, Config, DecoderSink, EncoderPreference, FileSpec, RtmpUrl, SrtMode,
    SrtUrl, VideoSource, WhipUrl,
};

/// One problem: the field, the value found and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, e.g. `video.bitrate_kbps` or `outputs[1].url`.
    pub field: String,
    /// What is wrong and what is allowed, naming the value (secrets shown as `****`).
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Every problem found in one configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// The most browsers the live monitor serves at once (`web.monitor_viewers`): each is a WebRTC
/// connection and a small pipeline of its own on the box.
pub const MAX_VIEWERS: u32 = 16;
const X264_PRESETS: &[&str] = &["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"];

/// The problems found so far, in the order of the file.
#[derive(Default)]
struct Problems(Vec<FieldError>);

impl Problems {
    fn add(&mut self, field: &str, message: String) {
        self.0.push(FieldError { field: field.to_string(), message });
    }

    /// Reports `value` when it is outside `min..=max`; returns whether it was inside.
    fn range(&mut self, field: &str, value: u32, min: u32, max: u32, unit: &str) -> bool {
        let inside = (min..=max).contains(&value);
        if !inside {
            self.add(field, format!("{value} is out of range {min}-{max}{unit}"));
        }
        inside
    }
}

/// The video section, typed.
struct Video {
    source: VideoSource,
    encoder: EncoderPreference,
    picture: Picture,
    keyframe_interval: Duration,
}

impl Config {
    /// Checks every field; returns all problems at once, or the typed configuration.
    pub fn validate(&self) -> Result<ValidConfig, ValidationErrors> {
        let mut p = Problems::default();
        if !crate::is_box_name(&self.name) {
            p.add("name", format!("{:?} must be 1-63 characters of letters, digits, '-' and '_'", self.name));
        }
        let video = self.check_video(&mut p);
        let audio = self.check_audio(&mut p);
        let outputs = self.check_outputs(&mut p);
        let role = self.check_role(&mut p);
        let decoder = self.check_decoder(&mut p);
        let bridge = self.check_bridge(&mut p);
        let web = self.check_web(&mut p);
        let gpio = self.check_gpio(&mut p);
        let talkback = self.talkback.check().map_err(|errs| errs.into_iter().for_each(|(f, m)| p.add(f, m))).ok();
        let fleet = self.fleet.check(&self.name).map_err(|errs| errs.into_iter().for_each(|(f, m)| p.add(f, m))).ok();
        match (video, audio, role, decoder, web, (gpio, talkback, fleet)) {
            (
                Some(video),
                Some((audio_source, audio_codec)),
                Some(role),
                Some((decoder_input, decoder_sink, audio_out)),
                Some((http_listen, pair_listen)),
                (Some(gpio), Some(talkback), Some(fleet)),
            ) if p.0.is_empty() => Ok(ValidConfig {
                name: self.name.clone(),
                start_live: self.start_live,
                picture: video.picture,
                audio_bitrate_kbps: self.audio.bitrate_kbps,
                audio_delay_ms: self.audio.delay_ms,
                decoder_sink,
                audio_out,
                role,
                decoder_input,
                bridge,
                http_listen,
                pair_listen,
                gpio,
                talkback,
                fleet,
                raw: self.clone(),
                video_source: video.source,
                encoder: video.encoder,
                keyframe_interval: video.keyframe_interval,
                audio_source,
                audio_codec,
                outputs,
            }),
            _ => Err(ValidationErrors(p.0)),
        }
    }

    fn check_video(&self, p: &mut Problems) -> Option<Video> {
        let v = &self.video;
        let source = VideoSource::parse(&v.source).map_err(|m| p.add("video.source", m)).ok();
        if p.range("video.width", v.width, 160, 1920, " pixels") && !v.width.is_multiple_of(2) {
            p.add("video.width", format!("{} must be even", v.width));
        }
        if p.range("video.height", v.height, 120, 1080, " pixels") && !v.height.is_multiple_of(2) {
            p.add("video.height", format!("{} must be even", v.height));
        }
        p.range("video.fps", v.fps, 9, 60, " frames per second");
        let bitrate_ok = p.range("video.bitrate_kbps", v.bitrate_kbps, 100, 50_000, " kbit/s");
        let bitrate_mode = BitrateMode::parse(&v.bitrate_mode).map_err(|m| p.add("video.bitrate_mode", m)).ok();
        // Checked against the maximum only when that one is right (one mistake, one message),
        // and only where it is used: a fixed bitrate under the default floor is no mistake.
        let most = if bitrate_ok { v.bitrate_kbps } else { 50_000 };
        let adaptive = bitrate_mode == Some(BitrateMode::Adaptive);
        // The default floor follows a bitrate under it (`--bitrate-kbps 400` with the adaptive
        // default); a floor the owner set over the bitrate is a mistake to name.
        let default_floor = crate::model::VideoConfig::default().min_bitrate_kbps;
        let min_bitrate_kbps =
            if v.min_bitrate_kbps == default_floor { v.min_bitrate_kbps.min(most) } else { v.min_bitrate_kbps };
        if adaptive && (min_bitrate_kbps < 100 || min_bitrate_kbps > most) {
            p.add(
                "video.min_bitrate_kbps",
                format!("{} is out of range 100-{most} kbit/s (at most video.bitrate_kbps)", v.min_bitrate_kbps),
            );
        }
        p.range("video.keyframe_ms", v.keyframe_ms, 100, 10_000, " ms");
        let encoder = EncoderPreference::parse(&v.encoder).map_err(|m| p.add("video.encoder", m)).ok();
        if !X264_PRESETS.contains(&v.x264_preset.as_str()) {
            p.add("video.x264_preset", format!("{:?} is not one of {}", v.x264_preset, X264_PRESETS.join(", ")));
        }
        let picture = Picture {
            width: v.width,
            height: v.height,
            fps: v.fps,
            bitrate_kbps: v.bitrate_kbps,
            bitrate_mode: bitrate_mode?,
            min_bitrate_kbps,
            frame_rate_step_down: v.frame_rate_step_down && v.fps >= 20,
            x264_preset: v.x264_preset.clone(),
        };
        Some(Video {
            source: source?,
            encoder: encoder?,
            picture,
            keyframe_interval: Duration::from_millis(u64::from(v.keyframe_ms)),
        })
    }

    fn check_audio(&self, p: &mut Problems) -> Option<(AudioSource, AudioCodec)> {
        let a = &self.audio;
        let source = AudioSource::parse(&a.source).map_err(|m| p.add("audio.source", m)).ok();
        let bridge_role = self.role == "bridge";
        let codec = AudioCodec::parse(&a.codec, bridge_role).map_err(|m| p.add("audio.codec", m)).ok();
        p.range("audio.bitrate_kbps", a.bitrate_kbps, 32, 320, " kbit/s");
        if !(-AUDIO_DELAY_MAX_MS..=AUDIO_DELAY_MAX_MS).contains(&a.delay_ms) {
            p.add(
                "audio.delay_ms",
                format!("{} is out of range -{AUDIO_DELAY_MAX_MS} to {AUDIO_DELAY_MAX_MS} ms", a.delay_ms),
            );
        }
        source.zip(codec)
    }

    fn check_outputs(&self, p: &mut Problems) -> Vec<(String, OutputSpec)> {
        let mut outputs = Vec::new();
        let mut listen_ports: Vec<u16> = Vec::new();
        for (i, o) in self.outputs.iter().enumerate() {
            if let Some(n) =
                o.name.as_deref().filter(|n| n.chars().count() > OUTPUT_NAME_MAX || n.contains(char::is_control))
            {
                p.add(
                    &format!("outputs[{i}].name"),
                    format!(
                        "has {} characters; a name is at most {OUTPUT_NAME_MAX}, with no line breaks or control characters",
                        n.chars().count()
                    ),
                );
            }
            let field = format!("outputs[{i}].url");
            if o.url.len() > OUTPUT_URL_MAX {
                p.add(&field, format!("has {} characters; a URL is at most {OUTPUT_URL_MAX}", o.url.len()));
                continue;
            }
            if o.url.starts_with("srt://") {
                match SrtUrl::parse(&o.url) {
                    Ok(u) => {
                        if u.mode != SrtMode::Caller {
                            if listen_ports.contains(&u.port) {
                                p.add(
                                    &field,
                                    format!("port {} is already used by another listener or rendezvous output", u.port),
                                );
                            }
                            listen_ports.push(u.port);
                        }
                        let name = name_for(&o.name, u.label(), &outputs);
                        outputs.push((name, OutputSpec::Srt(u)));
                    }
                    Err(e) => p.add(&field, e.to_string()),
                }
            } else if o.url.starts_with("rtmp://") || o.url.starts_with("rtmps://") {
                match RtmpUrl::parse(&o.url) {
                    Ok(u) => outputs.push((name_for(&o.name, u.label(), &outputs), OutputSpec::Rtmp(u))),
                    Err(e) => p.add(&field, e.to_string()),
                }
            } else if WhipUrl::is_whip(&o.url) {
                match WhipUrl::parse(&o.url) {
                    Ok(u) => outputs.push((name_for(&o.name, u.label(), &outputs), OutputSpec::Whip(u))),
                    Err(e) => p.add(&field, e.to_string()),
                }
            } else if o.url.starts_with("file:") {
                match FileSpec::parse(&o.url) {
                    Ok(f) => outputs.push((name_for(&o.name, f.label(), &outputs), OutputSpec::File(f))),
                    Err(e) => p.add(&field, e.to_string()),
                }
            } else {
                p.add(
                    &field,
                    format!(
                        "{:?} is not a supported output; write srt://HOST:PORT, srt://:PORT?mode=listener, rtmp://HOST/APP/KEY, rtmps://..., https://WHIP-ENDPOINT?token=TOKEN (WHIP) or file:/DIR/NAME.ts",
                        crate::output_url::redact(&redact_query(&o.url))
                    ),
                );
            }
        }
        // GIO's TLS resumes a session per host and port without checking the certificate again.
        for (i, (_, spec)) in outputs.iter().enumerate() {
            let Some((host, port, verify)) = spec.tls_server() else { continue };
            let differs = |s: &OutputSpec| s.tls_server().is_some_and(|t| t.0 == host && t.1 == port && t.2 != verify);
            if let Some(j) = outputs[..i].iter().position(|(_, s)| differs(s)) {
                p.add(&format!("outputs[{i}].url"), format!("tls_verify differs from outputs[{j}]'s to the same server {host}:{port}; outputs to one server check its certificate alike"));
            }
        }
        for (i, (name, _)) in outputs.iter().enumerate() {
            if let Some(j) = outputs[..i].iter().position(|(n, _)| n == name) {
                p.add(
                    &format!("outputs[{i}].name"),
                    format!("{name:?} is already the name of outputs[{j}]; give each output its own name"),
                );
            }
        }
        outputs
    }

    fn check_role(&self, p: &mut Problems) -> Option<Role> {
        let role = Role::from_name(&self.role);
        if role.is_none() {
            p.add("role", format!("{:?} is not one of encoder, decoder, bridge", self.role));
        }
        role
    }

    fn check_decoder(&self, p: &mut Problems) -> Option<(SrtUrl, DecoderSink, AudioOut)> {
        let d = &self.decoder;
        let input = SrtUrl::parse(&d.input).map_err(|e| p.add("decoder.input", e.to_string())).ok();
        let sink = DecoderSink::parse(&d.sink).map_err(|m| p.add("decoder.sink", m)).ok();
        let audio_out = AudioOut::parse(&d.audio_out).map_err(|m| p.add("decoder.audio_out", m)).ok();
        Some((input?, sink?, audio_out?))
    }

    fn check_bridge(&self, p: &mut Problems) -> BridgeSettings {
        let b = &self.bridge;
        if b.port == 0 {
            p.add("bridge.port", "0 is not a UDP port; use 1-65535".into());
        }
        p.range("bridge.min_latency_ms", b.min_latency_ms, 20, 8000, " ms");
        let min_latency = Duration::from_millis(u64::from(b.min_latency_ms));
        let latency = match crate::Latency::parse(&b.latency) {
            Ok(crate::Latency::Auto { start, .. }) => crate::Latency::Auto { floor: min_latency, start },
            Ok(fixed) => fixed,
            Err(e) => {
                p.add("bridge.latency", e.to_string().trim_start_matches("latency=").to_string());
                crate::Latency::AUTO
            }
        };
        let link = if b.link.is_empty() {
            None
        } else {
            SrtUrl::parse(&b.link).map_err(|e| p.add("bridge.link", e.to_string())).ok()
        };
        let record = if b.record.is_empty() {
            None
        } else {
            FileSpec::parse(&b.record).map_err(|e| p.add("bridge.record", e.to_string())).ok()
        };
        let relay = if b.relay.is_empty() {
            None
        } else {
            RelaySpec::parse(&b.relay).map_err(|e| p.add("bridge.relay", e)).ok()
        };
        BridgeSettings { port: b.port, min_latency, latency, link, record, relay, port_mapping: b.port_mapping }
    }

    /// The panel's address and pairing's own, if any.
    fn check_web(&self, p: &mut Problems) -> Option<(std::net::SocketAddr, Option<std::net::SocketAddr>)> {
        let w = &self.web;
        let http_listen = w
            .listen
            .parse::<std::net::SocketAddr>()
            .map_err(|_| p.add("web.listen", format!("{:?} is not ADDRESS:PORT (e.g. 0.0.0.0:80)", w.listen)))
            .ok();
        let pair_listen = match w.pair_listen.trim() {
            "" => None,
            text => {
                match text.parse::<std::net::SocketAddr>() {
                    Ok(a) if http_listen.is_some_and(|h| h.port() == a.port()) => {
                        p.add(
                        "web.pair_listen",
                        format!("{text:?} is the panel's port: pairing has a port of its own (e.g. 0.0.0.0:7701), or empty"),
                    );
                        None
                    }
                    Ok(a) => Some(a),
                    Err(_) => {
                        p.add(
                            "web.pair_listen",
                            format!("{text:?} is not ADDRESS:PORT (e.g. 0.0.0.0:7701), or empty for none"),
                        );
                        None
                    }
                }
            }
        };
        if !w.password_hash.is_empty() && !w.password_hash.starts_with("$argon2") {
            p.add("web.password_hash", "is not an argon2 hash; set the password in the panel, not here".into());
        }
        if !w.metrics_token.is_empty() && w.metrics_token.len() < 16 {
            p.add(
                "web.metrics_token",
                format!("has {} characters; it must have at least 16 (or be empty)", w.metrics_token.len()),
            );
        }
        if w.monitor_viewers > MAX_VIEWERS {
            p.add("web.monitor_viewers", format!("{} is out of range 0-{MAX_VIEWERS}", w.monitor_viewers));
        }
        Some((http_listen?, pair_listen))
    }

    fn check_gpio(&self, p: &mut Problems) -> Option<GpioPins> {
        let g = &self.gpio;
        let backend = match g.backend.as_str() {
            "auto" => Some(GpioBackend::Auto),
            "pi" => Some(GpioBackend::Pi),
            "sim" => Some(GpioBackend::Sim),
            "none" => Some(GpioBackend::None),
            other => {
                p.add("gpio.backend", format!("{other:?} is not one of auto, pi, sim, none"));
                None
            }
        };
        let mut pins: Vec<(&str, Option<u32>)> = Vec::new();
        for (field, value) in [
            ("gpio.led_power", g.led_power),
            ("gpio.led_link", g.led_link),
            ("gpio.led_live", g.led_live),
            ("gpio.led_error", g.led_error),
            ("gpio.led_tally", g.led_tally),
            ("gpio.button", g.button),
            ("gpio.tally_in", g.tally_in),
            ("gpio.talk_button", g.talk_button),
        ] {
            let pin = match value {
                -1 => None,
                0..=27 => Some(value as u32),
                _ => {
                    p.add(field, format!("{value} is not a BCM GPIO number 0-27 (or -1 for not fitted)"));
                    None
                }
            };
            if let Some(n) = pin {
                if let Some((other, _)) = pins.iter().find(|(_, q)| *q == Some(n)) {
                    p.add(field, format!("GPIO {n} is already used by {other}"));
                }
            }
            pins.push((field, pin));
        }
        Some(GpioPins {
            backend: backend?,
            chip: g.chip.clone(),
            leds: [pins[0].1, pins[1].1, pins[2].1, pins[3].1, pins[4].1],
            button: pins[5].1,
            button_active_low: g.button_active_low,
            tally_in: pins[6].1,
            tally_in_active_low: g.tally_in_active_low,
            talk_button: pins[7].1,
        })
    }
}

/// The name an output goes by: the one given, or its label made unique (`label (2)`), since two
/// RTMP outputs to one server differ only in their hidden keys.
/// The longest output name: it is shown in the status, the logs and the metrics' labels.
pub const OUTPUT_NAME_MAX: usize = 64;
/// The longest output URL.
pub const OUTPUT_URL_MAX: usize = 2048;

fn name_for(given: &Option<String>, label: String, taken: &[(String, OutputSpec)]) -> String {
    if let Some(n) = given {
        return n.clone();
    }
    let mut name = label.clone();
    let mut k = 2;
    while taken.iter().any(|(n, _)| *n == name) {
        name = format!("{label} ({k})");
        k += 1;
    }
    name
}

/// The most `audio.delay_ms` may move the sound either way, ms.
pub const AUDIO_DELAY_MAX_MS: i32 = 500;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputConfig;

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
        // A fixed bitrate under the adaptive floor's default (500) is fine: the floor is unused.
        let mut low = Config::default();
        low.video.bitrate_kbps = 400;
        low.video.bitrate_mode = "fixed".into();
        low.validate().unwrap();
        // Adaptive (the default): the default floor follows the bitrate; one set over it is named.
        low.video.bitrate_mode = "adaptive".into();
        assert_eq!(low.validate().unwrap().picture.min_bitrate_kbps, 400);
        low.video.min_bitrate_kbps = 600;
        let e = low.validate().unwrap_err().to_string();
        assert!(e.contains("video.min_bitrate_kbps: 600 is out of range 100-400 kbit/s"), "{e}");
    }

    #[test]
    fn the_frame_rate_steps_down_only_from_20_fps() {
        let picture = |fps: u32, on: bool| {
            let mut c = Config::default();
            c.video.fps = fps;
            c.video.frame_rate_step_down = on;
            c.validate().unwrap().picture.frame_rate_step_down
        };
        assert!(picture(30, true), "on by default at 30 fps");
        assert!(picture(20, true));
        assert!(!picture(15, true), "7.5 fps is no picture to fall back on");
        assert!(!picture(30, false));
    }

    /// A table of bad inputs and the message each must give (MediaMTX `TestConfErrors` style).
    #[test]
    fn error_table() {
        type Case = (fn(&mut Config), &'static str);
        let cases: Vec<Case> = vec![
            (|c| c.video.width = 1921, "video.width: 1921 is out of range 160-1920 pixels"),
            (|c| c.video.width = 641, "video.width: 641 must be even"),
            (|c| c.video.fps = 5, "video.fps: 5 is out of range 9-60 frames per second"),
            (|c| c.video.bitrate_kbps = 60_000, "video.bitrate_kbps: 60000 is out of range 100-50000 kbit/s"),
            (|c| c.video.keyframe_ms = 50, "video.keyframe_ms: 50 is out of range 100-10000 ms"),
            (
                |c| c.video.source = "hdmi".into(),
                "video.source: \"hdmi\" is not one of test, v4l2:/dev/videoN, libcamera",
            ),
            (
                |c| c.video.encoder = "nvenc".into(),
                "video.encoder: \"nvenc\" is not one of auto, v4l2h264enc, x264enc, openh264enc",
            ),
            (|c| c.video.x264_preset = "slow".into(), "video.x264_preset: \"slow\" is not one of ultrafast"),
            (|c| c.video.bitrate_mode = "auto".into(), "video.bitrate_mode: \"auto\" is not one of fixed, adaptive"),
            (
                |c| {
                    c.video.bitrate_mode = "adaptive".into();
                    c.video.min_bitrate_kbps = 5000;
                },
                "video.min_bitrate_kbps: 5000 is out of range 100-4000 kbit/s (at most video.bitrate_kbps)",
            ),
            (|c| c.audio.codec = "mp3".into(), "audio.codec: \"mp3\" is not one of auto, aac, opus, none"),
            (|c| c.audio.delay_ms = -501, "audio.delay_ms: -501 is out of range -500 to 500 ms"),
            (|c| c.audio.source = "pulse".into(), "audio.source: \"pulse\" is not one of test, alsa:DEVICE"),
            (|c| c.name = "my box!".into(), "name: \"my box!\" must be 1-63 characters"),
            (
                |c| {
                    c.outputs = vec![
                        OutputConfig { url: "srt://a:1".into(), name: Some("x".into()) },
                        OutputConfig { url: "srt://b:1".into(), name: Some("x".into()) },
                    ]
                },
                "outputs[1].name: \"x\" is already the name of outputs[0]",
            ),
            (
                |c| c.outputs = vec![OutputConfig { url: "srt://a:1".into(), name: Some("n".repeat(10_000)) }],
                "outputs[0].name: has 10000 characters; a name is at most 64",
            ),
            (
                |c| {
                    c.outputs =
                        vec![OutputConfig { url: format!("srt://a:1?streamid={}", "s".repeat(3000)), name: None }]
                },
                "outputs[0].url: has 3019 characters; a URL is at most 2048",
            ),
            (|c| c.role = "both".into(), "role: \"both\" is not one of encoder, decoder, bridge"),
            (|c| c.bridge.port = 0, "bridge.port: 0 is not a UDP port; use 1-65535"),
            (|c| c.bridge.min_latency_ms = 5, "bridge.min_latency_ms: 5 is out of range 20-8000 ms"),
            (
                |c| c.bridge.latency = "fast".into(),
                "bridge.latency: fast is not auto nor a whole number of milliseconds (20-8000)",
            ),
            (|c| c.bridge.latency = "9000".into(), "bridge.latency: 9000 is out of range 20-8000 ms"),
            (|c| c.bridge.record = "file:rel.ts".into(), "bridge.record: "),
            (
                |c| c.bridge.relay = "relay.example:9-2".into(),
                "bridge.relay: \"relay.example:9-2\" is not HOST:FIRST-LAST",
            ),
            (|c| c.decoder.input = "srt://:70000".into(), "decoder.input: "),
            (|c| c.decoder.sink = "hdmi".into(), "decoder.sink: \"hdmi\" is not one of auto, kms"),
            (|c| c.web.listen = "80".into(), "web.listen: \"80\" is not ADDRESS:PORT"),
            (|c| c.web.pair_listen = "7701".into(), "web.pair_listen: \"7701\" is not ADDRESS:PORT"),
            (|c| c.web.monitor_viewers = 17, "web.monitor_viewers: 17 is out of range 0-16"),
            (|c| c.web.pair_listen = "0.0.0.0:80".into(), "web.pair_listen: \"0.0.0.0:80\" is the panel's port"),
            (|c| c.gpio.backend = "wiringpi".into(), "gpio.backend: \"wiringpi\" is not one of auto, pi, sim, none"),
            (|c| c.gpio.led_live = 40, "gpio.led_live: 40 is not a BCM GPIO number 0-27"),
            (|c| c.gpio.button = 5, "gpio.button: GPIO 5 is already used by gpio.led_power"),
            (
                |c| c.outputs = vec![OutputConfig::new("srt://h:1?latency=9000")],
                "outputs[0].url: latency=9000 is out of range 20-8000 ms",
            ),
            (
                |c| c.outputs = vec![OutputConfig::new("udp://h:1?passphrase=abcdefghijkl")],
                "outputs[0].url: \"udp://h:1?passphrase=****\" is not a supported output",
            ),
            (
                |c| c.outputs = vec![OutputConfig::new("srt://:9000"), OutputConfig::new("srt://:9000?latency=200")],
                "outputs[1].url: port 9000 is already used by another listener",
            ),
        ];
        for (mutate, want) in cases {
            let mut c = Config::default();
            mutate(&mut c);
            let errs = c.validate().unwrap_err();
            assert_eq!(errs.0.len(), 1, "{errs}");
            let got = errs.to_string();
            assert!(got.starts_with(want), "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn reports_every_problem_at_once() {
        let mut c = Config::default();
        c.video.fps = 0;
        c.video.bitrate_kbps = 1;
        c.outputs.push(OutputConfig::new("srt://h:1?passphrase=short"));
        let errs = c.validate().unwrap_err();
        let fields: Vec<_> = errs.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["video.fps", "video.bitrate_kbps", "outputs[0].url"]);
    }
}

#[cfg(test)]
mod api_tests {
    use crate::{Config, OutputConfig, HIDDEN};

    fn with_secrets() -> Config {
        let mut c = Config {
            outputs: vec![
                OutputConfig::new("srt://h:9000?passphrase=0123456789abc&pbkeylen=32"),
                OutputConfig { url: "rtmp://live.example/app/STREAMKEY".into(), name: Some("yt".into()) },
            ],
            ..Config::default()
        };
        c.web.password_hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into();
        c.web.metrics_token = "0123456789abcdef0123".into();
        c.decoder.input = "srt://:19850?mode=listener&passphrase=DecInputSecret4242".into();
        c.bridge.link = "srt://peer:7700?passphrase=BridgeLinkSecret77".into();
        c
    }

    #[test]
    fn redacted_shows_no_secret() {
        let shown = toml::to_string(&with_secrets().redacted()).unwrap();
        for secret in
            ["0123456789abc", "STREAMKEY", "argon2", "0123456789abcdef0123", "DecInputSecret4242", "BridgeLinkSecret77"]
        {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("passphrase=****") && shown.contains("/app/****"), "{shown}");
        assert!(shown.contains("srt://:19850?mode=listener&passphrase=****"), "{shown}");
        let debug = format!("{:?}", with_secrets());
        assert!(!debug.contains("STREAMKEY") && !debug.contains("DecInputSecret4242"), "{debug}");
        let decoder_debug = format!("{:?}", with_secrets().decoder);
        assert!(!decoder_debug.contains("DecInputSecret4242"), "{decoder_debug}");
    }

    #[test]
    fn secrets_left_hidden_are_kept_and_new_ones_replace() {
        let running = with_secrets();
        let mut back = running.redacted();
        back.video.bitrate_kbps = 6000;
        let merged = back.clone().with_secrets_from(&running);
        assert_eq!(merged.outputs, running.outputs);
        assert_eq!(merged.decoder, running.decoder, "the decoder input keeps its passphrase");
        assert_eq!(merged.web, running.web);
        assert_eq!(merged.video.bitrate_kbps, 6000);
        // A new key replaces the old one; a changed host with the key hidden is not matched.
        back.outputs[1].url = "rtmp://live.example/app/NEWKEY".into();
        back.outputs[0].url = format!("srt://other:9000?passphrase={HIDDEN}&pbkeylen=32");
        let merged = back.with_secrets_from(&running);
        assert_eq!(merged.outputs[1].url, "rtmp://live.example/app/NEWKEY");
        assert!(merged.outputs[0].url.contains(HIDDEN), "a hidden secret must not move to another host");
        assert!(merged.validate().is_err(), "an unmatched **** is rejected by validation, not sent");
        // Outputs to one TLS server check its certificate alike.
        let mut mixed = running.clone();
        mixed.outputs = vec![
            OutputConfig::new("https://whip.example/a?token=t1&tls_verify=0"),
            OutputConfig::new("rtmps://whip.example:443/app/key"),
        ];
        let e = mixed.validate().unwrap_err().to_string();
        assert!(
            e.contains("outputs[1].url: tls_verify differs from outputs[0]'s to the same server whip.example:443"),
            "{e}"
        );
        mixed.outputs[1].url = "rtmps://whip.example:443/app/key?tls_verify=0".into();
        assert!(mixed.validate().is_ok());
        // WHIP: the token comes back from the panel after the other parameters.
        let mut with_whip = running.clone();
        with_whip.outputs.push(OutputConfig::new("https://whip.example/w?token=tok-123456&room=7"));
        let mut back = with_whip.redacted();
        assert_eq!(back.outputs.last().unwrap().url, "https://whip.example/w?token=****&room=7");
        back.outputs.last_mut().unwrap().url = format!("https://whip.example/w?room=7&token={HIDDEN}");
        let merged = back.with_secrets_from(&with_whip);
        assert_eq!(merged.outputs.last().unwrap().url, "https://whip.example/w?token=tok-123456&room=7");
        // The decoder's input: a new port with the passphrase hidden is not matched either.
        let mut back = running.redacted();
        back.decoder.input = format!("srt://:19851?mode=listener&passphrase={HIDDEN}");
        let merged = back.with_secrets_from(&running);
        assert!(merged.decoder.input.contains(HIDDEN), "{}", merged.decoder.input);
        assert!(merged.validate().is_err(), "an unmatched **** in decoder.input is rejected");
    }
}
