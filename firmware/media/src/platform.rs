//! What board this is, from the device tree (`/proc/device-tree/model`), and which of its video
//! blocks the running kernel drives (the V4L2 devices' names in `/sys/class/video4linux`).

use std::fs;

/// Facts about the board that decide which hardware blocks exist.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Platform {
    /// The device-tree model string, e.g. `Raspberry Pi 4 Model B Rev 1.4`; `None` on a PC.
    pub model: Option<String>,
    /// The names of the kernel's V4L2 devices (`bcm2835-codec-encode`, `vivid-000-vid-cap` ...).
    pub v4l2_names: Vec<String>,
}

/// Raspberry Pi families, by their video blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiFamily {
    /// Pi 0-4, Zero 2 W, CM3/CM4: bcm2835-codec H.264 encoder and decoder (`/dev/video11`, `/dev/video10`).
    WithH264Codec,
    /// Pi 5 / CM5: no H.264 encoder or decoder at all, only a stateless HEVC decoder.
    Pi5,
}

/// The two halves of the Pi 0-4's codec block, as its kernel driver names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodecPart {
    /// `bcm2835-codec-encode` (`/dev/video11`).
    Encoder,
    /// `bcm2835-codec-decode` (`/dev/video10`).
    Decoder,
}

impl CodecPart {
    fn device_name(self) -> &'static str {
        match self {
            CodecPart::Encoder => "bcm2835-codec-encode",
            CodecPart::Decoder => "bcm2835-codec-decode",
        }
    }
}

impl Platform {
    /// Reads the running machine's model and its V4L2 devices.
    pub fn detect() -> Self {
        let model = fs::read_to_string("/proc/device-tree/model")
            .ok()
            .map(|s| s.trim_end_matches('\0').trim().to_string())
            .filter(|s| !s.is_empty());
        let mut v4l2_names: Vec<String> = fs::read_dir("/sys/class/video4linux")
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| fs::read_to_string(e.path().join("name")).ok())
                    .map(|n| n.trim().to_string())
                    .collect()
            })
            .unwrap_or_default();
        v4l2_names.sort();
        Self { model, v4l2_names }
    }

    /// A platform with a given model string and V4L2 device names (tests, fake device lists).
    pub fn new(model: Option<&str>, v4l2_names: &[&str]) -> Self {
        Self { model: model.map(str::to_string), v4l2_names: v4l2_names.iter().map(|n| n.to_string()).collect() }
    }

    /// Which Raspberry Pi family, if this is one.
    pub fn pi_family(&self) -> Option<PiFamily> {
        let model = self.model.as_deref()?;
        if !model.starts_with("Raspberry Pi") {
            return None;
        }
        if model.starts_with("Raspberry Pi 5")
            || model.starts_with("Raspberry Pi Compute Module 5")
            || model.starts_with("Raspberry Pi 500")
        {
            Some(PiFamily::Pi5)
        } else {
            Some(PiFamily::WithH264Codec)
        }
    }

    /// Whether the running kernel drives this half of the Pi's codec block: the Raspberry Pi
    /// kernel does (bcm2835-codec), Debian's and other mainline kernels do not.
    pub fn has_codec_driver(&self, part: CodecPart) -> bool {
        self.v4l2_names.iter().any(|n| n == part.device_name())
    }

    /// A short description for logs.
    pub fn describe(&self) -> String {
        self.model.clone().unwrap_or_else(|| "not a Raspberry Pi".to_string())
    }
}

/// Why a Pi 0-4 with no codec driver works in software, for the log, the panel and
/// `telebridge encoders`.
pub(crate) fn no_codec_driver(platform: &Platform, part: CodecPart) -> String {
    let (noun, verb) = match part {
        CodecPart::Encoder => ("encoder", "encoding"),
        CodecPart::Decoder => ("decoder", "decoding"),
    };
    format!(
        "{}: this kernel has no driver for the Pi's hardware H.264 {noun} (bcm2835-codec: the Raspberry Pi \
         kernel has it, Debian's does not; the Yocto image has it); {verb} in software",
        platform.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        let fam = |m: &str| Platform::new(Some(m), &[]).pi_family();
        assert_eq!(fam("Raspberry Pi 4 Model B Rev 1.4"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi Zero 2 W Rev 1.0"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi Compute Module 4 Rev 1.0"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi 3 Model B Plus Rev 1.3"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi 5 Model B Rev 1.0"), Some(PiFamily::Pi5));
        assert_eq!(fam("Raspberry Pi Compute Module 5 Rev 1.0"), Some(PiFamily::Pi5));
        assert_eq!(fam("Pine64 RockPro64"), None);
        assert_eq!(Platform::default().pi_family(), None);
    }

    #[test]
    fn the_codec_driver_is_known_by_its_device_names() {
        let rpi_kernel = Platform::new(
            Some("Raspberry Pi 4 Model B Rev 1.4"),
            &["bcm2835-codec-decode", "bcm2835-codec-encode", "bcm2835-codec-isp", "unicam-image"],
        );
        assert!(rpi_kernel.has_codec_driver(CodecPart::Encoder));
        assert!(rpi_kernel.has_codec_driver(CodecPart::Decoder));
        let debian_kernel = Platform::new(Some("Raspberry Pi 4 Model B Rev 1.4"), &["UVC Camera (534d:2109)"]);
        assert!(!debian_kernel.has_codec_driver(CodecPart::Encoder));
        assert!(!debian_kernel.has_codec_driver(CodecPart::Decoder));
        let isp_only = Platform::new(Some("Raspberry Pi 3 Model B Rev 1.2"), &["bcm2835-codec-isp"]);
        assert!(!isp_only.has_codec_driver(CodecPart::Encoder));
    }
}
