//! The one-time pairing code: six symbols of Crockford's base 32 (no I, L, O or U), shown as
//! `7Q4-KM2`: 30 bits, read aloud or typed without confusion. Typing is forgiving: case, spaces
//! and dashes do not matter, and I/L read as 1, O as 0.

/// The symbols, in value order.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Symbols in a code.
pub const LEN: usize = 6;

/// A pairing code.
#[derive(Clone, PartialEq, Eq)]
pub struct PairingCode([u8; LEN]);

impl std::fmt::Debug for PairingCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A code is a secret while it is valid: never in logs by accident.
        f.write_str("PairingCode(******)")
    }
}

/// Why typed text is not a code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// A character that is in no code.
    #[error("{0:?} is not in a pairing code: codes use the digits and the letters A-Z without U (e.g. 7Q4-KM2)")]
    BadSymbol(char),
    /// Too short or too long.
    #[error("a pairing code has 6 symbols (e.g. 7Q4-KM2); this has {0}")]
    BadLength(usize),
}

impl PairingCode {
    /// A new random code from the system's random source.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; LEN];
        getrandom::getrandom(&mut bytes)?;
        Ok(Self::from_random(bytes))
    }

    /// The code made from six random bytes (each taken modulo 32: unbiased, 256 = 8 x 32).
    pub fn from_random(bytes: [u8; LEN]) -> Self {
        Self(bytes.map(|b| ALPHABET[usize::from(b % 32)]))
    }

    /// Reads what a user typed.
    pub fn parse(typed: &str) -> Result<Self, CodeError> {
        let mut out = Vec::with_capacity(LEN);
        for c in typed.chars() {
            if c.is_whitespace() || c == '-' {
                continue;
            }
            let u = match c.to_ascii_uppercase() {
                'I' | 'L' => '1',
                'O' => '0',
                u => u,
            };
            if !u.is_ascii() || !ALPHABET.contains(&(u as u8)) {
                return Err(CodeError::BadSymbol(c));
            }
            out.push(u as u8);
        }
        let arr: [u8; LEN] = out.as_slice().try_into().map_err(|_| CodeError::BadLength(out.len()))?;
        Ok(Self(arr))
    }

    /// The code as shown: `7Q4-KM2`.
    pub fn display(&self) -> String {
        let s = std::str::from_utf8(&self.0).unwrap_or_default();
        format!("{}-{}", &s[..3], &s[3..])
    }

    /// The bytes the key exchange takes as its password (the canonical form, without dash).
    pub(crate) fn secret(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_is_forgiving_and_errors_say_what_a_code_is() {
        let code = PairingCode::parse("7Q4-KM2").unwrap();
        assert_eq!(code.display(), "7Q4-KM2");
        assert_eq!(PairingCode::parse(" 7q4 km2 ").unwrap(), code);
        assert_eq!(PairingCode::parse("1O0-ILZ").unwrap().display(), "100-11Z");
        assert_eq!(PairingCode::parse("7Q4-KU2"), Err(CodeError::BadSymbol('U')));
        assert_eq!(PairingCode::parse("7Q4-KM"), Err(CodeError::BadLength(5)));
        assert!(PairingCode::parse("é").unwrap_err().to_string().starts_with("'é' is not in a pairing code"));
        assert_eq!(format!("{code:?}"), "PairingCode(******)");
    }

    #[test]
    fn every_symbol_is_equally_likely() {
        let mut seen = [0u32; 32];
        for b in 0..=255u8 {
            let c = PairingCode::from_random([b; LEN]);
            let i = ALPHABET.iter().position(|&a| a == c.0[0]).unwrap();
            seen[i] += 1;
        }
        assert!(seen.iter().all(|&n| n == 8), "{seen:?}");
        assert_ne!(PairingCode::generate().unwrap(), PairingCode::generate().unwrap());
    }
}
