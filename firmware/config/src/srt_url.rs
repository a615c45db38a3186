//! `srt://` URIs with the meaning srt-live-transmit, ffmpeg and GStreamer's `srtsink uri=` give
//! them: `srt://HOST:PORT?mode=caller&latency=MS&passphrase=...&pbkeylen=16|24|32&streamid=...`;
//! no host means listener.

pub use crate::secret::redact_query;
use std::fmt;
use std::time::Duration;

use crate::Secret;

pub use crate::latency::LATENCY_RANGE_MS;
use crate::latency::{Latency, LatencyError};
/// Passphrase length libsrt accepts (`SRTO_PASSPHRASE`), in characters.
pub const PASSPHRASE_LEN: (usize, usize) = (10, 79);
/// Longest stream id libsrt accepts (`SRTO_STREAMID`).
pub const STREAMID_MAX_LEN: usize = 512;

const KNOWN_OPTIONS: &[&str] = &[
    "mode",
    "latency",
    "passphrase",
    "pbkeylen",
    "streamid",
    "maxbw",
    "inputbw",
    "oheadbw",
    "conntimeo",
    "peeridletimeo",
    "adapter",
    "localport",
    "bond",
];

/// Who opens the connection (`SRTO_RENDEZVOUS` and the socket's role).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrtMode {
    /// Connects to a listener at HOST:PORT.
    Caller,
    /// Waits on PORT for callers; serves several at once.
    Listener,
    /// Both ends call each other at the same time (for NAT traversal).
    Rendezvous,
}

impl SrtMode {
    /// The word used in URIs and in GStreamer's `mode` property.
    pub fn as_str(self) -> &'static str {
        match self {
            SrtMode::Caller => "caller",
            SrtMode::Listener => "listener",
            SrtMode::Rendezvous => "rendezvous",
        }
    }
}

/// AES key length (`SRTO_PBKEYLEN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLength {
    /// AES-128, 16 bytes.
    Aes128,
    /// AES-192, 24 bytes.
    Aes192,
    /// AES-256, 32 bytes.
    Aes256,
}

impl KeyLength {
    /// The key length in bytes, as libsrt takes it.
    pub fn bytes(self) -> u32 {
        match self {
            KeyLength::Aes128 => 16,
            KeyLength::Aes192 => 24,
            KeyLength::Aes256 => 32,
        }
    }
}

/// A parsed and checked SRT endpoint. `Display` and `Debug` never show the passphrase.
#[derive(Clone, PartialEq, Eq)]
pub struct SrtUrl {
    /// Host to call, or the local address a listener binds; `None` = all interfaces.
    pub host: Option<String>,
    /// UDP port (for a listener, the port it listens on).
    pub port: u16,
    /// Caller, listener or rendezvous.
    pub mode: SrtMode,
    /// Receiver buffer / TSBPD delay (`SRTO_LATENCY`); `None` = libsrt's default (120 ms).
    pub latency: Option<Latency>,
    /// AES passphrase (`SRTO_PASSPHRASE`).
    pub passphrase: Option<Secret>,
    /// AES key length (`SRTO_PBKEYLEN`); `None` = libsrt's default (AES-128) when encrypted.
    pub key_length: Option<KeyLength>,
    /// Stream id sent to the listener (`SRTO_STREAMID`), e.g. `#!::r=live/x,m=publish`.
    pub stream_id: Option<String>,
    /// Bandwidth ceiling in bytes per second (`SRTO_MAXBW`; 0 = relative to input, -1 = unlimited).
    pub max_bw_bytes_per_s: Option<i64>,
    /// Expected input rate in bytes per second (`SRTO_INPUTBW`).
    pub input_bw_bytes_per_s: Option<i64>,
    /// Overhead over the input rate allowed for retransmissions, percent (`SRTO_OHEADBW`, 5-100).
    pub overhead_bw_pct: Option<u32>,
    /// How long a caller waits for the handshake (`SRTO_CONNTIMEO`).
    pub connect_timeout: Option<Duration>,
    /// How long without a packet from the peer before the connection counts as broken
    /// (`SRTO_PEERIDLETIMEO`); `None` = the output's default.
    pub peer_idle_timeout: Option<Duration>,
    /// Local address to bind (`adapter` in srt-live-transmit).
    pub local_address: Option<String>,
    /// Local port to bind (rendezvous; caller from a fixed port).
    pub local_port: Option<u16>,
    /// A rendezvous through a meeting point: the pair's token, said in a hello from the local
    /// port before the rendezvous starts (set by the bridge's route, never read from a URI).
    pub meet_token: Option<crate::MeetToken>,
    /// Bonded over these uplinks (`bond=eth0,wwan0`): empty = one ordinary socket.
    pub bond: Vec<crate::Uplink>,
}

/// Why an `srt://` URI was refused. Each message names the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SrtUrlError {
    /// Not an `srt://` URI at all.
    #[error("{0:?} is not an SRT URL; write srt://HOST:PORT?mode=caller or srt://:PORT?mode=listener")]
    NotSrt(String),
    /// No port after the host.
    #[error("{0:?} has no port; write srt://HOST:PORT or srt://:PORT")]
    MissingPort(String),
    /// The port is not a number in range.
    #[error("port {0:?} is not a number 1-65535")]
    BadPort(String),
    /// The `mode` is not known.
    #[error("mode={0} is not one of caller, listener, rendezvous")]
    BadMode(String),
    /// Caller and rendezvous need somebody to call.
    #[error("mode={0} needs a host to call: srt://HOST:PORT?mode={0}")]
    NeedsHost(&'static str),
    /// Latency out of range.
    #[error("latency={0} is out of range {min}-{max} ms", min = LATENCY_RANGE_MS.0, max = LATENCY_RANGE_MS.1)]
    LatencyOutOfRange(String),
    /// Latency that is neither `auto` nor a whole number of milliseconds.
    #[error("latency={0} is not auto nor a whole number of milliseconds ({min}-{max})", min = LATENCY_RANGE_MS.0, max = LATENCY_RANGE_MS.1)]
    LatencyNotANumber(String),
    /// A host that cannot work.
    #[error("{0}")]
    BadHost(String),
    /// An IPv6 address without brackets, read as a host and a port.
    #[error("{0:?}: an IPv6 address goes in brackets, e.g. srt://[::1]:9000")]
    Ipv6WithoutBrackets(String),
    /// Passphrase too short or too long (the value itself is never shown).
    #[error("passphrase has {0} characters; it must have {min}-{max}", min = PASSPHRASE_LEN.0, max = PASSPHRASE_LEN.1)]
    PassphraseLength(usize),
    /// Key length not one of AES's.
    #[error("pbkeylen={0} is not one of 16, 24, 32 (AES-128, AES-192, AES-256)")]
    BadKeyLength(String),
    /// Key length given without a passphrase.
    #[error("pbkeylen={0} needs a passphrase (passphrase=... of 10-79 characters)")]
    KeyLengthWithoutPassphrase(String),
    /// Stream id too long.
    #[error("streamid has {0} characters; at most {STREAMID_MAX_LEN} are allowed")]
    StreamIdTooLong(usize),
    /// A numeric option that is not a number in its range.
    #[error("{key}={value} is not {allowed}")]
    BadNumber {
        /// The option.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// An option this product does not know.
    #[error("unknown option {0:?}; known options: {known}", known = KNOWN_OPTIONS.join(", "))]
    UnknownOption(String),
    /// The same option twice.
    #[error("option {0} is given twice")]
    DuplicateOption(String),
    /// Bad percent-encoding.
    #[error("option {0} has a malformed %-escape")]
    BadEscape(String),
    /// A bad `bond=` list.
    #[error(transparent)]
    Bond(#[from] crate::UplinkError),
}

impl SrtUrl {
    /// Parses and checks an `srt://` URI.
    pub fn parse(input: &str) -> Result<Self, SrtUrlError> {
        let rest = input.strip_prefix("srt://").ok_or_else(|| SrtUrlError::NotSrt(redact_query(input)))?;
        // Everything after the first '?' is the query: stream ids such as `#!::r=x` contain '#',
        // which is not a fragment here (srt-live-transmit reads it the same way).
        let (authority, query) = match rest.split_once('?') {
            Some((a, q)) => (a, q),
            None => (rest, ""),
        };
        let authority = authority.trim_end_matches('/');
        let (host, port) = split_host_port(authority).ok_or_else(|| {
            if authority.matches(':').count() > 1 && !authority.starts_with('[') {
                SrtUrlError::Ipv6WithoutBrackets(redact_query(input))
            } else {
                SrtUrlError::MissingPort(redact_query(input))
            }
        })?;
        let port: u16 = match port.parse() {
            Ok(p) if p > 0 => p,
            _ => return Err(SrtUrlError::BadPort(port.to_string())),
        };
        if !host.is_empty() {
            crate::check_host("srt", host, authority.starts_with('[')).map_err(SrtUrlError::BadHost)?;
        }
        let host = if host.is_empty() { None } else { Some(host.to_string()) };

        let mut url = SrtUrl {
            mode: if host.is_some() { SrtMode::Caller } else { SrtMode::Listener },
            host,
            port,
            latency: None,
            passphrase: None,
            key_length: None,
            stream_id: None,
            max_bw_bytes_per_s: None,
            input_bw_bytes_per_s: None,
            overhead_bw_pct: None,
            connect_timeout: None,
            peer_idle_timeout: None,
            local_address: None,
            local_port: None,
            meet_token: None,
            bond: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        let mut key_length_raw: Option<String> = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let key = key.to_ascii_lowercase();
            let value = percent_decode(raw).ok_or_else(|| SrtUrlError::BadEscape(key.clone()))?;
            if seen.contains(&key) {
                return Err(SrtUrlError::DuplicateOption(key));
            }
            seen.push(key.clone());
            if key == "pbkeylen" {
                key_length_raw = Some(value.clone());
            }
            url.set_option(&key, value)?;
        }
        if let Some(raw) = key_length_raw {
            if url.passphrase.is_none() {
                return Err(SrtUrlError::KeyLengthWithoutPassphrase(raw));
            }
        }
        if url.host.is_none() && url.mode != SrtMode::Listener {
            return Err(SrtUrlError::NeedsHost(url.mode.as_str()));
        }
        if !url.bond.is_empty() && url.mode != SrtMode::Caller {
            return Err(crate::UplinkError::NotCaller.into());
        }
        Ok(url)
    }

    /// Sets one option of the query (`key` in lower case, `value` decoded).
    fn set_option(&mut self, key: &str, value: String) -> Result<(), SrtUrlError> {
        match key {
            "mode" => {
                self.mode = match value.to_ascii_lowercase().as_str() {
                    "caller" | "client" => SrtMode::Caller,
                    "listener" | "server" => SrtMode::Listener,
                    "rendezvous" => SrtMode::Rendezvous,
                    _ => return Err(SrtUrlError::BadMode(value)),
                }
            }
            "latency" => {
                self.latency = Some(Latency::parse(&value).map_err(|e| match e {
                    LatencyError::NotANumber(v) => SrtUrlError::LatencyNotANumber(v),
                    LatencyError::OutOfRange(v) => SrtUrlError::LatencyOutOfRange(v),
                })?);
            }
            "passphrase" => {
                let n = value.chars().count();
                if !(PASSPHRASE_LEN.0..=PASSPHRASE_LEN.1).contains(&n) {
                    return Err(SrtUrlError::PassphraseLength(n));
                }
                self.passphrase = Some(Secret::new(value));
            }
            "pbkeylen" => {
                self.key_length = Some(match value.as_str() {
                    "16" => KeyLength::Aes128,
                    "24" => KeyLength::Aes192,
                    "32" => KeyLength::Aes256,
                    _ => return Err(SrtUrlError::BadKeyLength(value)),
                });
            }
            "streamid" => {
                let n = value.chars().count();
                if n > STREAMID_MAX_LEN {
                    return Err(SrtUrlError::StreamIdTooLong(n));
                }
                self.stream_id = Some(value);
            }
            "maxbw" => {
                self.max_bw_bytes_per_s = Some(parse_num(
                    &value,
                    "maxbw",
                    -1,
                    i64::MAX,
                    "-1 (unlimited), 0 (relative to input) or bytes per second",
                )?)
            }
            "inputbw" => {
                self.input_bw_bytes_per_s =
                    Some(parse_num(&value, "inputbw", 0, i64::MAX, "0 (measure) or bytes per second")?)
            }
            "oheadbw" => {
                self.overhead_bw_pct = Some(parse_num(&value, "oheadbw", 5, 100, "a percentage 5-100")? as u32)
            }
            "conntimeo" => {
                self.connect_timeout =
                    Some(Duration::from_millis(
                        parse_num(&value, "conntimeo", 100, 60_000, "a time 100-60000 ms")? as u64
                    ))
            }
            "peeridletimeo" => {
                self.peer_idle_timeout =
                    Some(Duration::from_millis(
                        parse_num(&value, "peeridletimeo", 500, 60_000, "a time 500-60000 ms")? as u64
                    ))
            }
            "adapter" => self.local_address = Some(value),
            "localport" => self.local_port = Some(parse_num(&value, "localport", 1, 65535, "a port 1-65535")? as u16),
            "bond" => self.bond = crate::uplink::parse_uplinks(&value)?,
            _ => return Err(SrtUrlError::UnknownOption(key.to_string())),
        }
        Ok(())
    }

    /// The URI without the passphrase, for GStreamer's `uri` property; the passphrase goes in
    /// through its own write-only property so that it never shows in GStreamer's logs.
    pub fn uri_without_secret(&self) -> String {
        let host = match (&self.host, self.mode) {
            (Some(h), _) if h.contains(':') => format!("[{h}]"),
            (Some(h), _) => h.clone(),
            (None, _) => String::new(),
        };
        let mut s = format!("srt://{host}:{}?mode={}", self.port, self.mode.as_str());
        if let Some(l) = self.latency {
            s.push_str(&format!("&latency={l}"));
        }
        if let Some(k) = self.key_length {
            s.push_str(&format!("&pbkeylen={}", k.bytes()));
        }
        if let Some(id) = &self.stream_id {
            s.push_str(&format!("&streamid={}", percent_encode(id)));
        }
        if let Some(v) = self.max_bw_bytes_per_s {
            s.push_str(&format!("&maxbw={v}"));
        }
        if let Some(v) = self.input_bw_bytes_per_s {
            s.push_str(&format!("&inputbw={v}"));
        }
        if let Some(v) = self.overhead_bw_pct {
            s.push_str(&format!("&oheadbw={v}"));
        }
        if let Some(v) = self.connect_timeout {
            s.push_str(&format!("&conntimeo={}", v.as_millis()));
        }
        if let Some(v) = self.peer_idle_timeout {
            s.push_str(&format!("&peeridletimeo={}", v.as_millis()));
        }
        if let Some(v) = &self.local_address {
            s.push_str(&format!("&adapter={}", percent_encode(v)));
        }
        if let Some(v) = self.local_port {
            s.push_str(&format!("&localport={v}"));
        }
        if !self.bond.is_empty() {
            s.push_str(&format!("&bond={}", self.bond.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(",")));
        }
        s
    }

    /// A short label for logs and status: `srt://host:port (caller)`.
    pub fn label(&self) -> String {
        format!("srt://{}:{} ({})", self.host.as_deref().unwrap_or(""), self.port, self.mode.as_str())
    }
}

impl fmt::Display for SrtUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri_without_secret())?;
        if self.passphrase.is_some() {
            f.write_str("&passphrase=****")?;
        }
        Ok(())
    }
}

impl fmt::Debug for SrtUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SrtUrl({self})")
    }
}

fn split_host_port(authority: &str) -> Option<(&str, &str)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':')?;
        return Some((host, port));
    }
    let (host, port) = authority.rsplit_once(':')?;
    if host.contains(':') {
        return None;
    }
    Some((host, port))
}

fn parse_num(value: &str, key: &'static str, min: i64, max: i64, allowed: &'static str) -> Result<i64, SrtUrlError> {
    match value.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(SrtUrlError::BadNumber { key, value: value.to_string(), allowed }),
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/:,=".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn host_means_caller_and_no_host_means_listener() {
        let u = SrtUrl::parse("srt://127.0.0.1:9000").unwrap();
        assert_eq!(u.mode, SrtMode::Caller);
        assert_eq!(u.host.as_deref(), Some("127.0.0.1"));
        let u = SrtUrl::parse("srt://:9000").unwrap();
        assert_eq!(u.mode, SrtMode::Listener);
        assert_eq!(u.host, None);
    }

    #[test]
    fn a_bonded_caller_keeps_its_uplinks_and_only_a_caller_bonds() {
        let u = SrtUrl::parse("srt://recv.example:5000?bond=eth0,wwan0,10.0.0.2&latency=2000").unwrap();
        assert_eq!(u.bond.len(), 3);
        assert_eq!(u.bond[2], crate::Uplink::Address("10.0.0.2".parse().unwrap()));
        assert_eq!(SrtUrl::parse(&u.to_string()).unwrap().bond, u.bond);
        let e = SrtUrl::parse("srt://:5000?bond=eth0").unwrap_err();
        assert_eq!(e, SrtUrlError::Bond(crate::UplinkError::NotCaller));
        let e = SrtUrl::parse("srt://h:5000?bond=eth0,e/1").unwrap_err();
        assert!(e.to_string().contains("\"e/1\""), "{e}");
    }

    #[test]
    fn full_uri() {
        let u = SrtUrl::parse("srt://example.org:4200?mode=caller&latency=1200&passphrase=0123456789abc&pbkeylen=32&streamid=%23!::r=live/x,m=publish").unwrap();
        assert_eq!(u.latency, Some(Latency::Fixed(Duration::from_millis(1200))));
        assert_eq!(SrtUrl::parse("srt://h:1?latency=auto").unwrap().latency, Some(Latency::AUTO));
        assert_eq!(u.key_length, Some(KeyLength::Aes256));
        assert_eq!(u.passphrase.as_ref().map(Secret::expose), Some("0123456789abc"));
        assert_eq!(u.stream_id.as_deref(), Some("#!::r=live/x,m=publish"));
    }

    #[test]
    fn raw_hash_in_streamid_is_not_a_fragment() {
        let u = SrtUrl::parse("srt://h:1?streamid=#!::r=live/x,m=publish").unwrap();
        assert_eq!(u.stream_id.as_deref(), Some("#!::r=live/x,m=publish"));
    }

    #[test]
    fn display_hides_passphrase() {
        let u = SrtUrl::parse("srt://h:1?passphrase=supersecret99").unwrap();
        let shown = format!("{u} {u:?} {}", u.uri_without_secret());
        assert!(!shown.contains("supersecret99"), "{shown}");
        assert!(shown.contains("passphrase=****"));
    }

    #[test]
    fn error_messages_name_value_and_range() {
        let cases = [
            ("srt://h:1?latency=9000", "latency=9000 is out of range 20-8000 ms"),
            ("srt://h:1?latency=abc", "latency=abc is not auto nor a whole number of milliseconds (20-8000)"),
            ("srt://h:1?passphrase=short", "passphrase has 5 characters; it must have 10-79"),
            ("srt://h:1?passphrase=0123456789&pbkeylen=20", "pbkeylen=20 is not one of 16, 24, 32"),
            ("srt://h:1?pbkeylen=16", "pbkeylen=16 needs a passphrase"),
            ("srt://h:1?mode=server2", "mode=server2 is not one of caller, listener, rendezvous"),
            ("srt://:1?mode=caller", "mode=caller needs a host"),
            ("srt://h", "has no port"),
            ("srt://h:99999", "port \"99999\" is not a number 1-65535"),
            ("http://h:1", "is not an SRT URL"),
            ("srt://h:1?foo=1", "unknown option \"foo\""),
            ("srt://h:1?latency=100&latency=200", "option latency is given twice"),
            ("srt://h:1?oheadbw=200", "oheadbw=200 is not a percentage 5-100"),
        ];
        for (input, want) in cases {
            let err = SrtUrl::parse(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn passphrase_never_in_errors() {
        let err = SrtUrl::parse("http://h:1?passphrase=supersecret99").unwrap_err().to_string();
        assert!(!err.contains("supersecret99"), "{err}");
    }

    #[test]
    fn urls_that_cannot_work_are_refused_with_what_to_write() {
        let e = |u: &str| SrtUrl::parse(u).unwrap_err().to_string();
        assert!(
            e("srt://127.0.0.1@127.0.0.1:9000").contains("has a user part"),
            "{}",
            e("srt://127.0.0.1@127.0.0.1:9000")
        );
        assert!(e("srt:// :9000").contains("space"), "{}", e("srt:// :9000"));
        assert_eq!(e("srt://::1:9000"), "\"srt://::1:9000\": an IPv6 address goes in brackets, e.g. srt://[::1]:9000");
        assert_eq!(
            e("srt://:9000?latency=200.5"),
            "latency=200.5 is not auto nor a whole number of milliseconds (20-8000)"
        );
        assert_eq!(
            e("srt://:9000?latency=fast"),
            "latency=fast is not auto nor a whole number of milliseconds (20-8000)"
        );
        assert_eq!(e("srt://:9000?latency=10"), "latency=10 is out of range 20-8000 ms");
        assert_eq!(e("srt://:9000?latency=-5"), "latency=-5 is out of range 20-8000 ms");
        assert!(e("srt://[not-v6]:9000").contains("not an IPv6 address"));
    }

    #[test]
    fn ipv6() {
        let u = SrtUrl::parse("srt://[::1]:9000").unwrap();
        assert_eq!(u.host.as_deref(), Some("::1"));
        assert!(u.uri_without_secret().starts_with("srt://[::1]:9000"));
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = SrtUrl::parse(&s);
            let _ = SrtUrl::parse(&format!("srt://{s}"));
        }

        #[test]
        fn round_trip(port in 1u16.., latency in 20u64..=8000, sid in "[a-zA-Z0-9#!:=,/ &%]{0,40}", listener: bool) {
            let host = if listener { "" } else { "10.0.0.1" };
            let url = SrtUrl {
                host: (!listener).then(|| host.to_string()), port,
                mode: if listener { SrtMode::Listener } else { SrtMode::Caller },
                latency: Some(Latency::Fixed(Duration::from_millis(latency))), passphrase: None, key_length: None,
                stream_id: (!sid.is_empty()).then(|| sid.clone()), max_bw_bytes_per_s: None,
                input_bw_bytes_per_s: None, overhead_bw_pct: None, connect_timeout: None, peer_idle_timeout: None,
                local_address: None, local_port: None, meet_token: None, bond: Vec::new(),
            };
            let again = SrtUrl::parse(&url.uri_without_secret()).unwrap();
            prop_assert_eq!(again, url);
        }
    }
}
