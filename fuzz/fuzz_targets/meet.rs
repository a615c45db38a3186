//! What anyone can send a meeting point's two ports: hellos, confirmations and anything else,
//! from a few addresses, at any time. Never a panic, the places stay bounded, and a datagram is
//! only ever forwarded to an address that confirmed a cookie.
#![no_main]

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use telebridge_pairing::meet::{Meet, MeetHello, Meeting, MAX_PLACES};

fuzz_target!(|data: &[u8]| {
    let mut m = Meeting::new([5; 32]);
    let t0 = Instant::now();
    let unix = 1_765_000_000_000u64;
    let mut now = t0;
    let mut confirmed: HashSet<SocketAddr> = HashSet::new();
    let mut rest = data;
    while rest.len() >= 2 {
        let (who, len) = (rest[0], usize::from(rest[1]) % 64);
        let body = &rest[2..(2 + len).min(rest.len())];
        rest = &rest[(2 + len).min(rest.len())..];
        now += Duration::from_millis(u64::from(who >> 5) * 300);
        let from = SocketAddr::from(([198, 51, 100, who & 7], 7000));
        let side = usize::from((who >> 3) & 1);
        let mut got = m.on_datagram(side, from, body, now, unix);
        // Half the time, the sender answers a cookie as a box would.
        if let (Meet::Cookie(c), Some(h)) = (got, MeetHello::read(body)) {
            if who & 0x10 != 0 {
                let confirm = MeetHello { cookie: MeetHello::cookie_from(&c), ..h }.to_bytes();
                got = m.on_datagram(side, from, &confirm, now, unix);
            }
        }
        if matches!(got, Meet::Welcomed { .. }) {
            confirmed.insert(from);
        }
        if let Meet::Forward(to) | Meet::Welcomed { peer: Some(to), .. } = got {
            assert!(confirmed.contains(&to), "forwarded to {to}, which never confirmed a cookie");
        }
        assert!(m.places() <= MAX_PLACES);
    }
});
