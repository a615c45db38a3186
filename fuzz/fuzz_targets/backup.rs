//! Configuration backups as POST /api/config/restore reads them (plain; an encrypted one without
//! its password): no input panics, and a backup that reads is a whole configuration.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(c) = telebridge_web::backup::import(&text, None) {
        let again = telebridge_web::backup::export(&c, None).expect("a restored configuration exports");
        telebridge_web::backup::import(&again, None).expect("an exported backup restores");
    }
});
