//! The TS timeline watch the decoder runs on everything a sender sends: cut anywhere, any bytes;
//! never a panic, and the tables it keeps are whole packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_media::timeline::TimelineWatch;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else { return };
    let mut w = TimelineWatch::default();
    for chunk in rest.chunks(usize::from(cut).max(1)) {
        w.feed(chunk);
    }
    assert_eq!(w.tables().len() % 188, 0);
    let mut whole = TimelineWatch::default();
    whole.feed(rest);
});
