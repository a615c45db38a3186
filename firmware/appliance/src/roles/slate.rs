//! What the decoder's slate says while no picture is shown: what the box waits for, and why
//! a stream that arrives shows nothing. Pure, but for the box's own addresses.

use telebridge_config::{SrtMode, SrtUrl};
use telebridge_media::decode_pipeline::{Side, Unsupported};

/// The words on the slate: what the box waits for and, on the next line, why (`reason`).
/// `receiving`: a stream is arriving (but shows no picture).
pub fn slate_text(name: &str, url: &SrtUrl, receiving: bool, reason: Option<&str>) -> String {
    let how = match url.mode {
        _ if receiving => match url.mode {
            SrtMode::Listener => format!("a caller is connected on port {}", url.port),
            _ => format!("connected to SRT {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        },
        SrtMode::Listener => {
            let addrs = local_addresses();
            let at = if addrs.is_empty() { String::new() } else { format!(" at {}", addrs.join(", ")) };
            format!("listening for an SRT caller on port {}{at}", url.port)
        }
        SrtMode::Caller => format!("calling SRT {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        SrtMode::Rendezvous => format!("SRT rendezvous with {}:{}", url.host.as_deref().unwrap_or(""), url.port),
    };
    let mut text = format!("{name}\nNo picture: {how}");
    if let Some(r) = reason {
        text.push('\n');
        text.push_str(r);
    }
    text
}

/// The bridge's slate: what it waits for from the paired box `peer`, and why (`reason`).
pub fn bridge_slate_text(name: &str, peer: &str, url: &SrtUrl, receiving: bool, reason: Option<&str>) -> String {
    let how = match url.mode {
        _ if receiving => format!("{peer} is connected; nothing to show yet"),
        SrtMode::Listener => format!("waiting for {peer} to call (UDP port {})", url.port),
        SrtMode::Caller => format!("calling {peer} at {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        SrtMode::Rendezvous => format!("meeting {peer} at {}:{}", url.host.as_deref().unwrap_or(""), url.port),
    };
    let mut text = format!("{name}\nNo picture: {how}");
    if let Some(r) = reason {
        text.push('\n');
        text.push_str(r);
    }
    text
}

/// What arrived over the last second, to tell why a stream shows no picture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrived {
    /// Bytes received.
    pub bytes: u64,
    /// 188-byte pieces that were not TS packets.
    pub not_ts: u64,
    /// Frames decoded.
    pub frames: u64,
}

/// Why a stream that arrives shows no picture, in words, or None (a picture shows, or nothing
/// arrives: the input's own reason says why). `unsupported`: the streams of this connection
/// the box cannot decode ("video H.265 (HEVC)").
pub fn stream_problem(receiving: bool, last_second: Arrived, unsupported: &[Unsupported]) -> Option<String> {
    if !receiving || last_second.frames > 0 || last_second.bytes == 0 {
        return None;
    }
    if unsupported.iter().any(|s| s.side == Side::Video) {
        let named: Vec<String> = unsupported.iter().map(ToString::to_string).collect();
        return Some(format!(
            "receiving {}: this box decodes H.264 video and AAC audio; set the sender to H.264",
            named.join(" and ")
        ));
    }
    if last_second.not_ts * 188 * 2 > last_second.bytes {
        return Some(
            "receiving data that is not MPEG-TS: the sender must send MPEG-TS over SRT (188-byte packets, 7 to a datagram)"
                .into(),
        );
    }
    Some("receiving a stream with no picture yet: waiting for H.264 video and a keyframe".into())
}

/// This machine's IPv4 addresses other than loopback, from the kernel's table.
fn local_addresses() -> Vec<String> {
    telebridge_pairing::addresses::own_addresses().iter().filter(|ip| ip.is_ipv4()).map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slate_says_what_the_box_waits_for_and_why() {
        let url = SrtUrl::parse("srt://:9000?mode=listener&passphrase=0123456789").unwrap();
        let t =
            slate_text("studio-a", &url, false, Some("passphrase rejected: the two ends have different passphrases"));
        assert!(t.starts_with("studio-a\nNo picture: listening for an SRT caller on port 9000"), "{t}");
        assert!(t.ends_with("\npassphrase rejected: the two ends have different passphrases"), "{t}");
        assert!(!t.contains("0123456789"));
        let url = SrtUrl::parse("srt://encoder.example:9000").unwrap();
        assert_eq!(slate_text("b", &url, false, None), "b\nNo picture: calling SRT encoder.example:9000");
        let peer = "connection lost: 198.20.0.1:7700 stopped acknowledging for 2.1 s";
        assert_eq!(
            bridge_slate_text("studio-b", "studio-a", &url, false, Some(peer)),
            format!("studio-b\nNo picture: calling studio-a at encoder.example:9000\n{peer}")
        );
        let listen = SrtUrl::parse("srt://:7700?mode=listener").unwrap();
        assert_eq!(
            bridge_slate_text("studio-a", "studio-b", &listen, false, None),
            "studio-a\nNo picture: waiting for studio-b to call (UDP port 7700)"
        );
        // A stream arrives but shows no picture: the slate no longer says it waits for a caller.
        let url = SrtUrl::parse("srt://:9000?mode=listener").unwrap();
        let t = slate_text("c", &url, true, Some("receiving video H.265 (HEVC): ..."));
        assert_eq!(t, "c\nNo picture: a caller is connected on port 9000\nreceiving video H.265 (HEVC): ...");
    }

    #[test]
    fn a_stream_without_a_picture_says_why() {
        let second = |bytes, not_ts, frames| Arrived { bytes, not_ts, frames };
        let un = |side, format: &str| Unsupported { side, format: format.into() };
        let hevc = vec![un(Side::Video, "H.265 (HEVC)"), un(Side::Audio, "AC-3")];
        let p = stream_problem(true, second(500_000, 0, 0), &hevc).unwrap();
        assert_eq!(
            p,
            "receiving video H.265 (HEVC) and audio AC-3: this box decodes H.264 video and AAC audio; set the sender to H.264"
        );
        let p = stream_problem(true, second(500_000, 2600, 0), &[]).unwrap();
        assert!(p.starts_with("receiving data that is not MPEG-TS"), "{p}");
        let p = stream_problem(true, second(500_000, 0, 0), &[]).unwrap();
        assert!(p.contains("waiting for H.264 video and a keyframe"), "{p}");
        // A picture shows, or nothing arrives, or nobody is connected: nothing to add.
        assert_eq!(stream_problem(true, second(500_000, 0, 30), &hevc), None);
        assert_eq!(stream_problem(true, second(0, 0, 0), &hevc), None);
        assert_eq!(stream_problem(false, second(500_000, 0, 0), &hevc), None);
        // Only data streams unsupported (teletext beside H.264 that is not decoding yet).
        let p = stream_problem(true, second(500_000, 0, 0), &[un(Side::Data, "application/x-teletext")]).unwrap();
        assert!(p.contains("waiting for H.264"), "{p}");
    }
}
