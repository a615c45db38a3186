//! The SRT latency follows the link: our encoder calls our decoder with `latency=auto` through
//! the link emulator (60 ms round trip), whose loss is 0.5 % on the first two connections and
//! 5 % on the third; an outage of 4 s breaks each connection. Before each connection the
//! encoder chooses from what the last one measured (the SRT deployment guide's table: 3 x RTT up
//! to 1 % loss, 5 x up to 7 %), says why in its status, and the decoder loses no frame for good
//! on the lossy connection once it is 3 s old. The decoder listens with the least latency, so
//! the caller's choice is what SRT uses (it takes the larger of the two).
//!
//! At a fixed bitrate: this is SRT's recovery within the latency chosen, and nothing else. With
//! the adaptive bitrate (the default) the same link gave up about one packet in 9,000 (7 runs of
//! 70 s at 5 % loss and a pinned 313 ms: 0-2 each), at a fixed 1.5 or 4 Mbit/s none in 134,000
//! (6 runs): the rate law reads a lost packet's resend lost again, which holds SRT's cumulative
//! ACK back, as a queue, cuts to its floor every few seconds with the round trip flat, and its
//! drop cap then holds resends behind new packets (libsrt 1.5.1 sends a waiting original
//! first). That is the rate law's to fix (issue 62's closing note), not this test's.
//!
//! Why not from its first second: libsrt's receiver sends its first periodic loss report up to
//! 300 ms after a loss (its NAK interval starts at 300 ms and is set from the RTT only once one
//! was sent), so a resend lost again in that first cycle arrives after ~360 ms, too late for
//! 312 ms. Seen on the wire with srt-live-transmit as the receiver (a raw capture: a packet
//! resent 86 ms after it was sent, lost again, resent at 361 ms, dropped).

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

mod support;

use std::time::Duration;

use support::*;

/// One connection as the encoder's status showed it: first t seen, first t live, latency ms,
/// reason.
#[derive(Debug, Clone)]
struct Conn {
    t: f64,
    live_t: Option<f64>,
    latency_ms: u64,
    negotiated_ms: i64,
    reason: String,
}

#[test]
fn the_latency_is_chosen_again_at_each_connection_from_the_loss_the_last_one_measured() {
    let _serial = serial();
    let dir = scratch("latency-follows");
    let port = free_udp_port();
    let mut dec = decoder(&dir, "decoder", &format!("srt://:{port}?mode=listener&latency=40"), &["--duration", "70s"]);
    wait_udp_bound(port, "the decoder");
    let link = linkemu::LinkParams {
        one_way_delay: Duration::from_millis(30),
        loss_pct: 0.5,
        queue: Duration::from_millis(250),
        ..Default::default()
    };
    let event = |at_s: f64, for_s: f64, loss_pct: f64| linkemu::impairment::LinkEvent {
        at_s,
        for_s,
        rtt_ms: None,
        jitter_ms: None,
        loss_pct: Some(loss_pct),
        rate_kbps: None,
    };
    // Outages at 12 s and 34 s; 5 % loss from 22 s (the second connection's last 10 s).
    let events =
        vec![event(12.0, 4.0, 100.0), event(22.0, 12.0, 5.0), event(34.0, 4.0, 100.0), event(38.0, 100.0, 5.0)];
    let (_runtime, relay) = link_to(port, link, events, None);
    let mut enc = encoder(
        &dir,
        "encoder",
        &[&format!("srt://127.0.0.1:{}?latency=auto", relay.listen.port())],
        &["--size", "640x360", "--bitrate-kbps", "1500", "--bitrate-mode", "fixed", "--duration", "62s"],
    );
    let status = enc.wait_timeout(Duration::from_secs(120)).expect("the encoder stops after --duration");
    assert!(status.success(), "encoder: {}", std::fs::read_to_string(dir.join("encoder.stderr")).unwrap_or_default());
    dec.wait_timeout(Duration::from_secs(20));
    drop(relay);

    let lines = json_lines(&dir.join("encoder.stdout"));
    let mut conns: Vec<Conn> = Vec::new();
    for l in &lines {
        let (Some(t), Some(o)) = (l["t"].as_f64(), l["outputs"].as_array().and_then(|o| o.first())) else { continue };
        let (Some(ms), Some(reason)) = (o["latency"]["latency_ms"].as_u64(), o["latency"]["reason"].as_str()) else {
            continue;
        };
        let negotiated = o["srt"]["negotiated_latency_ms"].as_i64().unwrap_or(0);
        match conns.last_mut() {
            Some(c) if c.reason == reason => {
                if o["state"] == "live" {
                    c.negotiated_ms = c.negotiated_ms.max(negotiated);
                    c.live_t.get_or_insert(t);
                }
            }
            _ => {
                let live = o["state"] == "live";
                conns.push(Conn {
                    t,
                    live_t: live.then_some(t),
                    latency_ms: ms,
                    negotiated_ms: if live { negotiated } else { 0 },
                    reason: reason.to_string(),
                })
            }
        }
    }
    for c in &conns {
        eprintln!("{:5.1} s  {} ms (negotiated {} ms)  {}", c.t, c.latency_ms, c.negotiated_ms, c.reason);
    }
    assert!(conns.len() >= 3, "fewer than three choices: {conns:?}");
    assert_eq!(conns[0].reason, "120 ms until the link is measured");
    // The second connection rests on the first's 0.5 %: three round trips of about 60 ms.
    let second = &conns[1];
    assert!(second.reason.contains(": 3 x RTT = "), "{second:?}");
    assert!((160..=240).contains(&second.latency_ms), "{second:?}");
    // The last rests on 5 %: five round trips, and SRT uses it.
    let last = conns.last().unwrap();
    assert!(last.reason.contains(": 5 x RTT = "), "{last:?}");
    assert!((270..=400).contains(&last.latency_ms), "{last:?}");
    assert_eq!(last.negotiated_ms, last.latency_ms as i64, "SRT did not take the choice: {last:?}");

    // No frame lost for good on the last connection, from 3 s after it went live to the end: the
    // decoder's count of frames missing between consecutive timecodes.
    // On the decoder's clock: each process counts `t` from its own start, and the decoder starts
    // first (by a second or more on a loaded machine), so the encoder's `t` would open the
    // window early, inside the first NAK cycle this test leaves out. The last connection is the
    // decoder input's last turn to receiving.
    let dec_lines = json_lines(&dir.join("decoder.stdout"));
    let missing = |l: &serde_json::Value| l["decoder"]["frames_missing"].as_u64();
    let decoded = |l: &serde_json::Value| l["decoder"]["frames_decoded"].as_u64().unwrap_or(0);
    let receiving = |l: &serde_json::Value| l["input"]["state"] == "receiving";
    let dec_live = dec_lines
        .windows(2)
        .filter(|w| !receiving(&w[0]) && receiving(&w[1]))
        .filter_map(|w| w[1]["t"].as_f64())
        .next_back()
        .expect("the decoder received the last connection");
    let enc_live = last.live_t.expect("the last connection went live");
    eprintln!("the last connection live at {enc_live:.1} s on the encoder's clock, {dec_live:.1} s on the decoder's");
    let last_start = dec_live + 3.0;
    let during: Vec<&serde_json::Value> =
        dec_lines.iter().filter(|l| l["t"].as_f64().is_some_and(|t| t >= last_start)).collect();
    let (first, end) = (during.first().copied(), during.last().copied());
    let (Some(first), Some(end)) = (first, end) else { panic!("no decoder line after {last_start} s") };
    assert!(decoded(end) > decoded(first) + 300, "the last connection carried too little: {first} .. {end}");
    assert_eq!(missing(first), missing(end), "frames lost for good at 5 % loss with {} ms", last.latency_ms);
}
