//! The telebridge: two boxes (`telebridge run --sim --role bridge`, each with its own panel)
//! pair through their APIs with the code one of them shows, then each sends its picture and
//! sound to the other over one SRT connection and shows (and records) what arrives. The
//! recordings of what each received are read back with ffprobe.

#![allow(clippy::unwrap_used)] // a failed system call or a missing field should fail the test

mod support;

use std::time::{Duration, Instant};

use support::bridge::*;
use support::*;

fn frames_decoded(port: u16) -> u64 {
    get_json(port, "/api/status")["media"]["receiving"]["decoder"]["frames_decoded"].as_u64().unwrap_or(0)
}

#[test]
fn two_boxes_pair_with_the_code_and_each_receives_the_others_picture_and_sound() {
    let _guard = serial();
    let (dir_a, dir_b) = (scratch("bridge-a"), scratch("bridge-b"));
    let (http_a, http_b, srt_a) = (free_tcp_port(), free_tcp_port(), free_udp_port());
    let config_a = bridge_config(&dir_a, "studio-a", srt_a);
    let config_b = bridge_config(&dir_b, "studio-b", free_udp_port());
    let mut a = run_sim(&dir_a, "box", http_a, &["--config", config_a.to_str().unwrap()], &[]);
    let mut b = run_sim(&dir_b, "box", http_b, &["--config", config_b.to_str().unwrap()], &[]);

    // A shows a code; B's owner types it with A's address.
    let (status, body) = http("POST", http_a, "/api/pairing/open", None);
    assert_eq!(status, 200, "{body}");
    let shown: serde_json::Value = serde_json::from_str(&body).unwrap();
    let code = shown["code"].as_str().expect("a code is shown").to_string();
    assert_eq!(code.len(), 7, "{code}");
    let join = format!(r#"{{"address": "127.0.0.1:{http_a}", "code": "{}"}}"#, code.to_lowercase().replace('-', " "));
    let (status, body) = http("POST", http_b, "/api/pairing/join", Some(&join));
    assert_eq!(status, 200, "{body}");
    let paired_b: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(paired_b["paired"]["peer"], "studio-a", "{body}");
    assert_eq!(paired_b["paired"]["reach"], "call", "{body}");
    let paired_a = get_json(http_a, "/api/pairing");
    assert_eq!(paired_a["paired"]["peer"], "studio-b", "{paired_a}");
    assert_eq!(paired_a["paired"]["reach"], "listen", "{paired_a}");
    assert_eq!(paired_a["code"], serde_json::Value::Null, "the code is used up: {paired_a}");
    assert_eq!(paired_a["paired"]["pair_id"], paired_b["paired"]["pair_id"]);
    // What the API shows holds no secret; the files that hold them are the owner's only.
    for (dir, shown) in [(&dir_a, paired_a.to_string()), (&dir_b, body.clone())] {
        let stored = std::fs::read_to_string(dir.join("pairing.toml")).unwrap();
        let passphrase = stored.lines().find_map(|l| l.strip_prefix("passphrase = ")).unwrap().trim_matches('"');
        assert_eq!(passphrase.len(), 64, "AES-256 from the exchange, not the code");
        assert!(!shown.contains(passphrase), "{shown}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("pairing.toml")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Both go live: each receives the other's picture.
    for port in [http_a, http_b] {
        let (status, body) = http("POST", port, "/api/live", Some(r#"{"live": true}"#));
        assert_eq!(status, 202, "{body}");
    }
    let both = wait_for(Duration::from_secs(30), || frames_decoded(http_a) > 50 && frames_decoded(http_b) > 50);
    assert!(
        both.is_some(),
        "not both ways:\nA: {}\nB: {}",
        get_json(http_a, "/api/status")["media"],
        get_json(http_b, "/api/status")["media"]
    );
    let status_a = get_json(http_a, "/api/status");
    let peer =
        status_a["media"]["sending"]["outputs"].as_array().unwrap().iter().find(|o| o["name"] == "peer").cloned();
    let peer = peer.expect("the connection to the paired box is an output");
    assert_eq!(peer["state"], "live", "{peer}");
    assert!(peer["srt"]["packets_received"].as_u64().unwrap_or(0) > 100, "one socket carries both ways: {peer}");

    // Tally (issue 58): both boxes live lights nothing; B's operator taking A's picture (B's cue)
    // lights A's tally LED (simulated GPIO) within 500 ms, and B's status says it takes A.
    let tally = |port: u16| get_json(port, "/api/sim/gpio")["leds"]["tally"] == true;
    // A window in which neither tally may light (not a wait for readiness).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!tally(http_a) && !tally(http_b), "both live is not on air: A {}, B {}", tally(http_a), tally(http_b));
    let cued = Instant::now();
    let (status, body) = http("POST", http_b, "/api/tally", Some(r#"{"on_air": true}"#));
    assert_eq!(status, 202, "{body}");
    let followed = wait_for(Duration::from_secs(5), || tally(http_a)).expect("B's cue did not light A's tally");
    eprintln!("A's tally lit {} ms after B took its picture", cued.elapsed().as_millis());
    assert!(followed <= Duration::from_millis(500), "A's tally lit {} ms after B's cue", followed.as_millis());
    assert!(!tally(http_b), "B's own light stays out: B's picture is not on air at A");
    let b_tally = get_json(http_b, "/api/status")["tally"].clone();
    assert_eq!(
        b_tally,
        serde_json::json!({"on_air": false, "cue": true, "wired": false, "taken_by_far": false, "takes_far": true})
    );
    let (_, metrics) = http("GET", http_a, "/metrics", None);
    assert!(metrics.contains("\ntelebridge_tally 1\n"), "{metrics}");
    // B stops sending (its connection drops): A's light goes out when B's messages stop.
    let (status, body) = http("POST", http_b, "/api/live", Some(r#"{"live": false}"#));
    assert_eq!(status, 202, "{body}");
    assert!(wait_for(Duration::from_secs(3), || !tally(http_a)).is_some(), "A's tally stayed on with B stopped");
    // B live again with its cue still set: A lights again; B lets go: out.
    let (status, body) = http("POST", http_b, "/api/live", Some(r#"{"live": true}"#));
    assert_eq!(status, 202, "{body}");
    assert!(wait_for(Duration::from_secs(30), || tally(http_a)).is_some(), "A's tally stayed out with B back");
    let (status, body) = http("POST", http_b, "/api/tally", Some(r#"{"on_air": false}"#));
    assert_eq!(status, 202, "{body}");
    assert!(wait_for(Duration::from_secs(2), || !tally(http_a)).is_some(), "B's release did not put A's tally out");
    assert!(wait_for(Duration::from_secs(30), || frames_decoded(http_a) > 50).is_some());

    // A third party at A's bridge port, with no passphrase or a guessed one, gets nothing.
    let passphrase = std::fs::read_to_string(dir_a.join("pairing.toml"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("passphrase = ").map(|p| p.trim_matches('"').to_string()))
        .unwrap();
    for (name, query) in [("nokey", String::new()), ("guess", "&passphrase=0123456789abcdef&pbkeylen=32".into())] {
        let out = dir_a.join(format!("{name}.ts"));
        let _slt = slt_to_file(&format!("srt://127.0.0.1:{srt_a}?mode=caller{query}"), &out, &dir_a, name);
        // A window in which nothing may arrive (not a wait for readiness).
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(size(&out), 0, "a stranger ({name}) received the bridge's stream");
    }
    // The secrets are in no log and no answer of the API.
    for (dir, port) in [(&dir_a, http_a), (&dir_b, http_b)] {
        for f in ["box.stderr", "box.stdout"] {
            let log = std::fs::read_to_string(dir.join(f)).unwrap();
            assert!(!log.contains(&passphrase), "the passphrase in {}", dir.join(f).display());
        }
        for path in ["/api/pairing", "/api/status", "/api/config", "/api/config/backup", "/metrics", "/api/logs"] {
            let (_, body) = http("GET", port, path, None);
            assert!(!body.contains(&passphrase), "the passphrase in {path}");
        }
    }

    // A unpairs: B stops receiving within 5 s and says why.
    let (status, body) = http("DELETE", http_a, "/api/pairing", None);
    assert_eq!(status, 200, "{body}");
    let stopped = wait_for(Duration::from_secs(5), || {
        let before = frames_decoded(http_b);
        // A window over which no frame may be decoded (not a wait for readiness).
        std::thread::sleep(Duration::from_millis(600));
        let p = get_json(http_b, "/api/pairing");
        p["paired"].is_null() && frames_decoded(http_b) == before
    });
    assert!(stopped.is_some(), "B still paired or receiving: {}", get_json(http_b, "/api/pairing"));
    let why = get_json(http_b, "/api/pairing")["last"].as_str().unwrap_or("").to_string();
    assert!(why.starts_with("studio-a unpaired this box"), "{why}");
    let status_b = get_json(http_b, "/api/status");
    assert!(status_b.to_string().contains("studio-a unpaired this box"), "B's status does not say why: {status_b}");
    assert!(!dir_b.join("pairing.toml").exists() && !dir_a.join("pairing.toml").exists());

    // Stopped, each has a playable recording of what the other sent: picture and sound.
    for p in [&mut a, &mut b] {
        p.signal("TERM");
        assert!(p.wait_timeout(Duration::from_secs(15)).is_some(), "{} did not stop", p.name);
    }
    for dir in [&dir_a, &dir_b] {
        let files = recordings(dir);
        assert!(!files.is_empty(), "no recording in {}", dir.display());
        let streams = ffprobe_streams(&files[0]);
        let kinds: Vec<&str> = streams.iter().map(|s| s.codec.as_str()).collect();
        // The bridge's sound is Opus (audio.codec = auto): the least delay between two boxes.
        assert!(kinds.contains(&"h264") && kinds.contains(&"opus"), "{}: {kinds:?}", files[0].display());
        let frames = decodable_frames(&files[0]);
        assert!(frames > 50, "{}: {frames} frames", files[0].display());
    }
}

#[test]
fn a_wrong_code_is_refused_in_words_the_code_stays_and_the_next_try_from_there_must_wait() {
    let _guard = serial();
    let (dir_a, dir_b) = (scratch("pair-wrong-a"), scratch("pair-wrong-b"));
    let (http_a, http_b) = (free_tcp_port(), free_tcp_port());
    let config_a = bridge_config(&dir_a, "studio-a", free_udp_port());
    let config_b = bridge_config(&dir_b, "studio-b", free_udp_port());
    let _a = run_sim(&dir_a, "box", http_a, &["--config", config_a.to_str().unwrap()], &[]);
    let _b = run_sim(&dir_b, "box", http_b, &["--config", config_b.to_str().unwrap()], &[]);
    let join = |code: &str| {
        http(
            "POST",
            http_b,
            "/api/pairing/join",
            Some(&format!(r#"{{"address": "127.0.0.1:{http_a}", "code": "{code}"}}"#)),
        )
    };

    // Nothing shown yet: A says so.
    let (status, body) = join("7Q4-KM2");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("not showing a pairing code"), "{body}");
    // Not a code at all: B names the field.
    let (status, body) = join("7Q4");
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("code:"), "{body}");

    // Not paired, not showing a code: the HDMI output says so.
    let screen = |port: u16| get_json(port, "/api/status")["screen"].as_str().unwrap_or("").to_string();
    let says = wait_for(Duration::from_secs(5), || screen(http_a).contains("Not paired: pair in the panel"));
    assert!(says.is_some(), "A's HDMI output: {:?}", screen(http_a));

    let (_, body) = http("POST", http_a, "/api/pairing/open", None);
    let first: serde_json::Value = serde_json::from_str(&body).unwrap();
    let first = first["code"].as_str().unwrap().to_string();
    // The code is on A's HDMI output too.
    let shown = wait_for(Duration::from_secs(5), || screen(http_a).contains(&format!("Pairing code {first}")));
    assert!(shown.is_some(), "A's HDMI output: {:?}", screen(http_a));
    // One symbol off.
    let wrong: String = first
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                if c == 'A' {
                    'B'
                } else {
                    'A'
                }
            } else {
                c
            }
        })
        .collect();
    let (status, body) = join(&wrong);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("wrong code"), "{body}");
    let a = get_json(http_a, "/api/pairing");
    let second = a["code"].as_str().unwrap_or("").to_string();
    assert_eq!(second, first, "one wrong try leaves the code (issue 36, finding 4): {a}");
    assert!(a["last"].as_str().unwrap_or("").contains("wrong code"), "{a}");
    assert!(a["paired"].is_null() && get_json(http_b, "/api/pairing")["paired"].is_null());

    // The next try at once, even with the right code, is refused until the wait is over.
    let (status, body) = join(&second);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("try again in"), "{body}");
    // Asked again until the wait is over (a refused try does not count).
    let mut answer = (0, String::new());
    let waited = wait_for(Duration::from_secs(10), || {
        answer = join(&second);
        answer.0 != 429
    });
    assert!(waited.is_some_and(|w| w >= Duration::from_secs(3)), "the wait was {waited:?}");
    let (status, body) = answer;
    assert_eq!(status, 200, "after the wait, the right code pairs: {body}");
    let gone = wait_for(Duration::from_secs(5), || !screen(http_a).contains("Pairing code"));
    assert!(gone.is_some(), "paired, A's HDMI output still shows a code: {:?}", screen(http_a));

    // On the box itself: a 10 s hold of the button shows a pairing code (a bridge box).
    let (status, body) = http("POST", http_b, "/api/sim/button", Some(r#"{"hold_ms": 10300}"#));
    assert_eq!(status, 200, "{body}");
    let code = wait_for(Duration::from_secs(15), || get_json(http_b, "/api/pairing")["code"].is_string());
    assert!(code.is_some(), "no code after a long press: {}", get_json(http_b, "/api/pairing"));
    let code = get_json(http_b, "/api/pairing")["code"].as_str().unwrap().to_string();
    let on_screen = wait_for(Duration::from_secs(5), || screen(http_b).contains(&format!("Pairing code {code}")));
    assert!(on_screen.is_some(), "B's HDMI output: {:?}", screen(http_b));
}

#[test]
fn two_boxes_in_two_namespaces_over_metro_17ms_pair_and_exchange_video_and_sound() {
    let _guard = serial();
    let profiles = linkemu::Profiles::parse(include_str!("../bench/links.toml")).unwrap();
    let params = profiles.get("metro-17ms").unwrap().params();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let prefix = format!("tbb{}", std::process::id() % 100_000);
    let link = rt
        .block_on(linkemu::ip_mode::start(
            &prefix,
            linkemu::Impairment::new(params.clone(), vec![], 1),
            linkemu::Impairment::new(params, vec![], 2),
        ))
        .unwrap();
    let (dir_a, dir_b) = (scratch("bridge-ns-a"), scratch("bridge-ns-b"));
    // Talkback: each box's microphone is the test voice (a 440 Hz beep at each second), and the
    // far voice goes to a WAV file.
    let talkback = |dir: &std::path::Path| {
        format!(
            "port_mapping = false\n[talkback]\nsource = \"test\"\noutput = \"file:{}\"\n",
            dir.join("talk.wav").display()
        )
    };
    let config_a = bridge_config_with(&dir_a, "studio-a", 7700, &talkback(&dir_a));
    let config_b = bridge_config_with(&dir_b, "studio-b", 7700, &talkback(&dir_b));
    let a = NsBox::start(&link.ns_a, linkemu::ip_mode::ADDR_A, "studio-a", dir_a, &config_a);
    let b = NsBox::start(&link.ns_b, linkemu::ip_mode::ADDR_B, "studio-b", dir_b, &config_b);

    let (status, body) = a.call("POST", "/api/pairing/open", None);
    assert_eq!(status, 200, "{body}");
    let code = serde_json::from_str::<serde_json::Value>(&body).unwrap()["code"].as_str().unwrap().to_string();
    let join = format!(r#"{{"address": "{}:8080", "code": "{code}"}}"#, linkemu::ip_mode::ADDR_A);
    let (status, body) = b.call("POST", "/api/pairing/join", Some(&join));
    assert_eq!(status, 200, "{body}");
    let paired: serde_json::Value = serde_json::from_str(&body).unwrap();
    // B measured the link's round trip (17 ms) while pairing.
    let rtt = paired["paired"]["rtt_ms"].as_u64().unwrap();
    assert!((17..40).contains(&rtt), "measured {rtt} ms over a 17 ms link: {paired}");
    let calls = format!("{}:7700", linkemu::ip_mode::ADDR_A);
    assert_eq!(paired["paired"]["calls"], calls.as_str(), "{paired}");

    for bx in [&a, &b] {
        let (status, body) = bx.call("POST", "/api/live", Some(r#"{"live": true}"#));
        assert_eq!(status, 202, "{body}");
    }
    let both = wait_for(Duration::from_secs(40), || a.frames_decoded() > 75 && b.frames_decoded() > 75);
    assert!(
        both.is_some(),
        "not both ways:\nA: {}\nB: {}",
        a.json("/api/status")["media"],
        b.json("/api/status")["media"]
    );
    let peer = |bx: &NsBox| {
        bx.json("/api/status")["media"]["sending"]["outputs"]
            .as_array()
            .and_then(|o| o.iter().find(|x| x["name"] == "peer").cloned())
            .unwrap_or_default()
    };
    let (pa, pb) = (peer(&a), peer(&b));
    eprintln!(
        "metro-17ms: A rtt {} ms latency {} ms, B rtt {} ms latency {} ms",
        pa["srt"]["rtt_ms"],
        pa["srt"]["negotiated_latency_ms"],
        pb["srt"]["rtt_ms"],
        pb["srt"]["negotiated_latency_ms"]
    );
    // The calling box started at 4 x the round trip it measured while pairing, at least the
    // least latency (`bridge.min_latency_ms`, 40), and says so.
    assert_eq!(pb["srt"]["negotiated_latency_ms"], (4 * rtt).max(40), "{pb}");
    assert_eq!(pb["latency"]["latency_ms"], (4 * rtt).max(40), "{pb}");
    talk_both_ways(&a, &b);
    for bx in [&a, &b] {
        let (status, _) = bx.call("POST", "/api/live", Some(r#"{"live": false}"#));
        assert_eq!(status, 202);
    }
    // The recordings are closed once the boxes are off air.
    let closed = wait_for(Duration::from_secs(10), || {
        [&a, &b].iter().all(|bx| recordings(&bx.dir).first().is_some_and(|f| decodable_frames(f) > 75))
    });
    assert!(closed.is_some(), "the recordings were not whole within 10 s of going off air");
    for bx in [&a, &b] {
        let files = recordings(&bx.dir);
        assert!(!files.is_empty(), "no recording in {}", bx.dir.display());
        let kinds: Vec<String> = ffprobe_streams(&files[0]).into_iter().map(|s| s.codec).collect();
        assert!(kinds.iter().any(|k| k == "h264") && kinds.iter().any(|k| k == "opus"), "{kinds:?}");
        assert!(decodable_frames(&files[0]) > 75, "{}", files[0].display());
        // The voice is heard, never in the programme: the talk file holds the 440 Hz beep, the
        // recording of the other's programme (its 1 kHz beep) none of it.
        let (talk, programme) = (loudness_at_440(&bx.dir.join("talk.wav")), loudness_at_440(&files[0]));
        eprintln!(
            "{}: 440 Hz in the talk heard {talk:.1} dB, in the programme received {programme:.1} dB",
            bx.dir.display()
        );
        assert!(talk > -20.0, "the far voice is not in {}: {talk} dB", bx.dir.join("talk.wav").display());
        assert!(programme < talk - 20.0, "the voice leaked into the programme: {programme} dB against {talk} dB");
    }
}

/// The loudest the sound of `file` gets at 440 Hz (a narrow band-pass), dB full scale.
fn loudness_at_440(file: &std::path::Path) -> f64 {
    let out = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-i"])
        .arg(file)
        .args(["-vn", "-af", "bandpass=f=440:width_type=q:w=20,volumedetect", "-f", "null", "-"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find_map(|l| l.split("max_volume: ").nth(1))
        .and_then(|v| v.trim_end_matches(" dB").trim().parse().ok())
        .unwrap_or(-99.0)
}

/// Talkback over the link: A holds its talk button (renewed through the API every 500 ms, as
/// the panel does) and B hears the test voice, mouth to ear within 150 ms; B presses while A
/// talks and waits (nothing of B's reaches A); when A lets go, B gets the channel half a second
/// after A's last word.
fn talk_both_ways(a: &NsBox, b: &NsBox) {
    let press = |bx: &NsBox, down: bool| {
        let (status, body) = bx.call("POST", "/api/talk", Some(&format!(r#"{{"talking": {down}}}"#)));
        assert_eq!(status, 202, "{body}");
    };
    let talk = |bx: &NsBox| bx.json("/api/status")["talk"].clone();
    let mut lags = Vec::new();
    for step in 0..16 {
        // A holds for 4 s; B presses from 2 s to 8 s.
        if step < 8 {
            press(a, true);
        } else if step == 8 {
            press(a, false);
        }
        if (4..16).contains(&step) {
            press(b, true);
        }
        // The schedule's half-second steps (the scenario, not a wait for readiness).
        std::thread::sleep(Duration::from_millis(500));
        let (ta, tb) = (talk(a), talk(b));
        if let Some(lag) = tb["beep_lag_ms"].as_u64() {
            lags.push(lag);
        }
        if step == 6 {
            assert_eq!(ta["state"], "talking", "{ta}");
            assert_eq!(tb["state"], "waiting", "the second talker waits: {tb}");
            assert!(tb["packets_heard"].as_u64().unwrap_or(0) > 100, "B hears A: {tb}");
            assert_eq!(ta["packets_heard"], 0, "nothing of B's while A talks: {ta}");
        }
    }
    press(b, false);
    let (ta, tb) = (talk(a), talk(b));
    eprintln!("talkback: A {ta}\nB {tb}\nmouth to ear A -> B (ms): {lags:?}");
    assert!(ta["packets_heard"].as_u64().unwrap_or(0) > 100, "B talked once A let go: {ta}");
    assert_eq!(tb["packets_not_played"], 0, "{tb}");
    assert_eq!(tb["packets_refused"], 0, "every message of the paired box carries its tag: {tb}");
    let lag = *lags.iter().max().expect("a beep heard on B");
    assert!(lag <= 150, "mouth to ear over metro-17ms: {lags:?} ms");
}

/// Issue 36, finding 9: pairing across sites must not need the panel's port forwarded. With
/// `web.pair_listen`, box A serves another box's hello and confirmation on a port of its own,
/// and nothing of the panel there; box B types that port and pairs.
#[test]
fn the_pairing_port_pairs_and_serves_nothing_of_the_panel() {
    let _guard = serial();
    let (dir_a, dir_b) = (scratch("pair-port-a"), scratch("pair-port-b"));
    let (http_a, http_b, pair_a) = (free_tcp_port(), free_tcp_port(), free_tcp_port());
    let config_a = bridge_config(&dir_a, "studio-a", free_udp_port());
    let mut text = std::fs::read_to_string(&config_a).unwrap();
    text.push_str(&format!("[web]\npair_listen = \"127.0.0.1:{pair_a}\"\n"));
    std::fs::write(&config_a, text).unwrap();
    let config_b = bridge_config(&dir_b, "studio-b", free_udp_port());
    let _a = run_sim(&dir_a, "box", http_a, &["--config", config_a.to_str().unwrap()], &[]);
    let _b = run_sim(&dir_b, "box", http_b, &["--config", config_b.to_str().unwrap()], &[]);

    // The pairing port answers pairing and nothing else: no panel, no login, no settings.
    for (method, path) in [("GET", "/"), ("POST", "/api/session"), ("GET", "/api/status"), ("GET", "/api/config")] {
        let (status, _) = http(method, pair_a, path, Some("{}"));
        assert_eq!(status, 404, "{method} {path} on the pairing port");
    }
    let (status, body) = http("POST", pair_a, "/api/pair/hello", Some("{}"));
    assert_eq!(status, 400, "a hello that is no hello: {body}");

    let (_, body) = http("POST", http_a, "/api/pairing/open", None);
    let code = serde_json::from_str::<serde_json::Value>(&body).unwrap()["code"].as_str().unwrap().to_string();
    let (status, body) = http(
        "POST",
        http_b,
        "/api/pairing/join",
        Some(&format!(r#"{{"address": "127.0.0.1:{pair_a}", "code": "{code}"}}"#)),
    );
    assert_eq!(status, 200, "B pairs through A's pairing port: {body}");
    let a = get_json(http_a, "/api/pairing");
    assert_eq!(a["paired"]["peer"], "studio-b", "{a}");
}
