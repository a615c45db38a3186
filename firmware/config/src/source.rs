//! Where the picture and sound come from, and which encoder makes H.264 of them.

use std::fmt;
use std::path::PathBuf;

/// The video source (`video.source`, `--source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoSource {
    /// A moving test pattern with a machine-readable timecode burnt into every frame.
    Test,
    /// A V4L2 capture device: TC358743 HDMI bridge, USB capture dongle or UVC camera.
    V4l2 {
        /// The device node, e.g. `/dev/video0`.
        device: PathBuf,
    },
    /// A Raspberry Pi camera through libcamera (`libcamerasrc`).
    Libcamera,
}

impl VideoSource {
    /// Parses `test`, `v4l2:/dev/videoN` or `libcamera`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "test" => Ok(VideoSource::Test),
            "libcamera" => Ok(VideoSource::Libcamera),
            _ => match s.strip_prefix("v4l2:") {
                Some(dev) if dev.starts_with('/') => Ok(VideoSource::V4l2 { device: PathBuf::from(dev) }),
                _ => Err(format!("{s:?} is not one of test, v4l2:/dev/videoN, libcamera")),
            },
        }
    }
}

impl fmt::Display for VideoSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VideoSource::Test => f.write_str("test"),
            VideoSource::V4l2 { device } => write!(f, "v4l2:{}", device.display()),
            VideoSource::Libcamera => f.write_str("libcamera"),
        }
    }
}

/// The audio source (`audio.source`, `--audio-source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudioSource {
    /// A test tone.
    Test,
    /// An ALSA capture device: `hw:CARD=tc358743` for the HDMI bridge's I2S, or a USB card.
    Alsa {
        /// The ALSA device name as `arecord -D` takes it.
        device: String,
    },
}

impl AudioSource {
    /// Parses `test` or `alsa:DEVICE`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "test" => Ok(AudioSource::Test),
            _ => match s.strip_prefix("alsa:") {
                Some(dev) if !dev.is_empty() => Ok(AudioSource::Alsa { device: dev.to_string() }),
                _ => Err(format!("{s:?} is not one of test, alsa:DEVICE (e.g. alsa:hw:CARD=tc358743)")),
            },
        }
    }
}

impl fmt::Display for AudioSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AudioSource::Test => f.write_str("test"),
            AudioSource::Alsa { device } => write!(f, "alsa:{device}"),
        }
    }
}

/// The audio codec (`audio.codec`, `--audio`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioCodec {
    /// AAC-LC at 48 kHz: what every decoder plays (1024-sample frames, 21.3 ms).
    Aac,
    /// Opus at 48 kHz in 10 ms frames: the least delay, for a Telebridge box (or ffmpeg, VLC)
    /// at the other end; GStreamer's tsdemux and ffmpeg read it from MPEG-TS.
    Opus,
    /// No audio track.
    None,
}

impl AudioCodec {
    /// Parses `aac`, `opus` or `none`; `auto` is the role's choice, [`AudioCodec::for_role`].
    pub fn parse(s: &str, bridge: bool) -> Result<Self, String> {
        match s {
            "auto" => Ok(AudioCodec::for_role(bridge)),
            "aac" => Ok(AudioCodec::Aac),
            "opus" => Ok(AudioCodec::Opus),
            "none" => Ok(AudioCodec::None),
            _ => Err(format!("{s:?} is not one of auto, aac, opus, none")),
        }
    }

    /// `auto`: Opus between two Telebridge boxes (the bridge: 10 ms frames, the picture never
    /// waits for the sound), AAC from an encoder (every decoder plays it).
    pub fn for_role(bridge: bool) -> Self {
        if bridge {
            AudioCodec::Opus
        } else {
            AudioCodec::Aac
        }
    }
}

/// Which H.264 encoder to use (`video.encoder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderPreference {
    /// Choose at run time from what exists and works: `v4l2h264enc` on a Pi 0-4, else `x264enc`,
    /// else `openh264enc`.
    Auto,
    /// The Pi's hardware encoder through V4L2 (bcm2835-codec).
    V4l2h264enc,
    /// x264 in software.
    X264enc,
    /// Cisco's openh264 in software.
    Openh264enc,
}

impl EncoderPreference {
    /// Parses `auto`, `v4l2h264enc`, `x264enc` or `openh264enc`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "v4l2h264enc" => Ok(Self::V4l2h264enc),
            "x264enc" => Ok(Self::X264enc),
            "openh264enc" => Ok(Self::Openh264enc),
            _ => Err(format!("{s:?} is not one of auto, v4l2h264enc, x264enc, openh264enc")),
        }
    }
}

/// Whether the video bitrate follows the link (`video.bitrate_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitrateMode {
    /// Always `video.bitrate_kbps`.
    Fixed,
    /// Between `video.min_bitrate_kbps` and `video.bitrate_kbps`, following what the SRT links
    /// carry (the slowest one decides).
    Adaptive,
}

impl BitrateMode {
    /// Parses `fixed` or `adaptive`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "fixed" => Ok(Self::Fixed),
            "adaptive" => Ok(Self::Adaptive),
            _ => Err(format!("{s:?} is not one of fixed, adaptive")),
        }
    }
}

/// Where the decoder shows the picture (`decoder.sink`, `--sink`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecoderSink {
    /// KMS if a display is connected, else a window if a desktop runs, else nowhere (decided
    /// when the decoder starts).
    Auto,
    /// The HDMI output through KMS.
    Kms,
    /// A window on the desktop.
    Window,
    /// Nowhere: headless boxes and tests.
    Fake,
    /// A Matroska file of what the screen would show.
    File(PathBuf),
}

impl DecoderSink {
    /// Parses `auto`, `kms`, `window`, `fake` or `file:PATH`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "kms" => Ok(Self::Kms),
            "window" => Ok(Self::Window),
            "fake" => Ok(Self::Fake),
            _ => match s.strip_prefix("file:") {
                Some(p) if !p.is_empty() => Ok(Self::File(PathBuf::from(p))),
                _ => Err(format!("{s:?} is not one of auto, kms, window, fake, file:PATH")),
            },
        }
    }
}

/// Where the decoder's sound goes (`decoder.audio_out`, `--audio-out`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudioOut {
    /// Decoded and counted, not played.
    Discard,
    /// Played on an ALSA device (`default`, `hw:CARD=vc4hdmi0`).
    Alsa(String),
}

impl AudioOut {
    /// Parses `discard` or `alsa:DEVICE`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "discard" => Ok(Self::Discard),
            _ => match s.strip_prefix("alsa:") {
                Some(dev) if !dev.is_empty() => Ok(Self::Alsa(dev.to_string())),
                _ => Err(format!("{s:?} is not one of discard, alsa:DEVICE")),
            },
        }
    }
}

#[cfg(test)]
mod output_tests {
    use super::*;

    #[test]
    fn decoder_sinks_and_sound_outputs() {
        assert_eq!(DecoderSink::parse("fake").unwrap(), DecoderSink::Fake);
        assert_eq!(DecoderSink::parse("file:/tmp/x.mkv").unwrap(), DecoderSink::File("/tmp/x.mkv".into()));
        assert_eq!(
            DecoderSink::parse("hdmi").unwrap_err(),
            "\"hdmi\" is not one of auto, kms, window, fake, file:PATH"
        );
        assert_eq!(
            DecoderSink::parse("file:").unwrap_err(),
            "\"file:\" is not one of auto, kms, window, fake, file:PATH"
        );
        assert_eq!(AudioOut::parse("alsa:hw:CARD=vc4hdmi0").unwrap(), AudioOut::Alsa("hw:CARD=vc4hdmi0".into()));
        assert_eq!(AudioOut::parse("discard").unwrap(), AudioOut::Discard);
        assert_eq!(AudioOut::parse("alsa:").unwrap_err(), "\"alsa:\" is not one of discard, alsa:DEVICE");
    }
}
