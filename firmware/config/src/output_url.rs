//! RTMP(S) and recording outputs: `rtmp://HOST[:PORT]/APP/KEY`, `rtmps://...` (add
//! `?tls_verify=0` only for a server with a self-signed certificate), and
//! `file:/DIR/NAME-%Y%m%d-%H%M%S.ts?segment=10m`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::Secret;

/// The longest WHIP bearer token taken (cloud services issue JWTs of a few hundred characters).
pub const WHIP_TOKEN_MAX: usize = 2048;

/// An RTMP or RTMPS destination. `Display` and `Debug` show the stream key as `****`.
#[derive(Clone, PartialEq, Eq)]
pub struct RtmpUrl {
    /// `rtmps://`: TLS to the server.
    pub secure: bool,
    /// Server host.
    pub host: String,
    /// Server port (1935 for rtmp, 443 for rtmps by default).
    pub port: u16,
    /// The application (`live`, `live2`, `app`).
    pub app: String,
    /// The stream key: a secret.
    pub key: Secret,
    /// Check the server's certificate (rtmps). Only a test server turns this off.
    pub tls_verify: bool,
}

/// Why an RTMP URL was refused; the key is never shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputUrlError {
    /// No application or key.
    #[error("{0} needs an application and a stream key: write rtmp://HOST/APP/KEY")]
    NoAppOrKey(String),
    /// Bad port.
    #[error("port {0:?} is not a number 1-65535")]
    BadPort(String),
    /// No host.
    #[error("{0} has no host: write rtmp://HOST/APP/KEY")]
    NoHost(String),
    /// A host that cannot work.
    #[error("{0}")]
    BadHost(String),
    /// A recording path that is not absolute or not .ts.
    #[error("recording path {0:?} must be absolute and end in .ts, e.g. file:/media/usb/show-%Y%m%d-%H%M%S.ts")]
    BadPath(String),
    /// A bad segment length.
    #[error("segment={0} is not a length 10s-24h (write e.g. 30s, 10m, 1h)")]
    BadSegment(String),
    /// An option this product does not know.
    #[error("unknown option {0:?}; known: segment")]
    UnknownOption(String),
    /// A value out of what is allowed: what was written, what is allowed.
    #[error("{0} is not allowed: {1}")]
    BadOption(String, &'static str),
    /// A WHIP bearer token that cannot be sent (its length only: it is a secret).
    #[error("token= has {0} characters; a bearer token is 1-{max} visible ASCII characters (no spaces)", max = WHIP_TOKEN_MAX)]
    BadToken(usize),
    /// `token=****`: a hidden token that matched no output's.
    #[error(
        "token=**** stands for a token already saved, but this URL matches no saved output's: type the token again"
    )]
    HiddenToken,
}

impl RtmpUrl {
    /// Parses `rtmp://` or `rtmps://`.
    pub fn parse(input: &str) -> Result<Self, OutputUrlError> {
        let (secure, rest) = match (input.strip_prefix("rtmp://"), input.strip_prefix("rtmps://")) {
            (Some(r), _) => (false, r),
            (_, Some(r)) => (true, r),
            _ => return Err(OutputUrlError::NoHost(redact(input))),
        };
        let scheme = if secure { "rtmps" } else { "rtmp" };
        let (authority, path) =
            rest.split_once('/').ok_or_else(|| OutputUrlError::NoAppOrKey(format!("{scheme}://{rest}")))?;
        let (host, port) = authority_parts(scheme, authority, if secure { 443 } else { 1935 })?;
        let (app, key) =
            path.split_once('/').ok_or_else(|| OutputUrlError::NoAppOrKey(format!("{scheme}://{authority}/{path}")))?;
        // `tls_verify=0` is ours; anything else after '?' belongs to the key (Twitch's
        // `?bandwidthtest=true`).
        let mut tls_verify = true;
        let key = match key.split_once('?') {
            Some((k, q)) => {
                let rest: Vec<&str> = q
                    .split('&')
                    .filter(|p| {
                        if *p == "tls_verify=0" || *p == "tls_verify=false" {
                            tls_verify = false;
                            false
                        } else {
                            !p.starts_with("tls_verify=")
                        }
                    })
                    .collect();
                if rest.is_empty() {
                    k.to_string()
                } else {
                    format!("{k}?{}", rest.join("&"))
                }
            }
            None => key.to_string(),
        };
        if app.is_empty() || key.is_empty() {
            return Err(OutputUrlError::NoAppOrKey(format!("{scheme}://{authority}/{app}/")));
        }
        Ok(Self { secure, host, port, app: app.to_string(), key: Secret::new(key), tls_verify })
    }

    /// `rtmp://host:port/app/****`.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for RtmpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        write!(f, "{}://{}:{}/{}/****", if self.secure { "rtmps" } else { "rtmp" }, host, self.port, self.app)
    }
}

impl fmt::Debug for RtmpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RtmpUrl({self})")
    }
}

/// The host and port of `authority` (`HOST`, `HOST:PORT`, `[IPV6]:PORT`), checked.
pub(crate) fn authority_parts(
    scheme: &str,
    authority: &str,
    default_port: u16,
) -> Result<(String, u16), OutputUrlError> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| OutputUrlError::BadPort(p.to_string()));
    let bracketed = authority.starts_with('[');
    let (host, port) = match authority.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((h, "")) => (h, default_port),
        Some((h, after)) => (h, port(after.strip_prefix(':').unwrap_or(after))?),
        None if authority.matches(':').count() > 1 => (authority, default_port),
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, port(p)?),
            None => (authority, default_port),
        },
    };
    if host.is_empty() {
        return Err(OutputUrlError::NoHost(format!("{scheme}://")));
    }
    crate::check_host(scheme, host, bracketed).map_err(OutputUrlError::BadHost)?;
    Ok((host.to_string(), port))
}

/// Hides what follows the application in an rtmp URL (for errors about malformed ones). A
/// WHIP URL (`https`, `http`, `whip`) keeps its path: its secret is its `token=` (see
/// [`crate::srt_url::redact_query`]).
pub fn redact(input: &str) -> String {
    if ["whip://", "http://", "https://"].iter().any(|s| input.starts_with(s)) {
        return input.to_string();
    }
    let Some(i) = input.find("://") else { return input.to_string() };
    let after = &input[i + 3..];
    match after.split_once('/').and_then(|(a, p)| p.split_once('/').map(|(app, _)| (a, app))) {
        Some((authority, app)) => format!("{}{authority}/{app}/****", &input[..i + 3]),
        None => input.to_string(),
    }
}

/// A recording: MPEG-TS segments named from a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// The path pattern; `%Y %m %d %H %M %S` are replaced (UTC) when a segment opens.
    pub pattern: PathBuf,
    /// Length of a segment; a new file starts at the first keyframe after it.
    pub segment: Duration,
}

impl FileSpec {
    /// Parses `file:/DIR/NAME.ts?segment=10m`.
    pub fn parse(input: &str) -> Result<Self, OutputUrlError> {
        let rest = input.strip_prefix("file:").unwrap_or(input);
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        if !path.starts_with('/') || !path.ends_with(".ts") {
            return Err(OutputUrlError::BadPath(path.to_string()));
        }
        let mut segment = Duration::from_secs(600);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("segment", v)) => {
                    segment = parse_length(v).ok_or_else(|| OutputUrlError::BadSegment(v.to_string()))?
                }
                _ => return Err(OutputUrlError::UnknownOption(pair.to_string())),
            }
        }
        Ok(Self { pattern: PathBuf::from(path), segment })
    }

    /// `file:/path (segments of N s)`.
    pub fn label(&self) -> String {
        format!("file:{}", self.pattern.display())
    }
}

fn parse_length(s: &str) -> Option<Duration> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => return None,
    }?;
    (10..=86_400).contains(&secs).then(|| Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtmp_forms() {
        let u = RtmpUrl::parse("rtmp://a.rtmp.youtube.com/live2/abcd-efgh-ijkl").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.app.as_str(), u.key.expose(), u.secure),
            ("a.rtmp.youtube.com", 1935, "live2", "abcd-efgh-ijkl", false)
        );
        let u = RtmpUrl::parse("rtmps://live.example:4443/app/key?bandwidthtest=true&tls_verify=0").unwrap();
        assert_eq!((u.port, u.key.expose(), u.tls_verify, u.secure), (4443, "key?bandwidthtest=true", false, true));
        assert_eq!(RtmpUrl::parse("rtmps://x/app/k").unwrap().port, 443);
    }

    #[test]
    fn key_never_shown() {
        let u = RtmpUrl::parse("rtmp://h:1935/live/supersecretkey").unwrap();
        let shown = format!("{u} {u:?} {}", u.label());
        assert!(!shown.contains("supersecretkey"), "{shown}");
        assert_eq!(u.to_string(), "rtmp://h:1935/live/****");
        assert_eq!(redact("rtmp://h/live/supersecretkey"), "rtmp://h/live/****");
    }

    #[test]
    fn rtmp_errors() {
        assert_eq!(
            RtmpUrl::parse("rtmp://h/live").unwrap_err().to_string(),
            "rtmp://h/live needs an application and a stream key: write rtmp://HOST/APP/KEY"
        );
        assert_eq!(
            RtmpUrl::parse("rtmp://h:99999/live/k").unwrap_err().to_string(),
            "port \"99999\" is not a number 1-65535"
        );
        let e = RtmpUrl::parse("rtmp://::1/app/key").unwrap_err().to_string();
        assert!(e.contains("put it in brackets, e.g. rtmp://[::1]:PORT"), "{e}");
        let e = RtmpUrl::parse("rtmp://user@live.example/app/key").unwrap_err().to_string();
        assert!(e.contains("has a user part"), "{e}");
        let u = RtmpUrl::parse("rtmp://[::1]:1936/app/key").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.to_string().as_str()), ("::1", 1936, "rtmp://[::1]:1936/app/****"));
        assert_eq!(RtmpUrl::parse("rtmps://[::1]/app/key").unwrap().port, 443);
    }

    #[test]
    fn file_forms() {
        let f = FileSpec::parse("file:/media/usb/show-%Y%m%d-%H%M%S.ts?segment=30s").unwrap();
        assert_eq!(f.segment, Duration::from_secs(30));
        assert_eq!(FileSpec::parse("file:/r/x.ts").unwrap().segment, Duration::from_secs(600));
        assert!(FileSpec::parse("file:rel/x.ts").unwrap_err().to_string().contains("must be absolute and end in .ts"));
        assert_eq!(
            FileSpec::parse("file:/r/x.ts?segment=2s").unwrap_err().to_string(),
            "segment=2s is not a length 10s-24h (write e.g. 30s, 10m, 1h)"
        );
        // Found by fuzzing (fuzz/seeds/urls/segment-overflow): a number that overflows when
        // turned into seconds panicked (debug) or wrapped into range (release).
        assert!(FileSpec::parse("file:/=S.ts?segment=1900200008000200803m").is_err());
        assert!(FileSpec::parse("file:/r/x.ts?segment=307445734561825861h").is_err(), "wraps to 10 m");
    }
}
