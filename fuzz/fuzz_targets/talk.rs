//! What arrives on the pair's connection as a talkback message: never a panic, and only a
//! message tagged under the connection's key is read as one (re-encoded, it is what came).
#![no_main]

use libfuzzer_sys::fuzz_target;
use telebridge_appliance::roles::talk::{TalkKey, TalkPacket};

fuzz_target!(|data: &[u8]| {
    let key = TalkKey::from_passphrase(Some("0123456789abcdef0123456789abcdef"));
    if let Some(p) = TalkPacket::decode(data, &key) {
        assert_eq!(p.encode(&key), data, "a message read back otherwise than it came");
    }
    let _ = TalkPacket::decode(data, &TalkKey::from_passphrase(None));
});
