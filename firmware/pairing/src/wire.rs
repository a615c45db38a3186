//! The exchange's messages as JSON, for the HTTP requests between two boxes:
//! `{"side":"a","box_id":"...","message":"<hex>"}` and `{"mac":"<hex>"}`. Reading is strict: a
//! stranger can send these, so each error names the field, the value and what is allowed, and
//! anything larger than a real message is refused before parsing.

use serde::{Deserialize, Serialize};

use crate::exchange::{Confirm, Hello, Side};

/// The most a message may weigh: a hello is about 150 bytes.
pub const MAX_BYTES: usize = 1024;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Larger than [`MAX_BYTES`].
    #[error("pairing message of {0} bytes; at most {MAX_BYTES} are allowed")]
    TooLarge(usize),
    /// Not the JSON expected.
    #[error("pairing message is not valid: {0}")]
    Json(String),
    /// A field with a value it cannot have.
    #[error("{field}: {value:?} is not allowed; {allowed}")]
    Field {
        /// The field.
        field: &'static str,
        /// What it held (for hex fields, only its length).
        value: String,
        /// What it may hold.
        allowed: &'static str,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HelloJson {
    side: String,
    box_id: String,
    message: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfirmJson {
    mac: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(field: &'static str, s: &str, len: usize) -> Result<Vec<u8>, WireError> {
    let bad = || WireError::Field {
        field,
        value: format!("{} characters", s.len()),
        allowed: match field {
            "mac" => "64 hexadecimal characters",
            _ => "66 hexadecimal characters",
        },
    };
    if s.len() != len * 2 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    (0..len).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())).collect()
}

fn parse<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, WireError> {
    if text.len() > MAX_BYTES {
        return Err(WireError::TooLarge(text.len()));
    }
    serde_json::from_str(text).map_err(|e| WireError::Json(e.to_string()))
}

/// A hello as JSON.
pub fn hello_to_json(h: &Hello) -> String {
    let side = match h.side {
        Side::A => "a",
        Side::B => "b",
    };
    serde_json::json!({"side": side, "box_id": h.box_id, "message": hex(&h.message)}).to_string()
}

/// A hello read from JSON.
pub fn hello_from_json(text: &str) -> Result<Hello, WireError> {
    hello_from_parts(parse(text)?)
}

fn hello_from_parts(j: HelloJson) -> Result<Hello, WireError> {
    let side = match j.side.as_str() {
        "a" => Side::A,
        "b" => Side::B,
        _ => return Err(WireError::Field { field: "side", value: j.side, allowed: "one of a, b" }),
    };
    if j.box_id.is_empty() || j.box_id.len() > 64 || !j.box_id.chars().all(|c| c.is_ascii_graphic()) {
        return Err(WireError::Field { field: "box_id", value: j.box_id, allowed: "1-64 printable characters" });
    }
    // An Ed25519-group SPAKE2 message: one side byte and a 32-byte point.
    let message = unhex("message", &j.message, 33)?;
    Ok(Hello { side, box_id: j.box_id, message })
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerJson {
    hello: HelloJson,
    confirm: ConfirmJson,
}

/// A's answer to B's hello: A's hello and A's confirmation, as JSON.
pub fn answer_to_json(h: &Hello, c: &Confirm) -> String {
    format!(r#"{{"hello":{},"confirm":{}}}"#, hello_to_json(h), confirm_to_json(c))
}

/// A's answer read from JSON.
pub fn answer_from_json(text: &str) -> Result<(Hello, Confirm), WireError> {
    let j: AnswerJson = parse(text)?;
    let hello = hello_from_parts(j.hello)?;
    let bytes = unhex("mac", &j.confirm.mac, 32)?;
    let mut mac = [0u8; 32];
    mac.copy_from_slice(&bytes);
    Ok((hello, Confirm { mac }))
}

/// A confirmation as JSON.
pub fn confirm_to_json(c: &Confirm) -> String {
    serde_json::json!({"mac": hex(&c.mac)}).to_string()
}

/// A confirmation read from JSON.
pub fn confirm_from_json(text: &str) -> Result<Confirm, WireError> {
    let j: ConfirmJson = parse(text)?;
    let bytes = unhex("mac", &j.mac, 32)?;
    let mut mac = [0u8; 32];
    mac.copy_from_slice(&bytes);
    Ok(Confirm { mac })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PairingCode, Pending};

    #[test]
    fn a_whole_exchange_through_json() {
        let code = PairingCode::parse("K7M-2QX").unwrap();
        let (a, hello_a) = Pending::start(Side::A, &code, "box-a").unwrap();
        let (b, hello_b) = Pending::start(Side::B, &code, "box-b").unwrap();
        let hello_a = hello_from_json(&hello_to_json(&hello_a)).unwrap();
        let hello_b = hello_from_json(&hello_to_json(&hello_b)).unwrap();
        let (a, ca) = a.receive(&hello_b).unwrap();
        let (b, cb) = b.receive(&hello_a).unwrap();
        let ca = confirm_from_json(&confirm_to_json(&ca)).unwrap();
        let cb = confirm_from_json(&confirm_to_json(&cb)).unwrap();
        assert_eq!(a.verify(&cb).unwrap().link, b.verify(&ca).unwrap().link);
    }

    #[test]
    fn bad_messages_are_named() {
        let ok_msg = "00".repeat(33);
        let e = |t: &str| hello_from_json(t).unwrap_err().to_string();
        assert_eq!(
            e(&format!(r#"{{"side":"c","box_id":"x","message":"{ok_msg}"}}"#)),
            r#"side: "c" is not allowed; one of a, b"#
        );
        assert_eq!(
            e(r#"{"side":"a","box_id":"x","message":"zz"}"#),
            r#"message: "2 characters" is not allowed; 66 hexadecimal characters"#
        );
        assert_eq!(
            e(&format!(r#"{{"side":"a","box_id":"","message":"{ok_msg}"}}"#)),
            r#"box_id: "" is not allowed; 1-64 printable characters"#
        );
        assert!(e(r#"{"side":"a"}"#).starts_with("pairing message is not valid: missing field"));
        assert!(e(&format!(r#"{{"side":"a","box_id":"x","message":"{ok_msg}","extra":1}}"#)).contains("unknown field"));
        assert_eq!(e(&" ".repeat(2000)), "pairing message of 2000 bytes; at most 1024 are allowed");
        assert_eq!(
            confirm_from_json(r#"{"mac":"abc"}"#).unwrap_err().to_string(),
            r#"mac: "3 characters" is not allowed; 64 hexadecimal characters"#
        );
    }
}
