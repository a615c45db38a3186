//! Whether a caller's receiver is still there: the rate crate's [`PeerWatch`] (pure, fed
//! libsrt's counters and the time) with the timeout an SRT URL sets.

use std::time::Duration;

use telebridge_config::SrtUrl;
pub use telebridge_rate::peer::{Peer, PeerWatch};

/// How long a caller may send without an ACK before it counts the receiver as gone. libsrt
/// itself needs about 5 s whatever `peeridletimeo` says (it also waits for 16 expiry periods of
/// at least 300 ms); a receiver that restarts should get video again in well under that. A
/// `peeridletimeo` in the URL overrides it.
pub fn ack_timeout(url: &SrtUrl, rtt: Duration) -> Duration {
    url.peer_idle_timeout.unwrap_or_else(|| (rtt * 4).max(Duration::from_secs(2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_timeout_scales_with_rtt_and_obeys_the_url() {
        let url = SrtUrl::parse("srt://h:1").unwrap();
        assert_eq!(ack_timeout(&url, Duration::from_millis(20)), Duration::from_secs(2));
        assert_eq!(ack_timeout(&url, Duration::from_millis(800)), Duration::from_millis(3200));
        let url = SrtUrl::parse("srt://h:1?peeridletimeo=5000").unwrap();
        assert_eq!(ack_timeout(&url, Duration::from_millis(20)), Duration::from_secs(5));
    }
}
