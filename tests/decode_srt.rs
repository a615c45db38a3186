//! The decoder role against real senders: ffmpeg, srt-live-transmit (with AES-256) and our own
//! encoder, on loopback. The decoder runs headless (`--sink fake`) and reports what a viewer
//! would see in its `--stats json` lines.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

fn lines(p: &std::path::Path) -> Vec<serde_json::Value> {
    json_lines(p).into_iter().filter(|l| l.get("t").is_some()).collect()
}

/// Done-when 1: ffmpeg's x264 + AAC over SRT into our listener: at least 90 % of the frames sent
/// are decoded, at 1280x720, with audio.
#[test]
fn decodes_ffmpeg() {
    let _serial = serial();
    let dir = scratch("dec-ffmpeg");
    let port = free_udp_port();
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener"), &["--duration", "14s"]);
    wait_udp_bound(port, "the decoder");
    let mut cmd = Command::new("ffmpeg");
    cmd.args([
        "-nostdin",
        "-loglevel",
        "error",
        "-re",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=1280x720:rate=30",
        "-f",
        "lavfi",
        "-i",
        "sine",
    ])
    .args(["-t", "8", "-c:v", "libx264", "-tune", "zerolatency", "-c:a", "aac", "-f", "mpegts"])
    .arg(format!("srt://127.0.0.1:{port}?mode=caller"));
    let mut tx = Proc::spawn(cmd, &dir, "ffmpeg");
    assert!(tx.wait_timeout(Duration::from_secs(20)).expect("ffmpeg ends").success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let s = summary(&dir.join("decoder.stdout"));
    eprintln!("{}", s["decoder"]);
    let frames = s["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    assert!(frames >= 216, "decoded {frames} of 240 frames");
    assert_eq!((s["decoder"]["width"].as_u64(), s["decoder"]["height"].as_u64()), (Some(1280), Some(720)));
    assert!(s["decoder"]["audio_frames"].as_u64().unwrap_or(0) > 300, "audio: {}", s["decoder"]);
}

/// Done-when 2: srt-live-transmit as the sender of a TS file, encrypted with AES-256.
#[test]
fn decodes_srt_live_transmit_with_aes256() {
    let _serial = serial();
    let dir = scratch("dec-slt");
    let file = dir.join("source.ts");
    let made = Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1280x720:rate=30",
            "-f",
            "lavfi",
            "-i",
            "sine",
            "-t",
            "6",
        ])
        .args(["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-c:a", "aac", "-f", "mpegts"])
        .arg(&file)
        .status()
        .expect("ffmpeg makes the source file");
    assert!(made.success());
    let port = free_udp_port();
    let pass = "decoder-aes-256-pass";
    let mut dec = decoder(
        &dir,
        "decoder",
        &format!("srt://:{port}?mode=listener&passphrase={pass}&pbkeylen=32"),
        &["--duration", "12s"],
    );
    wait_udp_bound(port, "the decoder");
    // ffmpeg -re paces the file in real time into srt-live-transmit's stdin; srt-live-transmit
    // does not exit at the end of its input, so it gets 9 s.
    let sh = format!(
        "ffmpeg -nostdin -loglevel error -re -i {} -c copy -f mpegts - | timeout 9 srt-live-transmit -q file://con 'srt://127.0.0.1:{port}?mode=caller&passphrase={pass}&pbkeylen=32'",
        file.display()
    );
    let status = Command::new("sh").args(["-c", &sh]).stdin(Stdio::null()).status().expect("run the sender");
    assert!(matches!(status.code(), Some(0) | Some(124)), "sender: {status:?}");
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let s = summary(&dir.join("decoder.stdout"));
    let frames = s["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    assert!(frames >= 162, "decoded {frames} of 180 frames: {s}");
    assert!(s["decoder"]["audio_frames"].as_u64().unwrap_or(0) > 200);
    let all = std::fs::read_to_string(dir.join("decoder.stdout")).unwrap_or_default()
        + &std::fs::read_to_string(dir.join("decoder.stderr")).unwrap_or_default();
    assert!(!all.contains(pass), "the passphrase appeared in the decoder's output");
}

/// Done-when 3: our encoder to our decoder: the meter reports a latency of at least the SRT
/// latency and within a sane bound.
#[test]
fn latency_meter_reads_our_timecode() {
    let _serial = serial();
    let dir = scratch("dec-latency");
    let port = free_udp_port();
    let latency_ms = 200.0;
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener&latency=200"), &["--duration", "10s"]);
    wait_udp_bound(port, "the decoder");
    let mut enc =
        encoder(&dir, "encoder", &[&format!("srt://127.0.0.1:{port}?mode=caller&latency=200")], &["--duration", "7s"]);
    assert!(enc.wait_timeout(Duration::from_secs(20)).expect("encoder ends").success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let s = summary(&dir.join("decoder.stdout"));
    let l = &s["latency"];
    eprintln!("configured SRT latency {latency_ms} ms; measured glass-to-glass {l}");
    let p50 = l["p50_ms"].as_f64().expect("latency measured");
    assert!(l["samples"].as_u64().unwrap_or(0) >= 150, "{l}");
    assert!(p50 >= latency_ms, "p50 {p50} ms is below the configured SRT latency");
    assert!(p50 < latency_ms + 500.0, "p50 {p50} ms");
    assert_eq!(s["decoder"]["frames_missing"], 0, "{s}");
}

/// Done-when 4: the sender killed: the slate within 1 s; the sender back: decoded frames within
/// 2 s, in the same decoder process.
#[test]
fn slate_on_loss_and_picture_back_on_return() {
    let _serial = serial();
    let dir = scratch("dec-slate");
    let port = free_udp_port();
    let mut dec =
        decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener"), &["--duration", "16s", "--name", "studio-b"]);
    wait_udp_bound(port, "the decoder");
    let enc = encoder(&dir, "encoder1", &[&format!("srt://127.0.0.1:{port}?mode=caller")], &[]);
    let stdout = dir.join("decoder.stdout");
    let last = |key: &str, field: &str| lines(&stdout).last().map(|l| l[key][field].clone()).unwrap_or_default();
    let playing = wait_for(Duration::from_secs(15), || last("decoder", "frames_decoded").as_u64().unwrap_or(0) >= 100);
    assert!(playing.is_some(), "the decoder did not decode 100 frames in 15 s");
    let killed = unix_ms();
    enc.signal("KILL");
    drop(enc);
    let slate = wait_for(Duration::from_secs(5), || last("display", "showing") == "slate");
    assert!(slate.is_some(), "no slate within 5 s of the sender's end");
    let restarted = unix_ms();
    let mut enc2 = encoder(&dir, "encoder2", &[&format!("srt://127.0.0.1:{port}?mode=caller")], &["--duration", "5s"]);
    assert!(enc2.wait_timeout(Duration::from_secs(20)).expect("encoder ends").success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let ls = lines(&dir.join("decoder.stdout"));
    let slate_on = ls
        .iter()
        .filter_map(|l| l["display"]["slate_since_unix_ms"].as_u64())
        .find(|t| *t >= killed)
        .expect("slate after the kill");
    let video_on = ls
        .iter()
        .filter_map(|l| l["display"]["video_since_unix_ms"].as_u64())
        .find(|t| *t >= restarted)
        .expect("picture after the restart");
    eprintln!("slate {} ms after the kill; picture {} ms after the restart", slate_on - killed, video_on - restarted);
    assert!(slate_on - killed <= 1000, "slate came {} ms after the kill", slate_on - killed);
    assert!(video_on - restarted <= 2000, "picture came {} ms after the restart", video_on - restarted);
    let during = ls.iter().find(|l| {
        l["display"]["showing"] == "slate" && l["display"]["slate_since_unix_ms"].as_u64().is_some_and(|t| t >= killed)
    });
    let during = during.expect("a stats line while the slate showed");
    let text = during["display"]["slate"].as_str().unwrap_or("");
    assert!(text.starts_with("studio-b\nNo picture: listening for an SRT caller on port"), "{text}");
    let s = summary(&dir.join("decoder.stdout"));
    assert!(s["decoder"]["frames_decoded"].as_u64().unwrap_or(0) > 200, "{s}");
}

/// Done-when 5: a wrong passphrase: the stats and the slate say it was rejected.
#[test]
fn wrong_passphrase_is_on_the_slate() {
    let _serial = serial();
    let dir = scratch("dec-badpass");
    let port = free_udp_port();
    let mut dec = decoder(
        &dir,
        "decoder",
        &format!("srt://:{port}?mode=listener&passphrase=decoder-side-pass"),
        &["--duration", "6s"],
    );
    wait_udp_bound(port, "the decoder");
    let _enc = encoder(
        &dir,
        "encoder",
        &[&format!("srt://127.0.0.1:{port}?mode=caller&passphrase=encoder-side-pass")],
        &["--duration", "5s"],
    );
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let ls = lines(&dir.join("decoder.stdout"));
    let line = ls.iter().find(|l| l["input"]["reason"].as_str().is_some_and(|r| r.contains("passphrase rejected")));
    let line = line.unwrap_or_else(|| panic!("no rejection in the stats: {ls:?}"));
    assert_eq!(line["display"]["showing"], "slate");
    assert!(line["display"]["slate"].as_str().unwrap_or("").contains("passphrase rejected"), "{line}");
}

/// Done-when 6: joining a stream that has run for 10 s decodes from the next keyframe.
#[test]
fn joins_a_running_stream() {
    let _serial = serial();
    let dir = scratch("dec-join");
    let port = free_udp_port();
    let mut enc = encoder(
        &dir,
        "encoder",
        &[&format!("srt://:{port}?mode=listener")],
        &["--duration", "16s", "--keyframe-ms", "2000"],
    );
    // The decoder joins a stream ten seconds old (the scenario, not a wait for readiness).
    std::thread::sleep(Duration::from_secs(10));
    let joined = unix_ms();
    let mut dec = decoder(&dir, "decoder", &format!("srt://127.0.0.1:{port}?mode=caller"), &["--duration", "5s"]);
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let ls = lines(&dir.join("decoder.stdout"));
    let video_on = ls.iter().filter_map(|l| l["display"]["video_since_unix_ms"].as_u64()).next().expect("a picture");
    eprintln!("picture {} ms after joining", video_on - joined);
    assert!(video_on - joined <= 3000, "picture {} ms after joining", video_on - joined);
    let s = summary(&dir.join("decoder.stdout"));
    assert!(s["decoder"]["frames_decoded"].as_u64().unwrap_or(0) >= 90, "{s}");
    enc.signal("INT");
    let _ = enc.wait_timeout(Duration::from_secs(10));
}

/// Round trip: box B decodes and, with --loop-to, re-encodes what it shows back to box A, whose
/// decoder measures A -> B -> A on one clock: at least both SRT latencies.
#[test]
fn loop_to_measures_the_round_trip() {
    let _serial = serial();
    let dir = scratch("dec-loop");
    let (port_a, port_b) = (free_udp_port(), free_udp_port());
    let mut a_dec =
        decoder(&dir, "a-decoder", &format!("srt://:{port_a}?mode=listener&latency=120"), &["--duration", "13s"]);
    let mut b = decoder(
        &dir,
        "b-decoder",
        &format!("srt://:{port_b}?mode=listener&latency=120"),
        &["--duration", "12s", "--loop-to", &format!("srt://127.0.0.1:{port_a}?latency=120")],
    );
    wait_udp_bound(port_b, "the decoder");
    let mut a_enc =
        encoder(&dir, "a-encoder", &[&format!("srt://127.0.0.1:{port_b}?latency=120")], &["--duration", "9s"]);
    assert!(a_enc.wait_timeout(Duration::from_secs(20)).expect("encoder ends").success());
    assert!(b.wait_timeout(Duration::from_secs(20)).expect("box B ends").success());
    assert!(a_dec.wait_timeout(Duration::from_secs(20)).expect("box A's decoder ends").success());
    let s = summary(&dir.join("a-decoder.stdout"));
    let l = &s["latency"];
    eprintln!("A -> B -> A with 2 x 120 ms SRT latency: {l}");
    let p50 = l["p50_ms"].as_f64().expect("round trip measured");
    assert!(l["samples"].as_u64().unwrap_or(0) >= 150, "{l}");
    assert!((240.0..1240.0).contains(&p50), "round trip p50 {p50} ms");
    let b_lines = lines(&dir.join("b-decoder.stdout"));
    assert!(b_lines.iter().any(|l| l["loop_output"]["state"] == "live"), "box B's loop output never went live");
}

/// A stream whose resolution changes mid-way (640x360, then 1280x720 on the same connection)
/// keeps playing; the picture also goes to a file sink that ffprobe can read.
#[test]
fn resolution_change_keeps_playing_and_file_sink_records_it() {
    let _serial = serial();
    let dir = scratch("dec-reschange");
    for (name, size) in [("small", "640x360"), ("large", "1280x720")] {
        let ok = Command::new("ffmpeg")
            .args([
                "-nostdin",
                "-loglevel",
                "error",
                "-f",
                "lavfi",
                "-i",
                &format!("testsrc2=size={size}:rate=30"),
                "-t",
                "4",
            ])
            .args(["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "mpegts"])
            .arg(dir.join(format!("{name}.ts")))
            .status()
            .expect("ffmpeg makes a segment");
        assert!(ok.success());
    }
    let port = free_udp_port();
    let shown = dir.join("shown.mkv");
    let sink = format!("file:{}", shown.display());
    let mut dec =
        decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener"), &["--duration", "13s", "--sink", &sink]);
    wait_udp_bound(port, "the decoder");
    let sh = format!(
        "ffmpeg -nostdin -loglevel error -re -i 'concat:{}|{}' -c copy -f mpegts 'srt://127.0.0.1:{port}?mode=caller'",
        dir.join("small.ts").display(),
        dir.join("large.ts").display()
    );
    let status = Command::new("sh").args(["-c", &sh]).stdin(Stdio::null()).status().expect("run the sender");
    assert!(status.success());
    assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
    let ls = lines(&dir.join("decoder.stdout"));
    let widths: Vec<u64> = ls.iter().filter_map(|l| l["decoder"]["width"].as_u64()).filter(|w| *w > 0).collect();
    assert!(widths.contains(&640) && widths.last() == Some(&1280), "widths seen: {widths:?}");
    let s = summary(&dir.join("decoder.stdout"));
    let frames = s["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    assert!(frames >= 216, "decoded {frames} of 240 frames across the change");
    let first_large = ls.iter().find(|l| l["decoder"]["width"] == 1280).expect("a line at 1280x720");
    assert_eq!(first_large["input"]["reconnects"], 0, "the change must not need a new connection: {first_large}");
    let recorded = ffprobe_streams(&shown);
    assert!(recorded.iter().any(|st| st.codec == "h264" && st.width == 1280 && st.height == 720), "{recorded:?}");
    assert!(decodable_frames(&shown) >= 100, "the file sink recorded too little");
}

/// Sends `codec` video (and AC-3 audio) from ffmpeg for `secs` seconds to `port`.
fn ffmpeg_sends(dir: &std::path::Path, name: &str, port: u16, codec: &str, secs: u32) -> Proc {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"])
        .args(["-f", "lavfi", "-i", "sine", "-t", &secs.to_string(), "-c:v", codec])
        .args(["-c:a", "ac3", "-f", "mpegts"])
        .arg(format!("srt://127.0.0.1:{port}?mode=caller"));
    if codec == "libx265" {
        cmd.args(["-x265-params", "log-level=error"]);
    }
    Proc::spawn(cmd, dir, name)
}

/// Issue 17, finding 6: a stream the box cannot decode (H.265, MPEG-2) or bytes that are not
/// MPEG-TS are named on the slate and in the stats, the decoder is not rebuilt over and over,
/// and the slate no longer says it waits for a caller while one is connected.
#[test]
fn unsupported_video_and_bytes_that_are_not_ts_are_named_without_churn() {
    let _serial = serial();
    let dir = scratch("dec-unsupported");
    for (codec, words) in [("libx265", "video H.265 (HEVC)"), ("mpeg2video", "video MPEG-2"), ("random", "not MPEG-TS")]
    {
        let port = free_udp_port();
        let name = format!("decoder-{codec}");
        let mut dec = decoder(&dir, &name, &format!("srt://:{port}?mode=listener"), &["--duration", "9s"]);
        wait_udp_bound(port, "the decoder");
        let tx = if codec == "random" {
            // srt-live-transmit sends what it reads: random bytes at about 1 Mbit/s, 1316 to a packet.
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(format!(
                "python3 -c 'import os, sys, time\nwhile True:\n    sys.stdout.buffer.write(os.urandom(13160)); sys.stdout.flush(); time.sleep(0.1)' \
                 | srt-live-transmit -q file://con 'srt://127.0.0.1:{port}?mode=caller'"
            ));
            Proc::spawn(cmd, &dir, "slt-random")
        } else {
            ffmpeg_sends(&dir, &format!("ffmpeg-{codec}"), port, codec, 7)
        };
        assert!(dec.wait_timeout(Duration::from_secs(20)).expect("decoder ends").success());
        tx.signal("KILL");
        // The shell's pipeline (python3 | srt-live-transmit) outlives the shell: end it too.
        let _ = Command::new("pkill").args(["-f", &format!("127.0.0.1:{port}[?]mode=caller")]).status();
        let samples = lines(&dir.join(format!("{name}.stdout")));
        let named =
            samples.iter().filter(|l| l["decoder"]["problem"].as_str().is_some_and(|p| p.contains(words))).count();
        let slate = samples
            .iter()
            .rev()
            .find(|l| l["input"]["state"] == "receiving")
            .map(|l| l["display"]["slate"].as_str().unwrap_or("").to_string())
            .unwrap_or_default();
        let log = std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap();
        let warnings = log.lines().filter(|l| l.contains("WARN")).count();
        eprintln!("{codec}: {named} samples name '{words}'; slate while receiving: {slate:?}; {warnings} WARN lines");
        assert!(named >= 3, "{codec}: the problem was named in {named} samples; see {}", dir.display());
        assert!(slate.contains(words), "{codec}: the slate says {slate:?}");
        assert!(!slate.contains("listening for an SRT caller"), "{codec}: {slate:?}");
        assert!(warnings <= 4, "{codec}: {warnings} WARN lines in 9 s:\n{log}");
        assert_eq!(samples.iter().map(|l| l["decoder"]["frames_decoded"].as_u64().unwrap_or(0)).max(), Some(0));
    }
}

/// Issue 12: the decoder's statistics are libsrt's own receiver counters. Over a link that loses
/// 8 % and whose round trip (120 ms) is longer than the SRT latency (60 ms), some retransmissions
/// come too late: libsrt gives those packets up, and the decoder's stats say so (receiver drops),
/// with the packets found missing, the receive buffer in ms, and our own TS continuity check
/// agreeing that something was lost for good.
#[test]
fn decoder_stats_carry_libsrts_receiver_drops_and_buffer() {
    let _serial = serial();
    let dir = scratch("dec-receiver-drops");
    let port = free_udp_port();
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener&latency=60"), &["--duration", "14s"]);
    wait_udp_bound(port, "the decoder");
    let profiles = linkemu::Profiles::parse(
        "[[profile]]\nname = \"lossy\"\nsource = \"test\"\nrtt_ms = 120\njitter_ms = 0\nloss_pct = 8.0\nrate_kbps = 0\n",
    )
    .expect("profile");
    let params = profiles.get("lossy").expect("lossy").params();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let relay = rt
        .block_on(linkemu::relay::start(
            "127.0.0.1:0".parse().expect("addr"),
            format!("127.0.0.1:{port}").parse().expect("addr"),
            linkemu::Impairment::new(params.clone(), vec![], 1),
            linkemu::Impairment::new(params, vec![], 2),
        ))
        .expect("start the link");
    let sender = ffmpeg_sends(&dir, "ffmpeg", relay.listen.port(), "libx264", 8);
    assert!(dec.wait_timeout(Duration::from_secs(30)).expect("decoder exits").success());
    drop(sender);
    let lines = json_lines(&dir.join("decoder.stdout"));
    let receiving: Vec<&serde_json::Value> = lines.iter().filter(|l| l["input"]["state"] == "receiving").collect();
    let buffer_ms = receiving.iter().filter_map(|l| l["input"]["srt"]["receive_buffer_ms"].as_i64()).max().unwrap_or(0);
    let s = summary(&dir.join("decoder.stdout"));
    let srt = &s["input"]["srt"];
    eprintln!("decoder's SRT counters at the end: {srt}; receive buffer up to {buffer_ms} ms");
    assert!(!receiving.is_empty(), "nothing was received; see {}", dir.display());
    let (lost, dropped) =
        (srt["packets_received_lost"].as_i64().unwrap_or(0), srt["packets_received_dropped"].as_i64().unwrap_or(0));
    assert!(lost > 0, "an 8 % lossy link and no loss counted: {srt}");
    assert!(dropped > 0, "retransmissions later than the latency and no receiver drop: {srt}");
    assert!(buffer_ms > 0, "the receive buffer was never reported");
    assert!(s["input"]["ts_continuity_errors"].as_u64().unwrap_or(0) > 0, "the TS check saw no loss: {}", s["input"]);
}

/// Issue 12: ffmpeg calls the decoder with AES-192 and a stream id: the decoder's listener (on
/// libsrt) decrypts it, plays it, and names the stream id the sender gave.
#[test]
fn ffmpeg_calls_with_aes_192_and_a_stream_id() {
    let _serial = serial();
    let dir = scratch("dec-aes192-streamid");
    let port = free_udp_port();
    let pass = "aes-192-passphrase";
    let mut dec = decoder(
        &dir,
        "decoder",
        &format!("srt://:{port}?mode=listener&passphrase={pass}&pbkeylen=24"),
        &["--duration", "10s"],
    );
    wait_udp_bound(port, "the decoder");
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"])
        .args(["-t", "6", "-c:v", "libx264", "-f", "mpegts"])
        .arg(format!("srt://127.0.0.1:{port}?mode=caller&passphrase={pass}&pbkeylen=24&streamid=#!::r=live/cam1"));
    let sender = Proc::spawn(cmd, &dir, "ffmpeg");
    assert!(dec.wait_timeout(Duration::from_secs(30)).expect("decoder exits").success());
    drop(sender);
    let lines = json_lines(&dir.join("decoder.stdout"));
    let named = lines.iter().find(|l| l["input"]["state"] == "receiving").map(|l| l["input"]["stream_id"].clone());
    let s = summary(&dir.join("decoder.stdout"));
    let frames = s["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    eprintln!("stream id while receiving: {named:?}; frames decoded: {frames}");
    assert!(frames > 50, "{frames} frames decoded; see {}", dir.display());
    assert_eq!(named, Some(serde_json::json!("#!::r=live/cam1")), "see {}", dir.display());
    assert_eq!(s["input"]["srt"]["packets_undecrypted"], 0, "{}", s["input"]);
}

/// Issue 12: GStreamer's own `srtsink` as the sender (a caller) into the decoder's listener, now
/// that the decoder's SRT is libsrt itself: the two must meet as any two SRT ends do.
#[test]
fn decodes_gstreamer_srtsink() {
    let _serial = serial();
    let dir = scratch("dec-srtsink");
    let port = free_udp_port();
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener"), &["--duration", "10s"]);
    wait_udp_bound(port, "the decoder");
    let mut cmd = Command::new("gst-launch-1.0");
    cmd.args([
        "-q",
        "videotestsrc",
        "is-live=true",
        "num-buffers=150",
        "!",
        "video/x-raw,width=640,height=360,framerate=25/1",
    ])
    .args(["!", "x264enc", "tune=zerolatency", "key-int-max=25", "!", "h264parse", "!", "mpegtsmux", "alignment=7"])
    .args(["!", "srtsink", &format!("uri=srt://127.0.0.1:{port}?mode=caller"), "wait-for-connection=true"]);
    let sender = Proc::spawn(cmd, &dir, "srtsink");
    assert!(dec.wait_timeout(Duration::from_secs(30)).expect("decoder exits").success());
    drop(sender);
    let s = summary(&dir.join("decoder.stdout"));
    let frames = s["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    eprintln!("frames decoded from srtsink: {frames}; input at exit: {}", s["input"]);
    assert!(frames >= 100, "{frames} frames of 150; see {}", dir.display());
}
