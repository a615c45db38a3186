//! SRT latency as a URL or the bridge's settings ask for it: a figure the owner pinned, or one
//! the box chooses from the link at each connection (`latency=auto`).

use std::fmt;
use std::time::Duration;

/// SRT latency range the product accepts (`SRTO_LATENCY`), in milliseconds.
pub const LATENCY_RANGE_MS: (u64, u64) = (20, 8000);

/// The least latency `latency=auto` chooses: on a LAN three round trips are a millisecond, and
/// a Wi-Fi hop's jitter or a scheduling stall of a few tens of ms would then cost packets.
pub const AUTO_FLOOR: Duration = Duration::from_millis(40);

/// What `latency=auto` starts with before it has measured the link: libsrt's own default.
pub const AUTO_START: Duration = Duration::from_millis(120);

/// How the SRT latency is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// This much on every connection (`latency=MS`): pinned.
    Fixed(Duration),
    /// Chosen before each connection from the round trip and loss the box measured on the last
    /// one (the SRT deployment guide's table, `telebridge_srt::latency`), never under `floor`;
    /// `start` before anything is measured (`latency=auto`: [`AUTO_FLOOR`], [`AUTO_START`]).
    Auto {
        /// The least it chooses.
        floor: Duration,
        /// The first connection's, before any measurement.
        start: Duration,
    },
}

impl Latency {
    /// `latency=auto` with its defaults.
    pub const AUTO: Latency = Latency::Auto { floor: AUTO_FLOOR, start: AUTO_START };

    /// Parses a URL's or a setting's value: `auto` or whole milliseconds in
    /// [`LATENCY_RANGE_MS`]. The error says what is allowed.
    pub fn parse(value: &str) -> Result<Self, LatencyError> {
        if value.eq_ignore_ascii_case("auto") {
            return Ok(Latency::AUTO);
        }
        let ms: u64 = match value.parse::<i64>() {
            Ok(ms) => u64::try_from(ms).map_err(|_| LatencyError::OutOfRange(value.to_string()))?,
            Err(_) => return Err(LatencyError::NotANumber(value.to_string())),
        };
        if !(LATENCY_RANGE_MS.0..=LATENCY_RANGE_MS.1).contains(&ms) {
            return Err(LatencyError::OutOfRange(value.to_string()));
        }
        Ok(Latency::Fixed(Duration::from_millis(ms)))
    }

    /// What a socket is given before the box has chosen: the pinned figure or the start.
    pub fn initial(self) -> Duration {
        match self {
            Latency::Fixed(l) => l,
            Latency::Auto { start, .. } => start,
        }
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Latency::Fixed(l) => write!(f, "{}", l.as_millis()),
            Latency::Auto { .. } => f.write_str("auto"),
        }
    }
}

/// Why a latency was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LatencyError {
    /// Not `auto` nor a whole number.
    #[error("latency={0} is not auto nor a whole number of milliseconds ({min}-{max})", min = LATENCY_RANGE_MS.0, max = LATENCY_RANGE_MS.1)]
    NotANumber(String),
    /// Outside [`LATENCY_RANGE_MS`].
    #[error("latency={0} is out of range {min}-{max} ms", min = LATENCY_RANGE_MS.0, max = LATENCY_RANGE_MS.1)]
    OutOfRange(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_or_whole_milliseconds_in_range() {
        assert_eq!(Latency::parse("auto"), Ok(Latency::AUTO));
        assert_eq!(Latency::parse("AUTO"), Ok(Latency::AUTO));
        assert_eq!(Latency::parse("63"), Ok(Latency::Fixed(Duration::from_millis(63))));
        assert_eq!(Latency::parse("8000"), Ok(Latency::Fixed(Duration::from_millis(8000))));
        let e = |v: &str| Latency::parse(v).unwrap_err().to_string();
        assert_eq!(e("19"), "latency=19 is out of range 20-8000 ms");
        assert_eq!(e("-5"), "latency=-5 is out of range 20-8000 ms");
        assert_eq!(e("fast"), "latency=fast is not auto nor a whole number of milliseconds (20-8000)");
        assert_eq!(Latency::AUTO.to_string(), "auto");
        assert_eq!(Latency::Fixed(Duration::from_millis(120)).to_string(), "120");
        assert_eq!(Latency::AUTO.initial(), AUTO_START);
    }
}
