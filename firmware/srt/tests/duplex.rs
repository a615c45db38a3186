//! Both directions on one SRT connection, on loopback, through libsrt on both ends: what the
//! telebridge (two boxes, each sending its picture and receiving the other's, one UDP port)
//! stands on. srt-live-transmit and ffmpeg send one way per connection, so both ends here are
//! ours; libsrt's own counters on each end prove the one socket carried both streams.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::SrtUrl;
use telebridge_srt::output::Receiver;
use telebridge_srt::{OutputState, SrtOutput};

fn free_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.local_addr().expect("addr").port()
}

fn collector() -> (Receiver, mpsc::Receiver<Vec<u8>>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let f: Receiver = Arc::new(move |d: &[u8]| {
        let _ = tx.lock().expect("lock").send(d.to_vec());
    });
    (f, rx)
}

fn wait_live(o: &SrtOutput) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if o.status().borrow().state == OutputState::Live {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A message of `len` bytes: `tag`, then the sequence number, then filler.
fn message(tag: u8, seq: u32) -> Vec<u8> {
    let mut m = vec![tag; 1316];
    m[1..5].copy_from_slice(&seq.to_be_bytes());
    m
}

fn both_ways(query: &str) {
    let port = free_udp_port();
    let noop: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
    let (on_a, from_b) = collector();
    let (on_b, from_a) = collector();
    let a = SrtOutput::start_duplex(
        "a".into(),
        SrtUrl::parse(&format!("srt://:{port}?mode=listener{query}")).expect("url"),
        noop.clone(),
        Some(on_a),
    )
    .expect("listener");
    let b = SrtOutput::start_duplex(
        "b".into(),
        SrtUrl::parse(&format!("srt://127.0.0.1:{port}?mode=caller{query}")).expect("url"),
        noop,
        Some(on_b),
    )
    .expect("caller");
    assert!(wait_live(&a) && wait_live(&b), "not connected: {:?} / {:?}", a.status().borrow(), b.status().borrow());
    for seq in 0..200u32 {
        a.send(&message(b'A', seq));
        b.send(&message(b'B', seq));
        std::thread::sleep(Duration::from_millis(5));
    }
    let collect = |rx: &mpsc::Receiver<Vec<u8>>| {
        let mut got = Vec::new();
        while let Ok(m) = rx.recv_timeout(Duration::from_secs(2)) {
            got.push(m);
            if got.len() == 200 {
                break;
            }
        }
        got
    };
    let at_b = collect(&from_a);
    let at_a = collect(&from_b);
    assert_eq!(at_b.len(), 200, "the caller received {} of the listener's 200 messages", at_b.len());
    assert_eq!(at_a.len(), 200, "the listener received {} of the caller's 200 messages", at_a.len());
    assert!(at_b.iter().enumerate().all(|(i, m)| *m == message(b'A', i as u32)), "the caller got other bytes");
    assert!(at_a.iter().enumerate().all(|(i, m)| *m == message(b'B', i as u32)), "the listener got other bytes");
    // One connection each way round: each end's libsrt counted both directions on it (the
    // status is refreshed every 200 ms).
    let counted = |o: &SrtOutput| {
        let s = o.status().borrow().clone();
        s.callers == 1 && s.srt.packets_sent >= 200 && s.srt.packets_received >= 200
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(counted(&a) && counted(&b)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (sa, sb) = (a.status().borrow().clone(), b.status().borrow().clone());
    assert_eq!((sa.callers, sb.callers), (1, 1));
    // The same counters on demand, between two status refreshes.
    let now = b.stats_now();
    assert_eq!(now.len(), 1);
    assert!(now[0].1.packets_sent >= 200 && now[0].1.packets_received >= 200, "{now:?}");
    for s in [&sa, &sb] {
        assert!(s.srt.packets_sent >= 200 && s.srt.packets_received >= 200, "{}: {:?}", s.name, s.srt);
        assert_eq!(s.srt.packets_undecrypted, 0, "{}: {:?}", s.name, s.srt);
    }
    a.stop();
    b.stop();
}

#[test]
fn one_connection_carries_both_directions() {
    both_ways("");
}

#[test]
fn one_encrypted_connection_carries_both_directions() {
    both_ways("&passphrase=both-ways-secret&pbkeylen=32");
}
