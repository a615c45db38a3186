//! RTMP, RTMPS and recording outputs against real servers started by the tests: nginx with the
//! RTMP module (fixture in tests/fixtures), stunnel in front of it for RTMPS, a tmpfs that fills
//! up; a WHIP server on aiortc (tests/fixtures/whip-server.py) behind TLS. The stream key and
//! the bearer token must appear nowhere in what the process prints.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::*;

const KEY: &str = "sk-live-0123456789abcdef";

fn assert_no_key(dir: &Path, name: &str) {
    for ext in ["stdout", "stderr"] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap_or_default();
        assert!(!text.contains(KEY), "the stream key appeared in {name}.{ext}");
        assert!(!text.contains("0123456789abcdef"), "part of the stream key appeared in {name}.{ext}");
    }
}

fn probe_rtmp(port: u16) -> Vec<StreamInfo> {
    ffprobe_streams(format!("rtmp://127.0.0.1:{port}/live/{KEY}"))
}

fn h264_720p_and_aac(streams: &[StreamInfo]) -> bool {
    streams.iter().any(|s| s.codec == "h264" && s.width == 1280 && s.height == 720)
        && streams.iter().any(|s| s.codec == "aac")
}

/// A self-signed certificate for localhost and its key, made by openssl in `dir`.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl makes a certificate");
    assert!(made.status.success());
    (cert, key)
}

/// Done-when 1 and 6: RTMP into nginx; ffprobe reads H.264 at the right size and AAC back.
#[test]
fn rtmp_into_nginx() {
    let _serial = serial();
    let dir = scratch("rtmp");
    let port = free_tcp_port();
    let _nginx = nginx_rtmp(&dir, port, "nginx");
    let mut enc = encoder(&dir, "encoder", &[&format!("rtmp://127.0.0.1:{port}/live/{KEY}")], &["--duration", "10s"]);
    let readable = wait_for(Duration::from_secs(8), || h264_720p_and_aac(&probe_rtmp(port)));
    assert!(readable.is_some(), "ffprobe via nginx: {:?}", probe_rtmp(port));
    assert!(enc.wait_timeout(Duration::from_secs(20)).expect("encoder ends").success());
    let s = summary(&dir.join("encoder.stdout"));
    assert_eq!(s["outputs"][0]["kind"], "rtmp");
    assert!(s["outputs"][0]["bytes_written"].as_u64().unwrap_or(0) > 2_000_000, "{s}");
    assert_eq!(s["outputs"][0]["url"], format!("rtmp://127.0.0.1:{port}/live/****"));
    assert_no_key(&dir, "encoder");
}

/// Done-when 2: RTMPS through a TLS terminator (stunnel, with a certificate made here).
#[test]
fn rtmps_through_stunnel() {
    let _serial = serial();
    let dir = scratch("rtmps");
    let port = free_tcp_port();
    let tls_port = free_tcp_port();
    let _nginx = nginx_rtmp(&dir, port, "nginx");
    let (cert, key) = self_signed(&dir);
    let conf = dir.join("stunnel.conf");
    std::fs::write(
        &conf,
        format!(
            "foreground = yes\npid =\n[rtmps]\naccept = 127.0.0.1:{tls_port}\nconnect = 127.0.0.1:{port}\ncert = {}\nkey = {}\n",
            cert.display(),
            key.display()
        ),
    )
    .expect("stunnel.conf");
    let mut cmd = Command::new("stunnel");
    cmd.arg(&conf);
    let _stunnel = Proc::spawn(cmd, &dir, "stunnel");
    assert!(
        wait_for(Duration::from_secs(5), || std::net::TcpStream::connect(("127.0.0.1", tls_port)).is_ok()).is_some(),
        "stunnel did not start"
    );
    let url = format!("rtmps://127.0.0.1:{tls_port}/live/{KEY}?tls_verify=0");
    let mut enc = encoder(&dir, "encoder", &[&url], &["--duration", "10s"]);
    let readable = wait_for(Duration::from_secs(8), || h264_720p_and_aac(&probe_rtmp(port)));
    assert!(readable.is_some(), "ffprobe via nginx behind stunnel: {:?}", probe_rtmp(port));
    assert!(enc.wait_timeout(Duration::from_secs(20)).expect("encoder ends").success());
    assert_no_key(&dir, "encoder");
}

/// Done-when 3: SRT to srt-live-transmit, RTMP to nginx and a recording at once for 20 s: all
/// three receivers get decodable streams of the full duration.
#[test]
fn srt_rtmp_and_recording_for_20_seconds() {
    let _serial = serial();
    let dir = scratch("three-outputs");
    let rtmp_port = free_tcp_port();
    let srt_port = free_udp_port();
    let rec_dir = dir.join("rec");
    std::fs::create_dir_all(&rec_dir).expect("rec dir");
    let srt_file = dir.join("srt.ts");
    let mut srt_rx = slt_to_file(&format!("srt://:{srt_port}?mode=listener"), &srt_file, &dir, "slt");
    let _nginx = nginx_rtmp(&dir, rtmp_port, "nginx");
    wait_udp_bound(srt_port, "srt-live-transmit");
    let outputs = [
        format!("srt://127.0.0.1:{srt_port}?mode=caller"),
        format!("rtmp://127.0.0.1:{rtmp_port}/live/{KEY}"),
        format!("file:{}/rec-%H%M%S.ts", rec_dir.display()),
    ];
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut enc = encoder(&dir, "encoder", &refs, &["--duration", "21s"]);
    // The RTMP reader joins once the stream is published and reads until it ends.
    let published = wait_for(Duration::from_secs(5), || h264_720p_and_aac(&probe_rtmp(rtmp_port)));
    assert!(published.is_some(), "nothing published on nginx");
    let flv = dir.join("rtmp.flv");
    let mut cmd = Command::new("ffmpeg");
    cmd.args([
        "-nostdin",
        "-y",
        "-loglevel",
        "error",
        "-i",
        &format!("rtmp://127.0.0.1:{rtmp_port}/live/{KEY}"),
        "-c",
        "copy",
    ])
    .arg(&flv);
    let mut reader = Proc::spawn(cmd, &dir, "rtmp-reader");
    assert!(enc.wait_timeout(Duration::from_secs(40)).expect("encoder ends").success());
    let _ = reader.wait_timeout(Duration::from_secs(10));
    srt_rx.signal("INT");
    srt_rx.wait_timeout(Duration::from_secs(3));
    let srt_frames = decodable_frames(&srt_file);
    let rtmp_frames = decodable_frames(&flv);
    let segments: Vec<_> =
        std::fs::read_dir(&rec_dir).expect("rec dir").filter_map(Result::ok).map(|e| e.path()).collect();
    let rec_frames: u64 = segments.iter().map(|p| decodable_frames(p)).sum();
    eprintln!("frames: SRT {srt_frames}, RTMP {rtmp_frames} (reader joined after {published:?}), recording {rec_frames} of ~630");
    assert!(srt_frames >= 600, "SRT: {srt_frames}");
    assert!(rec_frames >= 600, "recording: {rec_frames} in {segments:?}");
    // The reader starts a few seconds in (ffprobe first); it must get everything from there on.
    assert!(rtmp_frames >= 500, "RTMP: {rtmp_frames}");
    assert!(h264_720p_and_aac(&ffprobe_streams(&flv)));
    assert_no_key(&dir, "encoder");
}

/// Done-when 4: SRT, RTMP and a recording at once; nginx stopped for 10 s in the middle:
/// the SRT receiver sees no gap longer than its latency, and RTMP reconnects by itself.
#[test]
fn rtmp_outage_touches_nothing_else_and_rtmp_reconnects() {
    let _serial = serial();
    let dir = scratch("all-outputs");
    let rtmp_port = free_tcp_port();
    let srt_port = free_udp_port();
    let rec_dir = dir.join("rec");
    std::fs::create_dir_all(&rec_dir).expect("rec dir");
    let srt_file = dir.join("srt.ts");
    let mut srt_rx = slt_to_file(&format!("srt://:{srt_port}?mode=listener&latency=120"), &srt_file, &dir, "slt");
    let nginx = nginx_rtmp(&dir, rtmp_port, "nginx1");
    wait_udp_bound(srt_port, "srt-live-transmit");
    let outputs = [
        format!("srt://127.0.0.1:{srt_port}?mode=caller&latency=120"),
        format!("rtmp://127.0.0.1:{rtmp_port}/live/{KEY}"),
        format!("file:{}/rec-%H%M%S.ts?segment=10s", rec_dir.display()),
    ];
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut enc = encoder(&dir, "encoder", &refs, &["--duration", "30s"]);
    let published = wait_for(Duration::from_secs(10), || h264_720p_and_aac(&probe_rtmp(rtmp_port)));
    assert!(published.is_some(), "the encoder's RTMP stream never reached nginx");
    // An RTMP reader records what nginx relays for the first stretch.
    let flv = dir.join("rtmp.flv");
    let mut cmd = Command::new("ffmpeg");
    cmd.args([
        "-nostdin",
        "-y",
        "-loglevel",
        "error",
        "-i",
        &format!("rtmp://127.0.0.1:{rtmp_port}/live/{KEY}"),
        "-t",
        "6",
        "-c",
        "copy",
    ])
    .arg(&flv);
    let mut reader = Proc::spawn(cmd, &dir, "rtmp-reader");
    let _ = reader.wait_timeout(Duration::from_secs(15));
    // nginx down for 10 s (the outage itself, not a wait for readiness).
    nginx.signal("KILL");
    drop(nginx);
    std::thread::sleep(Duration::from_secs(10));
    let _nginx2 = nginx_rtmp(&dir, rtmp_port, "nginx2");
    let back = wait_for(Duration::from_secs(10), || h264_720p_and_aac(&probe_rtmp(rtmp_port)));
    eprintln!("RTMP readable again {back:?} after nginx returned");
    assert!(back.is_some(), "RTMP did not come back after nginx returned");
    assert!(enc.wait_timeout(Duration::from_secs(40)).expect("encoder ends").success());
    srt_rx.signal("INT");
    srt_rx.wait_timeout(Duration::from_secs(3));

    // SRT: the whole run, with no gap in the video longer than the SRT latency plus a frame.
    let frames = decodable_frames(&srt_file);
    assert!(frames >= 850, "SRT receiver decoded {frames} of ~900 frames");
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0"])
        .arg(&srt_file)
        .output()
        .expect("ffprobe packets");
    let mut pts: Vec<f64> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim_end_matches(',').parse().ok()).collect();
    pts.sort_by(f64::total_cmp);
    let max_gap = pts.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    eprintln!("SRT: {frames} frames, largest gap between frames {:.0} ms", max_gap * 1000.0);
    assert!(max_gap < 0.120 + 0.034, "SRT video gap of {:.0} ms while RTMP was down", max_gap * 1000.0);
    // RTMP: what was read before the outage is H.264 + AAC; the output reconnected.
    assert!(h264_720p_and_aac(&ffprobe_streams(&flv)), "{:?}", ffprobe_streams(&flv));
    assert!(decodable_frames(&flv) >= 150);
    let s = summary(&dir.join("encoder.stdout"));
    let rtmp =
        s["outputs"].as_array().and_then(|a| a.iter().find(|o| o["kind"] == "rtmp")).cloned().unwrap_or_default();
    assert!(rtmp["reconnects"].as_u64().unwrap_or(0) >= 1, "{rtmp}");
    // Recording: 10 s segments covering the run, each decodable on its own.
    let mut segments: Vec<_> =
        std::fs::read_dir(&rec_dir).expect("rec dir").filter_map(Result::ok).map(|e| e.path()).collect();
    segments.sort();
    let recorded: u64 = segments.iter().map(|p| decodable_frames(p)).sum();
    assert!(segments.len() >= 3, "{segments:?}");
    assert!(recorded >= 850, "recorded {recorded} frames of ~900 in {segments:?}");
    assert_no_key(&dir, "encoder");
}

/// Done-when 5: a recording folder on a small filesystem that fills up: the recording stops with
/// "disk full", SRT goes on, the process does not crash.
#[test]
fn full_disk_stops_the_recording_not_the_stream() {
    let _serial = serial();
    let dir = scratch("diskfull");
    let small = dir.join("small");
    std::fs::create_dir_all(&small).expect("mount point");
    let mounted =
        Command::new("mount").args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"]).arg(&small).status().expect("mount");
    assert!(mounted.success(), "mounting a 3 MB tmpfs needs root");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&small);
    let srt_port = free_udp_port();
    let srt_file = dir.join("srt.ts");
    let mut srt_rx = slt_to_file(&format!("srt://:{srt_port}?mode=listener"), &srt_file, &dir, "slt");
    wait_udp_bound(srt_port, "srt-live-transmit");
    let outputs = [
        format!("srt://127.0.0.1:{srt_port}?mode=caller"),
        format!("file:{}/rec-%H%M%S.ts?segment=1h", small.display()),
    ];
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut enc = encoder(&dir, "encoder", &refs, &["--duration", "12s"]);
    let status = enc.wait_timeout(Duration::from_secs(30)).expect("encoder ends");
    assert!(status.success(), "the encoder exited with {status:?}");
    srt_rx.signal("INT");
    srt_rx.wait_timeout(Duration::from_secs(3));
    let lines = json_lines(&dir.join("encoder.stdout"));
    let failed = lines.iter().find_map(|l| {
        l["outputs"].as_array().and_then(|a| a.iter().find(|o| o["kind"] == "file" && o["state"] == "failed").cloned())
    });
    let failed = failed.expect("the recording never reported failure");
    assert!(failed["reason"].as_str().unwrap_or("").starts_with("disk full: "), "{failed}");
    let frames = decodable_frames(&srt_file);
    assert!(frames >= 324, "SRT receiver decoded {frames} of ~360 frames while the disk was full");
}

const TOKEN: &str = "whip-bearer-5f3a9c0e7d214b68";
/// The repository's root.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The WHIP server of tests/fixtures (aiortc, over HTTPS with `cert`), on `port`.
fn whip_server(dir: &Path, port: u16, cert: &Path, key: &Path, name: &str) -> Proc {
    let env = Command::new("scripts/whip-server-env").current_dir(ROOT).output();
    let python = env.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let python = python.expect("scripts/whip-server-env makes the WHIP server's Python environment (aiortc from PyPI)");
    let mut cmd = Command::new(python);
    cmd.arg(format!("{ROOT}/tests/fixtures/whip-server.py")).arg(port.to_string()).arg(TOKEN).arg(cert).arg(key);
    let p = Proc::spawn(cmd, dir, name);
    let up = wait_for(Duration::from_secs(20), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    assert!(up.is_some(), "the WHIP server did not start; see {}", dir.join(format!("{name}.stderr")).display());
    p
}

/// What the WHIP server decoded so far.
fn whip_stats(port: u16) -> serde_json::Value {
    let out =
        Command::new("curl").args(["-sk", "--max-time", "3"]).arg(format!("https://127.0.0.1:{port}/stats")).output();
    out.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok()).unwrap_or_default()
}

fn decoded(port: u16, frames: u64, sounds: u64) -> bool {
    let s = whip_stats(port);
    s["video_frames"].as_u64().unwrap_or(0) >= frames
        && s["audio_frames"].as_u64().unwrap_or(0) >= sounds
        && s["width"] == 1280
        && s["height"] == 720
}

/// Issue 59: the WHIP output publishes over HTTPS with a bearer token to an independent server
/// (aiortc), which decodes H.264 720p and Opus; the server killed and started again, the output
/// reconnects by itself; a wrong token is told in words; the token is printed nowhere.
#[test]
fn whip_into_an_independent_server_and_back_after_it_restarts() {
    let _serial = serial();
    let dir = scratch("whip");
    let port = free_tcp_port();
    let (cert, key) = self_signed(&dir);
    let server = whip_server(&dir, port, &cert, &key, "whip1");
    let url = format!("https://127.0.0.1:{port}/whip?token={TOKEN}&tls_verify=0");
    let wrong = format!("https://127.0.0.1:{port}/whip?token=not-the-token&tls_verify=0");
    // The certificate is checked unless told not to: the self-signed one is refused. (By
    // another name: outputs to one host and port must check alike, since GIO's TLS resumes a
    // session there without checking again.)
    let checked = format!("https://localhost:{port}/whip?token={TOKEN}");
    let mut enc = encoder(&dir, "encoder", &[&url, &wrong, &checked], &["--duration", "45s"]);
    let first = wait_for(Duration::from_secs(20), || decoded(port, 90, 100));
    assert!(first.is_some(), "the server decoded too little: {}", whip_stats(port));
    eprintln!("WHIP: 90 frames and 100 sound frames decoded {first:?} after the start: {}", whip_stats(port));
    server.signal("KILL");
    drop(server);
    // The server away for 3 s (the outage itself, not a wait for readiness).
    std::thread::sleep(Duration::from_secs(3));
    let _server = whip_server(&dir, port, &cert, &key, "whip2");
    let back = wait_for(Duration::from_secs(30), || decoded(port, 60, 60));
    assert!(back.is_some(), "no picture after the server came back: {}", whip_stats(port));
    eprintln!("WHIP: decoded again {back:?} after the server came back");
    assert!(enc.wait_timeout(Duration::from_secs(60)).expect("encoder ends").success());
    let s = summary(&dir.join("encoder.stdout"));
    let whip = &s["outputs"][0];
    assert_eq!(whip["kind"], "whip", "{s}");
    assert_eq!(
        whip["url"],
        format!("https://127.0.0.1:{port}/whip?tls_verify=0&token=****").replace("?tls_verify=0&", "?"),
        "{whip}"
    );
    assert!(whip["reconnects"].as_u64().unwrap_or(0) >= 1, "{whip}");
    assert!(whip["bytes_written"].as_u64().unwrap_or(0) > 1_000_000, "{whip}");
    let refused = &s["outputs"][1];
    assert!(refused["reason"].as_str().unwrap_or_default().contains("refused the bearer token (401)"), "{refused}");
    let untrusted = &s["outputs"][2];
    assert!(
        untrusted["state"] == "retrying"
            && untrusted["reason"].as_str().unwrap_or_default().contains("TLS failed")
            && untrusted["bytes_written"] == 0,
        "{untrusted}"
    );
    let ended = whip_stats(port);
    assert_eq!(ended["deletes"], 1, "the encoder ended its session with a DELETE: {ended}");
    for ext in ["stdout", "stderr"] {
        let text = std::fs::read_to_string(dir.join(format!("encoder.{ext}"))).unwrap_or_default();
        assert!(!text.contains(TOKEN), "the bearer token appeared in encoder.{ext}");
    }
}
