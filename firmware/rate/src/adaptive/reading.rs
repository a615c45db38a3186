//! The law's first phase: one sample of libsrt's counters read into what the link delivered,
//! the queue on the way and the backlog at home ([`Reading`]), the law's tallies brought up to
//! date on the way. The decisions on it are in `rules`.

use std::time::Duration;

use super::{Adaptive, DELIVERED_MAX_WINDOW, DELIVERED_MIN_WINDOW, ENCODER_FOLLOWS, FLIGHT_SLACK_MS};
use super::{HEAVY_LOSSES, HEAVY_LOSS_SHARE, RECENT};
use crate::tally::Tally;
use crate::LinkSample;

/// One step's reading of the link (rates in kbit/s, times in ms unless typed).
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading {
    /// No ACK at all in this step or the last.
    pub stalled: bool,
    /// The link's rate over the last 100 ms, and what was sent for the first time meanwhile.
    pub recent: Option<f64>,
    pub recent_sends: Option<f64>,
    /// Losses or resends over the last 100 ms beyond what random loss makes.
    pub heavy_losses: bool,
    /// The link's rate over the last round trip.
    pub delivered: f64,
    /// What a cut aims under: `delivered` within half and all of the last second's rate.
    pub carried: f64,
    /// Past the connection's first second.
    pub known: bool,
    /// The SRT latency.
    pub latency: f64,
    /// The round trip above its lowest of late.
    pub queue: f64,
    /// What waits at home beyond the round trip, as time at the link's rate.
    pub backlog: f64,
    /// Packets in flight beyond the round trip and a frame's burst, as time.
    pub flight_queue: f64,
    /// A packet was given up since the last step.
    pub dropped: bool,
    /// The queue jitter explains, and the backlog that still arrives in time.
    pub queue_limit: f64,
    pub backlog_limit: f64,
    /// The round trip itself past a third of the latency, on a link whose own is not.
    pub long_queue: bool,
    pub since_cut: Option<Duration>,
    pub round_trip: Duration,
    /// Any sign of a queue or a loss.
    pub pressed: bool,
    pub send_buffer_ms: f64,
    /// Over a bond, the share of its sending lost to uplinks found dead since the last step.
    pub uplink_lost: f64,
    /// The connection runs over a bond.
    pub bonded: bool,
}

impl Adaptive {
    /// Reads sample `s` taken at `now`, `dt` seconds after the previous one, `p`.
    pub(super) fn measure(&mut self, s: &LinkSample, p: &LinkSample, dt: f64, now: Duration) -> Reading {
        let (kbit_per_packet, stalled) = self.count(s, p, now);
        // The link's rate over the last 100 ms: before any loss at the bottleneck, the ACKs come
        // as the bottleneck lets packets through, so right after a capacity drop this is the new
        // capacity within a few percent (the rate traces: 1.9-2.5 Mbit/s on a 2 Mbit/s link),
        // where a round trip's or a second's window still holds the old rate. And what was sent
        // for the first time over the same 100 ms.
        let kbps = |packets_per_s: f64| packets_per_s * kbit_per_packet;
        let recent = self.acked.over_at_least(RECENT, dt).map(kbps);
        let recent_sends = self.sends.over_at_least(RECENT, dt).map(kbps);
        // Packets reported lost or sent again over the last 100 ms, beyond what random loss
        // makes (a packet now and then): the bottleneck is dropping at its tail, the link carries
        // less than is sent. The receiver's reports come first: libsrt holds resends back while
        // new packets wait (a fade went unread for 700 ms in a rate trace, its ACKs stalled and
        // no resend went out), then resends more than the link carries (1.3-4.2 Mbit/s into a
        // 4G fade of 0.85).
        let per_s = |t: &Tally| t.over_at_least(RECENT, dt).map_or(0.0, kbps);
        let heavy = (HEAVY_LOSSES * kbit_per_packet / 0.1).max(recent_sends.unwrap_or(0.0) * HEAVY_LOSS_SHARE);
        let heavy_losses = per_s(&self.resends).max(per_s(&self.losses)) > heavy;
        // The link's rate over the last round trip (at least DELIVERED_MIN_WINDOW).
        let window =
            Duration::from_secs_f64(s.rtt_ms.max(0.0) / 1000.0).clamp(DELIVERED_MIN_WINDOW, DELIVERED_MAX_WINDOW);
        let delivered = self.acked.over_within(window, dt).map_or(0.0, kbps);
        // What a cut aims under: the last round trip's rate, but within half and all of the last
        // second's. Packets lost in a drop hold the cumulative ACK back until they are sent again,
        // so for a round trip the link looks slower than it is (a cut to that would go too deep);
        // a second's rate still holds what came before a capacity drop (a cut to that alone would
        // take many steps). So each cut at most halves the rate, and follows a real drop in two.
        let second = self.acked.over_all(dt).map_or(delivered, kbps);
        let carried = delivered.clamp(second / 2.0, second.max(f64::MIN_POSITIVE));
        // In the first second of a connection what was acknowledged says little (the first
        // keyframe, the first ACKs): cuts are then by the rate alone.
        let known = now.saturating_sub(self.first) >= DELIVERED_MAX_WINDOW;
        self.proven.note(now, delivered);
        self.base.note(s.rtt_ms, now);

        let latency = if s.latency_ms > 0.0 { s.latency_ms } else { 120.0 };
        let base = self.base.lowest().min(s.rtt_ms);
        // (Over a bond, the least queued uplink's: `BondView::queue_ms`.)
        let queue = s.bond.and_then(|b| b.queue_ms).unwrap_or(s.rtt_ms - base).max(0.0);
        // The backlog: how long what waits in the send buffer takes to leave at the link's rate,
        // beyond the round trip it always holds and the ACK period. Counted in packets, not by
        // the buffer's time span: one lost packet waiting for its resend stretches the span, not
        // the backlog.
        // (At the rate sent when that is higher: the link's is not known yet at the start, and
        // a backlog that matters shows at either.)
        let drain_ms = s.send_buffer_packets.max(0) as f64 * kbit_per_packet * 1000.0 / second.max(self.rate).max(1.0);
        // A loss being repaired holds the cumulative ACK back until its resend arrives: from
        // the report on, for a round trip and the resend's wait, the send buffer and the
        // flight hold a second round trip of packets that are no queue and no backlog. (Over
        // transatlantic-100ms at 0.2 % random loss, each lone loss read as 110 ms of flight
        // past a third of the latency: a bridge's 3 Mbit/s halved to the floor in 20 s.)
        // Losses past what random loss makes are no lone loss: they count as ever.
        let repair_window = Duration::from_secs_f64((2.0 * s.rtt_ms.max(0.0) + 100.0) / 1000.0);
        let repairing = !heavy_losses && self.losses.over_within(repair_window, dt).is_some_and(|r| r > 0.0);
        let held_rtt = if repairing { 2.0 * s.rtt_ms } else { s.rtt_ms };
        let backlog = (drain_ms - held_rtt - 50.0).max(0.0);
        let dropped = s.packets_dropped > p.packets_dropped;
        // Jitter explains some queue; a queue that grows is no jitter, so the variation is
        // learnt only while nothing queues (and never hides more than a sixth of the latency).
        let queue_limit = 20f64.max((4.0 * self.rtt_var).min(latency / 6.0)).max(0.2 * base);
        if queue <= queue_limit {
            self.rtt_var = 0.75 * self.rtt_var + 0.25 * (s.rtt_ms - p.rtt_ms).abs();
        }
        // A keyframe paced out waits in the send buffer for a moment: a backlog under a quarter
        // of the latency arrives in time.
        let backlog_limit = 100f64.max(latency / 4.0);
        // (A link whose own round trip is that long is no overload: a lower rate would not
        // shorten it. SRT's default 120 ms over a 45 ms link held the rate at the floor. Nor is
        // a round trip over it by jitter alone: a latency chosen at 3 x RTT puts a third of it
        // at the link's own round trip, and a bridge over a 42 Mbit/s metro link was held at
        // the floor, cut each time its 19.3 ms round trip read 20.)
        let long_queue = s.rtt_ms >= latency / 3.0 && base < latency / 3.0 && queue > queue_limit;

        // Packets in flight beyond the round trip and a frame's burst, as time at the rate: the
        // first sign of a queue (libsrt's round trip is smoothed and comes a step or two later).
        // (At what is being sent, when under the rate: an encoder that makes less than its rate
        // puts fewer packets in flight, and the same flight is then a longer queue.)
        let sending = recent_sends.unwrap_or(self.rate).min(self.rate).max(1.0);
        let flight_ms = s.flight_packets.max(0) as f64 * kbit_per_packet / sending * 1000.0;
        let flight_queue = (flight_ms - held_rtt - FLIGHT_SLACK_MS).max(0.0);
        let pressed = flight_queue > queue_limit
            || dropped
            || heavy_losses
            || long_queue
            || backlog > latency / 2.0
            || queue > queue_limit
            || backlog > backlog_limit;
        Reading {
            stalled,
            recent,
            recent_sends,
            heavy_losses,
            delivered,
            carried,
            known,
            latency,
            queue,
            backlog,
            flight_queue,
            dropped,
            queue_limit,
            backlog_limit,
            long_queue,
            since_cut: self.last_cut.map(|t| now.saturating_sub(t)),
            round_trip: Duration::from_secs_f64(s.rtt_ms.max(1.0) / 1000.0),
            pressed,
            send_buffer_ms: s.send_buffer_ms,
            uplink_lost: (lost_share(s) - lost_share(p)).clamp(0.0, 1.0),
            bonded: s.bond.is_some(),
        }
    }

    /// Brings the tallies up to date with sample `s` (the previous one `p`): returns what a
    /// packet carries lately, kbit, and whether the ACKs stalled.
    fn count(&mut self, s: &LinkSample, p: &LinkSample, now: Duration) -> (f64, bool) {
        // What left the send buffer acknowledged since the last sample.
        let first_sends = (s.packets_sent - s.packets_retransmitted) - (p.packets_sent - p.packets_retransmitted);
        // (Packets sent for the first time, less the growth of those in flight: the cumulative
        // ACK's advance. Not the send buffer's growth: it also holds packets not sent yet, which
        // a send cap keeps there.)
        let acked = first_sends - (s.flight_packets - p.flight_packets) - (s.packets_dropped - p.packets_dropped);
        // Packets count in kbit by what they carried lately (no bytes in older traces: 1316).
        self.packet.note(first_sends, (s.bytes_sent - s.bytes_retransmitted) - (p.bytes_sent - p.bytes_retransmitted));
        let kbit_per_packet = self.packet.kbit();
        self.acked_total += acked.max(0);
        // No ACK at all in this step or the last, and nothing sent again: the ACKs stalled (the
        // receiver or the way back held them: 400 ms without one on a free 5 Mbit/s link, then
        // all at once, on this 2-core machine); a link that carries less still acknowledges
        // what it carries.
        let stalled = acked.min(std::mem::replace(&mut self.acked_before, acked)) <= 0;
        self.sends_total += first_sends.max(0);
        self.sends.record(now, self.sends_total);
        self.made.record(now, self.sends_total + (s.send_buffer_packets - s.flight_packets).max(0));
        self.resends.record(now, s.packets_retransmitted);
        self.losses.record(now, s.packets_lost);
        self.acked.record(now, self.acked_total);
        self.owed.reported(now, s, kbit_per_packet);
        // In a drop, what the encoder makes once it followed the cut (its frames in the making
        // still come at the old rate for a moment): the cap must not hold that back.
        self.made_kbps = self
            .episode_kbps
            .and_then(|_| self.made.since(self.episode_start + ENCODER_FOLLOWS, 0.2))
            .map(|r| r * kbit_per_packet);
        (kbit_per_packet, stalled)
    }
}

/// The share of a bond's sending lost to dead uplinks so far (0 on a plain connection).
fn lost_share(s: &LinkSample) -> f64 {
    s.bond.map_or(0.0, |b| b.lost_share)
}
