//! Advice from the box's own measurements. Benchmark 1 (docs/benchmarks.md) lost frames for good
//! where SRT's latency was 1.5 x the link's nominal RTT but the RTT SRT measured was higher: a
//! latency under about 2.5 x the measured RTT leaves a lost packet too little time to be sent
//! again. The box measures the RTT all the time, so it can say so, with the number to set.

/// Haivision's middle preset; below it, recovery of a lost packet is a gamble.
pub const MIN_RTT_FACTOR: f64 = 2.5;
/// Haivision's preset for lossy links, the one the advice suggests.
pub const SUGGESTED_RTT_FACTOR: f64 = 4.0;
/// libsrt's default latency, the floor of any suggestion, ms.
pub const FLOOR_MS: i64 = 120;

/// What to say about an SRT link with `latency_ms` (as negotiated) and a measured `rtt_ms`;
/// `None` when the latency leaves room for retransmission (or nothing is measured yet).
pub fn srt_latency(latency_ms: i64, rtt_ms: f64) -> Option<String> {
    if latency_ms <= 0 || rtt_ms.is_nan() || rtt_ms <= 0.0 {
        return None;
    }
    let needed = (rtt_ms * MIN_RTT_FACTOR).ceil() as i64;
    if latency_ms >= needed {
        return None;
    }
    let suggested = ((rtt_ms * SUGGESTED_RTT_FACTOR).ceil() as i64).max(FLOOR_MS);
    Some(format!(
        "SRT latency {latency_ms} ms is under 2.5 x the measured RTT of {rtt_ms:.0} ms, too little to resend lost packets: set latency={suggested} (4 x RTT), or at least {needed}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_for_retransmission_needs_no_advice() {
        assert_eq!(srt_latency(120, 0.2), None, "a LAN");
        assert_eq!(srt_latency(120, 40.0), None, "exactly 3 x");
        assert_eq!(srt_latency(450, 180.0), None, "exactly 2.5 x");
        assert_eq!(srt_latency(120, 0.0), None, "nothing measured yet");
        assert_eq!(srt_latency(0, 100.0), None, "latency not known");
    }

    #[test]
    fn too_little_latency_says_what_to_set() {
        // Benchmark 1's us-west run at 1.5 x nominal: 270 ms against a measured 235 ms.
        assert_eq!(
            srt_latency(270, 235.0).as_deref(),
            Some("SRT latency 270 ms is under 2.5 x the measured RTT of 235 ms, too little to resend lost packets: set latency=940 (4 x RTT), or at least 588")
        );
        assert!(srt_latency(120, 60.0).is_some_and(|a| a.contains("latency=240")));
    }
}
