//! What box B reads back from the address the owner typed (box A, or anyone answering there):
//! never a panic, and the body is never more than what came.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_web::pair_client::parse;

fuzz_target!(|data: &[u8]| {
    if let Some(a) = parse(data, std::time::Duration::ZERO) {
        assert!(a.body.len() <= data.len());
        assert!((100..1000).contains(&a.status), "{}", a.status);
    }
});
