//! The listen hook: libsrt asks it about each caller before the handshake completes, with the
//! stream id the caller sent. It admits a caller with that stream's own passphrase, or refuses
//! it with a code the caller receives and words. Several streams can so share one UDP port (the
//! telebridge's two directions, a relay's inputs). Both ends are libsrt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use telebridge_config::SrtUrl;
use telebridge_srt::listen_hook::{Admit, Listener};
use telebridge_srt::socket::Socket;
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
    let listener = Listener::new(
        Socket::new().expect("socket"),
        Arc::new(|stream: &str, _| match stream {
            "studio-a" => Admit::Accept(Some("passphrase-of-a".into())),
            "studio-b" => Admit::Accept(Some("passphrase-of-b".into())),
            _ => Admit::Reject(1404),
        }),
    )
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
    let deadline = Instant::now() + Duration::from_secs(5);
    while input.status().borrow().state != InputState::Listening && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
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

/// Issue 36, finding 2: the bridge tears its listener down at every rendezvous slot, and a
/// handshake that reached the hook of a listener being closed called freed memory. Listeners with
/// hooks that hold memory of their own open and close over and over while callers hammer the
/// port with handshakes; each hook checks that what it holds is whole. Before the drop order was
/// the type's guarantee this crashed or read garbage under the allocator's reuse; now every call
/// sees its own hook.
#[test]
fn handshakes_flood_listeners_that_open_and_close() {
    let port = free_udp_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let corrupt = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let callers: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let c = Socket::new().expect("caller");
                    let _ = c.connect(&addr);
                    std::thread::sleep(Duration::from_millis(3));
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let marker = vec![0x5au8; 4096];
        let (calls, corrupt) = (calls.clone(), corrupt.clone());
        let listener = Listener::new(
            Socket::new().expect("socket"),
            Arc::new(move |_: &str, _| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if marker.iter().any(|b| *b != 0x5a) {
                    corrupt.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Admit::Reject(1403)
            }),
        )
        .expect("hook");
        if listener.bind_listener(&addr).is_ok() && listener.listen(16).is_ok() {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(listener);
        // Memory of the same size reused at once, as the allocator would for the next hook.
        let reuse = vec![0u8; 4096];
        std::hint::black_box(&reuse);
        rounds += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in callers {
        c.join().expect("caller thread");
    }
    let calls = calls.load(std::sync::atomic::Ordering::Relaxed);
    assert!(rounds > 50, "{rounds} listeners opened and closed");
    assert!(calls > 0, "the callers reached the hooks ({calls} calls in {rounds} rounds)");
    assert_eq!(corrupt.load(std::sync::atomic::Ordering::Relaxed), 0, "a hook saw memory that was not its own");
}
