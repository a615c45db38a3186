//! The appliance daemon, end to end: `telebridge run --sim` with its simulated GPIO, against a
//! real srt-live-transmit; the systemd notification protocol with a fake NOTIFY_SOCKET; the unit
//! file through `systemd-analyze verify`.

mod support;

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

fn run_sim(dir: &Path, name: &str, http_port: u16, extra: &[&str], env: &[(&str, &str)]) -> Proc {
    let mut cmd = telebridge();
    cmd.args(["run", "--sim", "--http", &format!("127.0.0.1:{http_port}")]).args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let p = Proc::spawn(cmd, dir, name);
    let up = wait_for(Duration::from_secs(10), || get_json(http_port, "/api/status") != serde_json::Value::Null);
    assert!(up.is_some(), "the daemon did not answer; see {}", dir.join(format!("{name}.stderr")).display());
    p
}

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

    // The receiver dies: degraded, the link LED double-blinks (retrying), still on air.
    drop(slt);
    let degraded = wait_for(Duration::from_secs(10), || state(http_port) == "degraded");
    assert!(degraded.is_some(), "not degraded: {}", get_json(http_port, "/api/status"));
    let status = get_json(http_port, "/api/status");
    assert_eq!(status["machine"]["reason"], "1 of 1 links retrying", "{status}");
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
    let (code, _) = http("POST", http_port, "/api/live", Some(r#"{"live": true}"#));
    assert_eq!(code, 202);
    // No outputs: a box that only runs its encoder is live at once.
    assert!(wait_for(Duration::from_secs(10), || state(http_port) == "live").is_some());
    let (code, _) = http("POST", http_port, "/api/live", Some(r#"{"live": false}"#));
    assert_eq!(code, 202);
    assert!(wait_for(Duration::from_secs(5), || state(http_port) == "ready").is_some());
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
fn the_unit_file_passes_systemd_analyze_verify() {
    let dir = scratch("appliance-unit");
    let unit =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../packaging/telebridge.service")).unwrap();
    assert!(unit.contains("Type=notify") && unit.contains("WatchdogSec=") && unit.contains("Restart=on-failure"));
    // The unit names the installed path; point it at the binary under test so verify can check it.
    let path = dir.join("telebridge.service");
    std::fs::write(&path, unit.replace("/usr/bin/telebridge", env!("CARGO_BIN_EXE_telebridge"))).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (apt-get install systemd)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "systemd-analyze warned: {stderr}");
}
