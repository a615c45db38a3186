//! One WHIP output (RFC 9725): the programme over WebRTC to a server that takes WHIP (cloud
//! services, OBS's and GStreamer's servers), in a thread of its own like RTMP's. Each attempt
//! builds a sender ([`telebridge_media::monitor::Publisher`]: the H.264 as it is, the sound made
//! Opus), POSTs its offer with the bearer token, takes the answer, and carries the stream until
//! the connection fails, the server stops sending RTCP, or the output is stopped; then it
//! DELETEs the session and retries with capped backoff.

use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst_webrtc::WebRTCPeerConnectionState as Pc;
use telebridge_config::WhipUrl;
use telebridge_media::monitor::Publisher;
use telebridge_srt::supervisor::{Attempt, Control, Job, Supervisor};
use telebridge_srt::{Backoff, OutputState, OutputStatus};
use telebridge_sync::Locked;
use tokio::sync::watch;
use tracing::{info, warn};

use telebridge_http::{self as http, Response, Target};

/// How long the server has to answer a request.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long ICE and DTLS have to connect after the answer.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// A server silent this long (no RTCP) is gone.
const SILENT_FOR: Duration = Duration::from_secs(5);

type Slot = Arc<Mutex<Option<Arc<Publisher>>>>;

/// A running WHIP output.
#[derive(Debug)]
pub struct WhipOutput {
    slot: Slot,
    queue_bytes: u64,
    dropped: Arc<AtomicU64>,
    status: watch::Receiver<OutputStatus>,
    supervisor: Option<Supervisor>,
}

impl WhipOutput {
    /// Starts an output to `url`. `keyframe` asks the encoder for a keyframe.
    pub fn start(name: String, url: WhipUrl, queue_bytes: u64, keyframe: Arc<dyn Fn() + Send + Sync>) -> Self {
        let (status_tx, status_rx) =
            watch::channel(OutputStatus::new("whip", name.clone(), url.label(), OutputState::Connecting));
        let slot: Slot = Arc::new(Mutex::new(None));
        let dropped = Arc::new(AtomicU64::new(0));
        let worker = Worker { url, status: status_tx, keyframe, slot: slot.clone(), dropped: dropped.clone() };
        let supervisor = Supervisor::spawn(format!("whip-{name}"), Backoff::default(), worker)
            .map_err(|e| warn!(output = %name, error = %e, "cannot start the WHIP output's thread"))
            .ok();
        Self { slot, queue_bytes, dropped, status: status_rx, supervisor }
    }

    /// Hands the output TS bytes; never blocks (past its queue, the sender drops and counts).
    pub fn send(&self, data: &[u8]) {
        let publisher = self.slot.locked().clone();
        if let Some(p) = publisher {
            if p.queued_bytes() + data.len() as u64 > self.queue_bytes {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            p.push(data);
        }
    }

    /// The output's status.
    pub fn status(&self) -> watch::Receiver<OutputStatus> {
        self.status.clone()
    }

    /// Ends the session (DELETE) and stops.
    pub fn stop(mut self) {
        if let Some(s) = self.supervisor.as_mut() {
            s.stop();
        }
    }
}

struct Worker {
    url: WhipUrl,
    status: watch::Sender<OutputStatus>,
    keyframe: Arc<dyn Fn() + Send + Sync>,
    slot: Slot,
    dropped: Arc<AtomicU64>,
}

impl Job for Worker {
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt {
        self.status.send_modify(|s| s.state = OutputState::Connecting);
        let (publisher, session) = match self.publish() {
            Ok(p) => p,
            Err(reason) => return Attempt::Failed(reason),
        };
        let publisher = Arc::new(publisher);
        *self.slot.locked() = Some(publisher.clone());
        (self.keyframe)();
        let end = self.carry(control, &publisher, attempts);
        *self.slot.locked() = None;
        if let Some(session) = session {
            self.end_session(&session);
        }
        drop(publisher);
        end
    }

    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration) {
        warn!(output = %self.url, %reason, retry_in_ms = delay.as_millis() as u64, "WHIP output retrying");
        self.status.send_modify(|s| {
            s.state = OutputState::Retrying;
            s.reason = Some(reason);
            s.reconnects = attempts;
            s.callers = 0;
        });
    }

    fn stopped(&mut self) {
        self.status.send_modify(|s| {
            s.state = OutputState::Stopped;
            s.callers = 0;
        });
    }
}

impl Worker {
    fn endpoint(&self) -> Target {
        Target {
            secure: self.url.secure(),
            tls_verify: self.url.tls_verify,
            host: self.url.host.clone(),
            port: self.url.port,
            path: self.url.path.clone(),
        }
    }

    fn where_(&self) -> String {
        format!("{}:{}", self.url.host, self.url.port)
    }

    /// A sender, its offer POSTed, the answer taken: the sender and the session's URL.
    fn publish(&self) -> Result<(Publisher, Option<Target>), String> {
        let endpoint = self.endpoint();
        let (publisher, offer) = Publisher::offer(route_from(&self.url.host, self.url.port))
            .map_err(|e| format!("cannot make an offer: {e}"))?;
        let token = self.url.token.as_ref().map(|t| format!("Bearer {}", t.expose()));
        let mut headers = vec![("Content-Type", "application/sdp"), ("Accept", "application/sdp")];
        if let Some(t) = token.as_deref() {
            headers.push(("Authorization", t));
        }
        let request = http::request_bytes("POST", &endpoint, &headers, offer.as_bytes());
        let response = http::send(&endpoint, &request, HTTP_TIMEOUT)?;
        let answer = self.answer_of(&response)?;
        publisher.accept(&answer).map_err(|e| format!("{}: {e}", self.where_()))?;
        let session = response.location.as_deref().and_then(|l| endpoint.resolve(l));
        Ok((publisher, session))
    }

    /// The SDP answer in the server's response, or why there is none, in words.
    fn answer_of(&self, r: &Response) -> Result<String, String> {
        let at = self.where_();
        match r.status {
            200 | 201 => {}
            401 | 403 => {
                return Err(format!("{at} refused the bearer token ({}): check token= in the output's URL", r.status))
            }
            404 => return Err(format!("{at} has no WHIP endpoint at {} (404)", self.url.path)),
            s @ 300..=399 => return Err(format!("{at} redirects ({s}); use the URL it names")),
            s => {
                let said = String::from_utf8_lossy(&r.body).split_whitespace().collect::<Vec<_>>().join(" ");
                return Err(format!("{at} refused the offer ({s}): {}", said.chars().take(120).collect::<String>()));
            }
        }
        if r.content_type.as_deref().is_some_and(|t| t != "application/sdp") {
            return Err(format!(
                "{at} answered with {} instead of application/sdp",
                r.content_type.as_deref().unwrap_or("")
            ));
        }
        String::from_utf8(r.body.clone()).map_err(|_| format!("{at}'s answer is not text"))
    }

    /// Carries the stream until it fails or a stop comes.
    fn carry(&self, control: &Control, publisher: &Publisher, attempts: &mut u32) -> Attempt {
        let started = Instant::now();
        let mut live = false;
        loop {
            if control.stop_within(Duration::from_millis(200)) {
                return Attempt::Stopped;
            }
            let was_live = live;
            match judge(live, publisher.state(), started.elapsed(), publisher.server_silent_for()) {
                Verdict::Going(now_live) => live = now_live,
                Verdict::Failed(why) => return Attempt::Failed(why.words(&self.where_())),
            }
            if live && !was_live {
                *attempts = 0;
                info!(output = %self.url, "WHIP output publishing");
                (self.keyframe)();
            }
            let (bytes, dropped) = (publisher.bytes_sent(), self.dropped.load(Ordering::Relaxed));
            self.status.send_modify(|s| {
                s.state = if live { OutputState::Live } else { OutputState::Connecting };
                if live {
                    s.reason = None;
                }
                s.callers = usize::from(live);
                s.bytes_written = bytes;
                s.queue_dropped = dropped;
            });
        }
    }

    /// Ends the session on the server (best effort: a server that is gone has ended it).
    fn end_session(&self, session: &Target) {
        let token = self.url.token.as_ref().map(|t| format!("Bearer {}", t.expose()));
        let headers: Vec<(&str, &str)> = token.as_deref().map(|t| ("Authorization", t)).into_iter().collect();
        let request = http::request_bytes("DELETE", session, &headers, b"");
        if let Err(e) = http::send(session, &request, Duration::from_secs(2)) {
            info!(output = %self.url, error = %e, "the WHIP session's DELETE did not go through");
        }
    }
}

/// How a connection stands, judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Going on; `true` once media flows.
    Going(bool),
    /// Over.
    Failed(Failure),
}

/// Why a connection is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// ICE or DTLS failed before media flowed.
    NeverConnected,
    /// Not connected within [`CONNECT_WITHIN`] of the answer.
    Slow,
    /// Failed or closed after media flowed.
    Lost,
    /// No RTCP from the server for [`SILENT_FOR`] (or none at all since it went live).
    Silent,
}

impl Failure {
    fn words(self, at: &str) -> String {
        match self {
            Failure::NeverConnected => format!("no media connection to {at} (ICE or DTLS failed)"),
            Failure::Slow => format!("no media connection to {at} within {} s of its answer", CONNECT_WITHIN.as_secs()),
            Failure::Lost => format!("connection to {at} lost"),
            Failure::Silent => format!("{at} stopped answering (no RTCP for {} s)", SILENT_FOR.as_secs()),
        }
    }
}

/// How the connection stands: whether it was `live`, its state now, how long since the answer,
/// and how long the server has been silent (`None`: it never reported). Pure.
fn judge(live: bool, state: Pc, since_answer: Duration, silent_for: Option<Duration>) -> Verdict {
    let live = live || state == Pc::Connected;
    if matches!(state, Pc::Failed | Pc::Closed) {
        return Verdict::Failed(if live { Failure::Lost } else { Failure::NeverConnected });
    }
    if !live {
        return if since_answer > CONNECT_WITHIN { Verdict::Failed(Failure::Slow) } else { Verdict::Going(false) };
    }
    // Every WebRTC receiver reports (RTCP) every second or so, the first within a few.
    let silent = match silent_for {
        Some(d) => d > SILENT_FOR,
        None => since_answer > CONNECT_WITHIN + SILENT_FOR,
    };
    if silent {
        Verdict::Failed(Failure::Silent)
    } else {
        Verdict::Going(true)
    }
}

/// The address the route to `host` leaves from: the box's ICE candidates are gathered there
/// only (no STUN server; a server on the Internet reaches it through the NAT's mapping of the
/// box's own checks).
fn route_from(host: &str, port: u16) -> Option<IpAddr> {
    let to = (host, port).to_socket_addrs().ok()?.next()?;
    let socket = UdpSocket::bind(if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }).ok()?;
    socket.connect(to).ok()?;
    socket.local_addr().ok().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_connection_goes_live_and_a_silent_server_ends_it() {
        assert_eq!(judge(false, Pc::Connecting, S(2), None), Verdict::Going(false));
        assert_eq!(judge(false, Pc::Connected, S(2), None), Verdict::Going(true));
        assert_eq!(judge(true, Pc::Connected, S(30), Some(S(1))), Verdict::Going(true));
        assert_eq!(judge(true, Pc::Connected, S(30), Some(S(6))), Verdict::Failed(Failure::Silent));
        // A server that never reported is given the connect time and the silence.
        assert_eq!(judge(true, Pc::Connected, S(14), None), Verdict::Going(true));
        assert_eq!(judge(true, Pc::Connected, S(16), None), Verdict::Failed(Failure::Silent));
        // libnice may say disconnected for a moment; only RTCP's silence ends it then.
        assert_eq!(judge(true, Pc::Disconnected, S(30), Some(S(2))), Verdict::Going(true));
    }

    #[test]
    fn a_connection_that_never_comes_or_fails_is_told_apart() {
        assert_eq!(judge(false, Pc::Connecting, S(11), None), Verdict::Failed(Failure::Slow));
        assert_eq!(judge(false, Pc::Failed, S(1), None), Verdict::Failed(Failure::NeverConnected));
        assert_eq!(judge(true, Pc::Closed, S(20), Some(S(1))), Verdict::Failed(Failure::Lost));
        assert_eq!(Failure::Silent.words("h:443"), "h:443 stopped answering (no RTCP for 5 s)");
    }
}
