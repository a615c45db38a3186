//! What board this is, from the device tree (`/proc/device-tree/model`).

use std::fs;

/// Facts about the board that decide which hardware blocks exist.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Platform {
    /// The device-tree model string, e.g. `Raspberry Pi 4 Model B Rev 1.4`; `None` on a PC.
    pub model: Option<String>,
}

/// Raspberry Pi families, by their video blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiFamily {
    /// Pi 0-4, Zero 2 W, CM3/CM4: bcm2835-codec H.264 encoder and decoder (`/dev/video11`, `/dev/video10`).
    WithH264Codec,
    /// Pi 5 / CM5: no H.264 encoder or decoder at all, only a stateless HEVC decoder.
    Pi5,
}

impl Platform {
    /// Reads the running machine's model.
    pub fn detect() -> Self {
        let model = fs::read_to_string("/proc/device-tree/model")
            .ok()
            .map(|s| s.trim_end_matches('\0').trim().to_string())
            .filter(|s| !s.is_empty());
        Self { model }
    }

    /// A platform with a given model string (for tests and `--platform` overrides).
    pub fn with_model(model: &str) -> Self {
        Self { model: Some(model.to_string()) }
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

    /// A short description for logs.
    pub fn describe(&self) -> String {
        self.model.clone().unwrap_or_else(|| "not a Raspberry Pi".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        let fam = |m: &str| Platform::with_model(m).pi_family();
        assert_eq!(fam("Raspberry Pi 4 Model B Rev 1.4"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi Zero 2 W Rev 1.0"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi Compute Module 4 Rev 1.0"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi 3 Model B Plus Rev 1.3"), Some(PiFamily::WithH264Codec));
        assert_eq!(fam("Raspberry Pi 5 Model B Rev 1.0"), Some(PiFamily::Pi5));
        assert_eq!(fam("Raspberry Pi Compute Module 5 Rev 1.0"), Some(PiFamily::Pi5));
        assert_eq!(fam("Pine64 RockPro64"), None);
        assert_eq!(Platform::default().pi_family(), None);
    }
}
