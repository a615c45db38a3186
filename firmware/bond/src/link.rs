//! One uplink of a bond as the sender keeps it (srtla's window, its round trip, what it has in
//! flight), its status, and the scheduler that picks an uplink for each packet (pure).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// srtla's window units: a packet is this many.
pub(crate) const WINDOW_UNIT: i32 = 1000;
pub(crate) const WINDOW_MIN: i32 = WINDOW_UNIT;
pub(crate) const WINDOW_START: i32 = 20 * WINDOW_UNIT;
pub(crate) const WINDOW_MAX: i32 = 60 * WINDOW_UNIT;
pub(crate) const WINDOW_NAK: i32 = 100;
pub(crate) const WINDOW_GROW: i32 = 30;
/// Packets remembered per uplink for a rescue.
pub(crate) const FLIGHT_MAX: usize = 512;
/// Keepalives (and so round-trip samples) per uplink.
pub const KEEPALIVE_EVERY: Duration = Duration::from_millis(100);
/// How long an uplink's lowest round trip stands for its round trip without a queue.
pub(crate) const BASE_WINDOW: Duration = Duration::from_secs(10);
/// The least share of the bond's bytes an uplink carries for its queue to count
/// ([`crate::sender::Sender::queue_delay`]).
pub(crate) const QUEUE_SHARE: f64 = 0.2;
/// The shortest silence that makes an uplink dead.
pub const DEAD_FLOOR: Duration = Duration::from_millis(350);
pub(crate) const DEAD_CEILING: Duration = Duration::from_secs(4);

pub use telebridge_contract::uplink::{LinkState, LinkStatus};

#[derive(Debug)]
pub(crate) struct Flight {
    pub(crate) seq: u32,
    pub(crate) data: Vec<u8>,
}

/// One uplink's view, as the scheduler sees it.
#[derive(Debug)]
pub struct Link {
    /// Its name (interface or address).
    pub name: String,
    pub(crate) state: LinkState,
    pub(crate) registered: bool,
    pub(crate) last_rcvd: Option<Instant>,
    pub(crate) last_keepalive: Option<Instant>,
    pub(crate) last_reg: Option<Instant>,
    pub(crate) window: i32,
    pub(crate) flights: VecDeque<Flight>,
    pub(crate) srtt: Option<Duration>,
    pub(crate) rttvar: Duration,
    /// Its lowest round trip of late and when it was seen ([`BASE_WINDOW`]).
    pub(crate) base: Option<(Duration, Instant)>,
    pub(crate) sent: u64,
    pub(crate) resent: u64,
    pub(crate) naks: u64,
    pub(crate) deaths: u64,
    /// Bytes sent in the second under way, and in the last whole one.
    pub(crate) bytes_now: u64,
    pub(crate) bytes_last: u64,
}

impl Link {
    pub(crate) fn new(name: String) -> Self {
        Link {
            name,
            state: LinkState::Connecting,
            registered: false,
            last_rcvd: None,
            last_keepalive: None,
            last_reg: None,
            window: WINDOW_START,
            flights: VecDeque::new(),
            srtt: None,
            rttvar: Duration::ZERO,
            base: None,
            sent: 0,
            resent: 0,
            naks: 0,
            deaths: 0,
            bytes_now: 0,
            bytes_last: 0,
        }
    }

    /// Its smoothed round trip over its lowest of late: the queue on its way.
    pub(crate) fn queue(&self) -> Option<Duration> {
        Some(self.srtt?.saturating_sub(self.base?.0))
    }

    /// How long a silence this uplink's round trip explains.
    pub fn dead_after(&self) -> Duration {
        let rtt = self.srtt.map_or(Duration::ZERO, |s| 2 * s + 4 * self.rttvar);
        rtt.clamp(DEAD_FLOOR, DEAD_CEILING)
    }

    pub(crate) fn rtt_sample(&mut self, sample: Duration, now: Instant) {
        // RFC 6298's smoothing.
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(sample);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + sample) / 8);
            }
        }
        // The lowest smoothed round trip, not the lowest sample: against that, jitter alone
        // (4 ms each way in the bench's 4G uplinks) read as a queue of 11-14 ms, and the law
        // never found the bond calm enough to rise.
        let smooth = self.srtt.unwrap_or(sample);
        if self.base.is_none_or(|(b, at)| smooth <= b || now.saturating_duration_since(at) > BASE_WINDOW) {
            self.base = Some((smooth, now));
        }
    }
}

/// Whether sequence number `a` comes before `b` (31-bit, wrapping).
pub(crate) fn seq_before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a) & 0x7fff_ffff;
    d != 0 && d < 0x4000_0000
}

/// What a packet from libsrt is, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketKind {
    /// A data packet sent for the first time.
    Data,
    /// A data packet sent again (SRT's resend, or one rescued from a dead uplink).
    Resend,
    /// SRT's own control: the ACKACK that times the round trip, the keepalive, the handshake.
    Control,
}

/// The uplink for the next packet, `None` while no uplink is up.
/// - Data: among those up, srtla's score (window over packets in flight) weighed by how much
///   longer the uplink's round trip is than the shortest's, so a link whose round trip swings
///   to a second gets the stream only when the others are full.
/// - Control: the shortest round trip (over a slow uplink an ACKACK would make the whole
///   connection's round trip look like that uplink's).
/// - Resend: the shortest round trip among the uplinks with room in their window, else as
///   data. A packet lost once was most likely lost to a full uplink's queue, and that one
///   often still has the shortest round trip: sent again into it, in the bonding bench, a
///   packet was lost again and again while one 4G uplink was out and the other faded, until
///   SRT gave it up after 2 s (frames lost with the rate at the floor).
pub fn schedule(links: &[Link], kind: PacketKind) -> Option<usize> {
    let up = || links.iter().enumerate().filter(|(_, l)| l.state == LinkState::Up);
    let rtt = |l: &Link| l.srtt.unwrap_or(Duration::from_millis(500)).as_secs_f64().max(0.001);
    let shortest = |it: &mut dyn Iterator<Item = (usize, &Link)>| {
        it.min_by(|(_, a), (_, b)| rtt(a).total_cmp(&rtt(b))).map(|(i, _)| i)
    };
    match kind {
        PacketKind::Control => return shortest(&mut up()),
        PacketKind::Resend => {
            let roomy = |l: &&Link| (l.flights.len() as i64 + 1) * i64::from(WINDOW_UNIT) <= i64::from(l.window);
            if let Some(i) = shortest(&mut up().filter(|(_, l)| roomy(l))) {
                return Some(i);
            }
        }
        PacketKind::Data => {}
    }
    let best = up().map(|(_, l)| rtt(l)).fold(f64::INFINITY, f64::min);
    up().map(|(i, l)| {
        let score = f64::from(l.window) / (l.flights.len() as f64 + 1.0);
        (i, score * (best / rtt(l)).max(0.05))
    })
    .max_by(|a, b| a.1.total_cmp(&b.1))
    .map(|(i, _)| i)
}
