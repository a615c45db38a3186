//! Why libsrt rejected a connection. A caller learns it from `srt_getrejectreason`; a listener
//! only from libsrt's log ("Incorrect passphrase"), which this module reads so the status can
//! say why in words.

use std::sync::{Mutex, OnceLock};
use telebridge_sync::Locked;

use crate::ffi;
use std::time::Instant;

/// A reason libsrt gave for refusing a handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The two ends have different passphrases.
    BadPassphrase,
    /// One end encrypts and the other does not.
    EncryptionMismatch,
    /// More callers arrived at once than the listener queues; the caller should call again.
    Backlog,
    /// Anything else, with libsrt's words.
    Other(String),
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RejectReason::BadPassphrase => f.write_str("passphrase rejected: the two ends have different passphrases"),
            RejectReason::EncryptionMismatch => f.write_str(
                "passphrase rejected: one end encrypts and the other does not (set the same passphrase on both)",
            ),
            RejectReason::Backlog => f.write_str(
                "connection rejected: more callers arrived at the same moment than the listener's queue holds; the caller must call again (Telebridge decoders do)",
            ),
            RejectReason::Other(s) => write!(f, "connection rejected: {s}"),
        }
    }
}

impl RejectReason {
    /// What a caller's `srt_getrejectreason` means; `None` for "no answer" (a timeout) and
    /// "nothing known", which the caller words itself.
    pub fn from_code(code: i32) -> Option<Self> {
        match code {
            0 | 16 => None, // SRT_REJ_UNKNOWN, SRT_REJ_TIMEOUT
            10 => Some(RejectReason::BadPassphrase),
            11 => Some(RejectReason::EncryptionMismatch),
            5 => Some(RejectReason::Backlog),
            c => Some(RejectReason::Other(reject_words(c))),
        }
    }
}

/// Classifies a libsrt log line; `None` if it is not about a rejection.
pub fn classify(line: &str) -> Option<RejectReason> {
    let l = line.to_ascii_lowercase();
    if !(l.contains("reject") || l.contains("badsecret")) {
        return None;
    }
    if l.contains("passphrase") || l.contains("badsecret") {
        Some(RejectReason::BadPassphrase)
    } else if l.contains("unsecure") || l.contains("password required") || l.contains("encryption") {
        Some(RejectReason::EncryptionMismatch)
    } else if l.contains("backlog") {
        Some(RejectReason::Backlog)
    } else {
        // libsrt ends these lines with its reason: "rsp(REJECT): 1003 - System resource ...".
        let reason = line.rsplit(" - ").next().or_else(|| line.rsplit(':').next()).unwrap_or(line);
        Some(RejectReason::Other(reason.trim().to_string()))
    }
}

/// How often rejections are logged: a flood of spoofed handshakes must not flood the log.
pub const REJECT_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Which rejections to log: the first, then at most one per [`REJECT_LOG_EVERY`] saying how
/// many were not logged in between. Pure: tested without waiting.
#[derive(Debug, Clone, Default)]
pub struct RejectLog {
    last_logged: Option<Instant>,
    unlogged: u32,
}

impl RejectLog {
    /// A rejection at `now`: `Some(n)` to log it (with `n` rejections not logged since the last
    /// line), `None` to count it silently.
    pub fn rejected(&mut self, now: Instant) -> Option<u32> {
        match self.last_logged {
            Some(t) if now.duration_since(t) < REJECT_LOG_EVERY => {
                self.unlogged += 1;
                None
            }
            _ => {
                self.last_logged = Some(now);
                Some(std::mem::take(&mut self.unlogged))
            }
        }
    }
}

static REJECTS: OnceLock<Mutex<Vec<(Instant, RejectReason)>>> = OnceLock::new();

fn rejects() -> &'static Mutex<Vec<(Instant, RejectReason)>> {
    REJECTS.get_or_init(|| Mutex::new(Vec::new()))
}

/// The most specific rejection logged since `since`, if any.
pub fn rejected_since(since: Instant) -> Option<RejectReason> {
    let g = rejects().locked();
    let recent: Vec<&RejectReason> = g.iter().filter(|(t, _)| *t >= since).map(|(_, r)| r).collect();
    recent.iter().find(|r| !matches!(r, RejectReason::Other(_))).or_else(|| recent.first()).map(|r| (*r).clone())
}

/// Rejections remembered at most (the last minute's, and no more than these): a stranger's
/// flood of handshakes cannot grow the list.
const MAX_REJECTS: usize = 64;

fn record(reason: RejectReason) {
    let mut g = rejects().locked();
    let now = Instant::now();
    g.retain(|(t, _)| now.duration_since(*t).as_secs() < 60);
    if g.len() >= MAX_REJECTS {
        let over = g.len() + 1 - MAX_REJECTS;
        g.drain(..over);
    }
    g.push((now, reason));
}

/// Routes libsrt's log through [`classify`], so outputs and inputs can say why a connection
/// was refused (GStreamer's log, where a process has it, is routed by `telebridge_media`, whose
/// SRT plugin lines come to [`note_log_line`]).
pub fn install_log_hook() {
    route_libsrt_log();
}

/// One line of libsrt's log from elsewhere (GStreamer's SRT plugin takes libsrt's log over in a
/// process that uses it): a rejection in it is recorded for [`rejected_since`].
pub fn note_log_line(text: &str) {
    if let Some(reason) = classify(text) {
        record(reason);
    }
}

/// Points libsrt's log at [`classify`]: every rejection libsrt logs (on either side of a
/// handshake) is recorded for [`rejected_since`]; its errors go to `tracing` at debug level.
pub(crate) fn route_libsrt_log() {
    crate::sys::log::install();
}

/// One line of libsrt's log, at its level (3 and under: errors).
pub(crate) fn on_libsrt_line(level: i32, text: &str) {
    if let Some(reason) = classify(text) {
        record(reason);
    }
    if level <= 3 {
        tracing::debug!(target: "libsrt", "{}", text.trim_end());
    }
}

/// libsrt's words for a reject code.
pub fn reject_words(code: i32) -> String {
    match code {
        ffi::SRT_REJX_BAD_REQUEST => "the listener does not know this stream id".into(),
        ffi::SRT_REJX_UNAUTHORIZED => "the listener refused the credentials".into(),
        ffi::SRT_REJX_OVERLOAD => "the listener is full".into(),
        ffi::SRT_REJX_NOTFOUND => "no such stream at the listener".into(),
        ffi::SRT_REJX_CONFLICT => "the listener's stream is taken (another sender is connected)".into(),
        c => crate::sys::log::reject_reason(c).unwrap_or_else(|| format!("code {c}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_rejections_is_logged_once_every_ten_seconds() {
        let mut log = RejectLog::default();
        let t = Instant::now();
        assert_eq!(log.rejected(t), Some(0));
        let logged: Vec<_> = (1..=100)
            .filter_map(|k| log.rejected(t + std::time::Duration::from_millis(k * 200)).map(|n| (k, n)))
            .collect();
        // 20 s of five a second: a line at 10 s and at 20 s, each counting the ones between.
        assert_eq!(logged, vec![(50, 49), (100, 49)]);
    }

    #[test]
    fn the_remembered_rejections_are_bounded() {
        for _ in 0..MAX_REJECTS * 20 {
            record(RejectReason::Other("a stranger's handshake".into()));
        }
        assert_eq!(rejects().lock().unwrap().len(), MAX_REJECTS);
    }

    #[test]
    fn libsrt_lines() {
        // Lines as libsrt 1.5.1 logs them, caller side and listener side.
        assert_eq!(
            classify("processAsyncConnectRequest: REJECT reported from HS processing: Incorrect passphrase - not processing further"),
            Some(RejectReason::BadPassphrase)
        );
        assert_eq!(
            classify("@754477089:newConnection: connection rejected due to: INTERNAL REJECTION - ERROR:BADSECRET"),
            Some(RejectReason::BadPassphrase)
        );
        assert_eq!(
            classify("processConnectRequest: rsp(REJECT): 1012 - Password required or unexpected"),
            Some(RejectReason::EncryptionMismatch)
        );
        assert_eq!(
            classify("processConnectRequest: rsp(REJECT): 1003 - System resource allocation failure"),
            Some(RejectReason::Other("System resource allocation failure".into()))
        );
        assert_eq!(
            classify("processConnectRequest: rsp(REJECT): 1007 - Listener's backlog exceeded"),
            Some(RejectReason::Backlog)
        );
        assert_eq!(
            classify("processAsyncConnectRequest: REJECT reported from HS processing: Listener's backlog exceeded - not processing further"),
            Some(RejectReason::Backlog)
        );
        assert_eq!(RejectReason::from_code(10), Some(RejectReason::BadPassphrase));
        assert_eq!(RejectReason::from_code(16), None);
        assert_eq!(
            RejectReason::from_code(1409).map(|r| r.to_string()),
            Some("connection rejected: the listener's stream is taken (another sender is connected)".into())
        );
        assert_eq!(classify("epoll/update: IPE: update struck E1 which is NOT SUBSCRIBED to @1"), None);
    }
}
