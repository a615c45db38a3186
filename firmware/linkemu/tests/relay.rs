//! The relay over real UDP sockets on loopback: what goes through it has the delay, jitter,
//! loss and rate its parameters say, measured over a few thousand packets.

#![allow(clippy::unwrap_used)] // test helpers: a failed socket call should fail the test

use std::net::SocketAddr;
use std::time::Duration;

use linkemu::{Impairment, LinkParams};
use tokio::net::UdpSocket;
use tokio::time::Instant;

async fn echo_server() -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = s.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 2048];
        while let Ok((n, from)) = s.recv_from(&mut buf).await {
            let _ = s.send_to(&buf[..n], from).await;
        }
    });
    addr
}

/// Sends `n` numbered packets every `gap` through `relay`, returns the round-trip times (ms) of
/// those that came back.
async fn ping(relay: SocketAddr, n: u32, len: usize, gap: Duration) -> Vec<f64> {
    let s = std::sync::Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    s.connect(relay).await.unwrap();
    let start = Instant::now();
    let rx = s.clone();
    let receiver = tokio::spawn(async move {
        let mut rtts = Vec::new();
        let mut buf = vec![0u8; 2048];
        while let Ok(Ok(k)) = tokio::time::timeout(Duration::from_secs(2), rx.recv(&mut buf)).await {
            let sent_us = u64::from_be_bytes(buf[4..12].try_into().unwrap());
            let now_us = start.elapsed().as_micros() as u64;
            rtts.push((now_us - sent_us) as f64 / 1000.0);
            let _ = k;
        }
        rtts
    });
    let mut ticker = tokio::time::interval(gap);
    for i in 0..n {
        ticker.tick().await;
        let mut p = vec![0u8; len];
        p[..4].copy_from_slice(&i.to_be_bytes());
        p[4..12].copy_from_slice(&(start.elapsed().as_micros() as u64).to_be_bytes());
        s.send(&p).await.unwrap();
    }
    receiver.await.unwrap()
}

/// The `q` quantile (0..=1) of `x`, nearest rank.
fn quantile(x: &[f64], q: f64) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Median and a spread that a few late wake-ups of a busy host cannot move: the interquartile
/// range over 1.349, which is the standard deviation for a normal distribution. The plain
/// standard deviation is at the mercy of one 30 ms scheduling stall of the ping tool itself.
fn median_spread(x: &[f64]) -> (f64, f64) {
    (quantile(x, 0.5), (quantile(x, 0.75) - quantile(x, 0.25)) / 1.349)
}

/// The two tests share two cores: run one at a time so that neither measures the other.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_jitter_and_loss_through_real_sockets() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let target = echo_server().await;
    let p = LinkParams {
        one_way_delay: Duration::from_millis(20),
        jitter: Duration::from_millis(3),
        loss_pct: 2.0,
        reorder: true,
        ..Default::default()
    };
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse().unwrap(),
        target,
        Impairment::new(p.clone(), vec![], 7),
        Impairment::new(p, vec![], 8),
    )
    .await
    .unwrap();
    let rtts = ping(relay.listen, 3000, 200, Duration::from_millis(2)).await;
    let (m, sd) = median_spread(&rtts);
    let loss = 1.0 - rtts.len() as f64 / 3000.0;
    eprintln!(
        "rtt median {m:.2} ms spread {sd:.2} ms (p99 {:.2} ms), loss {:.2} %, stats {:?}",
        quantile(&rtts, 0.99),
        loss * 100.0,
        relay.stats()
    );
    // 2 x 20 ms plus scheduling (tokio's 1 ms timer, more on a busy machine); the jitter of the
    // sum of two N(0, 3) is 4.2 ms. Without jitter the spread would be under 1 ms.
    assert!((40.0..45.0).contains(&m), "median rtt {m}");
    assert!((3.6..5.5).contains(&sd), "rtt spread {sd}");
    // 1 - 0.98^2 = 3.96 %.
    assert!((0.028..0.052).contains(&loss), "loss {loss}");
    let s = relay.stats();
    assert_eq!(s.forward.offered, 3000);
    assert_eq!(s.forward.delivered + s.forward.dropped_random, 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_through_real_sockets() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let target = echo_server().await;
    // Offer 1000-byte packets every 1 ms (8 Mbit/s) into a 2 Mbit/s bottleneck, forward only.
    let p = LinkParams { rate_kbps: 2000.0, queue: Duration::from_millis(50), ..Default::default() };
    let relay = linkemu::relay::start(
        "127.0.0.1:0".parse().unwrap(),
        target,
        Impairment::new(p, vec![], 9),
        Impairment::new(LinkParams::default(), vec![], 10),
    )
    .await
    .unwrap();
    let t = Instant::now();
    let rtts = ping(relay.listen, 3000, 1000, Duration::from_millis(1)).await;
    let secs = t.elapsed().as_secs_f64() - 2.0; // the receiver waits 2 s after the last packet
    let kbps = rtts.len() as f64 * 8.0 / secs;
    let s = relay.stats();
    eprintln!(
        "delivered {} of 3000 in {secs:.2} s = {kbps:.0} kbit/s, queue drops {}",
        rtts.len(),
        s.forward.dropped_queue
    );
    assert!((1700.0..2300.0).contains(&kbps), "{kbps} kbit/s through a 2000 kbit/s link");
    assert!(s.forward.dropped_queue > 1500, "{s:?}");
    // The queue holds 50 ms, the rest of the path adds a few: 99 % of the packets within 75 ms
    // (an unbounded queue would put them at hundreds), none beyond what a stall of the host
    // could add to that.
    let p99 = quantile(&rtts, 0.99);
    let max = quantile(&rtts, 1.0);
    eprintln!("rtt p99 {p99:.1} ms, max {max:.1} ms");
    assert!(p99 < 75.0, "queueing delay beyond the 50 ms buffer: p99 {p99} ms");
    assert!(max < 200.0, "queueing delay far beyond the 50 ms buffer: max {max} ms");
}
