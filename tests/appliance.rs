//! The appliance daemon, end to end: `telebridge run --sim` with its simulated GPIO, against a
//! real srt-live-transmit; the systemd notification protocol with a fake NOTIFY_SOCKET; the unit
//! file through `systemd-analyze verify`.

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

fn state(port: u16) -> String {
    get_json(port, "/api/status")["machine"]["state"].as_str().unwrap_or("").to_string()
}

#[test]
fn button_goes_live_a_lost_receiver_degrades_and_a_long_hold_stops() {
    let _guard = serial();
    let dir = scratch("appliance-button");
    let (srt_port, http_port) = (free_udp_port(), free_tcp_port());
    let received = dir.join("received.ts");
    let slt = slt_to_file(&format!("srt://:{srt_port}?mode=listener"), &received, &dir, "slt");
    let _box = run_sim(&dir, "box", http_port, &["--output", &format!("srt://127.0.0.1:{srt_port}")], &[]);

    // Ready: power on, nothing sent.
    assert!(wait_for(Duration::from_secs(5), || state(http_port) == "ready").is_some());
    let gpio = get_json(http_port, "/api/sim/gpio");
    assert_eq!(gpio["leds"]["power"], true, "{gpio}");
    assert_eq!(gpio["leds"]["live"], false, "{gpio}");
    // A window in which nothing may arrive (not a wait for readiness).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(size(&received), 0, "nothing may be sent before going live");

    // A short press: live, data at the receiver, the live LED lit, the link LED steady.
    let (code, body) = http("POST", http_port, "/api/sim/button", Some(r#"{"hold_ms": 150}"#));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"press\""), "{body}");
    let live = wait_for(Duration::from_secs(10), || state(http_port) == "live");
    assert!(live.is_some(), "not live: {}", get_json(http_port, "/api/status"));
    assert!(wait_for(Duration::from_secs(5), || size(&received) > 100_000).is_some(), "no data at the receiver");
    let lit = wait_for(Duration::from_secs(2), || get_json(http_port, "/api/sim/gpio")["leds"]["live"] == true);
    assert!(lit.is_some(), "live LED dark: {}", get_json(http_port, "/api/sim/gpio"));
    assert_eq!(get_json(http_port, "/api/sim/gpio")["patterns"]["link"], "on");

    // Prometheus while live: the output's SRT counters rise.
    let sent = || {
        let (code, text) = http("GET", http_port, "/metrics", None);
        assert_eq!(code, 200, "{text}");
        text.lines()
            .find(|l| l.starts_with("telebridge_srt_packets_sent_total{"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let first = sent();
    let rose = wait_for(Duration::from_secs(5), || sent() > first);
    assert!(first > 0.0 && rose.is_some(), "packets sent did not rise from {first} within 5 s");
    let (_, text) = http("GET", http_port, "/metrics", None);
    assert!(text.contains("telebridge_state{state=\"live\"} 1"), "{text}");
    assert!(text.contains("telebridge_output_up{output=\"srt://127.0.0.1:"), "{text}");
    // The programme's sound meter: the test tone's two channels, in the status and the metrics.
    let metered = wait_for(Duration::from_secs(3), || {
        let status = get_json(http_port, "/api/status");
        let sound = &status["sound"][0];
        sound["stream"] == "programme" && sound["channels"].as_array().map(Vec::len) == Some(2)
    });
    assert!(metered.is_some(), "no programme meter: {}", get_json(http_port, "/api/status"));
    let (_, text) = http("GET", http_port, "/metrics", None);
    assert!(text.contains("telebridge_audio_peak_dbfs{stream=\"programme\",channel=\"1\"}"), "{text}");

    // The receiver dies: degraded, the link LED double-blinks (retrying), still on air.
    drop(slt);
    let degraded = wait_for(Duration::from_secs(10), || state(http_port) == "degraded");
    assert!(degraded.is_some(), "not degraded: {}", get_json(http_port, "/api/status"));
    let status = get_json(http_port, "/api/status");
    assert_eq!(status["machine"]["reason"], "1 of 1 links retrying", "{status}");
    let alert = status["alerts"][0].as_str().unwrap_or("");
    assert!(alert.starts_with("srt://127.0.0.1:") && alert.ends_with("(retrying)"), "{status}");
    assert_eq!(status["input"]["signal"], true);
    assert!(status["input"]["format"].as_str().unwrap_or("").starts_with("test 1280x720 30 fps"), "{status}");
    let gpio = get_json(http_port, "/api/sim/gpio");
    assert_eq!(gpio["patterns"]["link"], "double_blink", "{gpio}");
    assert_eq!(gpio["patterns"]["live"], "on", "{gpio}");
    eprintln!("degraded {:?} after the receiver died", degraded.unwrap());

    // A 3 s hold stops: ready, live LED dark, link LED dark.
    let (code, body) = http("POST", http_port, "/api/sim/button", Some(r#"{"hold_ms": 3200}"#));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("hold_stop"), "{body}");
    assert!(wait_for(Duration::from_secs(3), || state(http_port) == "ready").is_some());
    let off = wait_for(Duration::from_secs(2), || {
        let g = get_json(http_port, "/api/sim/gpio");
        g["leds"]["live"] == false && g["patterns"]["link"] == "off"
    });
    assert!(off.is_some(), "{}", get_json(http_port, "/api/sim/gpio"));
}

#[test]
fn api_rejects_a_bad_button_hold_and_a_bad_live_body() {
    let dir = scratch("appliance-api");
    let http_port = free_tcp_port();
    let _box = run_sim(&dir, "box", http_port, &[], &[]);
    let (code, body) = http("POST", http_port, "/api/sim/button", Some(r#"{"hold_ms": 10}"#));
    assert_eq!(code, 422);
    assert!(body.contains("hold_ms: 10 is out of range 50-20000"), "{body}");
    let (code, body) = http("POST", http_port, "/api/live", Some(r#"{"on": true}"#));
    assert_eq!(code, 422, "{body}");
    // No outputs: going live is refused in words (issue 58: the box showed a green "Live").
    let (code, body) = http("POST", http_port, "/api/live", Some(r#"{"live": true}"#));
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("outputs: none; an encoder goes live to at least one output"), "{body}");
    // The button still starts the encoder; the box says it sends nothing rather than "live".
    let (code, body) = http("POST", http_port, "/api/sim/button", Some(r#"{"hold_ms": 100}"#));
    assert_eq!(code, 200, "{body}");
    let said = wait_for(Duration::from_secs(10), || {
        let m = get_json(http_port, "/api/status")["machine"].clone();
        m["state"] == "going_live" && m["reason"].as_str().is_some_and(|r| r.starts_with("no outputs: nothing is sent"))
    });
    assert!(said.is_some(), "{}", get_json(http_port, "/api/status"));
    let (code, _) = http("POST", http_port, "/api/live", Some(r#"{"live": false}"#));
    assert_eq!(code, 202);
    assert!(wait_for(Duration::from_secs(5), || state(http_port) == "ready").is_some());
}

/// The input signal: the simulated HDMI cable pulled stops the test pattern's frames at the
/// source (as a real input stops); the box notices from the frames alone, says so, and the
/// receiver keeps its connection; plugged back, the picture resumes and the box is live again.
#[test]
fn a_pulled_hdmi_cable_degrades_with_no_signal_and_plugging_it_back_recovers() {
    let _guard = serial();
    let dir = scratch("appliance-signal");
    let (srt_port, http_port) = (free_udp_port(), free_tcp_port());
    let received = dir.join("received.ts");
    let _slt = slt_to_file(&format!("srt://:{srt_port}?mode=listener"), &received, &dir, "slt");
    let _box =
        run_sim(&dir, "box", http_port, &["--output", &format!("srt://127.0.0.1:{srt_port}"), "--start-live"], &[]);
    assert!(wait_for(Duration::from_secs(15), || state(http_port) == "live").is_some(), "never live");
    let frames = || get_json(http_port, "/api/status")["media"]["encoder"]["frames_captured"].as_u64().unwrap_or(0);
    assert!(wait_for(Duration::from_secs(5), || frames() > 30).is_some(), "no frames captured");

    let (code, body) = http("POST", http_port, "/api/sim/signal", Some(r#"{"present": false}"#));
    assert_eq!(code, 200, "{body}");
    let pulled = Instant::now();
    let lost = wait_for(Duration::from_secs(6), || state(http_port) == "degraded");
    assert!(lost.is_some(), "not degraded: {}", get_json(http_port, "/api/status"));
    eprintln!("no signal noticed {:?} after the cable was pulled", pulled.elapsed());
    let status = get_json(http_port, "/api/status");
    assert_eq!(status["machine"]["reason"], "no input signal", "{status}");
    assert_eq!(status["input"]["signal"], false, "{status}");
    assert!(
        status["alerts"].as_array().unwrap().iter().any(|a| a.as_str().unwrap_or("").starts_with("no input signal")),
        "{status}"
    );
    // The link itself is fine: it stays connected and the LED says so.
    assert_eq!(get_json(http_port, "/api/sim/gpio")["patterns"]["link"], "on");
    assert_eq!(get_json(http_port, "/api/sim/gpio")["hdmi_cable"], false);
    let (_, metrics) = http("GET", http_port, "/metrics", None);
    assert!(metrics.contains("\ntelebridge_input_signal 0\n"), "{metrics}");
    let stalled_at = frames();
    // A window in which no frame may be made (not a wait for readiness).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(frames(), stalled_at, "frames went on without a cable");

    let (code, _) = http("POST", http_port, "/api/sim/signal", Some(r#"{"present": true}"#));
    assert_eq!(code, 200);
    let back = wait_for(Duration::from_secs(6), || state(http_port) == "live");
    assert!(back.is_some(), "not live again: {}", get_json(http_port, "/api/status"));
    assert_eq!(get_json(http_port, "/api/status")["input"]["signal"], true);
    let before = size(&received);
    assert!(
        wait_for(Duration::from_secs(5), || size(&received) > before + 200_000).is_some(),
        "the receiver got nothing more after the cable came back"
    );
    let logs = std::fs::read_to_string(dir.join("box.stderr")).unwrap();
    assert!(logs.contains("input signal lost") && logs.contains("input signal back"), "{logs}");
    let (code, body) = http("POST", http_port, "/api/sim/signal", Some(r#"{"plugged": true}"#));
    assert_eq!(code, 422, "{body}");
}

/// The box reads its own link: an SRT output with 120 ms of latency over a 200 ms RTT link (the
/// link emulator between the box and srt-live-transmit) gets an alert naming the latency to set.
#[test]
fn srt_latency_too_small_for_the_measured_rtt_is_an_alert_with_the_number_to_set() {
    let _guard = serial();
    let dir = scratch("appliance-advice");
    let (slt_port, http_port) = (free_udp_port(), free_tcp_port());
    let _slt = slt_to_file(&format!("srt://:{slt_port}?mode=listener"), &dir.join("received.ts"), &dir, "slt");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let link = linkemu::LinkParams { one_way_delay: Duration::from_millis(100), ..Default::default() };
    let relay = runtime
        .block_on(linkemu::relay::start(
            "127.0.0.1:0".parse().unwrap(),
            format!("127.0.0.1:{slt_port}").parse().unwrap(),
            linkemu::Impairment::new(link.clone(), Vec::new(), 1),
            linkemu::Impairment::new(link, Vec::new(), 2),
        ))
        .unwrap();
    let url = format!("srt://127.0.0.1:{}?latency=120", relay.listen.port());
    let _box = run_sim(&dir, "box", http_port, &["--output", &url, "--start-live"], &[]);
    let advice = |s: &serde_json::Value| {
        s["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str())
            .find(|a| a.contains("SRT latency"))
            .map(str::to_string)
    };
    let seen = wait_for(Duration::from_secs(20), || advice(&get_json(http_port, "/api/status")).is_some());
    let status = get_json(http_port, "/api/status");
    assert!(seen.is_some(), "no latency advice: {status}");
    let text = advice(&status).unwrap();
    eprintln!("{text}");
    assert!(text.contains("SRT latency 120 ms is under 2.5 x the measured RTT of 2"), "{text}");
    // 4 x a measured RTT of about 200 ms.
    let suggested: u32 =
        text.split("latency=").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!((780..=1000).contains(&suggested), "{text}");
}

#[test]
fn systemd_hears_ready_and_a_watchdog_that_stops_while_the_loop_is_stuck() {
    let dir = scratch("appliance-notify");
    let sock_path = dir.join("notify.sock");
    let _ = std::fs::remove_file(&sock_path);
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let http_port = free_tcp_port();
    let t0 = Instant::now();
    let _box = run_sim(
        &dir,
        "box",
        http_port,
        &[],
        &[("NOTIFY_SOCKET", sock_path.to_str().unwrap()), ("WATCHDOG_USEC", "1000000")],
    );
    // Every message with the time it arrived.
    let mut log: Vec<(Duration, String)> = Vec::new();
    let collect = |until: Duration, log: &mut Vec<(Duration, String)>| {
        let mut buf = [0u8; 256];
        while t0.elapsed() < until {
            if let Ok(n) = sock.recv(&mut buf) {
                log.push((t0.elapsed(), String::from_utf8_lossy(&buf[..n]).to_string()));
            }
        }
    };
    let start = t0.elapsed();
    collect(start + Duration::from_secs(3), &mut log);
    assert_eq!(log.first().map(|m| m.1.as_str()), Some("READY=1"), "{log:?}");
    let pets = log.iter().filter(|m| m.1 == "WATCHDOG=1").count();
    assert!(pets >= 4, "expected a WATCHDOG=1 every 0.5 s, got {pets}: {log:?}");

    // Stall the main loop for 3 s: the pets stop, then resume.
    let (code, _) = http("POST", http_port, "/api/sim/stall", Some(r#"{"ms": 3000}"#));
    assert_eq!(code, 202);
    let stall_at = t0.elapsed();
    collect(stall_at + Duration::from_secs(5), &mut log);
    let during: Vec<_> = log
        .iter()
        .filter(|m| {
            m.1 == "WATCHDOG=1"
                && m.0 > stall_at + Duration::from_millis(1100)
                && m.0 < stall_at + Duration::from_millis(2900)
        })
        .collect();
    assert!(during.is_empty(), "petted the watchdog while the loop was stuck: {during:?}");
    let after = log.iter().filter(|m| m.1 == "WATCHDOG=1" && m.0 > stall_at + Duration::from_millis(3200)).count();
    assert!(after >= 1, "no WATCHDOG=1 after the loop recovered: {log:?}");
}

#[test]
fn the_unit_files_pass_systemd_analyze_verify() {
    let dir = scratch("appliance-unit");
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let unit = std::fs::read_to_string(format!("{repo}/packaging/telebridge.service")).unwrap();
    assert!(unit.contains("Type=notify") && unit.contains("WatchdogSec=") && unit.contains("Restart=on-failure"));
    // The package's units and the image's; the installed paths point at the files under test so
    // verify can check them.
    let units = [
        "packaging/telebridge.service",
        "packaging/telebridge-helper.path",
        "packaging/telebridge-helper.service",
        "image/rootfs/usr/lib/systemd/system/telebridge-boot.service",
        "image/rootfs/usr/lib/systemd/system/telebridge-boot-ok.service",
        "image/rootfs/usr/lib/systemd/system/telebridge-console.service",
        "image/rootfs/usr/lib/systemd/system/telebridge-console.path",
    ];
    let mut paths = Vec::new();
    for u in units {
        let text = std::fs::read_to_string(format!("{repo}/{u}"))
            .unwrap()
            .replace("/usr/bin/telebridge", env!("CARGO_BIN_EXE_telebridge"))
            .replace("/usr/lib/telebridge/helper", &format!("{repo}/packaging/lib/helper"))
            .replace("/usr/lib/telebridge/", &format!("{repo}/image/rootfs/usr/lib/telebridge/"));
        let path = dir.join(u.rsplit('/').next().unwrap());
        std::fs::write(&path, text).unwrap();
        paths.push(path);
    }
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .args(&paths)
        .output()
        .expect("systemd-analyze (apt-get install systemd)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "systemd-analyze warned: {stderr}");
}

/// The running configuration as the file says, with two outputs: SRT to srt-live-transmit and
/// RTMP to nginx with stream key `key`.
fn config_file(path: &Path, srt_port: u16, rtmp_port: u16, key: &str, bitrate: u32) {
    std::fs::write(
        path,
        format!(
            "start_live = true\n[video]\nbitrate_kbps = {bitrate}\nwidth = 640\nheight = 360\n\
             [[outputs]]\nurl = \"srt://127.0.0.1:{srt_port}\"\nname = \"studio\"\n\
             [[outputs]]\nurl = \"rtmp://127.0.0.1:{rtmp_port}/live/{key}\"\nname = \"platform\"\n"
        ),
    )
    .unwrap();
}

fn output<'a>(status: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    status["media"]["outputs"]
        .as_array()
        .and_then(|o| o.iter().find(|x| x["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

#[test]
fn reload_restarts_only_the_changed_output_and_a_bad_file_changes_nothing() {
    let _guard = serial();
    let dir = scratch("appliance-reload");
    let (srt_port, rtmp_port, http_port) = (free_udp_port(), free_tcp_port(), free_tcp_port());
    let _nginx = nginx_rtmp(&dir, rtmp_port, "nginx");
    let _slt = slt_to_file(&format!("srt://:{srt_port}?mode=listener"), &dir.join("srt.ts"), &dir, "slt");
    let file = dir.join("telebridge.toml");
    config_file(&file, srt_port, rtmp_port, "first-key", 1500);
    let daemon = run_sim(&dir, "box", http_port, &["--config", file.to_str().unwrap()], &[]);

    let both_live = || {
        let s = get_json(http_port, "/api/status");
        output(&s, "studio")["state"] == "live" && output(&s, "platform")["state"] == "live"
    };
    assert!(wait_for(Duration::from_secs(15), both_live).is_some(), "{}", get_json(http_port, "/api/status"));
    let before = get_json(http_port, "/api/status");
    // Issue 12: the daemon's SRT is libsrt itself, the same file GStreamer's SRT plugin links;
    // two copies of libsrt in one process would share nothing (log handler, sockets, threads).
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", daemon.child.id())).expect("read the daemon's maps");
    let libsrt: std::collections::BTreeSet<&str> =
        maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.contains("libsrt")).collect();
    assert_eq!(libsrt.len(), 1, "libsrt mapped into the daemon: {libsrt:?}");
    let frames_before = before["media"]["encoder"]["frames_encoded"].as_u64().unwrap_or(0);

    // A new stream key: only the RTMP output is replaced; the encoder and the SRT link go on.
    config_file(&file, srt_port, rtmp_port, "second-key", 1500);
    daemon.signal("HUP");
    let republished =
        wait_for(Duration::from_secs(15), || probe_frames(&format!("rtmp://127.0.0.1:{rtmp_port}/live/second-key")));
    assert!(republished.is_some(), "nothing on the new key; {}", get_json(http_port, "/api/status"));
    assert!(wait_for(Duration::from_secs(10), both_live).is_some());
    let after = get_json(http_port, "/api/status");
    let frames_after = after["media"]["encoder"]["frames_encoded"].as_u64().unwrap_or(0);
    assert!(frames_after > frames_before, "the encoder restarted: {frames_before} then {frames_after} frames");
    assert_eq!(output(&after, "studio")["reconnects"], 0, "the SRT link was touched: {after}");
    assert_eq!(after["machine"]["state"], "live");
    assert!(!after.to_string().contains("second-key"), "the key leaked into the status");

    // A file with a bad value: rejected, everything keeps running as it was.
    std::fs::write(&file, "[video]\nbitrate_kbps = 1\n").unwrap();
    daemon.signal("HUP");
    let stderr = dir.join("box.stderr");
    let refused = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&stderr).unwrap_or_default().contains("keeping the running one")
    });
    assert!(refused.is_some(), "the reload was not refused within 10 s");
    let kept = get_json(http_port, "/api/status");
    assert_eq!(kept["machine"]["state"], "live", "{kept}");
    assert_eq!(output(&kept, "studio")["state"], "live", "{kept}");
    let log = std::fs::read_to_string(dir.join("box.stderr")).unwrap();
    assert!(log.contains("video.bitrate_kbps: 1 is out of range 100-50000 kbit/s"), "{log}");
    assert!(log.contains("keeping the running one"), "{log}");
    assert!(!log.contains("first-key") && !log.contains("second-key"), "a stream key is in the log");
}

/// Whether ffprobe reads video from an RTMP URL.
fn probe_frames(url: &str) -> bool {
    ffprobe_streams(url).iter().any(|s| s.codec == "h264")
}

/// The top-left pixel (RGB) of each frame of `video`.
fn corner_pixels(video: &Path) -> Vec<[u8; 3]> {
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-i"])
        .arg(video)
        .args(["-vf", "crop=8:8:0:0,scale=1:1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .unwrap();
    out.stdout.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
}

/// Issue 39: the tally input (a vision mixer's contact on a GPIO pin) puts the box on air: the
/// tally LED lights, the status says why, and the HDMI slate is framed in red until the contact
/// opens.
#[test]
fn the_tally_input_lights_the_tally_and_frames_the_slate_in_red() {
    let _guard = serial();
    let dir = scratch("appliance-tally-in");
    let (srt_port, http_port) = (free_udp_port(), free_tcp_port());
    let shown = dir.join("shown.mkv");
    let config = dir.join("telebridge.toml");
    std::fs::write(
        &config,
        format!(
            "role = \"decoder\"\nstart_live = true\n[decoder]\ninput = \"srt://:{srt_port}?mode=listener\"\nsink = \"file:{}\"\n",
            shown.display()
        ),
    )
    .unwrap();
    let mut b = run_sim(&dir, "box", http_port, &["--config", config.to_str().unwrap()], &[]);
    let lit = || get_json(http_port, "/api/sim/gpio")["leds"]["tally"] == true;
    let showing_slate = wait_for(Duration::from_secs(15), || std::fs::metadata(&shown).is_ok_and(|m| m.len() > 0));
    assert!(showing_slate.is_some(), "the decoder shows no slate");
    // Two seconds of slate before the contact closes (the recording's first part, and a window
    // in which the tally must stay out: not a wait for readiness).
    std::thread::sleep(Duration::from_secs(2));
    assert!(!lit(), "the tally is out before the contact closes");

    let (code, body) = http("POST", http_port, "/api/sim/tally-in", Some(r#"{"on_air": true}"#));
    assert_eq!(code, 200, "{body}");
    let closed = Instant::now();
    let on = wait_for(Duration::from_secs(5), lit).map(|_| closed.elapsed());
    eprintln!("tally lit {on:?} after the mixer's contact closed");
    assert!(on.is_some_and(|t| t <= Duration::from_millis(500)), "the tally input lit the LED after {on:?}");
    let tally = get_json(http_port, "/api/status")["tally"].clone();
    assert_eq!(
        tally,
        serde_json::json!({"on_air": true, "cue": false, "wired": true, "taken_by_far": false, "takes_far": false})
    );
    // Three seconds on air: the recording's red-framed part (the scenario).
    std::thread::sleep(Duration::from_secs(3));
    let (code, body) = http("POST", http_port, "/api/sim/tally-in", Some(r#"{"on_air": false}"#));
    assert_eq!(code, 200, "{body}");
    assert!(wait_for(Duration::from_secs(5), || !lit()).is_some(), "the tally stayed on with the contact open");
    // Two seconds off air again: the recording's last part (the scenario).
    std::thread::sleep(Duration::from_secs(2));
    b.signal("TERM");
    assert!(b.wait_timeout(Duration::from_secs(15)).is_some_and(|s| s.success()), "the box did not stop cleanly");

    // The slate as recorded: dark blue, then framed in red while on air, then dark blue again.
    let red = |p: &[u8; 3]| p[0] > 150 && p[1] < 90 && p[2] < 90;
    let corners = corner_pixels(&shown);
    let first_red = corners.iter().position(red);
    let last_red = corners.iter().rposition(red);
    assert!(first_red.is_some_and(|i| i > 0), "no red frame, or red from the start: {corners:?}");
    let (first, last) = (first_red.unwrap(), last_red.unwrap());
    assert!(last + 1 < corners.len(), "still red at the end: {corners:?}");
    assert!(corners[first..=last].iter().filter(|p| red(p)).count() >= 10, "too few red frames: {corners:?}");
    assert!(!red(&corners[0]) && !red(&corners[corners.len() - 1]), "{corners:?}");
}
