//! What any host can send a bonding receiver (`telebridge relay --bond-listen`): datagrams from a
//! handful of addresses, in any order, at any times, with the SRT peer's answers between them.
//! Never a panic, and the receiver holds what its bounds allow, whatever it is sent.
#![no_main]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use telebridge_bond::receiver::{Cookie, GroupToken, Limits, Receiver};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_groups: 4, max_conns: 3, per_source: 2, ..Limits::default() };
    let mut r = Receiver::new(limits, Cookie::new([9; 32]));
    let mut now = Instant::now();
    // Each datagram: one byte of who/when, two of length, then that many bytes.
    let mut rest = data;
    while rest.len() >= 3 {
        let (who, len) = (rest[0], usize::from(u16::from_be_bytes([rest[1], rest[2]])) % 1500);
        let body = &rest[3..(3 + len).min(rest.len())];
        rest = &rest[(3 + len).min(rest.len())..];
        now += Duration::from_millis(u64::from(who >> 4) * 50);
        let from = SocketAddr::from(([10, 0, who & 3, 1], 4000 + u16::from((who >> 2) & 3)));
        if who & 0x80 != 0 {
            let _ = r.on_srt(GroupToken(u64::from(who & 7)), body);
        } else {
            // A registration answered is sent back, as a sender that receives would.
            for a in r.on_datagram(from, body, now) {
                if let telebridge_bond::receiver::Action::Reply(to, reply) = a {
                    let _ = r.on_datagram(to, &reply, now);
                }
            }
        }
        let _ = r.due(now);
        let _ = r.on_tick(now);
        let groups = r.status(now);
        assert!(groups.len() <= limits.max_groups, "{} groups", groups.len());
        assert!(groups.iter().all(|g| g.conns.len() <= limits.max_conns));
    }
});
