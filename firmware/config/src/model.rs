//! The configuration file's model. Defaults live only in the `Default` impls; the shipped
//! example file (`telebridge.example.toml`) equals them, and a test keeps it so.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The whole configuration of one box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The box's name: shown on the slate, the panel and in the logs.
    pub name: String,
    /// Picture: source, format and H.264 encoder.
    pub video: VideoConfig,
    /// Sound: source and codec.
    pub audio: AudioConfig,
    /// Where the encoded stream goes; any number, all at once.
    pub outputs: Vec<OutputConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "telebridge".to_string(),
            video: VideoConfig::default(),
            audio: AudioConfig::default(),
            outputs: Vec::new(),
        }
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
    /// Target video bitrate (x264enc `bitrate`, v4l2h264enc `video_bitrate`), kbit/s.
    pub bitrate_kbps: u32,
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
    /// `test` (a tone) or `alsa:DEVICE` (`alsa:hw:CARD=tc358743` for HDMI audio).
    pub source: String,
    /// `aac` or `none`.
    pub codec: String,
    /// AAC bitrate, kbit/s (32-320).
    pub bitrate_kbps: u32,
}

impl Default for AudioConfig {
    fn default() -> Self {
        Self { source: "test".to_string(), codec: "aac".to_string(), bitrate_kbps: 128 }
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
}

impl fmt::Debug for OutputConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputConfig")
            .field("url", &crate::output_url::redact(&crate::srt_url::redact_query(&self.url)))
            .field("name", &self.name)
            .finish()
    }
}
