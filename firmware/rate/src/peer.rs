//! Whether a peer is still there, from the counters libsrt gives: a receiver acknowledges what
//! it gets, so a sender that hears no ACK for a while has lost it. Pure: fed readings and the
//! time, tested without waiting.

use std::time::{Duration, Instant};

/// Whether a caller's receiver is still there, from the counters libsrt gives it: a receiver
/// acknowledges what it gets, so a caller that sends and hears no ACK for a timeout has
/// lost it. Pure: fed readings and the time, tested without waiting.
#[derive(Debug, Clone)]
pub struct PeerWatch {
    last_acks: i64,
    last_sent: i64,
    last_heard: Instant,
}

/// What [`PeerWatch::observe`] concluded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Peer {
    /// An ACK arrived since the last reading.
    Heard,
    /// No ACK, but nothing to acknowledge either (or not for long).
    Quiet,
    /// Sending without an ACK for this long, past the timeout: the receiver is gone.
    Gone(Duration),
}

impl PeerWatch {
    /// A watch starting at `now` (the connection attempt).
    pub fn new(now: Instant) -> Self {
        Self { last_acks: 0, last_sent: 0, last_heard: now }
    }

    /// One reading of the counters at `now`; past `timeout` without an ACK while sending, the
    /// receiver is gone.
    pub fn observe(&mut self, acks: i64, sent: i64, now: Instant, timeout: Duration) -> Peer {
        let acked = acks > self.last_acks;
        let sending = sent > self.last_sent;
        self.last_acks = acks;
        self.last_sent = sent;
        if acked || !sending {
            self.last_heard = now;
        }
        let silent = now.saturating_duration_since(self.last_heard);
        if acked {
            Peer::Heard
        } else if silent > timeout {
            Peer::Gone(silent)
        } else {
            Peer::Quiet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_that_stops_acknowledging_is_gone_after_the_timeout() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let timeout = Duration::from_secs(2);
        let mut w = PeerWatch::new(t0);
        // Connecting: nothing sent, nothing heard: quiet, however long.
        assert_eq!(w.observe(0, 0, ms(3000), timeout), Peer::Quiet);
        // Live: ACKs arrive while sending.
        assert_eq!(w.observe(10, 100, ms(3200), timeout), Peer::Heard);
        assert_eq!(w.observe(25, 300, ms(3400), timeout), Peer::Heard);
        // The receiver goes: packets go out, no ACK comes back.
        assert_eq!(w.observe(25, 500, ms(4400), timeout), Peer::Quiet);
        assert_eq!(w.observe(25, 700, ms(5400), timeout), Peer::Quiet, "exactly at the timeout: not yet");
        assert_eq!(w.observe(25, 900, ms(5600), timeout), Peer::Gone(Duration::from_millis(2200)));
        // Not sending (the encoder paused) is not silence.
        let mut w = PeerWatch::new(t0);
        assert_eq!(w.observe(5, 50, ms(200), timeout), Peer::Heard);
        assert_eq!(w.observe(5, 50, ms(9000), timeout), Peer::Quiet);
    }
}
