//! The MPEG-TS continuity check the SRT input runs on everything that arrives: cut anywhere,
//! any bytes; it never panics and never counts more than it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_srt::ts_check::ContinuityCheck;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else { return };
    let mut c = ContinuityCheck::default();
    for chunk in rest.chunks(usize::from(cut).max(1)) {
        c.feed(chunk);
    }
    let whole = (rest.len() / 188) as u64;
    assert!(c.packets + c.not_ts <= whole, "{} packets + {} not TS from {} bytes", c.packets, c.not_ts, rest.len());
    assert!(c.errors <= c.packets);
    c.reset();
    c.feed(rest);
});
