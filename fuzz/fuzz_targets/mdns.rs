//! What any host on the LAN can announce by mDNS as a `_telebridge._udp` instance, as the list
//! takes it: never a panic, the list stays within its bounds, and one address holds at most its
//! share of it.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use telebridge_discovery::{Neighbours, Record, MAX_BOXES, PER_ADDRESS};

fuzz_target!(|data: &[u8]| {
    let mut n = Neighbours::new(None);
    let t0 = Instant::now();
    // Records separated by 0xff; in each, fields separated by 0xfe: name, id, role, pairing,
    // then one byte of address and one of port.
    for (k, chunk) in data.split(|b| *b == 0xff).enumerate() {
        let f: Vec<String> = chunk.split(|b| *b == 0xfe).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let get = |i: usize| f.get(i).cloned().unwrap_or_default();
        let tail = chunk.last().copied().unwrap_or(0);
        let record = Record {
            fullname: format!("{} {}._telebridge._udp.local.", get(0), get(1)),
            port: u16::from(tail) * 7,
            addresses: vec![std::net::IpAddr::from([10, 0, 0, tail % 8])],
            txt: vec![
                ("v".into(), "1".into()),
                ("id".into(), get(1)),
                ("name".into(), get(0)),
                ("role".into(), get(2)),
                ("pairing".into(), get(3)),
            ],
        };
        let now = t0 + Duration::from_millis(k as u64);
        let _ = n.resolved(&record, now);
        if tail & 0x40 != 0 {
            n.removed(&record.fullname);
        }
        let _ = n.flooded(now);
        let list = n.list();
        assert!(list.len() <= MAX_BOXES);
        for f in &list {
            assert!(list.iter().filter(|g| g.panel.ip() == f.panel.ip()).count() <= PER_ADDRESS);
            assert!(f.conflict.len() <= 8);
        }
    }
});
