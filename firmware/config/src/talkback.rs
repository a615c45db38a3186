//! Talkback (issue 39): a push-to-talk voice channel between the paired boxes, apart from the
//! programme sound. Where the voice comes from and where the far box's voice goes.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::source::AudioSource;

/// `[talkback]` in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TalkbackConfig {
    /// The talker's microphone: `none`, `alsa:DEVICE` (a USB headset, e.g. `alsa:hw:CARD=Headset`)
    /// or `test` (a 440 Hz beep at each second, for measuring mouth to ear).
    pub source: String,
    /// Where the far box's voice is heard: `alsa:DEVICE` (headphones), `file:PATH` (a WAV file)
    /// or `none`.
    pub output: String,
}

impl Default for TalkbackConfig {
    fn default() -> Self {
        Self { source: "none".into(), output: "alsa:default".into() }
    }
}

/// Where the far box's voice goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TalkOutput {
    /// Nowhere (heard and counted, not played).
    None,
    /// An ALSA playback device (the box's headphone output).
    Alsa(String),
    /// A WAV file.
    File(PathBuf),
}

impl TalkOutput {
    /// Parses `none`, `alsa:DEVICE` or `file:PATH`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let err = || format!("{s:?} is not one of none, alsa:DEVICE, file:PATH");
        match s {
            "none" => Ok(Self::None),
            _ => match s.split_once(':') {
                Some(("alsa", dev)) if !dev.is_empty() => Ok(Self::Alsa(dev.into())),
                Some(("file", path)) if !path.is_empty() => Ok(Self::File(path.into())),
                _ => Err(err()),
            },
        }
    }
}

impl fmt::Display for TalkOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TalkOutput::None => f.write_str("none"),
            TalkOutput::Alsa(d) => write!(f, "alsa:{d}"),
            TalkOutput::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// The validated talkback settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Talkback {
    /// The microphone, if any (`None`: this box only listens).
    pub source: Option<AudioSource>,
    /// Where the far box's voice goes.
    pub output: TalkOutput,
}

impl TalkbackConfig {
    /// The settings, or each wrong field with its message.
    pub fn check(&self) -> Result<Talkback, Vec<(&'static str, String)>> {
        let source = match self.source.as_str() {
            "none" => Ok(None),
            s => AudioSource::parse(s)
                .map(Some)
                .map_err(|_| format!("{s:?} is not one of none, test, alsa:DEVICE (e.g. alsa:hw:CARD=Headset)")),
        };
        let output = TalkOutput::parse(&self.output);
        match (source, output) {
            (Ok(source), Ok(output)) => Ok(Talkback { source, output }),
            (s, o) => Err([s.err().map(|m| ("talkback.source", m)), o.err().map(|m| ("talkback.output", m))]
                .into_iter()
                .flatten()
                .collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_outputs_parse_and_wrong_ones_name_their_field() {
        let ok = TalkbackConfig { source: "alsa:hw:CARD=Headset".into(), output: "file:/tmp/talk.wav".into() };
        let t = ok.check().expect("valid");
        assert_eq!(t.source, Some(AudioSource::Alsa { device: "hw:CARD=Headset".into() }));
        assert_eq!(t.output, TalkOutput::File("/tmp/talk.wav".into()));
        assert_eq!(TalkbackConfig::default().check().expect("default").source, None);
        assert_eq!(TalkOutput::parse("alsa:default"), Ok(TalkOutput::Alsa("default".into())));
        let bad = TalkbackConfig { source: "mic".into(), output: "speaker".into() };
        let errs = bad.check().expect_err("both wrong");
        assert_eq!(
            errs[0],
            ("talkback.source", "\"mic\" is not one of none, test, alsa:DEVICE (e.g. alsa:hw:CARD=Headset)".into())
        );
        assert_eq!(errs[1], ("talkback.output", "\"speaker\" is not one of none, alsa:DEVICE, file:PATH".into()));
    }
}
