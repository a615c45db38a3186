//! The configuration file: parse (every problem named), validate, redact. No input panics; a
//! file that parses writes back to TOML that parses to the same configuration; redacting twice
//! changes nothing more than redacting once.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = telebridge_config::parse(text) else { return };
    let written = toml::to_string_pretty(&config).expect("a parsed configuration writes back");
    let again = telebridge_config::parse(&written).unwrap_or_else(|e| panic!("{written}\ndoes not read back: {e:?}"));
    assert_eq!(again, config);
    let shown = config.redacted();
    assert_eq!(shown.redacted(), shown);
    let _ = config.validate();
    let _ = shown.with_secrets_from(&config).validate();
});
