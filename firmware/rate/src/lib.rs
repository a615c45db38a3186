//! Adaptive bitrate: the encoder's bitrate follows what the link carries.
//!
//! A rate law is a pure function of (its state, one sample of the link, the time): it is handed
//! libsrt's counters of one connection every [`STEP`] and answers with the stream rate it wants
//! and why ([`RateLaw`]). [`adaptive::Adaptive`] is ours (docs/architecture.md explains it); the
//! benchmark holds the baselines it is measured against. [`RateControl`] keeps one law per
//! connection (a caller, each caller of a listener), takes the lowest rate any of them wants
//! (one encoder feeds them all), and turns the stream rate into the encoder's video bitrate.
//! The loop that samples libsrt and applies the result is the appliance's (`roles::encoder`),
//! which turns libsrt's counters into [`LinkSample`]s and [`Pacing`] into libsrt's options.
//!
//! A crate of its own, on nothing of the workspace: the benchmark replays it, and its recorded
//! traces (`src/testdata`) are replayed by its tests, without the box around it.

pub mod adaptive;
mod cap;
mod dips;
mod law;
pub mod peer;
mod sample;
mod tally;

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::peer::{Peer, PeerWatch};

pub use adaptive::Adaptive;
pub use law::{Bounds, LawFactory, RateDecision, RateLaw, Why};
pub use sample::{BondView, LinkSample};

/// How often the link is sampled and the law asked.
pub const STEP: Duration = Duration::from_millis(50);

/// The box's first connection starts at this share of the maximum (later ones at the rate
/// then in use, the last that held): a link that carries more is found in seconds by the
/// rises, one that does not loses less than at the maximum (a third of the frames lost on a
/// 4G trace were lost in its first 4 s, at 6 Mbit/s on a link of 3.6).
pub const START_SHARE: f64 = 0.5;

/// Until a connection's first cut the link has shown no limit: the rate rises by this share
/// every [`START_RISE_EVERY`] (what the link carried still bounds it), so a free link is at the
/// maximum 1-2 s after the start at half of it, not 6 s (over 45 s a free link then got 97.5 %
/// of the fixed rate's packets, against 100.5 % from 5 s on: the default must not cost a clean
/// link). After the first cut, 3.5 % every 250 ms.
pub const START_RISE: f64 = 0.08;
/// How often the start's rises come.
pub const START_RISE_EVERY: Duration = Duration::from_millis(100);

/// The stream's own overhead over the encoders' bytes: MPEG-TS headers, PES headers, PAT/PMT
/// and the SRT payload's padding to 188-byte packets (measured: 3-5 % at 1-8 Mbit/s).
pub const TS_OVERHEAD: f64 = 1.05;

/// ACKs can pause this long on a link in working order (400 ms seen on a free 5 Mbit/s link on
/// a 2-core machine, then all at once); a connection sending without one for longer, and for
/// four round trips, has stalled at its far end ([`RateControl::step`]).
pub const STALL_AFTER: Duration = Duration::from_millis(600);

/// Bytes of payload in one SRT packet of ours (seven 188-byte TS packets).
pub const PACKET_BYTES: f64 = 1316.0;

/// How the connections' sending is paced, as the rate control wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// By the input rate libsrt measures (with its overhead for retransmissions), never under
    /// `min_bytes_per_s`.
    ByInput {
        /// The least input rate assumed, bytes/s.
        min_bytes_per_s: i64,
    },
    /// At most `bytes_per_s`, retransmissions included: while the link is congested, the input
    /// rate libsrt measures still holds the rate before a cut for up to a second, and sending
    /// at it keeps the bottleneck's queue full.
    AtMost {
        /// The ceiling, bytes/s.
        bytes_per_s: i64,
    },
}

/// What the box chose, for the status, the panel and `--stats json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateStatus {
    /// The encoder's video bitrate now, kbit/s.
    pub video_kbps: u32,
    /// The configured maximum, kbit/s.
    pub max_video_kbps: u32,
    /// The floor, kbit/s.
    pub min_video_kbps: u32,
    /// The encoder is given one frame in this many: 2 while the frame rate is stepped down
    /// under the floor, else 1.
    pub one_frame_in: u32,
    /// Why, in words ("link carries 2.1 Mbit/s: holding").
    pub reason: String,
    /// Why, typed.
    pub why: Why,
    /// The connection that set the rate (output name, and the caller's address for a listener).
    pub link: Option<String>,
}

impl fmt::Debug for RateControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateControl").field("links", &self.laws.len()).field("status", &self.status).finish()
    }
}

/// One law per connection; the lowest rate wins.
pub struct RateControl {
    laws: HashMap<String, (Box<dyn RateLaw>, PeerWatch)>,
    /// The instant the steps' times count from (for the ACK watches).
    epoch: std::time::Instant,
    factory: LawFactory,
    min_video_kbps: u32,
    max_video_kbps: u32,
    audio_kbps: u32,
    video_kbps: u32,
    status: RateStatus,
    /// Where each step's samples and decisions are written (JSON lines), when asked for.
    recorder: Option<std::io::BufWriter<std::fs::File>>,
    /// The pacing last handed out.
    paced: Option<Pacing>,
    /// The lowest send cap any connection's law asked for in the last step, kbit/s.
    send_cap_kbps: Option<f64>,
    /// A connection was seen (the next ones start at the rate in use).
    connected: bool,
    /// Under the floor, one frame in two ([`Self::with_frame_rate_step_down`]).
    step_down: bool,
    /// The frame rate last handed out (one frame in so many).
    frames_set: u32,
}

impl RateControl {
    /// Between `min_video_kbps` and `max_video_kbps` of video (the sound's `audio_kbps` on top),
    /// starting at the maximum.
    pub fn new(factory: LawFactory, min_video_kbps: u32, max_video_kbps: u32, audio_kbps: u32) -> Self {
        let status = RateStatus {
            video_kbps: max_video_kbps,
            max_video_kbps,
            min_video_kbps,
            reason: Why::Start.to_string(),
            why: Why::Start,
            link: None,
            one_frame_in: 1,
        };
        Self {
            laws: HashMap::new(),
            epoch: std::time::Instant::now(),
            factory,
            min_video_kbps,
            max_video_kbps,
            audio_kbps,
            video_kbps: max_video_kbps,
            status,
            paced: None,
            send_cap_kbps: None,
            recorder: None,
            connected: false,
            step_down: false,
            frames_set: 1,
        }
    }

    /// Writes every sample and decision to `path`, one JSON line each (`{"t", "unix_s" (the
    /// wall clock, to read it beside other logs), "link", "sample", "stream_kbps", "why"}`): a recorded trace for the law's tests and for tuning.
    pub fn record_to(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        self.recorder = Some(std::io::BufWriter::new(std::fs::File::create(path)?));
        Ok(())
    }

    /// The least input rate SRT's pacing assumes, bytes/s (`SRTO_MININPUTBW`): the stream's
    /// rate. libsrt paces at 25 % (more at a short latency) over the larger of that and the input rate it measures
    /// (`telebridge_srt::output::pacing_overhead_pct`): right after a cut the encoder still makes the old rate for a
    /// moment (its rate buffer), and those packets leave at their own rate, not the new one.
    /// (Two earlier designs, seen failing in the benchmark's rate traces: pacing at 25 % over
    /// the chosen rate held back what the encoder still made, which the send buffer then
    /// dropped as too late; pacing at what the link had carried let SRT resend the packets of a
    /// capacity drop again and again at the old speed, which kept the queue full for seconds.)
    pub fn min_input_bytes_per_s(&self) -> i64 {
        let video = f64::from(self.video_kbps) / f64::from(self.status.one_frame_in);
        (self.stream_of(video) * 125.0) as i64
    }

    /// Under the floor, the frame rate steps down: the law may go to the stream of half the
    /// floor's video, which the encoder makes at the floor's bitrate from one frame in two.
    pub fn with_frame_rate_step_down(mut self, on: bool) -> Self {
        self.step_down = on;
        self
    }

    /// The frame rate to hand to the encoder (one frame in so many) when it changed.
    pub fn frame_rate_change(&mut self) -> Option<u32> {
        let n = self.status.one_frame_in;
        (n != self.frames_set).then(|| {
            self.frames_set = n;
            n
        })
    }

    /// The pacing to hand to the SRT outputs when it moved by 10 % since the last time (once
    /// at the start).
    pub fn pacing_change(&mut self) -> Option<Pacing> {
        let pace = match self.send_cap_kbps {
            Some(cap) => Pacing::AtMost { bytes_per_s: (cap * 125.0) as i64 },
            None => Pacing::ByInput { min_bytes_per_s: self.min_input_bytes_per_s() },
        };
        let value = |p: Pacing| match p {
            Pacing::ByInput { min_bytes_per_s } => min_bytes_per_s,
            Pacing::AtMost { bytes_per_s } => bytes_per_s,
        };
        let moved = match self.paced {
            Some(old) => {
                std::mem::discriminant(&old) != std::mem::discriminant(&pace)
                    || (value(pace) - value(old)).abs() * 10 >= value(old)
            }
            None => true,
        };
        moved.then(|| {
            self.paced = Some(pace);
            pace
        })
    }

    fn stream_of(&self, video_kbps: f64) -> f64 {
        (video_kbps + f64::from(self.audio_kbps)) * TS_OVERHEAD
    }

    /// The encoder's bitrate and frame rate (one frame in so many) for a stream rate: under the
    /// floor's stream, with the step-down, one frame in two at twice the video wanted (x264
    /// budgets a frame at its bitrate over the configured frame rate).
    fn video_of(&self, stream_kbps: f64) -> (u32, u32) {
        let v = stream_kbps / TS_OVERHEAD - f64::from(self.audio_kbps);
        let floor = self.stream_of(f64::from(self.min_video_kbps));
        let (v, n) = if self.step_down && stream_kbps < floor - 0.5 { (v * 2.0, 2) } else { (v, 1) };
        ((v.round().max(0.0) as u32).clamp(self.min_video_kbps, self.max_video_kbps), n)
    }

    /// One step: a sample of every live connection, keyed by a name that stays the same for
    /// the connection's life. Connections not named are forgotten (a new one starts at the
    /// current rate). Returns the video bitrate to set when it changed enough to be worth it
    /// (2 % or 50 kbit/s).
    pub fn step(&mut self, links: &[(String, LinkSample)], now: Duration) -> Option<u32> {
        self.laws.retain(|k, _| links.iter().any(|(n, _)| n == k));
        let min_kbps = self.stream_of(f64::from(self.min_video_kbps));
        let max_kbps = self.stream_of(f64::from(self.max_video_kbps));
        let least_kbps = if self.step_down { self.stream_of(f64::from(self.min_video_kbps) / 2.0) } else { min_kbps };
        let start_kbps = if self.connected {
            self.stream_of(f64::from(self.video_kbps) / f64::from(self.status.one_frame_in))
        } else {
            (max_kbps * START_SHARE).max(min_kbps)
        };
        self.connected |= !links.is_empty();
        let bounds = Bounds { min_kbps, least_kbps, max_kbps, start_kbps };
        let mut decisions = Vec::with_capacity(links.len());
        for (name, sample) in links {
            let at = self.epoch + now;
            let (law, acks) =
                self.laws.entry(name.clone()).or_insert_with(|| ((self.factory)(bounds), PeerWatch::new(at)));
            let d = law.step(sample, now);
            let stall = STALL_AFTER.max(Duration::from_secs_f64(sample.rtt_ms.max(0.0) * 4.0 / 1000.0));
            let stalled = sample.acks_received > 0
                && matches!(acks.observe(sample.acks_received, sample.packets_sent, at, stall), Peer::Gone(_));
            if let Some(w) = self.recorder.as_mut() {
                let line = serde_json::json!({
                    "t": now.as_secs_f64(), "unix_s": unix_seconds(), "link": name, "sample": sample,
                    "stream_kbps": d.stream_kbps, "why": d.why, "send_cap_kbps": d.send_cap_kbps,
                });
                let _ = writeln!(w, "{line}");
            }
            decisions.push((d, stalled, name.as_str()));
        }
        // A connection whose ACKs stopped while another's go on is stalled at its far end (a
        // frozen receiver, a peer gone): the box's own uplink, which all share, works. No rate
        // helps it, so it sets neither the rate nor the pacing of the others.
        let someone_carries = decisions.iter().any(|(_, stalled, _)| !stalled);
        let mut lowest: Option<(RateDecision, &str)> = None;
        // The lowest send cap any connection's law asks for.
        let mut cap: Option<f64> = None;
        for (d, stalled, name) in decisions {
            if someone_carries && stalled {
                continue;
            }
            if let Some(c) = d.send_cap_kbps {
                cap = Some(cap.map_or(c, |x: f64| x.min(c)));
            }
            if lowest.is_none_or(|(l, _)| d.stream_kbps < l.stream_kbps) {
                lowest = Some((d, name));
            }
        }
        self.send_cap_kbps = cap;
        // No connection up: an output that is down (retrying) or never came up has no say
        // (issue 58: a caller whose receiver stopped held a working RTMP output at half its
        // bitrate for over a minute). The others get the maximum; a connection that comes up
        // again starts from there and finds its link.
        let (decision, link) = match lowest {
            Some(l) => l,
            None if self.connected => {
                (RateDecision { stream_kbps: max_kbps, why: Why::NoLink, send_cap_kbps: None }, "")
            }
            None => return None,
        };
        let (video, one_in) = self.video_of(decision.stream_kbps);
        self.status.why = decision.why;
        self.status.reason = decision.why.to_string();
        if one_in > 1 {
            self.status.reason.push_str(", at half the frame rate");
        }
        let stepped = one_in != self.status.one_frame_in;
        self.status.one_frame_in = one_in;
        self.status.link = Some(link.to_string()).filter(|l| !l.is_empty());
        let change = video.abs_diff(self.video_kbps);
        let worth = change >= 50 || f64::from(change) >= f64::from(self.video_kbps) * 0.02;
        let at_edge = video != self.video_kbps && (video == self.min_video_kbps || video == self.max_video_kbps);
        if worth || at_edge || stepped {
            self.video_kbps = video;
            self.status.video_kbps = video;
            Some(video)
        } else {
            None
        }
    }

    /// What was chosen and why.
    pub fn status(&self) -> &RateStatus {
        &self.status
    }
}

/// The wall clock in seconds since 1970, for traces read beside other logs.
pub fn unix_seconds() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A law that wants a fixed rate.
    struct Fixed(f64);
    impl RateLaw for Fixed {
        fn step(&mut self, _: &LinkSample, _: Duration) -> RateDecision {
            RateDecision { stream_kbps: self.0, why: Why::Holding { link_kbps: self.0 }, send_cap_kbps: None }
        }
    }

    #[test]
    fn the_slowest_connection_sets_the_rate_and_small_changes_are_not_applied() {
        let factory: LawFactory = Box::new(|b: Bounds| Box::new(Fixed(b.start_kbps)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        // The first connections start at half the maximum's stream: (4000 + 128) x 1.05 / 2 =
        // 2167 kbit/s, 1936 of video.
        let mut links = vec![("a".to_string(), LinkSample::default()), ("b".to_string(), LinkSample::default())];
        assert_eq!(rc.step(&links, Duration::ZERO), Some(1936));
        assert_eq!(rc.status().video_kbps, 1936);
        // A later one at the rate in use: no change.
        links.push(("c".to_string(), LinkSample::default()));
        assert_eq!(rc.step(&links, STEP), None);
        assert_eq!(rc.status().video_kbps, 1936);

        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1000.0)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        let v = rc.step(&links, Duration::ZERO).unwrap();
        // 1000 kbit/s of stream = 1000/1.05 - 128 of video.
        assert_eq!(v, 824);
        assert_eq!(rc.status().reason, "link carries 1.0 Mbit/s: holding");
        assert_eq!(rc.step(&links, STEP), None, "the same rate is not applied twice");
    }

    #[test]
    fn with_no_connection_up_the_rate_goes_back_to_the_maximum() {
        // Issue 58: the SRT output's receiver stopped; its connection broke and it retries,
        // while an RTMP output works. The rate it last chose stayed for good.
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1000.0)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        assert_eq!(rc.step(&[("srt".to_string(), LinkSample::default())], Duration::ZERO), Some(824));
        assert_eq!(rc.step(&[], STEP), Some(4000), "nobody has a say: the maximum");
        assert_eq!(rc.status().why, Why::NoLink);
        assert_eq!(rc.status().link, None);
        assert_eq!(rc.status().reason, "no SRT connection up to follow: at the configured maximum");
        assert_eq!(rc.step(&[], STEP * 2), None);
        // Before any connection came up, nothing changes (the start is the first's to set).
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1000.0)) as Box<dyn RateLaw>);
        let mut fresh = RateControl::new(factory, 300, 4000, 128);
        assert_eq!(fresh.step(&[], Duration::ZERO), None);
    }

    #[test]
    fn video_stays_within_the_floor_and_the_maximum() {
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(50.0)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        let links = vec![("a".to_string(), LinkSample::default())];
        assert_eq!(rc.step(&links, Duration::ZERO), Some(300));
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1e6)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        assert_eq!(rc.step(&links, Duration::ZERO), None, "already at the maximum");
    }

    #[test]
    fn pacing_leaves_room_for_retransmissions_and_follows_a_cut() {
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1000.0)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        // At the start: the stream's rate at the maximum (libsrt adds its 25 %).
        let by_input = |kbps: f64| Some(Pacing::ByInput { min_bytes_per_s: (kbps * TS_OVERHEAD * 125.0) as i64 });
        assert_eq!(rc.pacing_change(), by_input(4000.0 + 128.0));
        assert_eq!(rc.pacing_change(), None);
        // The law cut to 1000 kbit/s of stream (824 of video): the floor follows.
        let links = vec![("a".to_string(), LinkSample::default())];
        rc.step(&links, Duration::ZERO);
        assert_eq!(rc.status().video_kbps, 824);
        assert_eq!(rc.pacing_change(), by_input(824.0 + 128.0));

        // A law that caps what its connection sends while the link is congested: the lowest
        // cap of any connection holds, then pacing by the input again.
        struct Capped(Option<f64>);
        impl RateLaw for Capped {
            fn step(&mut self, _: &LinkSample, _: Duration) -> RateDecision {
                RateDecision { stream_kbps: 1000.0, why: Why::Holding { link_kbps: 1200.0 }, send_cap_kbps: self.0 }
            }
        }
        let caps = std::sync::Arc::new(std::sync::Mutex::new(vec![Some(1200.0), Some(1500.0), None]));
        let c = caps.clone();
        let factory: LawFactory = Box::new(move |_| {
            let cap = c.lock().unwrap().remove(0);
            Box::new(Capped(cap)) as Box<dyn RateLaw>
        });
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        let links: Vec<(String, LinkSample)> =
            ["a", "b", "c"].iter().map(|n| (n.to_string(), LinkSample::default())).collect();
        rc.step(&links, Duration::ZERO);
        assert_eq!(rc.pacing_change(), Some(Pacing::AtMost { bytes_per_s: 150_000 }));
        assert_eq!(rc.pacing_change(), None);
        rc.step(&links[2..], STEP);
        assert_eq!(rc.pacing_change(), by_input(824.0 + 128.0), "the capped connections are gone");
    }

    #[test]
    fn under_the_floor_the_frame_rate_steps_down_at_the_floors_bits_a_frame() {
        // A floor of 500 kbit/s of video (659 of stream); the law asks for 450 of stream.
        let factory: LawFactory = Box::new(|b: Bounds| {
            // With the step-down the law may go to the stream of half the floor: (250 + 128) x 1.05.
            assert!((b.least_kbps - 396.9).abs() < 0.01, "least {}", b.least_kbps);
            Box::new(Fixed(450.0)) as Box<dyn RateLaw>
        });
        let mut rc = RateControl::new(factory, 500, 4000, 128).with_frame_rate_step_down(true);
        let links = vec![("a".to_string(), LinkSample::default())];
        // 450 / 1.05 - 128 = 300.6 of video, made from one frame in two at twice that.
        assert_eq!(rc.step(&links, Duration::ZERO), Some(601));
        assert_eq!(rc.status().one_frame_in, 2);
        assert_eq!(rc.status().reason, "link carries 0.5 Mbit/s: holding, at half the frame rate");
        assert_eq!(rc.frame_rate_change(), Some(2));
        assert_eq!(rc.frame_rate_change(), None, "handed out once");
        // SRT's pacing assumes the stream as made: (300.5 + 128) x 1.05 kbit/s.
        assert_eq!(rc.min_input_bytes_per_s(), 56_240);

        // Without the step-down: the floor, every frame.
        let factory: LawFactory = Box::new(|b: Bounds| {
            assert_eq!(b.least_kbps, b.min_kbps);
            Box::new(Fixed(450.0)) as Box<dyn RateLaw>
        });
        let mut rc = RateControl::new(factory, 500, 4000, 128);
        assert_eq!(rc.step(&links, Duration::ZERO), Some(500));
        assert_eq!(rc.status().one_frame_in, 1);
        assert_eq!(rc.frame_rate_change(), None);
    }

    /// A law that answers what it is told.
    struct Told(std::sync::Arc<std::sync::Mutex<RateDecision>>);
    impl RateLaw for Told {
        fn step(&mut self, _: &LinkSample, _: Duration) -> RateDecision {
            *self.0.lock().unwrap()
        }
    }

    #[test]
    fn a_connection_whose_acks_stopped_sets_neither_rate_nor_pacing_while_another_is_acknowledged() {
        let holding = RateDecision { stream_kbps: 4400.0, why: Why::AtMaximum, send_cap_kbps: None };
        let cut = RateDecision {
            stream_kbps: 600.0,
            why: Why::Overload { link_kbps: 0.0, send_buffer_ms: 660.0 },
            send_cap_kbps: Some(100.0),
        };
        let frozen = std::sync::Arc::new(std::sync::Mutex::new(holding));
        let (f, fresh) = (frozen.clone(), std::sync::Arc::new(std::sync::Mutex::new(holding)));
        let made = std::sync::atomic::AtomicUsize::new(0);
        let factory: LawFactory = Box::new(move |_| {
            let first = made.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0;
            Box::new(Told(if first { f.clone() } else { fresh.clone() })) as Box<dyn RateLaw>
        });
        let mut rc = RateControl::new(factory, 500, 4000, 128);
        // Step k: each link has sent 20 packets a step and heard 5 ACKs; the frozen one's ACKs
        // stop after step 10.
        let links = |k: i64| -> Vec<(String, LinkSample)> {
            let at =
                |acks| LinkSample { packets_sent: 20 * k, acks_received: acks, rtt_ms: 1.0, ..LinkSample::default() };
            vec![("frozen".to_string(), at(5 * k.min(10))), ("b".to_string(), at(5 * k))]
        };
        for k in 0..=10 {
            rc.step(&links(k), STEP * k as u32);
        }
        let _ = rc.pacing_change();
        assert_eq!(rc.status().video_kbps, 4000);
        // Frozen: its law cuts at once, but its ACKs stopped only just now: it is followed.
        *frozen.lock().unwrap() = cut;
        assert_eq!(rc.step(&links(11), STEP * 11), Some(500));
        assert_eq!(rc.status().link.as_deref(), Some("frozen"));
        assert_eq!(rc.pacing_change(), Some(Pacing::AtMost { bytes_per_s: 12_500 }));
        // Over 600 ms without an ACK (the last heard at step 10) while "b" is acknowledged:
        // "b" sets the rate, nobody is capped.
        for k in 12..23 {
            assert_eq!(rc.step(&links(k), STEP * k as u32), None, "step {k}");
        }
        assert_eq!(rc.step(&links(23), STEP * 23), Some(4000));
        assert_eq!(rc.status().link.as_deref(), Some("b"));
        assert!(matches!(rc.pacing_change(), Some(Pacing::ByInput { .. })), "the others are not capped");
        // Alone, a stalled connection is followed: the box's own uplink may be what stalls.
        assert_eq!(rc.step(&links(24)[..1], STEP * 24), Some(500));
        assert_eq!(rc.pacing_change(), Some(Pacing::AtMost { bytes_per_s: 12_500 }), "capped again");
    }

    #[test]
    fn no_connection_no_decision() {
        let factory: LawFactory = Box::new(|_| Box::new(Fixed(1000.0)) as Box<dyn RateLaw>);
        let mut rc = RateControl::new(factory, 300, 4000, 128);
        assert_eq!(rc.step(&[], Duration::ZERO), None);
    }
}
