//! WHIP outputs (RFC 9725, WebRTC publishing): `https://HOST[:PORT]/PATH?token=TOKEN`, or
//! `whip://` and `http://` for a server without TLS (port 80 by default). `token=` is the bearer
//! token the service gives, sent as `Authorization: Bearer`; `tls_verify=0` is for a test
//! server's self-signed certificate only. Other query parameters stay part of the endpoint.

use std::fmt;

pub use crate::output_url::WHIP_TOKEN_MAX;
use crate::output_url::{authority_parts, OutputUrlError};
use crate::Secret;

/// A WHIP endpoint. `Display` and `Debug` show the token as `****`.
#[derive(Clone, PartialEq, Eq)]
pub struct WhipUrl {
    /// The scheme as written: `https`, `http` or `whip` (plain HTTP).
    pub scheme: &'static str,
    /// The server's host.
    pub host: String,
    /// The server's port.
    pub port: u16,
    /// The endpoint's path with the query the service gave (ours taken out), e.g. `/whip/abc`.
    pub path: String,
    /// The bearer token: a secret.
    pub token: Option<Secret>,
    /// Check the server's certificate (https). Only a test server turns this off.
    pub tls_verify: bool,
}

impl WhipUrl {
    /// Whether the URL is one of WHIP's forms (by its scheme).
    pub fn is_whip(input: &str) -> bool {
        ["whip://", "http://", "https://"].iter().any(|s| input.starts_with(s))
    }

    /// Parses `https://`, `http://` or `whip://`.
    pub fn parse(input: &str) -> Result<Self, OutputUrlError> {
        let (scheme, rest) = ["https", "http", "whip"]
            .into_iter()
            .find_map(|s| input.strip_prefix(s).and_then(|r| r.strip_prefix("://")).map(|r| (s, r)))
            .ok_or_else(|| OutputUrlError::NoHost(crate::srt_url::redact_query(input)))?;
        let secure = scheme == "https";
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let (host, port) = authority_parts(scheme, authority, if secure { 443 } else { 80 })?;
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let path = if path.is_empty() { "/" } else { path };
        let mut kept = Vec::new();
        let (mut token, mut tls_verify) = (None, true);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("token", t)) => token = Some(t),
                Some(("tls_verify", "0" | "false")) => tls_verify = false,
                Some(("tls_verify", "1" | "true")) => tls_verify = true,
                Some(("tls_verify", v)) => return Err(OutputUrlError::BadOption(format!("tls_verify={v}"), "0 or 1")),
                _ => kept.push(pair),
            }
        }
        let target = if kept.is_empty() { path.to_string() } else { format!("{path}?{}", kept.join("&")) };
        if let Some(c) = target.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(OutputUrlError::BadOption(
                format!("path {:?}", target.escape_debug().to_string()),
                if c.is_ascii() {
                    "no spaces or control characters (percent-encode them)"
                } else {
                    "ASCII only (percent-encode the rest)"
                },
            ));
        }
        let token = match token {
            None => None,
            Some(t) if t.is_empty() || t.len() > WHIP_TOKEN_MAX || !t.bytes().all(|b| b.is_ascii_graphic()) => {
                return Err(OutputUrlError::BadToken(t.len()))
            }
            Some(crate::HIDDEN) => return Err(OutputUrlError::HiddenToken),
            Some(t) => Some(Secret::new(t.to_string())),
        };
        Ok(Self { scheme, host, port, path: target, token, tls_verify })
    }

    /// Whether the server is reached over TLS.
    pub fn secure(&self) -> bool {
        self.scheme == "https"
    }

    /// `https://host:port/path` with the token as `****`.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for WhipUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        write!(f, "{}://{}:{}{}", self.scheme, host, self.port, self.path)?;
        if self.token.is_some() {
            f.write_str(if self.path.contains('?') { "&token=****" } else { "?token=****" })?;
        }
        Ok(())
    }
}

impl fmt::Debug for WhipUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WhipUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let u = WhipUrl::parse("https://whip.example/live/abc?room=1&token=eyJhbGciOi.x_y-z").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str(), u.secure()),
            ("whip.example", 443, "/live/abc?room=1", true)
        );
        assert_eq!(u.token.as_ref().map(|t| t.expose()), Some("eyJhbGciOi.x_y-z"));
        let u = WhipUrl::parse("whip://127.0.0.1:8080/whip").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.secure(), u.token.is_none()), (8080, "/whip", false, true));
        assert_eq!(WhipUrl::parse("http://h").unwrap().path, "/");
        assert_eq!(WhipUrl::parse("http://h?token=t").unwrap().path, "/");
        assert!(!WhipUrl::parse("https://[::1]:9443/w?tls_verify=0").unwrap().tls_verify);
    }

    #[test]
    fn the_token_is_never_shown() {
        let u = WhipUrl::parse("https://h/w?token=supersecret&x=1").unwrap();
        let shown = format!("{u} {u:?} {}", u.label());
        assert!(!shown.contains("supersecret"), "{shown}");
        assert_eq!(u.to_string(), "https://h:443/w?x=1&token=****");
    }

    #[test]
    fn errors_name_what_is_wrong() {
        assert_eq!(
            WhipUrl::parse("https://h/w?token=").unwrap_err().to_string(),
            "token= has 0 characters; a bearer token is 1-2048 visible ASCII characters (no spaces)"
        );
        let e = WhipUrl::parse("https://h/w?token=a%20b c").unwrap_err().to_string();
        assert!(e.contains("1-2048 visible ASCII"), "{e}");
        assert!(!e.contains("a%20b"), "{e}");
        let e = WhipUrl::parse("http://h/a b").unwrap_err().to_string();
        assert!(e.contains("no spaces or control characters"), "{e}");
        let e = WhipUrl::parse("http://h/a\r\nX-Evil: 1").unwrap_err().to_string();
        assert!(e.contains("no spaces or control characters"), "{e}");
        assert_eq!(WhipUrl::parse("https://h:0/w").unwrap_err().to_string(), "port \"0\" is not a number 1-65535");
        assert!(WhipUrl::parse("https:///w").unwrap_err().to_string().contains("no host"));
        assert!(WhipUrl::parse("https://h/w?token=****").unwrap_err().to_string().contains("type the token again"));
        assert!(WhipUrl::parse("https://h/w?tls_verify=maybe").unwrap_err().to_string().contains("0 or 1"));
    }
}
