//! What our law lets a connection send in a capacity drop ([`super::RateDecision::send_cap_kbps`]):
//! libsrt paces by the input rate it measured over the last second, so after a cut it would go
//! on sending the old rate into the bottleneck for a second; in a drop the law caps it instead.

use std::collections::VecDeque;
use std::time::Duration;

use super::tally::Tally;
use super::LinkSample;

/// While the queue a drop filled drains, the share of the link's rate the connection may send ...
const DRAIN: f64 = 0.85;
/// ... and after, until what waits at home has left: all of it (pacing by the input rate would
/// send that at a quarter over the new stream rate, and it went stale there: 72 packets given
/// up in one rate trace).
const AFTER: f64 = 1.0;
/// Always this much over the stream as sent, headers and all (libsrt's cap counts them: 5-8 %
/// at the floor, where packets are short). Not 25 %: over a cut to 75 % of the link that is
/// 94 % of it, and the queue of a drop on the steps trace did not drain.
const OVER_STREAM: f64 = 1.1;
/// With resends owed, the room over what the encoder makes: libsrt's own overhead for them ...
const REPAIR_ROOM: f64 = 1.25;
/// ... and the resends owed sent within this, s (a 4G link's latency is 1 s; those packets were
/// first sent a round trip and more ago).
const REPAIR_WITHIN_S: f64 = 0.25;

/// What a drop's send cap is made of, kbit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DropCap {
    /// What the link carried when the drop was read.
    pub link_kbps: f64,
    /// The queue on the way is still draining.
    pub draining: bool,
    /// The law's stream rate with libsrt's headers.
    pub stream_kbps: f64,
    /// What the encoder has made since it followed the cut (0: not known yet).
    pub made_kbps: f64,
    /// The resends owed ([`Owed`]), kbit.
    pub owed_kbit: f64,
}

impl DropCap {
    /// The cap, kbit/s: the link's rate (under it while its queue drains), and over the stream
    /// as sent and, from when it followed the cut, over what the encoder makes (not over the
    /// link for that: past it, holding back changes nothing; at the floor x264 made 0.9 Mbit/s
    /// against a stream rate of 0.66 in a rate trace).
    ///
    /// With resends owed, 25 % over what the encoder makes and room for those within a quarter
    /// second, over the link's rate if need be: libsrt 1.5 sends no resend while a packet waits
    /// for its first send (`CUDT::isRetransmissionAllowed`), and a cap near the stream's rate
    /// keeps one always waiting (a frame's packets come at once). In the 4G rate traces the
    /// receiver reported 42-64 packets lost in a second and libsrt sent 4 of them again; it
    /// gave up 19-22 later, 1.5 s after the fade was over, while the cap still held the
    /// connection to the fade's rate.
    pub fn kbps(&self) -> f64 {
        let share = if self.draining { DRAIN } else { AFTER };
        let cap = (self.link_kbps * share)
            .max(self.stream_kbps * OVER_STREAM)
            .max((self.made_kbps * OVER_STREAM).min(self.link_kbps));
        if self.owed_kbit > 0.0 {
            cap.max(self.made_kbps.max(self.stream_kbps) * REPAIR_ROOM + self.owed_kbit / REPAIR_WITHIN_S)
        } else {
            cap
        }
    }
}

/// The resends a connection owes, kbit: the packets the receiver reported lost in the last
/// second that were neither sent again nor given up.
#[derive(Debug, Clone, Default)]
pub(super) struct Owed {
    /// Packets reported lost less those sent again or given up, so far.
    owing: Tally,
    /// (time, resends owed then, kbit) over the last REPAIR_WITHIN_S.
    lately: VecDeque<(Duration, f64)>,
}

impl Owed {
    /// libsrt's counters at `now`.
    pub fn reported(&mut self, now: Duration, s: &LinkSample, kbit_per_packet: f64) {
        self.owing.record(now, s.packets_lost - s.packets_retransmitted - s.packets_dropped);
        self.lately.push_back((now, self.owing.gained().max(0) as f64 * kbit_per_packet));
        while self.lately.front().is_some_and(|&(t, _)| now.saturating_sub(t).as_secs_f64() > REPAIR_WITHIN_S) {
            self.lately.pop_front();
        }
    }

    /// The resends to make room for, kbit: while any are owed, the most owed over the last
    /// REPAIR_WITHIN_S, so that they leave at one pace within it. (Room for what is owed now
    /// alone shrinks as they leave: a decay of 0.25 s, not a deadline; 61 resends took 0.7 s at
    /// 4g-2's fade at 65 s in the eleventh run, after the link had recovered, and libsrt gave up
    /// 8 packets.)
    pub fn kbit(&self) -> f64 {
        match self.lately.back() {
            Some(&(_, now)) if now > 0.0 => self.lately.iter().map(|&(_, k)| k).fold(now, f64::max),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: DropCap =
        DropCap { link_kbps: 1000.0, draining: true, stream_kbps: 700.0, made_kbps: 0.0, owed_kbit: 0.0 };

    #[test]
    fn under_the_link_while_it_drains_then_all_of_it_and_over_the_stream() {
        assert_eq!(CAP.kbps(), 850.0);
        assert_eq!(DropCap { draining: false, ..CAP }.kbps(), 1000.0);
        // A stream at 90 % of the link: 10 % over it.
        assert!((DropCap { stream_kbps: 900.0, ..CAP }.kbps() - 990.0).abs() < 1e-9);
        // An encoder that makes more than its rate: over what it makes, up to the link.
        assert!((DropCap { made_kbps: 880.0, ..CAP }.kbps() - 968.0).abs() < 1e-9);
        assert_eq!(DropCap { made_kbps: 2000.0, ..CAP }.kbps(), 1000.0);
    }

    #[test]
    fn resends_owed_get_room_over_what_is_made_even_over_the_link() {
        // 20 packets of 8 kbit owed: 25 % over what is made and 160 kbit in 250 ms.
        let owed = DropCap { made_kbps: 760.0, owed_kbit: 160.0, ..CAP };
        assert_eq!(owed.kbps(), 760.0 * 1.25 + 640.0);
        // Before the encoder followed the cut: over the stream.
        assert_eq!(DropCap { made_kbps: 0.0, ..owed }.kbps(), 700.0 * 1.25 + 640.0);
    }

    #[test]
    fn resends_owed_are_the_losses_reported_and_not_repaired_in_the_last_second() {
        let mut o = Owed::default();
        let at = |lost, retransmitted, dropped| LinkSample {
            packets_lost: lost,
            packets_retransmitted: retransmitted,
            packets_dropped: dropped,
            ..LinkSample::default()
        };
        o.reported(Duration::ZERO, &at(0, 0, 0), 8.0);
        o.reported(Duration::from_millis(50), &at(30, 5, 5), 8.0);
        assert_eq!(o.kbit(), 20.0 * 8.0, "30 reported lost, 5 sent again, 5 given up");
        // A second later nothing new is reported: nothing is owed.
        o.reported(Duration::from_millis(1100), &at(30, 5, 5), 8.0);
        assert_eq!(o.kbit(), 0.0);
    }

    #[test]
    fn room_for_resends_stays_at_the_most_owed_until_they_have_left() {
        let mut o = Owed::default();
        let at = |lost, retransmitted| LinkSample {
            packets_lost: lost,
            packets_retransmitted: retransmitted,
            ..LinkSample::default()
        };
        let ms = Duration::from_millis;
        o.reported(ms(0), &at(0, 0), 8.0);
        o.reported(ms(50), &at(40, 0), 8.0);
        assert_eq!(o.kbit(), 320.0);
        // Half of them sent again: the room is still for all 40, so the rest leave as fast.
        o.reported(ms(150), &at(40, 20), 8.0);
        assert_eq!(o.kbit(), 320.0);
        // Past REPAIR_WITHIN_S the peak of 40 is forgotten: the room is for the most owed since.
        o.reported(ms(350), &at(40, 35), 8.0);
        assert_eq!(o.kbit(), 20.0 * 8.0);
        o.reported(ms(400), &at(40, 38), 8.0);
        assert_eq!(o.kbit(), 20.0 * 8.0, "the most owed within the last 250 ms: 20 at 150 ms");
        // All sent again: no room.
        o.reported(ms(450), &at(40, 40), 8.0);
        assert_eq!(o.kbit(), 0.0);
    }
}
