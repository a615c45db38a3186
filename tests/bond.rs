//! Bonding (issue 38) end to end, with real peers: our encoder's `bond=` output into `telebridge
//! relay --bond-listen` into our decoder; srtla's own programs (BELABOX/srtla, built from
//! source) on either side of ours; and three uplinks by interface between two network
//! namespaces, one unplugged and plugged back.
//!
//! The srtla tests need its source: `SRTLA_SRC=DIR` (a checkout or a bare clone of
//! github.com/BELABOX/srtla). Without it they say so and pass: CI has no way to fetch it, and
//! `scripts/test-srtla` runs them with it.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

fn decoder_summary(dir: &Path, name: &str) -> serde_json::Value {
    summary(&dir.join(format!("{name}.stdout")))["decoder"].clone()
}

/// Each bonded connection's packets in the relay's last sample that had any.
fn relay_conns(dir: &Path) -> Vec<(String, u64)> {
    let lines = json_lines(&dir.join("relay.stdout"));
    let last = lines.iter().rev().find(|l| l["bond"].is_array());
    let Some(groups) = last.and_then(|l| l["bond"].as_array()) else { return Vec::new() };
    groups
        .iter()
        .flat_map(|g| g["conns"].as_array().cloned().unwrap_or_default())
        .map(|c| (c["addr"].as_str().unwrap_or("").to_string(), c["packets"].as_u64().unwrap_or(0)))
        .collect()
}

/// `telebridge relay --bond-listen BOND --input listener :IN --output caller :OUT`.
fn bond_relay(dir: &Path, bond: u16, out: u16, latency: u32, prefix: &[&str]) -> Proc {
    let input = free_udp_port();
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(env!("CARGO_BIN_EXE_telebridge"));
            c
        }
        None => telebridge(),
    };
    cmd.env("RUST_LOG", "info").args(["relay", "--bond-listen", &bond.to_string(), "--stats", "json"]);
    cmd.args(["--input", &format!("srt://:{input}?mode=listener&latency={latency}")]);
    cmd.args(["--output", &format!("srt://127.0.0.1:{out}?latency={latency}")]);
    Proc::spawn(cmd, dir, "relay")
}

/// Our encoder over three loopback addresses, through our receiver, into our decoder: the
/// picture arrives whole and every uplink carries part of it.
#[test]
fn our_sender_through_our_receiver_into_our_decoder() {
    let _serial = serial();
    let dir = scratch("bond-ours");
    let (dec_port, bond_port) = (free_udp_port(), free_udp_port());
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{dec_port}?mode=listener"), &["--duration", "16s"]);
    wait_udp_bound(dec_port, "the decoder");
    let _relay = bond_relay(&dir, bond_port, dec_port, 600, &[]);
    wait_udp_bound(bond_port, "the bonding receiver");
    let url = format!("srt://127.0.0.1:{bond_port}?bond=127.0.0.1,127.0.0.2,127.0.0.3&latency=600");
    let mut enc = encoder(&dir, "encoder", &[&url], &["--duration", "10s"]);
    assert!(enc.wait_timeout(Duration::from_secs(25)).expect("encoder ends").success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let d = decoder_summary(&dir, "decoder");
    let conns = relay_conns(&dir);
    eprintln!("decoder {d}\nconnections {conns:?}");
    let frames = d["frames_decoded"].as_u64().unwrap_or(0);
    assert!(frames >= 200, "decoded {frames} frames of about 300; see {}", dir.display());
    assert_eq!(d["frames_missing"].as_u64(), Some(0), "see {}", dir.display());
    assert_eq!(conns.len(), 3, "{conns:?}");
    for (addr, packets) in &conns {
        assert!(*packets > 100, "uplink {addr} carried {packets} packets: {conns:?}");
    }
}

/// BELABOX/srtla built from `SRTLA_SRC` into a scratch directory; `None` (said) without it.
fn srtla(dir: &Path) -> Option<PathBuf> {
    let Some(src) = std::env::var_os("SRTLA_SRC") else {
        eprintln!("skipped: set SRTLA_SRC to BELABOX/srtla's source (scripts/test-srtla does)");
        return None;
    };
    let build = dir.join("srtla");
    std::fs::create_dir_all(&build).expect("srtla build dir");
    let src = PathBuf::from(src);
    let copied = if src.join("Makefile").is_file() {
        Command::new("cp").arg("-r").arg(src.join(".")).arg(&build).status()
    } else {
        // A bare clone (what `fetch` leaves): take its HEAD's files.
        Command::new("sh")
            .arg("-c")
            .arg(format!("git -C '{}' archive HEAD | tar -x -C '{}'", src.display(), build.display()))
            .status()
    };
    assert!(copied.is_ok_and(|s| s.success()), "cannot copy srtla's source from {}", src.display());
    let made = Command::new("make").arg("-C").arg(&build).args(["srtla_send", "srtla_rec"]).output().expect("make");
    assert!(made.status.success(), "srtla does not build: {}", String::from_utf8_lossy(&made.stderr));
    Some(build)
}

/// Our sender through srtla_rec into srt-live-transmit: what comes out is the whole stream.
#[test]
fn our_sender_through_srtla_rec_into_srt_live_transmit() {
    let _serial = serial();
    let dir = scratch("bond-srtla-rec");
    let Some(srtla) = srtla(&dir) else { return };
    let (slt_port, rec_port) = (free_udp_port(), free_udp_port());
    let ts = dir.join("received.ts");
    let _slt = slt_to_file(&format!("srt://:{slt_port}?mode=listener&latency=600"), &ts, &dir, "slt");
    wait_udp_bound(slt_port, "srt-live-transmit");
    let mut rec = Command::new(srtla.join("srtla_rec"));
    rec.args([&rec_port.to_string(), "127.0.0.1", &slt_port.to_string()]);
    let _rec = Proc::spawn(rec, &dir, "srtla_rec");
    wait_udp_bound(rec_port, "srtla_rec");
    let url = format!("srt://127.0.0.1:{rec_port}?bond=127.0.0.1,127.0.0.2,127.0.0.3&latency=600");
    let mut enc = encoder(&dir, "encoder", &[&url], &["--duration", "10s"]);
    assert!(enc.wait_timeout(Duration::from_secs(25)).expect("encoder ends").success());
    let registered = std::fs::read_to_string(dir.join("srtla_rec.stderr")).unwrap_or_default();
    assert_eq!(registered.matches("connection registration").count(), 3, "srtla_rec: {registered}");
    let frames = wait_for(Duration::from_secs(5), || decodable_frames(&ts) >= 270);
    let got = decodable_frames(&ts);
    assert!(frames.is_some(), "{got} frames of about 300 came out of srtla_rec; see {}", dir.display());
}

/// srtla_send (as BELABOX runs it, with a source-address file) through our receiver into our
/// decoder.
#[test]
fn srtla_send_through_our_receiver_into_our_decoder() {
    let _serial = serial();
    let dir = scratch("bond-srtla-send");
    let Some(srtla) = srtla(&dir) else { return };
    let (dec_port, bond_port, send_port) = (free_udp_port(), free_udp_port(), free_udp_port());
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{dec_port}?mode=listener"), &["--duration", "17s"]);
    wait_udp_bound(dec_port, "the decoder");
    let _relay = bond_relay(&dir, bond_port, dec_port, 600, &[]);
    wait_udp_bound(bond_port, "the bonding receiver");
    let ips = dir.join("ips");
    std::fs::write(&ips, "127.0.0.1\n127.0.0.2\n127.0.0.3\n").expect("ips file");
    let mut send = Command::new(srtla.join("srtla_send"));
    send.args([&send_port.to_string(), "127.0.0.1", &bond_port.to_string()]).arg(&ips);
    let _send = Proc::spawn(send, &dir, "srtla_send");
    wait_udp_bound(send_port, "srtla_send");
    let url = format!("srt://127.0.0.1:{send_port}?latency=600");
    let mut enc = encoder(&dir, "encoder", &[&url], &["--duration", "10s"]);
    assert!(enc.wait_timeout(Duration::from_secs(25)).expect("encoder ends").success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let d = decoder_summary(&dir, "decoder");
    let conns = relay_conns(&dir);
    eprintln!("decoder {d}\nconnections {conns:?}");
    let frames = d["frames_decoded"].as_u64().unwrap_or(0);
    assert!(frames >= 200, "decoded {frames} frames of about 300; see {}", dir.display());
    assert_eq!(conns.len(), 3, "srtla_send's three connections: {conns:?}");
}
