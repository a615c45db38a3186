//! Which HDMI output the decoder shows on, from what the kernel says of its connectors
//! (`/sys/class/drm`): the first one with a monitor, and the monitor's preferred mode.

/// The connectors under `/sys/class/drm` (`card1-HDMI-A-1`) with their status (`connected`).
pub(crate) fn drm_connectors() -> Vec<(String, String)> {
    let Ok(dir) = std::fs::read_dir("/sys/class/drm") else { return Vec::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let status = std::fs::read_to_string(e.path().join("status")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), status.trim().to_string()))
        })
        .collect()
}

/// The first connected connector (`card1-HDMI-A-2`), in name order.
pub(crate) fn connected_output(connectors: &[(String, String)]) -> Option<String> {
    let mut connected: Vec<&str> =
        connectors.iter().filter(|(_, status)| status == "connected").map(|(name, _)| name.as_str()).collect();
    connected.sort_unstable();
    let name = connected.first()?;
    let card = name.split('-').next()?;
    (card.starts_with("card") && card.len() > 4 && name.len() > card.len()).then(|| name.to_string())
}

/// The monitor's preferred mode: the first progressive line of a connector's `modes` file
/// (`1920x1080`; `1920x1080i` is interlaced).
pub(crate) fn preferred_mode(modes: &str) -> Option<(u32, u32)> {
    modes.lines().find_map(|l| {
        let (w, h) = l.trim().split_once('x')?;
        Some((w.parse().ok()?, h.parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect()
    }

    #[test]
    fn the_output_with_the_monitor_is_chosen() {
        // A Pi 4: card0 is v3d (no connectors), card1 is vc4 with two HDMI ports.
        let pi4 = entries(&[("card1-HDMI-A-1", "disconnected"), ("card1-HDMI-A-2", "connected")]);
        assert_eq!(connected_output(&pi4).as_deref(), Some("card1-HDMI-A-2"));
        // qemu's virtio-gpu.
        assert_eq!(connected_output(&entries(&[("card0-Virtual-1", "connected")])).as_deref(), Some("card0-Virtual-1"));
        // Two monitors: the lower card number.
        let two = entries(&[("card2-DP-1", "connected"), ("card1-HDMI-A-1", "connected")]);
        assert_eq!(connected_output(&two).as_deref(), Some("card1-HDMI-A-1"));
        // Nothing plugged in, or nothing there.
        assert_eq!(connected_output(&entries(&[("card1-HDMI-A-1", "disconnected")])), None);
        assert_eq!(connected_output(&[]), None);
    }

    #[test]
    fn the_preferred_mode_is_the_first_progressive_one() {
        assert_eq!(preferred_mode("1920x1080\n1920x1080\n1280x720\n"), Some((1920, 1080)));
        assert_eq!(preferred_mode("1920x1080i\n1280x720\n"), Some((1280, 720)));
        assert_eq!(preferred_mode("1280x800\n"), Some((1280, 800)));
        assert_eq!(preferred_mode(""), None);
    }
}
