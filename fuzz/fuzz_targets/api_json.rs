//! The API's JSON bodies: a configuration as PUT /api/config takes it (then the secrets merged
//! back from the running one, and validated), and the small bodies (login, live, button).
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_config::Config;

fuzz_target!(|data: &[u8]| {
    if let Ok(new) = serde_json::from_slice::<Config>(data) {
        let running = Config::default();
        let merged = new.with_secrets_from(&running);
        let _ = merged.validate();
        let shown = serde_json::to_string(&merged.redacted()).expect("a configuration writes as JSON");
        let back: Config = serde_json::from_str(&shown).expect("what the API shows reads back");
        assert_eq!(back, merged.redacted());
    }
    let _ = serde_json::from_slice::<serde_json::Value>(data);
});
