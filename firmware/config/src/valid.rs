//! What a checked configuration is: the typed values [`crate::Config::validate`] makes from the
//! raw model, which the rest of the firmware reads (outputs, role, picture, pins).

use std::time::Duration;

pub use crate::bridge::BridgeSettings;
use crate::{
    AudioCodec, AudioOut, AudioSource, BitrateMode, Config, DecoderSink, EncoderPreference, FileSpec, RtmpUrl, SrtUrl,
    VideoSource, WhipUrl,
};

/// Where one output sends the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSpec {
    /// MPEG-TS over SRT.
    Srt(SrtUrl),
    /// FLV over RTMP or RTMPS.
    Rtmp(RtmpUrl),
    /// MPEG-TS segments on local storage.
    File(FileSpec),
    /// WebRTC to a WHIP server: the H.264 as it is, the sound as Opus.
    Whip(WhipUrl),
}

impl OutputSpec {
    /// The TLS server it reaches (WHIP over https, RTMPS) and whether it checks the server's
    /// certificate. GIO's TLS resumes a session per host and port within the process without
    /// checking again, so outputs to one server must check alike.
    pub fn tls_server(&self) -> Option<(&str, u16, bool)> {
        match self {
            OutputSpec::Whip(u) if u.secure() => Some((&u.host, u.port, u.tls_verify)),
            OutputSpec::Rtmp(u) if u.secure => Some((&u.host, u.port, u.tls_verify)),
            _ => None,
        }
    }

    /// A label for logs and status, without secrets.
    pub fn label(&self) -> String {
        match self {
            OutputSpec::Srt(u) => u.label(),
            OutputSpec::Rtmp(u) => u.label(),
            OutputSpec::File(f) => f.label(),
            OutputSpec::Whip(u) => u.label(),
        }
    }
}

/// What `telebridge run` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Capture, encode, send.
    Encoder,
    /// Receive, decode, show.
    Decoder,
    /// Both, with the paired box, over one SRT connection.
    Bridge,
}

impl Role {
    /// Every role, in the order the panel offers them.
    pub const ALL: [Role; 3] = [Role::Encoder, Role::Decoder, Role::Bridge];

    /// The role's name in the configuration file (`encoder`, `decoder`, `bridge`).
    pub fn name(self) -> &'static str {
        match self {
            Role::Encoder => "encoder",
            Role::Decoder => "decoder",
            Role::Bridge => "bridge",
        }
    }

    /// The role named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// Whether `name` is a box name: 1-63 letters, digits, `-` and `_` (a DNS label's length; safe
/// on the slate, in logs, on the network).
pub fn is_box_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Which GPIO the daemon drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpioBackend {
    /// The Pi's GPIO if the chip exists, otherwise none.
    Auto,
    /// The Raspberry Pi's GPIO through the kernel's character device.
    Pi,
    /// Simulated pins, readable and pressable through the API.
    Sim,
    /// No LEDs, no button.
    None,
}

/// How many LEDs a box drives: power, link, live, error, tally.
pub const GPIO_LEDS: usize = 5;

/// The validated GPIO settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpioPins {
    /// Backend.
    pub backend: GpioBackend,
    /// Character device path.
    pub chip: String,
    /// LEDs power, link, live, error, tally (BCM numbers; `None` = not fitted).
    pub leds: [Option<u32>; GPIO_LEDS],
    /// Button.
    pub button: Option<u32>,
    /// Pressed = low.
    pub button_active_low: bool,
    /// The tally input from a vision mixer.
    pub tally_in: Option<u32>,
    /// Active = low.
    pub tally_in_active_low: bool,
    /// Talkback's talk button (wired as the go-live button: `button_active_low`).
    pub talk_button: Option<u32>,
}

/// A configuration that passed [`Config::validate`]: typed, checked, ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidConfig {
    /// The file form it came from (for saving, the API and the change plan; the runtime reads
    /// the typed fields below).
    pub raw: Config,
    /// The box's name.
    pub name: String,
    /// Go live as soon as the box has started.
    pub start_live: bool,
    /// The picture's size, rate and bitrate.
    pub picture: Picture,
    /// AAC bitrate, kbit/s.
    pub audio_bitrate_kbps: u32,
    /// `audio.delay_ms`: the sound played this much later (negative: earlier).
    pub audio_delay_ms: i32,
    /// Parsed `decoder.sink`.
    pub decoder_sink: DecoderSink,
    /// Parsed `decoder.audio_out`.
    pub audio_out: AudioOut,
    /// Parsed `video.source`.
    pub video_source: VideoSource,
    /// Parsed `video.encoder`.
    pub encoder: EncoderPreference,
    /// `video.keyframe_ms` as a duration.
    pub keyframe_interval: Duration,
    /// Parsed `audio.source`.
    pub audio_source: AudioSource,
    /// Parsed `audio.codec`.
    pub audio_codec: AudioCodec,
    /// Parsed outputs, in order, with their names.
    pub outputs: Vec<(String, OutputSpec)>,
    /// Parsed `role`.
    pub role: Role,
    /// Parsed `decoder.input`.
    pub decoder_input: SrtUrl,
    /// Parsed `bridge`.
    pub bridge: BridgeSettings,
    /// Parsed `web.listen`.
    pub http_listen: std::net::SocketAddr,
    /// Parsed `web.pair_listen` (`None`: pairing on the panel's port only).
    pub pair_listen: Option<std::net::SocketAddr>,
    /// Parsed `gpio`.
    pub gpio: GpioPins,
    /// Parsed `talkback`.
    pub talkback: crate::Talkback,
    /// Parsed `fleet` (`None`: no fleet server).
    pub fleet: Option<crate::Fleet>,
}

/// The picture as the encoder makes it (checked ranges).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// Width, pixels (even, 160-1920).
    pub width: u32,
    /// Height, pixels (even, 120-1080).
    pub height: u32,
    /// Frames per second (9-60).
    pub fps: u32,
    /// Video bitrate, kbit/s (with an adaptive bitrate, the most).
    pub bitrate_kbps: u32,
    /// Fixed, or following the link.
    pub bitrate_mode: BitrateMode,
    /// The least an adaptive bitrate goes to, kbit/s.
    pub min_bitrate_kbps: u32,
    /// Under that floor, one frame in two (at 20 frames a second or more).
    pub frame_rate_step_down: bool,
    /// x264's speed preset.
    pub x264_preset: String,
}
