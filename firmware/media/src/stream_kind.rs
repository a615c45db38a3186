//! What a demuxed elementary stream is to this box: decoded (H.264, AAC, Opus) or named for the
//! user ("video H.265 (HEVC)"), pure.

/// Which side of a programme a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Picture.
    Video,
    /// Sound.
    Audio,
    /// Neither (teletext, metadata).
    Data,
}

/// A stream this box does not decode: its side and its format in words ("H.265 (HEVC)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// Picture, sound or data.
    pub side: Side,
    /// The format, in words.
    pub format: String,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = match self.side {
            Side::Video => "video",
            Side::Audio => "audio",
            Side::Data => "data",
        };
        write!(f, "{side} {}", self.format)
    }
}

/// What a demuxed elementary stream is to this box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamKind {
    /// H.264 video: decoded.
    H264,
    /// AAC audio: decoded.
    Aac,
    /// Opus audio: decoded.
    Opus,
    /// Anything else, named for the user ("video H.265 (HEVC)", "audio AC-3"): not decoded.
    Unsupported(Unsupported),
}

/// Names the stream whose caps are `name` (the structure name) with `mpegversion` (for
/// `video/mpeg` and `audio/mpeg`), from tsdemux's pad `pad` (`video_...`, `audio_...`).
pub fn stream_kind(name: &str, mpegversion: Option<i32>, pad: &str) -> StreamKind {
    let named = |what: &str| {
        let side = if name.starts_with("audio/") || pad.starts_with("audio") {
            Side::Audio
        } else if name.starts_with("video/") || pad.starts_with("video") {
            Side::Video
        } else {
            Side::Data
        };
        StreamKind::Unsupported(Unsupported { side, format: what.to_string() })
    };
    match (name, mpegversion) {
        ("video/x-h264", _) => StreamKind::H264,
        ("audio/mpeg", Some(2 | 4)) => StreamKind::Aac,
        ("video/x-h265", _) => named("H.265 (HEVC)"),
        ("video/mpeg", Some(1)) => named("MPEG-1"),
        ("video/mpeg", Some(2)) => named("MPEG-2"),
        ("video/mpeg", Some(4)) => named("MPEG-4 part 2"),
        ("video/x-dirac", _) => named("Dirac"),
        ("video/x-jpeg2000" | "image/x-jpc", _) => named("JPEG 2000"),
        ("video/x-av1", _) => named("AV1"),
        ("video/x-vp9", _) => named("VP9"),
        ("audio/mpeg", Some(1)) => named("MPEG-1 layer 2/3 (MP2, MP3)"),
        ("audio/x-ac3" | "audio/ac3", _) => named("AC-3"),
        ("audio/x-eac3", _) => named("E-AC-3"),
        ("audio/x-opus", _) => StreamKind::Opus,
        ("audio/x-private1-lpcm" | "audio/x-lpcm", _) => named("LPCM"),
        ("", _) => named("of an unknown kind"),
        (other, _) => named(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_named_for_the_user() {
        assert_eq!(stream_kind("video/x-h264", None, "video_0_0100"), StreamKind::H264);
        assert_eq!(stream_kind("audio/mpeg", Some(4), "audio_0_0101"), StreamKind::Aac);
        assert_eq!(stream_kind("audio/mpeg", Some(2), "audio_0_0101"), StreamKind::Aac);
        assert_eq!(stream_kind("audio/x-opus", None, "audio_0_0101"), StreamKind::Opus);
        let words = |k: StreamKind| match k {
            StreamKind::Unsupported(w) => w.to_string(),
            other => panic!("{other:?} should be unsupported"),
        };
        assert_eq!(words(stream_kind("video/x-h265", None, "video_0_0100")), "video H.265 (HEVC)");
        assert_eq!(words(stream_kind("video/mpeg", Some(2), "video_0_0100")), "video MPEG-2");
        assert_eq!(words(stream_kind("audio/mpeg", Some(1), "audio_0_0101")), "audio MPEG-1 layer 2/3 (MP2, MP3)");
        assert_eq!(words(stream_kind("audio/x-ac3", None, "audio_0_0101")), "audio AC-3");
        assert_eq!(words(stream_kind("", None, "private_0_0102")), "data of an unknown kind");
        assert_eq!(words(stream_kind("", None, "video_0_0102")), "video of an unknown kind");
        assert_eq!(words(stream_kind("application/x-teletext", None, "private_0_0103")), "data application/x-teletext");
    }
}
