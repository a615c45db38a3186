//! The known-device cookie: a browser that logged in before keeps its place among the password
//! checks ([`crate::auth::KEPT_FOR_KNOWN`]) however many strangers try theirs (issue 57,
//! finding 9). The cookie is a random id and its HMAC under a key derived from the stored
//! password hash, so a new password forgets every browser, and nothing is kept on the box.

use std::time::Duration;

use rand_core::{OsRng, RngCore};

/// The known-device cookie's name.
pub const DEVICE_COOKIE: &str = "telebridge_device";
/// How long a browser stays known.
pub const DEVICE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// The key known-device cookies are signed with: derived from the password's stored hash (its
/// salt and hash, secret), so a new password forgets every browser.
fn device_key(password_hash: &str) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(password_hash.as_bytes()).expect("any key");
    m.update(b"telebridge known device\0");
    let key = m.finalize().into_bytes();
    <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&key).expect("any key")
}

/// A new known-device cookie's value (`ID.TAG`), given to a browser that logged in: a random id
/// and its tag under `device_key`.
pub fn device_token(password_hash: &str) -> String {
    use hmac::Mac;
    let mut raw = [0u8; 16];
    OsRng.fill_bytes(&mut raw);
    let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let mut m = device_key(password_hash);
    m.update(id.as_bytes());
    let tag: String = m.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("{id}.{tag}")
}

/// Whether `token` is a known-device cookie this box gave under the current password.
pub fn known_device(password_hash: &str, token: &str) -> bool {
    use hmac::Mac;
    let Some((id, tag)) = token.split_once('.') else { return false };
    if id.len() != 32 || tag.len() != 64 || !tag.is_ascii() {
        return false;
    }
    let Some(tag) = (0..32).map(|k| u8::from_str_radix(&tag[2 * k..2 * k + 2], 16).ok()).collect::<Option<Vec<u8>>>()
    else {
        return false;
    };
    let mut m = device_key(password_hash);
    m.update(id.as_bytes());
    m.verify_slice(&tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_device_cookie_holds_under_its_password_only() {
        let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo";
        let token = device_token(hash);
        assert!(known_device(hash, &token));
        assert!(!known_device("$argon2id$v=19$m=19456,t=2,p=1$b3RoZXI$b3RoZXI", &token), "a new password forgets it");
        let (id, tag) = token.split_once('.').unwrap();
        assert!(!known_device(hash, &format!("{id}.{}", "0".repeat(64))));
        assert!(!known_device(hash, &format!("{}.{tag}", "f".repeat(32))), "another id");
        for bad in ["", ".", "x.y", &token[..token.len() - 1]] {
            assert!(!known_device(hash, bad), "{bad:?}");
        }
        assert_ne!(device_token(hash), token, "each browser its own");
    }
}
