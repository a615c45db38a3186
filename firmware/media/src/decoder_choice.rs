//! Which H.264 decoder to use: the Pi 0-4's hardware decoder (`v4l2h264dec`), a stateless V4L2
//! decoder where one exists, else libav in software (a Pi 5 has no H.264 decoder). Pure, tested
//! against fake element lists like the encoder choice.

use crate::platform::{no_codec_driver, CodecPart, PiFamily, Platform};

/// The decoder element and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderChoice {
    /// Element factory name.
    pub element: &'static str,
    /// Why, for the log.
    pub reason: String,
}

/// Chooses from what `available` says exists.
pub fn choose_decoder(platform: &Platform, available: &dyn Fn(&str) -> bool) -> Option<DecoderChoice> {
    let (candidates, why): (&[&'static str], String) = match platform.pi_family() {
        Some(PiFamily::WithH264Codec) if !platform.has_codec_driver(CodecPart::Decoder) => {
            (&["v4l2slh264dec", "avdec_h264", "openh264dec"], no_codec_driver(platform, CodecPart::Decoder))
        }
        Some(PiFamily::WithH264Codec) => (
            &["v4l2h264dec", "v4l2slh264dec", "avdec_h264"],
            format!("{} has the bcm2835 hardware H.264 decoder", platform.describe()),
        ),
        Some(PiFamily::Pi5) => (
            &["avdec_h264", "openh264dec"],
            format!("{} has no H.264 decoder; decoding in software", platform.describe()),
        ),
        None => (&["avdec_h264", "openh264dec"], format!("{}: decoding in software", platform.describe())),
    };
    let mut skipped = Vec::new();
    for c in candidates {
        if available(c) {
            let reason = if skipped.is_empty() { why } else { format!("{why}; {} not installed", skipped.join(", ")) };
            return Some(DecoderChoice { element: c, reason });
        }
        skipped.push(*c);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_board() {
        let pick = |model: Option<&str>, els: &[&str]| {
            let devices: &[&str] = if els.contains(&"v4l2h264dec") { &["bcm2835-codec-decode"] } else { &[] };
            choose_decoder(&Platform::new(model, devices), &|e| els.contains(&e)).map(|c| c.element)
        };
        assert_eq!(pick(Some("Raspberry Pi 4 Model B Rev 1.5"), &["v4l2h264dec", "avdec_h264"]), Some("v4l2h264dec"));
        assert_eq!(pick(Some("Raspberry Pi 4 Model B Rev 1.5"), &["avdec_h264"]), Some("avdec_h264"));
        assert_eq!(pick(Some("Raspberry Pi 5 Model B Rev 1.0"), &["v4l2slh265dec", "avdec_h264"]), Some("avdec_h264"));
        assert_eq!(pick(None, &["v4l2h264dec", "avdec_h264"]), Some("avdec_h264"));
        assert_eq!(pick(None, &["openh264dec"]), Some("openh264dec"));
        assert_eq!(pick(None, &[]), None);
    }

    #[test]
    fn a_pi3_on_debians_kernel_decodes_in_software_and_says_why() {
        let platform = Platform::new(Some("Raspberry Pi 3 Model B Rev 1.2"), &[]);
        let c = choose_decoder(&platform, &|e| ["v4l2h264dec", "avdec_h264"].contains(&e)).unwrap();
        assert_eq!(c.element, "avdec_h264");
        assert!(c.reason.contains("this kernel has no driver for the Pi's hardware H.264 decoder"), "{}", c.reason);
        assert!(c.reason.contains("decoding in software"), "{}", c.reason);
    }
}
