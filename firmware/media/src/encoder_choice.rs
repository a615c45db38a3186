//! Which H.264 encoder to use, chosen at run time from what exists and works: `v4l2h264enc` on a
//! Pi 0-4, else `x264enc` tuned for zero latency, else `openh264enc`. A pure function of the
//! platform, the elements GStreamer has and a probe, so it is tested against fake element lists.

use std::fmt;

use telebridge_config::EncoderPreference;

use crate::platform::{no_codec_driver, CodecPart, PiFamily, Platform};

/// An H.264 encoder element the firmware knows how to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderKind {
    /// The Pi's bcm2835-codec through V4L2 M2M.
    V4l2h264enc,
    /// x264 in software.
    X264enc,
    /// Cisco openh264 in software.
    Openh264enc,
}

impl EncoderKind {
    /// The GStreamer element factory name.
    pub fn element(self) -> &'static str {
        match self {
            EncoderKind::V4l2h264enc => "v4l2h264enc",
            EncoderKind::X264enc => "x264enc",
            EncoderKind::Openh264enc => "openh264enc",
        }
    }

    /// The Debian package that provides it.
    pub fn package(self) -> &'static str {
        match self {
            EncoderKind::V4l2h264enc => "gstreamer1.0-plugins-good (and the bcm2835-codec driver)",
            EncoderKind::X264enc => "gstreamer1.0-plugins-ugly",
            EncoderKind::Openh264enc => "gstreamer1.0-plugins-bad (openh264)",
        }
    }
}

impl fmt::Display for EncoderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.element())
    }
}

/// The encoder chosen and why, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncoderChoice {
    /// The element to build.
    pub kind: EncoderKind,
    /// Why this one: the platform fact or the candidates that were passed over.
    pub reason: String,
}

/// No usable encoder: each candidate with why it was passed over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no usable H.264 encoder: {}", .tried.join("; "))]
pub struct NoEncoder {
    /// One line per candidate.
    pub tried: Vec<String>,
}

/// Chooses the encoder. `available` says whether GStreamer has an element factory; `works`
/// tries one (a few frames through it) and says why it failed.
pub fn choose_encoder(
    preference: EncoderPreference,
    platform: &Platform,
    available: &dyn Fn(&str) -> bool,
    works: &mut dyn FnMut(EncoderKind) -> Result<(), String>,
) -> Result<EncoderChoice, NoEncoder> {
    let family = platform.pi_family();
    let (candidates, why_first): (Vec<EncoderKind>, String) = match preference {
        EncoderPreference::V4l2h264enc => (vec![EncoderKind::V4l2h264enc], "configured".into()),
        EncoderPreference::X264enc => (vec![EncoderKind::X264enc], "configured".into()),
        EncoderPreference::Openh264enc => (vec![EncoderKind::Openh264enc], "configured".into()),
        EncoderPreference::Auto => match family {
            Some(PiFamily::WithH264Codec) if !platform.has_codec_driver(CodecPart::Encoder) => {
                (vec![EncoderKind::X264enc, EncoderKind::Openh264enc], no_codec_driver(platform, CodecPart::Encoder))
            }
            Some(PiFamily::WithH264Codec) => (
                vec![EncoderKind::V4l2h264enc, EncoderKind::X264enc, EncoderKind::Openh264enc],
                format!("{} has the bcm2835 hardware H.264 encoder", platform.describe()),
            ),
            Some(PiFamily::Pi5) => (
                vec![EncoderKind::X264enc, EncoderKind::Openh264enc],
                format!("{} has no hardware H.264 encoder; encoding in software", platform.describe()),
            ),
            None => (
                vec![EncoderKind::X264enc, EncoderKind::Openh264enc],
                format!("{}: no hardware H.264 encoder known; encoding in software", platform.describe()),
            ),
        },
    };
    let mut tried = Vec::new();
    for kind in candidates {
        if !available(kind.element()) {
            tried.push(format!("{kind} is not installed ({})", kind.package()));
            continue;
        }
        if let Err(why) = works(kind) {
            tried.push(format!("{kind} is installed but does not work: {why}"));
            continue;
        }
        let reason = if tried.is_empty() { why_first } else { format!("{why_first}; {}", tried.join("; ")) };
        return Ok(EncoderChoice { kind, reason });
    }
    Err(NoEncoder { tried })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(
        pref: EncoderPreference,
        model: Option<&str>,
        elements: &[&str],
        broken: &[EncoderKind],
    ) -> Result<EncoderChoice, NoEncoder> {
        let platform = Platform::new(model, if model == PI4 { PI4_DEVICES } else { &[] });
        choose_encoder(pref, &platform, &|e| elements.contains(&e), &mut |k| {
            if broken.contains(&k) {
                Err("Failed enabling i/p port (out of CMA memory?)".into())
            } else {
                Ok(())
            }
        })
    }

    const PI4_ELEMENTS: &[&str] = &["v4l2h264enc", "v4l2h264dec", "x264enc", "openh264enc"];
    const PI5_ELEMENTS: &[&str] = &["x264enc", "openh264enc", "v4l2slh265dec"];
    const PC_ELEMENTS: &[&str] = &["x264enc", "openh264enc", "avdec_h264"];
    const PI4: Option<&str> = Some("Raspberry Pi 4 Model B Rev 1.4");
    /// A Pi 4's V4L2 devices under the Raspberry Pi kernel.
    const PI4_DEVICES: &[&str] = &["bcm2835-codec-decode", "bcm2835-codec-encode", "bcm2835-codec-isp"];
    const PI5: Option<&str> = Some("Raspberry Pi 5 Model B Rev 1.0");

    #[test]
    fn pi4_uses_the_hardware_encoder() {
        let c = pick(EncoderPreference::Auto, PI4, PI4_ELEMENTS, &[]).unwrap();
        assert_eq!(c.kind, EncoderKind::V4l2h264enc);
        assert!(c.reason.contains("bcm2835 hardware H.264 encoder"), "{}", c.reason);
    }

    #[test]
    fn pi4_with_a_broken_hardware_encoder_falls_back_to_x264_and_says_why() {
        let c = pick(EncoderPreference::Auto, PI4, PI4_ELEMENTS, &[EncoderKind::V4l2h264enc]).unwrap();
        assert_eq!(c.kind, EncoderKind::X264enc);
        assert!(
            c.reason.contains("v4l2h264enc is installed but does not work: Failed enabling i/p port"),
            "{}",
            c.reason
        );
    }

    #[test]
    fn a_pi4_on_debians_kernel_encodes_in_software_and_says_why() {
        // The Debian image: the board has the encoder, its kernel has no driver for it (the
        // element is installed all the same: gstreamer1.0-plugins-good).
        let platform = Platform::new(PI4, &["UVC Camera (534d:2109)"]);
        let mut probed = Vec::new();
        let c = choose_encoder(EncoderPreference::Auto, &platform, &|e| PI4_ELEMENTS.contains(&e), &mut |k| {
            probed.push(k);
            Ok(())
        })
        .unwrap();
        assert_eq!(c.kind, EncoderKind::X264enc);
        assert_eq!(probed, vec![EncoderKind::X264enc], "the hardware encoder is not even tried");
        assert_eq!(
            c.reason,
            "Raspberry Pi 4 Model B Rev 1.4: this kernel has no driver for the Pi's hardware H.264 encoder \
             (bcm2835-codec: the Raspberry Pi kernel has it, Debian's does not; the Yocto image has it); \
             encoding in software"
        );
    }

    #[test]
    fn pi5_encodes_in_software() {
        let c = pick(EncoderPreference::Auto, PI5, PI5_ELEMENTS, &[]).unwrap();
        assert_eq!(c.kind, EncoderKind::X264enc);
        assert!(c.reason.contains("no hardware H.264 encoder"), "{}", c.reason);
    }

    #[test]
    fn a_pc_with_a_v4l2_encoder_still_uses_x264() {
        // A PC may expose some other V4L2 M2M encoder; only a Pi's is known to be good.
        let c = pick(EncoderPreference::Auto, None, &["v4l2h264enc", "x264enc"], &[]).unwrap();
        assert_eq!(c.kind, EncoderKind::X264enc);
    }

    #[test]
    fn pc_without_x264_uses_openh264() {
        let c = pick(EncoderPreference::Auto, None, &["openh264enc"], &[]).unwrap();
        assert_eq!(c.kind, EncoderKind::Openh264enc);
        assert!(c.reason.contains("x264enc is not installed (gstreamer1.0-plugins-ugly)"), "{}", c.reason);
    }

    #[test]
    fn nothing_usable_lists_every_candidate() {
        let err = pick(EncoderPreference::Auto, PI4, &["v4l2h264enc"], &[EncoderKind::V4l2h264enc]).unwrap_err();
        assert_eq!(err.tried.len(), 3);
        assert!(
            err.to_string().starts_with("no usable H.264 encoder: v4l2h264enc is installed but does not work"),
            "{err}"
        );
    }

    #[test]
    fn explicit_choice_is_not_second_guessed() {
        let c = pick(EncoderPreference::Openh264enc, PI4, PI4_ELEMENTS, &[]).unwrap();
        assert_eq!(c.kind, EncoderKind::Openh264enc);
        let err = pick(EncoderPreference::V4l2h264enc, None, PC_ELEMENTS, &[]).unwrap_err();
        assert!(err.to_string().contains("v4l2h264enc is not installed"), "{err}");
    }
}
