//! Several ways to one peer, tried in turn (the bridge's route): the pairing's listen/call way
//! first, then rendezvous ways (the other box's public address, a meeting point).
//!
//! A rendezvous through two NATs works only if both boxes start it at about the same moment:
//! the first packet to reach a router that has no hole for it yet leaves a conntrack entry that
//! makes the router give its own box's later packets another public port (Linux does this, and
//! so most home routers). So rendezvous attempts start on the Unix clock's [`SLOT`] boundaries,
//! the same on both boxes (their clocks are set by NTP), and which rendezvous way a slot is for
//! follows from the slot's number; between slots a box listens or calls. A slot is longer than
//! the time Linux keeps an unanswered UDP entry (30 s) plus a rendezvous attempt (8 s), so an
//! attempt the other box missed leaves no entry in the way of the next. Pure: (way, whether it
//! connected, the clock) -> the next way and how long to wait for it.

use std::time::Duration;

/// Rendezvous attempts start at multiples of this on the Unix clock.
pub const SLOT: Duration = Duration::from_secs(40);
/// A listener before rendezvous ways gives its port up this long before a slot starts.
pub const LEAD: Duration = Duration::from_millis(500);
/// The same, when a way through a meeting point follows: its hello needs the port itself, which
/// libsrt holds for 4-5 s after a listener closes (3 s for a late caller, then its collector's
/// second and tick), where a rendezvous of libsrt's own would have shared it at once.
pub const MEET_LEAD: Duration = Duration::from_millis(5500);

/// Until when a listener that starts at `unix_ms` listens, when rendezvous ways follow it:
/// `lead` before the next slot (or the one after, if that would leave less than [`LEAD`]).
pub fn listen_for(unix_ms: u64, lead: Duration) -> Duration {
    let to_slot = until_next_slot(unix_ms);
    if to_slot > lead + LEAD {
        to_slot - lead
    } else {
        to_slot + SLOT - lead
    }
}

/// The next way to try and how long to wait before trying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    /// Index into the ways.
    pub way: usize,
    /// How long to wait first (for the slot boundary).
    pub wait: Duration,
}

/// Time from `unix_ms` to the next slot boundary.
pub fn until_next_slot(unix_ms: u64) -> Duration {
    let slot = SLOT.as_millis() as u64;
    Duration::from_millis(slot - unix_ms % slot)
}

/// After an attempt on `way` of `ways` (that `connected` or not), at `unix_ms`.
pub fn next(way: usize, ways: usize, connected: bool, unix_ms: u64) -> Next {
    if connected || ways <= 1 {
        // The way that worked is the one to try again when its connection is lost.
        return Next { way, wait: Duration::ZERO };
    }
    if way != 0 {
        return Next { way: 0, wait: Duration::ZERO };
    }
    let wait = until_next_slot(unix_ms);
    let slot = (unix_ms + wait.as_millis() as u64) / SLOT.as_millis() as u64;
    Next { way: 1 + (slot % (ways as u64 - 1)) as usize, wait }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_ways_start_at_the_same_slot_on_both_boxes_whatever_they_did_before() {
        // Box A listened until 79.5 s; box B gave up calling at 73.2 s: both try the same way at 80.
        let a = next(0, 3, false, 79_500);
        let b = next(0, 3, false, 73_200);
        assert_eq!((a.wait, b.wait), (Duration::from_millis(500), Duration::from_millis(6_800)));
        assert_eq!(a.way, b.way);
        assert_eq!(a.way, 1, "slot 2 (80 s) of two rendezvous ways: the first");
        // The next slot is for the other rendezvous way.
        assert_eq!(next(0, 3, false, 81_000).way, 2, "slot 3: the second");
        // A listener stops just before the slot, or listens through a slot too close to reach.
        assert_eq!(listen_for(70_000, LEAD), Duration::from_millis(9_500));
        assert_eq!(listen_for(79_200, LEAD), Duration::from_millis(40_300));
        // Before a meeting point's way, the port is given up early enough for libsrt to let it go.
        assert_eq!(listen_for(70_000, MEET_LEAD), Duration::from_millis(4_500));
        assert_eq!(listen_for(75_000, MEET_LEAD), Duration::from_millis(39_500));
        // A rendezvous that failed goes back to listening or calling at once.
        assert_eq!(next(2, 3, false, 48_000), Next { way: 0, wait: Duration::ZERO });
        // A way that connected is kept; a single way is retried.
        assert_eq!(next(1, 3, true, 1), Next { way: 1, wait: Duration::ZERO });
        assert_eq!(next(0, 1, false, 1), Next { way: 0, wait: Duration::ZERO });
        assert_eq!(until_next_slot(40_000), SLOT);
    }
}
