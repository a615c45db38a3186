//! The listen hook: libsrt asks it about each caller before the handshake completes, with the
//! stream id the caller sent. It admits a caller with that stream's own passphrase, or refuses
//! it with a code the caller receives and words. Several streams can so share one UDP port (the
//! telebridge's two directions, a relay's inputs). Both ends are libsrt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::SrtUrl;
use telebridge_srt::socket::{Admit, Socket};
use telebridge_srt::{InputState, OutputState, SrtInput, SrtOutput};

fn free_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.local_addr().expect("addr").port()
}

/// Waits until the output is live or has failed with a reason; returns (live, reason).
fn outcome(o: &SrtOutput) -> (bool, Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(8);
    while Instant::now() < deadline {
        let s = o.status().borrow().clone();
        if s.state == OutputState::Live {
            return (true, None);
        }
        if s.state == OutputState::Retrying {
            return (false, s.reason);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (false, Some("timed out".into()))
}

fn caller(port: u16, query: &str) -> SrtOutput {
    let url = SrtUrl::parse(&format!("srt://127.0.0.1:{port}?mode=caller{query}")).expect("url");
    SrtOutput::start("caller".into(), url, Arc::new(|| {})).expect("start")
}

#[test]
fn streams_on_one_port_each_with_its_passphrase_and_unknown_ones_refused_in_words() {
    let port = free_udp_port();
    let listener = Socket::new().expect("socket");
    let _hook = listener
        .set_listen_hook(Arc::new(|stream: &str, _| match stream {
            "studio-a" => Admit::Accept(Some("passphrase-of-a".into())),
            "studio-b" => Admit::Accept(Some("passphrase-of-b".into())),
            _ => Admit::Reject(1404),
        }))
        .expect("hook");
    listener.bind_listener(&format!("127.0.0.1:{port}").parse().expect("addr")).expect("bind");
    listener.listen(16).expect("listen");

    let a = caller(port, "&streamid=studio-a&passphrase=passphrase-of-a");
    let b = caller(port, "&streamid=studio-b&passphrase=passphrase-of-b");
    assert_eq!(outcome(&a), (true, None), "studio-a with its passphrase");
    assert_eq!(outcome(&b), (true, None), "studio-b with its passphrase");
    let mut accepted = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while accepted.len() < 2 && Instant::now() < deadline {
        match listener.accept().expect("accept") {
            Some((s, _)) => accepted.push(s.stream_id()),
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    accepted.sort();
    assert_eq!(accepted, vec![Some("studio-a".to_string()), Some("studio-b".to_string())]);

    let crossed = caller(port, "&streamid=studio-a&passphrase=passphrase-of-b");
    let (live, reason) = outcome(&crossed);
    assert!(!live);
    assert_eq!(reason.as_deref(), Some("passphrase rejected: the two ends have different passphrases"));
    let unknown = caller(port, "&streamid=studio-z&passphrase=passphrase-of-a");
    let (live, reason) = outcome(&unknown);
    assert!(!live);
    assert_eq!(reason.as_deref(), Some("connection rejected: no such stream at the listener"));
    for o in [a, b, crossed, unknown] {
        o.stop();
    }
}

#[test]
fn a_second_sender_is_refused_while_the_first_one_sends() {
    let port = free_udp_port();
    let url = SrtUrl::parse(&format!("srt://:{port}?mode=listener")).expect("url");
    let input = SrtInput::start(url, Arc::new(|_: &[u8]| {})).expect("input");
    std::thread::sleep(Duration::from_millis(300));
    let first = caller(port, "");
    assert_eq!(outcome(&first), (true, None));
    // The first one sends; the input receives.
    let deadline = Instant::now() + Duration::from_secs(5);
    while input.status().borrow().state != InputState::Receiving && Instant::now() < deadline {
        first.send(&[0x47; 1316]);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(input.status().borrow().state, InputState::Receiving);
    let feeding = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        s.spawn(|| {
            while feeding.load(std::sync::atomic::Ordering::Relaxed) {
                first.send(&[0x47; 1316]);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let second = caller(port, "");
        let (live, reason) = outcome(&second);
        feeding.store(false, std::sync::atomic::Ordering::Relaxed);
        assert!(!live);
        assert_eq!(
            reason.as_deref(),
            Some("connection rejected: the listener's stream is taken (another sender is connected)")
        );
        second.stop();
    });
    first.stop();
    input.stop();
}
