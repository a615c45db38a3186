//! What a rate law is and answers: [`RateLaw`] stepped by [`crate::LinkSample`]s, its
//! [`RateDecision`] and the reason for it ([`Why`]), within [`Bounds`].

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::LinkSample;

/// Why a law chose its rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Why {
    /// No sample yet, or the connection just started: the rate it was given (the box's first
    /// connection: half the maximum).
    Start,
    /// The link keeps up: the rate rises towards the maximum.
    Rising {
        /// What the link delivered lately, kbit/s.
        link_kbps: f64,
    },
    /// At the configured maximum and the link keeps up.
    AtMaximum,
    /// Held: just changed, or the last cut is still being felt.
    Holding {
        /// What the link delivered lately, kbit/s.
        link_kbps: f64,
    },
    /// A queue builds up on the way (the round trip grows, or the send buffer holds more than a
    /// round trip): the rate goes a little under what the link delivers.
    Queueing {
        /// What the link delivered lately, kbit/s.
        link_kbps: f64,
        /// The round trip above the link's lowest, ms.
        queue_ms: f64,
    },
    /// Packets are about to be too late (the send buffer or the queue near the latency), or
    /// were given up: the rate drops well under what the link delivers.
    Overload {
        /// What the link delivered lately, kbit/s.
        link_kbps: f64,
        /// The send buffer, ms.
        send_buffer_ms: f64,
    },
    /// Over a bond, an uplink was found dead: the others must carry the stream, and the rate
    /// goes at once under what they carried.
    UplinkLost {
        /// The share of the bond's sending the dead uplink carried, percent.
        share_pct: f64,
        /// What the other uplinks carried of what the bond delivered, kbit/s.
        link_kbps: f64,
    },
    /// This box itself stood still (no step of the law for a while): what is read just after
    /// is the stall's, not the link's, so the rate holds until the link is read again.
    Stalled {
        /// The longest gap between two steps, ms.
        ms: f64,
    },
    /// A cut read from packets waiting at home or in flight alone was followed by a second
    /// without a sign of the link's (no queue on the way, no losses past a lone one, nothing
    /// given up): it was this box's or the receiver's moment, and the rate goes back to where
    /// it was before.
    Undone {
        /// The rate the cut had left, kbit/s.
        cut_kbps: f64,
    },
    /// No SRT connection is up (the outputs are connecting or retrying, or none is SRT): none
    /// has a say, and the other outputs (RTMP, recordings) get the configured maximum.
    NoLink,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mbps = |k: f64| k / 1000.0;
        match *self {
            Why::Start => write!(f, "starting: no link measured yet"),
            Why::NoLink => write!(f, "no SRT connection up to follow: at the configured maximum"),
            Why::Rising { link_kbps } => write!(f, "link carries {:.1} Mbit/s: rising", mbps(link_kbps)),
            Why::AtMaximum => write!(f, "the link keeps up: at the configured maximum"),
            Why::Holding { link_kbps } => write!(f, "link carries {:.1} Mbit/s: holding", mbps(link_kbps)),
            Why::Queueing { link_kbps, queue_ms } => {
                write!(f, "link carries {:.1} Mbit/s, {queue_ms:.0} ms queued on the way: lower", mbps(link_kbps))
            }
            Why::Overload { link_kbps, send_buffer_ms } => write!(
                f,
                "link carries {:.1} Mbit/s, {send_buffer_ms:.0} ms waiting to be sent: much lower",
                mbps(link_kbps)
            ),
            Why::UplinkLost { share_pct, link_kbps } => write!(
                f,
                "an uplink that carried {share_pct:.0} % died, the others carried {:.1} Mbit/s: lower at once",
                mbps(link_kbps)
            ),
            Why::Stalled { ms } => {
                write!(f, "this box stood still for {ms:.0} ms: holding while the link is read again")
            }
            Why::Undone { cut_kbps } => write!(
                f,
                "the cut to {:.1} Mbit/s was not the link's (no queue, no heavy losses since): back up",
                mbps(cut_kbps)
            ),
        }
    }
}

/// A law's answer: the stream rate it wants (what SRT carries: video, sound and the TS around
/// them), kbit/s, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateDecision {
    /// Stream rate, kbit/s.
    pub stream_kbps: f64,
    /// Why.
    pub why: Why,
    /// While the link is congested: the most the connection may send, new packets and
    /// retransmissions together, kbit/s (`None`: paced by what comes in).
    pub send_cap_kbps: Option<f64>,
}

/// A rate law: one connection's state, stepped by its samples.
pub trait RateLaw: Send {
    /// The stream rate wanted after `sample`, taken at `now` (from any fixed start).
    fn step(&mut self, sample: &LinkSample, now: Duration) -> RateDecision;
}

/// Makes a law for a new connection, starting at a stream rate, between two stream rates.
pub type LawFactory = Box<dyn Fn(Bounds) -> Box<dyn RateLaw> + Send>;

/// What a law may choose between, and where it starts (stream rates, kbit/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// The floor at the full frame rate.
    pub min_kbps: f64,
    /// The least with the frame rate stepped down (one frame in two at the floor's bits a
    /// frame), for a link that carries less than the floor; `min_kbps` where the frame rate
    /// stays.
    pub least_kbps: f64,
    /// The ceiling (the configured bitrate).
    pub max_kbps: f64,
    /// Where to start.
    pub start_kbps: f64,
}
