//! What the bonding receiver's address (or anyone who can send from it) sends a bonding sender's
//! uplinks: datagrams of any shape on any uplink, beside libsrt's packets and time passing.
//! Never a panic, and what the sender keeps in flight stays bounded.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use telebridge_bond::proto;
use telebridge_bond::sender::{Out, Sender};

fuzz_target!(|data: &[u8]| {
    let t0 = Instant::now();
    let mut s = Sender::new(vec!["a".into(), "b".into(), "c".into()], [7; 128], t0);
    // Joined: the receiver answers the first REG1 and every uplink's REG2.
    let mut id = None;
    for out in s.on_tick(t0) {
        if let Out::Link(n, d) = out {
            if proto::is_reg1(&d) {
                let mut full = [3u8; proto::ID_LEN];
                full[..128].copy_from_slice(&d[2..130]);
                id = Some((n, full));
            }
        }
    }
    if let Some((n, full)) = id {
        let _ = s.on_link(n, &proto::reg2(&full), t0);
        for k in 0..3 {
            let _ = s.on_link(k, &proto::reg3(), t0);
        }
    }
    let mut now = t0;
    let mut seq = 0u32;
    let mut rest = data;
    while rest.len() >= 3 {
        let (op, len) = (rest[0], usize::from(u16::from_be_bytes([rest[1], rest[2]])) % 1500);
        let body = &rest[3..(3 + len).min(rest.len())];
        rest = &rest[(3 + len).min(rest.len())..];
        now += Duration::from_millis(u64::from(op >> 5) * 20);
        if op & 0x10 != 0 {
            // libsrt's next data packet.
            let mut p = vec![0u8; 64];
            p[..4].copy_from_slice(&(seq & 0x7fff_ffff).to_be_bytes());
            seq = seq.wrapping_add(1);
            let _ = s.on_srt(&p);
        }
        let _ = s.on_link(usize::from(op & 3), body, now);
        let _ = s.on_tick(now);
        let up = s.status();
        assert!(up.iter().all(|l| l.in_flight <= 512 * 3), "{up:?}");
        let _ = s.reading();
    }
});
