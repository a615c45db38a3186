//! The media's one-second sample as the daemon, the API, the history and Prometheus read it: one
//! typed model (the encoder's `--stats json` line or the decoder's), serialised once, at the
//! API's edge. The rules over it live here, once: how the links stand, which SRT link the
//! history follows, what needs the user's attention.

use crate::machine::Links;
use crate::roles::{BridgeSample, DecodeSample, StatsSample};
use crate::srt::{InputState, OutputState, OutputStatus, SrtStats};
use serde::Serialize;

/// The name of the connection to the paired box among a bridge's outputs.
pub const PEER_OUTPUT: &str = "peer";

/// One second of the running media.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum MediaSample {
    /// The encoder role's sample.
    Encoder(Box<StatsSample>),
    /// The decoder role's sample.
    Decoder(Box<DecodeSample>),
    /// The bridge role's: what it sends (as the encoder's) and what it receives.
    Bridge(Box<BridgeSample>),
}

/// One SRT link of a sample, or another output, as the metrics label it.
#[derive(Debug, Clone, Copy)]
pub struct Link<'a> {
    /// The output's name, or `input`.
    pub name: &'a str,
    /// `srt`, `rtmp`, `file` (an output), or `srt` (the decoder's input).
    pub kind: &'a str,
    /// Carrying the stream (an output live, the input receiving).
    pub up: bool,
    /// libsrt's counters (zero for outputs that are not SRT).
    pub srt: &'a SrtStats,
}

/// A link's state, as an output's or an input's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LinkState {
    /// An output's.
    Output(OutputState),
    /// The decoder's input's.
    Input(InputState),
}

/// One link as the panel lists it: its name, its state and why it is not up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkView {
    /// The output's name, or the input's URL (no secrets).
    pub name: String,
    /// Its state.
    pub state: LinkState,
    /// Why it is not up, in words.
    pub reason: Option<String>,
    /// Its SRT latency and why ("RTT 21 ms, loss 0.2 %: 3 x RTT = 63 ms"), for an SRT output.
    pub latency: Option<String>,
    /// A bonded output's uplinks, each in words ("wwan0: up, RTT 62 ms, 1.8 Mbit/s, 45 %").
    pub uplinks: Vec<String>,
    /// When it came into this state (ms since the Unix epoch), as [`stamp_since`] keeps it.
    pub since_unix_ms: Option<u64>,
}

/// Each link's state and when it came into it, by name.
pub type SinceBook = Vec<(String, LinkState, u64)>;

/// Fills in when each link came into its state: kept in `book` across samples (a link that
/// changed state, or is new, is stamped `now_ms`; links gone are forgotten).
pub fn stamp_since(views: &mut [LinkView], book: &mut SinceBook, now_ms: u64) {
    let mut next = Vec::with_capacity(views.len());
    for v in views.iter_mut() {
        let since = match book.iter().find(|(n, st, _)| *n == v.name && *st == v.state) {
            Some((_, _, at)) => *at,
            None => now_ms,
        };
        v.since_unix_ms = Some(since);
        next.push((v.name.clone(), v.state, since));
    }
    *book = next;
}

/// An output's uplinks that cannot be opened, in words ("uplink nosuch9: no such network
/// interface"), joined.
fn uplink_problems(o: &OutputStatus) -> Option<String> {
    let p: Vec<String> =
        o.uplinks.iter().filter_map(|u| u.problem.as_ref().map(|p| format!("uplink {}: {p}", u.name))).collect();
    (!p.is_empty()).then(|| p.join("; "))
}

impl MediaSample {
    /// What is encoded and sent: the encoder's sample, or the bridge's sending half.
    pub fn sending(&self) -> Option<&StatsSample> {
        match self {
            MediaSample::Encoder(s) => Some(s),
            MediaSample::Bridge(b) => Some(&b.sending),
            MediaSample::Decoder(_) => None,
        }
    }

    /// Every link, as the panel lists them.
    pub fn link_views(&self) -> Vec<LinkView> {
        match self {
            MediaSample::Encoder(_) | MediaSample::Bridge(_) => self
                .outputs()
                .iter()
                .map(|o| LinkView {
                    name: o.name.clone(),
                    state: LinkState::Output(o.state),
                    reason: uplink_problems(o).or_else(|| o.reason.clone()),
                    latency: o.latency.as_ref().map(|c| format!("SRT latency {} ms: {}", c.latency_ms, c.reason)),
                    uplinks: o.uplinks.iter().map(ToString::to_string).collect(),
                    since_unix_ms: None,
                })
                .collect(),
            MediaSample::Decoder(s) => vec![LinkView {
                name: s.input.url.clone(),
                state: LinkState::Input(s.input.state),
                reason: s.input.reason.clone(),
                latency: None,
                uplinks: Vec::new(),
                since_unix_ms: None,
            }],
        }
    }

    /// How the links stand. A caller that lost its peer alternates between waiting (retrying)
    /// and calling again (connecting) until it is back: both count as retrying, so the state
    /// and the link LED say "retrying" for the whole outage, not only between attempts.
    pub fn links(&self) -> Links {
        let mut l = Links::default();
        match self {
            MediaSample::Encoder(_) | MediaSample::Bridge(_) => {
                for o in self.outputs() {
                    l.total += 1;
                    match o.state {
                        OutputState::Live => l.connected += 1,
                        OutputState::Connecting if o.reconnects > 0 => l.retrying += 1,
                        OutputState::Connecting | OutputState::Listening => l.connecting += 1,
                        OutputState::Retrying | OutputState::Failed => l.retrying += 1,
                        OutputState::Stopped => l.total -= 1,
                    }
                }
            }
            MediaSample::Decoder(s) => {
                l.total = 1;
                match s.input.state {
                    InputState::Receiving => l.connected = 1,
                    InputState::Connecting if s.input.reconnects > 0 => l.retrying = 1,
                    InputState::Listening | InputState::Connecting => l.connecting = 1,
                    InputState::Retrying => l.retrying = 1,
                    InputState::Stopped => l.total = 0,
                }
            }
        }
        l
    }

    /// Whether frames arrive from the source (the encoder's; `None` for a decoder or before
    /// the first frame).
    pub fn signal(&self) -> Option<bool> {
        self.sending().and_then(|s| s.signal)
    }

    /// Frames per second, encoded or decoded.
    pub fn fps(&self) -> f64 {
        match self {
            MediaSample::Encoder(s) => s.encoder.fps,
            MediaSample::Bridge(b) => b.sending.encoder.fps,
            MediaSample::Decoder(s) => s.decoder.fps,
        }
    }

    /// The encoder's outputs (none for a decoder).
    pub fn outputs(&self) -> &[OutputStatus] {
        self.sending().map(|s| s.outputs.as_slice()).unwrap_or_default()
    }

    /// Every output, or the decoder's input.
    pub fn all_links(&self) -> Vec<Link<'_>> {
        match self {
            MediaSample::Encoder(_) | MediaSample::Bridge(_) => self
                .outputs()
                .iter()
                .map(|o| Link { name: &o.name, kind: o.kind, up: o.state == OutputState::Live, srt: &o.srt })
                .collect(),
            MediaSample::Decoder(s) => {
                vec![Link { name: "input", kind: "srt", up: s.input.state == InputState::Receiving, srt: &s.input.srt }]
            }
        }
    }

    /// The SRT link the history follows: the encoder's first SRT output, or the decoder's input.
    pub fn main_srt(&self) -> Option<&SrtStats> {
        match self {
            MediaSample::Encoder(s) => s.outputs.iter().find(|o| o.kind == "srt").map(|o| &o.srt),
            MediaSample::Bridge(b) => b.sending.outputs.iter().find(|o| o.name == PEER_OUTPUT).map(|o| &o.srt),
            MediaSample::Decoder(s) => Some(&s.input.srt),
        }
    }

    /// What needs the user's attention in the links: an output retrying or failed and why, an
    /// SRT latency too small for the RTT it measures.
    pub fn alerts(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            MediaSample::Encoder(_) | MediaSample::Bridge(_) => {
                for o in self.outputs() {
                    let reason = o.reason.as_deref().unwrap_or("no reason given");
                    let calling_again = o.state == OutputState::Connecting && o.reconnects > 0;
                    if let Some(p) = uplink_problems(o) {
                        out.push(format!("{}: {p}", o.name));
                    }
                    if o.state == OutputState::Retrying || calling_again {
                        out.push(format!("{}: {reason} (retrying)", o.name));
                    } else if o.state == OutputState::Failed {
                        out.push(format!("{}: {reason} (stopped; fix it and save the settings again)", o.name));
                    } else if o.state == OutputState::Live && o.kind == "srt" {
                        out.extend(latency_advice(&o.name, &o.srt));
                    }
                }
            }
            MediaSample::Decoder(s) => {
                if s.input.state == InputState::Receiving {
                    out.extend(latency_advice(&s.input.url, &s.input.srt));
                }
            }
        }
        out
    }
}

/// An SRT link whose latency is too small for the RTT it measures (see [`crate::advice`]).
fn latency_advice(name: &str, srt: &SrtStats) -> Option<String> {
    // libsrt starts from a nominal 100 ms RTT; trust the figure once a few seconds of ACKs
    // (a sender gets one every 10 ms) or of packets (a receiver) have refined it.
    let settled = srt.acks_received >= 300 || srt.packets_received >= 1500;
    if !settled {
        return None;
    }
    crate::advice::srt_latency(srt.negotiated_latency_ms, srt.rtt_ms).map(|a| format!("{name}: {a}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::EncoderStats;

    fn output(name: &str, state: OutputState, reconnects: u32) -> OutputStatus {
        let mut o = OutputStatus::new("srt", name.into(), format!("srt://h:1 ({name})"), state);
        o.reconnects = reconnects;
        o.reason = Some("no answer from h:1".into());
        o
    }

    fn encoder(outputs: Vec<OutputStatus>) -> MediaSample {
        MediaSample::Encoder(Box::new(StatsSample {
            t: 1.0,
            signal: Some(true),
            encoder: EncoderStats::default(),
            outputs,
            rate: None,
        }))
    }

    #[test]
    fn links_count_a_caller_calling_again_as_retrying() {
        let s = encoder(vec![
            output("a", OutputState::Live, 0),
            output("b", OutputState::Connecting, 0),
            output("c", OutputState::Connecting, 2),
            output("d", OutputState::Stopped, 0),
        ]);
        assert_eq!(s.links(), Links { total: 3, connected: 1, connecting: 1, retrying: 1 });
        let alerts = s.alerts();
        assert_eq!(alerts, vec!["c: no answer from h:1 (retrying)".to_string()]);
        let views = serde_json::to_value(s.link_views()).unwrap_or_default();
        assert_eq!(views[2]["state"], "connecting");
        assert_eq!(views[2]["reason"], "no answer from h:1");
    }

    #[test]
    fn a_caller_calling_again_after_a_loss_counts_as_retrying() {
        let links = |outs: Vec<OutputStatus>| encoder(outs).links();
        let first = links(vec![output("a", OutputState::Connecting, 0), output("b", OutputState::Live, 0)]);
        assert_eq!(first, Links { total: 2, connected: 1, connecting: 1, retrying: 0 });
        let again = links(vec![output("a", OutputState::Connecting, 2), output("b", OutputState::Retrying, 1)]);
        assert_eq!(again, Links { total: 2, connected: 0, connecting: 0, retrying: 2 });
        let listening = links(vec![output("a", OutputState::Listening, 3), output("b", OutputState::Stopped, 0)]);
        assert_eq!(listening, Links { total: 1, connected: 0, connecting: 1, retrying: 0 });
    }

    #[test]
    fn a_live_srt_link_with_too_little_latency_gets_advice_once_its_rtt_has_settled() {
        let mut o = output("studio", OutputState::Live, 0);
        o.srt.negotiated_latency_ms = 120;
        o.srt.rtt_ms = 203.0;
        assert!(encoder(vec![o.clone()]).alerts().is_empty(), "before the RTT settles: no advice");
        o.srt.acks_received = 300;
        let alerts = encoder(vec![o]).alerts();
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert!(
            alerts[0].starts_with("studio: SRT latency 120 ms is under 2.5 x the measured RTT of 203 ms"),
            "{alerts:?}"
        );
    }

    #[test]
    fn serialises_as_the_stats_line_it_is() {
        let s = encoder(vec![output("a", OutputState::Live, 0)]);
        let v = serde_json::to_value(&s).unwrap_or_default();
        let line = serde_json::to_value(match &s {
            MediaSample::Encoder(x) => x,
            _ => unreachable!(),
        })
        .unwrap_or_default();
        assert_eq!(v, line);
        assert_eq!(v["outputs"][0]["state"], "live");
    }

    #[test]
    fn a_missing_uplink_is_named_on_its_output_and_in_the_alerts() {
        let mut o = output("bonded", OutputState::Live, 0);
        o.reason = None;
        let link = |name: &str, problem: Option<&str>| crate::uplink::LinkStatus {
            name: name.into(),
            state: crate::uplink::LinkState::Connecting,
            rtt_ms: None,
            window: 0.0,
            in_flight: 0,
            sent: 0,
            rescued: 0,
            naks: 0,
            deaths: 0,
            rate_kbps: 0.0,
            share_pct: 0.0,
            problem: problem.map(Into::into),
        };
        o.uplinks = vec![link("lo", None), link("nosuch9", Some("no such network interface"))];
        let s = encoder(vec![o]);
        let views = s.link_views();
        assert_eq!(views[0].reason.as_deref(), Some("uplink nosuch9: no such network interface"));
        assert_eq!(views[0].uplinks[1], "nosuch9: no such network interface");
        assert_eq!(s.alerts(), vec!["bonded: uplink nosuch9: no such network interface".to_string()]);
    }

    #[test]
    fn each_link_keeps_when_it_came_into_its_state() {
        let mut book = SinceBook::new();
        let views = |st: OutputState| encoder(vec![output("a", st, 0), output("b", OutputState::Live, 0)]).link_views();
        let mut v = views(OutputState::Connecting);
        stamp_since(&mut v, &mut book, 1000);
        assert_eq!((v[0].since_unix_ms, v[1].since_unix_ms), (Some(1000), Some(1000)));
        let mut v = views(OutputState::Connecting);
        stamp_since(&mut v, &mut book, 2000);
        assert_eq!((v[0].since_unix_ms, v[1].since_unix_ms), (Some(1000), Some(1000)), "unchanged: kept");
        let mut v = views(OutputState::Live);
        stamp_since(&mut v, &mut book, 3000);
        assert_eq!((v[0].since_unix_ms, v[1].since_unix_ms), (Some(3000), Some(1000)), "a changed: stamped anew");
        let mut v = encoder(vec![output("b", OutputState::Live, 0)]).link_views();
        stamp_since(&mut v, &mut book, 4000);
        assert_eq!(book.len(), 1, "a gone: forgotten");
    }
}
