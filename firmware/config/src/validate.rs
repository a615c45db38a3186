//! Checks a [`Config`] and turns it into a [`ValidConfig`], reporting every problem at once.
//! The command line, the file loader and (later) the REST API all go through here.

use std::fmt;
use std::time::Duration;

use crate::srt_url::redact_query;
use crate::{AudioCodec, AudioSource, Config, EncoderPreference, FileSpec, RtmpUrl, SrtMode, SrtUrl, VideoSource};

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

/// Where one output sends the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSpec {
    /// MPEG-TS over SRT.
    Srt(SrtUrl),
    /// FLV over RTMP or RTMPS.
    Rtmp(RtmpUrl),
    /// MPEG-TS segments on local storage.
    File(FileSpec),
}

impl OutputSpec {
    /// A label for logs and status, without secrets.
    pub fn label(&self) -> String {
        match self {
            OutputSpec::Srt(u) => u.label(),
            OutputSpec::Rtmp(u) => u.label(),
            OutputSpec::File(f) => f.label(),
        }
    }
}

/// A configuration that passed [`Config::validate`]: typed, checked, ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidConfig {
    /// The file form it came from (for saving and for the API).
    pub raw: Config,
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
}

const X264_PRESETS: &[&str] = &["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"];

impl Config {
    /// Checks every field; returns all problems at once, or the typed configuration.
    pub fn validate(&self) -> Result<ValidConfig, ValidationErrors> {
        let mut errs = Vec::new();
        let mut err = |field: &str, message: String| errs.push(FieldError { field: field.to_string(), message });

        let name_ok = !self.name.is_empty()
            && self.name.len() <= 63
            && self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            err("name", format!("{:?} must be 1-63 characters of letters, digits, '-' and '_'", self.name));
        }

        let v = &self.video;
        let video_source = VideoSource::parse(&v.source).map_err(|m| err("video.source", m)).ok();
        if range(&mut err, "video.width", v.width, 160, 1920, " pixels") && !v.width.is_multiple_of(2) {
            err("video.width", format!("{} must be even", v.width));
        }
        if range(&mut err, "video.height", v.height, 120, 1080, " pixels") && !v.height.is_multiple_of(2) {
            err("video.height", format!("{} must be even", v.height));
        }
        range(&mut err, "video.fps", v.fps, 9, 60, " frames per second");
        range(&mut err, "video.bitrate_kbps", v.bitrate_kbps, 100, 50_000, " kbit/s");
        range(&mut err, "video.keyframe_ms", v.keyframe_ms, 100, 10_000, " ms");
        let encoder = EncoderPreference::parse(&v.encoder).map_err(|m| err("video.encoder", m)).ok();
        if !X264_PRESETS.contains(&v.x264_preset.as_str()) {
            err("video.x264_preset", format!("{:?} is not one of {}", v.x264_preset, X264_PRESETS.join(", ")));
        }

        let a = &self.audio;
        let audio_source = AudioSource::parse(&a.source).map_err(|m| err("audio.source", m)).ok();
        let audio_codec = AudioCodec::parse(&a.codec).map_err(|m| err("audio.codec", m)).ok();
        range(&mut err, "audio.bitrate_kbps", a.bitrate_kbps, 32, 320, " kbit/s");

        let mut outputs = Vec::new();
        let mut listen_ports: Vec<u16> = Vec::new();
        for (i, o) in self.outputs.iter().enumerate() {
            let field = format!("outputs[{i}].url");
            if o.url.starts_with("srt://") {
                match SrtUrl::parse(&o.url) {
                    Ok(u) => {
                        if u.mode != SrtMode::Caller {
                            if listen_ports.contains(&u.port) {
                                err(
                                    &field,
                                    format!("port {} is already used by another listener or rendezvous output", u.port),
                                );
                            }
                            listen_ports.push(u.port);
                        }
                        let name = o.name.clone().unwrap_or_else(|| u.label());
                        outputs.push((name, OutputSpec::Srt(u)));
                    }
                    Err(e) => err(&field, e.to_string()),
                }
            } else if o.url.starts_with("rtmp://") || o.url.starts_with("rtmps://") {
                match RtmpUrl::parse(&o.url) {
                    Ok(u) => outputs.push((o.name.clone().unwrap_or_else(|| u.label()), OutputSpec::Rtmp(u))),
                    Err(e) => err(&field, e.to_string()),
                }
            } else if o.url.starts_with("file:") {
                match FileSpec::parse(&o.url) {
                    Ok(f) => outputs.push((o.name.clone().unwrap_or_else(|| f.label()), OutputSpec::File(f))),
                    Err(e) => err(&field, e.to_string()),
                }
            } else {
                err(
                    &field,
                    format!(
                        "{:?} is not a supported output; write srt://HOST:PORT, srt://:PORT?mode=listener, rtmp://HOST/APP/KEY, rtmps://... or file:/DIR/NAME.ts",
                        crate::output_url::redact(&redact_query(&o.url))
                    ),
                );
            }
        }

        match (video_source, encoder, audio_source, audio_codec) {
            (Some(video_source), Some(encoder), Some(audio_source), Some(audio_codec)) if errs.is_empty() => {
                Ok(ValidConfig {
                    raw: self.clone(),
                    video_source,
                    encoder,
                    keyframe_interval: Duration::from_millis(u64::from(v.keyframe_ms)),
                    audio_source,
                    audio_codec,
                    outputs,
                })
            }
            _ => Err(ValidationErrors(errs)),
        }
    }
}

/// Reports `value` when it is outside `min..=max`; returns whether it was inside.
fn range(err: &mut impl FnMut(&str, String), field: &str, value: u32, min: u32, max: u32, unit: &str) -> bool {
    let inside = (min..=max).contains(&value);
    if !inside {
        err(field, format!("{value} is out of range {min}-{max}{unit}"));
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputConfig;

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
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
            (|c| c.audio.codec = "opus".into(), "audio.codec: \"opus\" is not one of aac, none"),
            (|c| c.audio.source = "pulse".into(), "audio.source: \"pulse\" is not one of test, alsa:DEVICE"),
            (|c| c.name = "my box!".into(), "name: \"my box!\" must be 1-63 characters"),
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
