//! What the box has to choose from: its capture devices (V4L2, with their names), its sound
//! cards (ALSA), its displays and its network interfaces. The panel offers these as menus, so a
//! choice is one the box can run. Read from a root directory (`/` on a box; a made-up tree in
//! tests), never from a second implementation.

use std::path::Path;

use serde::Serialize;

/// One thing to pick: the value the configuration takes and what a person reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The configuration's value (`v4l2:/dev/video0`, `alsa:hw:CARD=Headset`, `eth0`).
    pub value: String,
    /// In words ("HDMI bridge: unicam (/dev/video0)").
    pub label: String,
}

impl Choice {
    fn new(value: impl Into<String>, label: impl Into<String>) -> Self {
        Self { value: value.into(), label: label.into() }
    }
}

/// Everything the panel's menus offer, for this box.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Devices {
    /// `video.source`.
    pub video_sources: Vec<Choice>,
    /// `audio.source`.
    pub audio_sources: Vec<Choice>,
    /// `decoder.sink`.
    pub video_sinks: Vec<Choice>,
    /// `talkback.source`.
    pub talk_sources: Vec<Choice>,
    /// `talkback.output`.
    pub talk_outputs: Vec<Choice>,
    /// Network interfaces, for a bonded output's uplinks.
    pub interfaces: Vec<Choice>,
}

/// Video nodes that are not capture devices a user picks (the Pi's codec, ISP and back-end
/// nodes; a USB camera's second, metadata, node has index 1 and is left out by that).
const NOT_CAPTURE: [&str; 5] = ["bcm2835-codec", "bcm2835-isp", "rpivid", "pispbe", "rpi-hevc-dec"];

impl Devices {
    /// What the machine under `root` has.
    pub fn probe(root: &Path) -> Self {
        let mut d = Devices::default();
        d.video_sources.push(Choice::new("test", "Test pattern (colour bars, a flash and a beep each second)"));
        for (node, name) in video_nodes(root) {
            d.video_sources.push(Choice::new(format!("v4l2:/dev/{node}"), format!("{name} (/dev/{node})")));
        }
        let model = std::fs::read_to_string(root.join("proc/device-tree/model")).unwrap_or_default();
        if model.contains("Raspberry Pi") {
            d.video_sources.push(Choice::new("libcamera", "Raspberry Pi camera (libcamera)"));
        }
        let cards = sound_cards(root);
        d.audio_sources.push(Choice::new("test", "Test tone (a beep each second, with the picture's flash)"));
        d.talk_sources.push(Choice::new("none", "None: no talkback microphone"));
        d.talk_sources.push(Choice::new("test", "Test tone (a 440 Hz beep each second)"));
        d.talk_outputs.push(Choice::new("none", "None"));
        if !cards.is_empty() {
            d.talk_outputs.push(Choice::new("alsa:default", "The default sound output"));
        }
        for (id, name) in &cards {
            let value = format!("alsa:hw:CARD={id}");
            d.audio_sources.push(Choice::new(value.clone(), format!("{name} ({id})")));
            d.talk_sources.push(Choice::new(value.clone(), format!("{name} ({id})")));
            d.talk_outputs.push(Choice::new(value, format!("{name} ({id})")));
        }
        d.video_sinks.push(Choice::new("auto", "Automatic: HDMI where there is one"));
        if has_display(root) {
            d.video_sinks.push(Choice::new("kms", "HDMI (KMS)"));
        }
        d.video_sinks.push(Choice::new("window", "A window on the desktop"));
        d.video_sinks.push(Choice::new("fake", "Nowhere (decode and measure only)"));
        for (name, state) in interfaces(root) {
            d.interfaces.push(Choice::new(name.clone(), format!("{name} ({state})")));
        }
        d
    }
}

/// `/sys/class/video4linux/*`: each capture node's name, by node, in order.
fn video_nodes(root: &Path) -> Vec<(String, String)> {
    let base = root.join("sys/class/video4linux");
    let mut nodes: Vec<(String, String)> = read_dir_names(&base)
        .into_iter()
        .filter(|n| n.starts_with("video"))
        .filter_map(|node| {
            let name = std::fs::read_to_string(base.join(&node).join("name")).ok()?.trim().to_string();
            let index = std::fs::read_to_string(base.join(&node).join("index")).unwrap_or_else(|_| "0".into());
            let capture = index.trim() == "0" && !NOT_CAPTURE.iter().any(|p| name.starts_with(p));
            capture.then_some((node, name))
        })
        .collect();
    nodes.sort_by_key(|(n, _)| (n.len(), n.clone()));
    nodes
}

/// `/proc/asound/cards`: each card's id and its long name.
pub fn parse_sound_cards(text: &str) -> Vec<(String, String)> {
    // " 0 [Headset        ]: USB-Audio - Plantronics Headset"
    text.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once('[')?;
            let (id, rest) = rest.split_once(']')?;
            let name = rest.split_once(" - ").map_or(rest.trim_start_matches(':').trim(), |(_, n)| n.trim());
            Some((id.trim().to_string(), name.to_string()))
        })
        .collect()
}

fn sound_cards(root: &Path) -> Vec<(String, String)> {
    parse_sound_cards(&std::fs::read_to_string(root.join("proc/asound/cards")).unwrap_or_default())
}

fn has_display(root: &Path) -> bool {
    read_dir_names(&root.join("dev/dri")).iter().any(|n| n.starts_with("card"))
}

/// `/sys/class/net/*` with their operational state.
fn interfaces(root: &Path) -> Vec<(String, String)> {
    let base = root.join("sys/class/net");
    let mut names = read_dir_names(&base);
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let state = std::fs::read_to_string(base.join(&n).join("operstate")).unwrap_or_default();
            let state = match state.trim() {
                "up" => "up",
                "down" | "lowerlayerdown" => "down",
                _ => "state unknown",
            };
            (n, state.to_string())
        })
        .collect()
}

fn read_dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up Pi: a TC358743 on unicam, the codec's nodes, a USB camera (two nodes), HDMI, a
    /// USB headset, two uplinks.
    fn fake_pi(root: &Path) {
        let w = |p: &str, text: &str| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        w("sys/class/video4linux/video0/name", "unicam-image\n");
        w("sys/class/video4linux/video0/index", "0\n");
        w("sys/class/video4linux/video10/name", "bcm2835-codec-decode\n");
        w("sys/class/video4linux/video2/name", "USB Camera: HD Webcam\n");
        w("sys/class/video4linux/video2/index", "0\n");
        w("sys/class/video4linux/video3/name", "USB Camera: HD Webcam\n");
        w("sys/class/video4linux/video3/index", "1\n");
        w("proc/device-tree/model", "Raspberry Pi 4 Model B Rev 1.4\0");
        w(
            "proc/asound/cards",
            " 0 [vc4hdmi0       ]: vc4-hdmi - vc4-hdmi-0\n                      vc4-hdmi-0\n 1 [Headset        ]: USB-Audio - Plantronics Headset\n                      Plantronics at usb-0000:01:00.0-1.3, full speed\n",
        );
        w("dev/dri/card0", "");
        w("sys/class/net/eth0/operstate", "up\n");
        w("sys/class/net/wwan0/operstate", "down\n");
        w("sys/class/net/lo/operstate", "unknown\n");
    }

    #[test]
    fn lists_what_the_box_has_and_leaves_out_what_is_not_a_capture_device() {
        let dir = tempfile::tempdir().unwrap();
        fake_pi(dir.path());
        let d = Devices::probe(dir.path());
        let values = |c: &[Choice]| c.iter().map(|c| c.value.clone()).collect::<Vec<_>>();
        assert_eq!(values(&d.video_sources), ["test", "v4l2:/dev/video0", "v4l2:/dev/video2", "libcamera"]);
        assert_eq!(d.video_sources[1].label, "unicam-image (/dev/video0)");
        assert_eq!(values(&d.audio_sources), ["test", "alsa:hw:CARD=vc4hdmi0", "alsa:hw:CARD=Headset"]);
        assert_eq!(d.audio_sources[2].label, "Plantronics Headset (Headset)");
        assert_eq!(values(&d.video_sinks), ["auto", "kms", "window", "fake"]);
        assert_eq!(values(&d.interfaces), ["eth0", "lo", "wwan0"]);
        assert_eq!(d.interfaces[2].label, "wwan0 (down)");
        assert_eq!(values(&d.talk_outputs)[..2], ["none", "alsa:default"]);
    }

    #[test]
    fn a_bare_machine_still_offers_the_test_sources_and_no_hdmi() {
        let dir = tempfile::tempdir().unwrap();
        let d = Devices::probe(dir.path());
        assert_eq!(d.video_sources.len(), 1);
        assert_eq!(d.audio_sources.len(), 1);
        assert!(!d.video_sinks.iter().any(|c| c.value == "kms"));
        assert_eq!(d.talk_outputs.len(), 1);
    }
}
