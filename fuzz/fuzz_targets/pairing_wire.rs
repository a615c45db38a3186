//! The pairing messages a stranger can send box A (hello, confirmation) and box A's answer that
//! box B reads, through the parsers and the state machines that take them: never a panic, and
//! a garbled message never pairs.
#![no_main]

use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use telebridge_pairing::{wire, PairingCode, Shower, Typer};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = wire::hello_from_json(text);
    let _ = wire::answer_from_json(text);
    let _ = wire::confirm_from_json(text);
    let now = Instant::now();
    let from = std::net::IpAddr::from([192, 0, 2, 66]);
    let mut a = Shower::new("box-a");
    a.open(PairingCode::parse("7Q4-KM2").expect("a code"), now);
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid -= 1;
    }
    let (first, second) = text.split_at(mid);
    if a.on_hello(first, from, now).is_ok() {
        assert!(a.on_confirm(second, from, now).is_err(), "a stranger's bytes paired");
    }
    if let Ok((b, _hello)) = Typer::begin("7Q4-KM2", "box-b") {
        let (verdict, _confirm) = b.on_answer(text);
        assert!(verdict.is_err(), "a stranger's answer paired box B");
    }
});
