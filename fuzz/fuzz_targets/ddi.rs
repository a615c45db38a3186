//! What a fleet server (or anyone between the box and it, without TLS) can answer the fleet
//! client: the HTTP response, its head, and the DDI JSON of a poll, an assignment and a cancel.
//! Never a panic; a body is never longer than what came; an assignment that is read names a
//! digest and a bundle.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_fleet::ddi;
use telebridge_http as http;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = http::parse_response(data) {
        assert!(r.body.len() <= data.len());
    }
    if let Ok(Some((_, start))) = http::parse_head(data) {
        assert!(start <= data.len());
    }
    if let Ok(p) = ddi::read_poll(data) {
        assert!(p.sleep >= std::time::Duration::from_secs(1) && p.sleep <= std::time::Duration::from_secs(86_400));
    }
    if let Ok(a) = ddi::read_assignment(data) {
        assert!(a.artifact.filename.ends_with(".raucb"), "{}", a.artifact.filename);
        assert!(!a.artifact.url.is_empty());
    }
    let _ = ddi::read_cancel(data);
});
