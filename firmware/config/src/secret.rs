//! A string that must never be shown: SRT passphrases, RTMP stream keys, passwords.

use std::fmt;

/// A secret value. `Debug` and `Display` print `****`; only [`Secret::expose`] gives the value,
/// so every place that hands it to a library is easy to find.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for handing to libsrt or an RTMP server. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a value is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"****\"")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

/// Replaces the value of any `passphrase=` (SRT) or `token=` (WHIP) in a URI-like string with `****`, for error messages.
pub fn redact_query(input: &str) -> String {
    let Some((head, query)) = input.split_once('?') else {
        return input.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("passphrase") || k.eq_ignore_ascii_case("token") => {
                format!("{k}=****")
            }
            _ => p.to_string(),
        })
        .collect();
    format!("{head}?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("hunter2hunter2");
        assert_eq!(format!("{s}"), "****");
        assert_eq!(format!("{s:?}"), "\"****\"");
        assert_eq!(s.expose(), "hunter2hunter2");
    }
}
