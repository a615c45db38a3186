//! What a viewer's offer allows, and what the box answers with: the H.264 it already sends, as
//! it is, under a payload type and a profile the browser named; Opus for the sound. Pure: the
//! offer's codecs in, the choice out.

/// A codec a media section of the offer lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// `video` or `audio`.
    pub media: String,
    /// Its RTP payload type.
    pub pt: u8,
    /// The encoding's name as `rtpmap` gives it (`H264`, `opus`, `VP8`).
    pub encoding: String,
    /// The `fmtp` parameters, as written (`level-asymmetry-allowed=1;packetization-mode=1;...`).
    pub fmtp: String,
}

impl Offered {
    fn param(&self, key: &str) -> Option<&str> {
        self.fmtp.split(';').filter_map(|kv| kv.trim().split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// The H.264 the box answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoAnswer {
    /// The offer's payload type for it.
    pub pt: u8,
    /// The offer's `profile-level-id` (six hex digits).
    pub profile_level_id: String,
}

/// What the box sends a viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The picture.
    pub video: VideoAnswer,
    /// Opus's payload type, when the offer takes sound.
    pub audio_pt: Option<u8>,
}

/// How well an H.264 `profile-level-id` takes the Main profile the box encodes: Main itself;
/// High, which holds Main; Constrained Baseline last (a decoder of only that may not read
/// Main's CABAC; the browsers that offer it offer Main too).
fn main_fit(profile_level_id: &str) -> Option<u8> {
    let idc = u8::from_str_radix(profile_level_id.get(..2)?, 16).ok()?;
    match idc {
        0x4d => Some(0),
        0x64 => Some(1),
        0x42 => Some(2),
        _ => None,
    }
}

/// The codecs to answer `offered` with, or why there are none, in words.
pub fn choose(offered: &[Offered]) -> Result<Chosen, String> {
    let video = offered
        .iter()
        // RTP's payload type is 7 bits (RFC 3550); one past it is not a codec.
        .filter(|c| c.media == "video" && c.pt < 128 && c.encoding.eq_ignore_ascii_case("H264"))
        .filter(|c| c.param("packetization-mode") == Some("1"))
        .filter_map(|c| {
            let id = c.param("profile-level-id").unwrap_or("42e01f");
            main_fit(id).map(|fit| (fit, c.pt, id.to_ascii_lowercase()))
        })
        .min_by_key(|(fit, pt, _)| (*fit, *pt))
        .map(|(_, pt, profile_level_id)| VideoAnswer { pt, profile_level_id })
        .ok_or_else(|| {
            let listed: Vec<String> =
                offered.iter().filter(|c| c.media == "video").map(|c| c.encoding.clone()).collect();
            format!(
                "the offer takes no H.264 in packetization mode 1 (it lists {}): the box sends H.264 as it encodes it",
                if listed.is_empty() { "no video".to_string() } else { listed.join(", ") }
            )
        })?;
    let audio_pt = offered
        .iter()
        .filter(|c| c.media == "audio" && c.pt < 128 && c.encoding.eq_ignore_ascii_case("opus"))
        .map(|c| c.pt)
        .min();
    Ok(Chosen { video, audio_pt })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(media: &str, pt: u8, encoding: &str, fmtp: &str) -> Offered {
        Offered { media: media.into(), pt, encoding: encoding.into(), fmtp: fmtp.into() }
    }

    /// What Debian's Chromium 120 offers for a receive-only video and audio (its order).
    fn chromium() -> Vec<Offered> {
        vec![
            codec("video", 96, "VP8", ""),
            codec("video", 98, "VP9", "profile-id=0"),
            codec("video", 102, "H264", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f"),
            codec("video", 106, "H264", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"),
            codec("video", 108, "H264", "level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=4d001f"),
            codec("video", 112, "H264", "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f"),
            codec("audio", 111, "opus", "minptime=10;useinbandfec=1"),
            codec("audio", 9, "G722", ""),
        ]
    }

    #[test]
    fn main_in_mode_1_is_chosen_and_opus_for_the_sound() {
        let c = choose(&chromium()).unwrap();
        assert_eq!(c.video, VideoAnswer { pt: 112, profile_level_id: "4d001f".into() });
        assert_eq!(c.audio_pt, Some(111));
    }

    #[test]
    fn without_main_high_holds_it_and_baseline_comes_last() {
        let high = vec![
            codec("video", 106, "H264", "packetization-mode=1;profile-level-id=42e01f"),
            codec("video", 127, "H264", "packetization-mode=1;profile-level-id=640c1f"),
        ];
        assert_eq!(choose(&high).unwrap().video.pt, 127);
        let baseline = vec![codec("video", 106, "H264", "packetization-mode=1;profile-level-id=42E01F")];
        let c = choose(&baseline).unwrap();
        assert_eq!((c.video.profile_level_id.as_str(), c.audio_pt), ("42e01f", None));
    }

    /// Found by scripts/attack: a payload type past 127 reached rtph264pay, whose `pt` property
    /// refused it with a panic.
    #[test]
    fn a_payload_type_past_7_bits_is_no_codec() {
        let offer = vec![
            codec("video", 128, "H264", "packetization-mode=1;profile-level-id=4d001f"),
            codec("audio", 200, "opus", ""),
        ];
        assert!(choose(&offer).is_err());
        let offer = vec![
            codec("video", 128, "H264", "packetization-mode=1;profile-level-id=4d001f"),
            codec("video", 127, "H264", "packetization-mode=1;profile-level-id=42e01f"),
            codec("audio", 200, "opus", ""),
        ];
        let c = choose(&offer).unwrap();
        assert_eq!((c.video.pt, c.audio_pt), (127, None));
    }

    #[test]
    fn an_offer_without_h264_in_mode_1_is_refused_in_words() {
        let vp8 = vec![codec("video", 96, "VP8", ""), codec("video", 108, "H264", "packetization-mode=0")];
        assert_eq!(
            choose(&vp8).unwrap_err(),
            "the offer takes no H.264 in packetization mode 1 (it lists VP8, H264): the box sends H.264 as it encodes it"
        );
        assert!(choose(&[codec("audio", 111, "opus", "")]).unwrap_err().contains("(it lists no video)"));
    }
}
