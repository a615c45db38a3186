//! The output and input URL parsers (`srt://`, `rtmp(s)://`, `file:`): no input panics, and an
//! SRT URL the parser took reads back the same from what it writes for GStreamer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_config::{FileSpec, RtmpUrl, SrtUrl};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for input in [text.to_string(), format!("srt://{text}"), format!("rtmp://{text}"), format!("file:/{text}")] {
        if let Ok(u) = SrtUrl::parse(&input) {
            let _ = (u.to_string(), u.label());
            if u.passphrase.is_none() {
                let again = SrtUrl::parse(&u.uri_without_secret()).unwrap_or_else(|e| {
                    panic!("{input:?} parsed, but its own form {:?} does not: {e}", u.uri_without_secret())
                });
                assert_eq!(again, u, "{input:?} does not read back the same");
            }
        }
        if let Ok(u) = RtmpUrl::parse(&input) {
            let _ = u.label();
        }
        if let Ok(f) = FileSpec::parse(&input) {
            let _ = f.label();
        }
        let _ = telebridge_config::check_host("srt", &input, false);
    }
});
