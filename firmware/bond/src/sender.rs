//! The sending end of a bond, as a state machine without sockets. libsrt's packets come in one
//! at a time; each goes to the uplink [`schedule`] picks (a resend to the shortest round trip
//! with room). Each uplink keeps srtla's congestion window (+1 per srtla ACK,
//! more while the window is the limit, -0.1 packet per NAK of a packet it carried) and, beside
//! what srtla keeps, its round trip from echoed keepalives and the packets it has in flight:
//! an uplink silent for longer than its round trip explains (at least 350 ms; srtla waits 4 s)
//! is dead at once, and what it had in flight is sent again over the others before SRT's loss
//! report would ask for it.

use std::time::{Duration, Instant};

pub use crate::heard::Heard;
pub use crate::link::{schedule, Link, LinkState, LinkStatus, PacketKind, DEAD_FLOOR, KEEPALIVE_EVERY};
use crate::link::{
    seq_before, Flight, FLIGHT_MAX, QUEUE_SHARE, WINDOW_GROW, WINDOW_MAX, WINDOW_MIN, WINDOW_NAK, WINDOW_START,
    WINDOW_UNIT,
};
use crate::proto::{self, GroupId, LossRanges, Packet, SENDER_ID_LEN};

/// A registration unanswered this long is tried again (on the next uplink for a group).
const REG_RETRY: Duration = Duration::from_secs(1);
/// After the group is made, a `REG_NGP` is not believed for this long: the receiver makes the
/// group when the first uplink's `REG2` reaches it, and another uplink's may overtake it
/// (srtla_send waits for its REG3s likewise).
const JOIN_WAIT: Duration = Duration::from_secs(4);

/// What the sender asks of its sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// Send these bytes over uplink `n`.
    Link(usize, Vec<u8>),
    /// Hand these bytes back to libsrt.
    Srt(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reg {
    /// No group yet: ask for one on the next uplink.
    Start { next: usize },
    /// `REG1` sent on `link`, waiting for the group's id.
    Asked { link: usize, at: Instant },
    /// The group exists (since `at`); uplinks join it.
    Joined { at: Instant },
}

/// What the rate law reads of a bond beside libsrt's counters of the connection over it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BondReading {
    /// [`Sender::delivered_ahead`].
    pub delivered_ahead: usize,
    /// [`Sender::queue_delay`].
    pub queue: Option<Duration>,
    /// [`Sender::lost_share`].
    pub lost_share: f64,
}

/// The sender's state.
#[derive(Debug)]
pub struct Sender {
    id: GroupId,
    links: Vec<Link>,
    reg: Reg,
    epoch: Instant,
    second_start: Instant,
    /// SRT's cumulative ACK as last passed back (the next packet it waits for).
    srt_acked: Option<u32>,
    /// Packets past SRT's cumulative ACK that srtla ACKs say arrived: [`Self::delivered_ahead`].
    ahead: std::collections::HashSet<u32>,
    /// [`Self::lost_share`].
    lost_share: f64,
}

/// Packets remembered as arrived past SRT's cumulative ACK, at most: a bound against a
/// receiver that never sends SRT's ACK. (A 6 Mbit/s stream sends some 570 packets a second; an
/// ACK held back for the whole of a 2 s latency leaves 1140 past it.)
const AHEAD_MAX: usize = 8192;

impl Sender {
    /// A sender over these uplinks, with this random half of the group id.
    pub fn new(names: Vec<String>, half: [u8; SENDER_ID_LEN], now: Instant) -> Self {
        let mut id = [0u8; proto::ID_LEN];
        id[..SENDER_ID_LEN].copy_from_slice(&half);
        Sender {
            id,
            links: names.into_iter().map(Link::new).collect(),
            reg: Reg::Start { next: 0 },
            epoch: now,
            second_start: now,
            srt_acked: None,
            ahead: std::collections::HashSet::new(),
            lost_share: 0.0,
        }
    }

    /// What the rate law reads of the bond beside libsrt's counters.
    pub fn reading(&self) -> BondReading {
        BondReading { delivered_ahead: self.delivered_ahead(), queue: self.queue_delay(), lost_share: self.lost_share }
    }

    /// The bond's sending lost to uplinks found dead, so far: at each death, the share of the
    /// last second's bytes the uplink carried, summed (0.43 when one that carried 43 % died).
    /// The rate law cuts by it at once: the rest must carry the stream, and waiting for their
    /// queues to show it cost frames (in the bonding bench, 17 of one run's 19 at one outage).
    pub fn lost_share(&self) -> f64 {
        self.lost_share
    }

    /// Packets that arrived (the receiver's srtla ACKs say so) past the one SRT's cumulative
    /// ACK still waits for. libsrt counts them in flight and in its send buffer: a packet on a
    /// slow uplink, or a lost one until its resend arrives, holds that ACK back while the other
    /// uplinks' packets arrive. Less these, libsrt's counters say what is really on the way.
    pub fn delivered_ahead(&self) -> usize {
        self.ahead.len()
    }

    /// The queue a packet meets on its way: the least of the uplinks' queues (round trip over
    /// its lowest of late, from the keepalives), among those up that carried at least
    /// a fifth (`QUEUE_SHARE`) of the last second's bytes. The scheduler moves the stream off an uplink
    /// whose queue grows, so one uplink's queue is no reason to send less; all of them queuing
    /// is. (SRT's own round trip is the fastest uplink's: in a bonding run a 4G uplink's dip
    /// read as a queue and the rate law cut a bond with room on the others.) `None` before
    /// any uplink is timed.
    pub fn queue_delay(&self) -> Option<Duration> {
        let total: u64 = self.links.iter().map(|l| l.bytes_last).sum();
        self.links
            .iter()
            .filter(|l| l.state == LinkState::Up && l.bytes_last as f64 >= total as f64 * QUEUE_SHARE)
            .filter_map(Link::queue)
            .min()
    }

    /// Every uplink's state.
    pub fn status(&self) -> Vec<LinkStatus> {
        let total: u64 = self.links.iter().map(|l| l.bytes_last).sum();
        self.links
            .iter()
            .map(|l| LinkStatus {
                name: l.name.clone(),
                state: l.state,
                rtt_ms: l.srtt.map(|d| d.as_secs_f64() * 1000.0),
                window: f64::from(l.window) / f64::from(WINDOW_UNIT),
                in_flight: l.flights.len(),
                sent: l.sent,
                rescued: l.resent,
                naks: l.naks,
                deaths: l.deaths,
                rate_kbps: l.bytes_last as f64 * 8.0 / 1000.0,
                share_pct: if total == 0 { 0.0 } else { l.bytes_last as f64 * 100.0 / total as f64 },
                problem: None,
            })
            .collect()
    }

    /// Whether some uplink carries the stream.
    pub fn is_up(&self) -> bool {
        self.links.iter().any(|l| l.state == LinkState::Up)
    }

    /// A packet from libsrt: the uplink to send it on, or `None` while no uplink is up.
    pub fn on_srt(&mut self, data: &[u8]) -> Option<usize> {
        let packet = proto::parse(data);
        let kind = match packet {
            Packet::SrtData(_) if proto::is_retransmit(data) => PacketKind::Resend,
            Packet::SrtData(_) => PacketKind::Data,
            _ => PacketKind::Control,
        };
        let n = schedule(&self.links, kind)?;
        let link = &mut self.links[n];
        link.sent += 1;
        link.bytes_now += data.len() as u64;
        if let Packet::SrtData(seq) = packet {
            if link.flights.len() == FLIGHT_MAX {
                link.flights.pop_front();
            }
            link.flights.push_back(Flight { seq, data: data.to_vec() });
        }
        Some(n)
    }

    /// A datagram from the receiver over uplink `n`.
    pub fn on_link(&mut self, n: usize, data: &[u8], now: Instant) -> Vec<Out> {
        self.on_heard(n, Heard::read(data), data, now)
    }

    /// A datagram from the receiver over uplink `n`, read already ([`Heard::read`]).
    pub fn on_heard(&mut self, n: usize, heard: Heard<'_>, data: &[u8], now: Instant) -> Vec<Out> {
        if n >= self.links.len() {
            return Vec::new();
        }
        match heard {
            Heard::RegNgp => return self.on_ngp(n, now),
            Heard::Reg2(id) => return self.on_reg2(n, id, now),
            Heard::Refused => {
                tracing::warn!(link = %self.links[n].name, "the bonding receiver refused a registration");
                return Vec::new();
            }
            _ => {}
        }
        self.heard(n, now);
        match heard {
            Heard::Reg3 => {
                self.links[n].registered = true;
                self.heard(n, now);
                Vec::new()
            }
            Heard::Keepalive(stamp) => {
                if let Some(stamp) = stamp {
                    let sent = self.epoch + Duration::from_micros(stamp);
                    if now >= sent {
                        self.links[n].rtt_sample(now - sent, now);
                    }
                }
                Vec::new()
            }
            Heard::Ack(seqs) => {
                self.on_srtla_ack(n, &seqs);
                Vec::new()
            }
            Heard::SrtAck(next) => {
                for l in &mut self.links {
                    l.flights.retain(|f| !seq_before(f.seq, next));
                }
                if self.srt_acked.is_none_or(|a| seq_before(a, next)) {
                    self.srt_acked = Some(next);
                    self.ahead.retain(|&s| !seq_before(s, next));
                }
                vec![Out::Srt(data.to_vec())]
            }
            Heard::SrtNak(lost) => {
                self.on_nak(&lost);
                vec![Out::Srt(data.to_vec())]
            }
            _ => vec![Out::Srt(data.to_vec())],
        }
    }

    /// Time passing: registration, keepalives, dead uplinks and their rescue.
    pub fn on_tick(&mut self, now: Instant) -> Vec<Out> {
        if now.saturating_duration_since(self.second_start) >= Duration::from_secs(1) {
            self.second_start = now;
            for l in &mut self.links {
                l.bytes_last = std::mem::take(&mut l.bytes_now);
            }
        }
        let mut out = self.register(now);
        for n in 0..self.links.len() {
            let link = &mut self.links[n];
            if link.state == LinkState::Up
                && link.last_rcvd.is_some_and(|t| now.saturating_duration_since(t) > link.dead_after())
            {
                out.extend(self.bury(n));
            }
            let link = &mut self.links[n];
            if link.registered
                && link.last_keepalive.is_none_or(|t| now.saturating_duration_since(t) >= KEEPALIVE_EVERY)
            {
                link.last_keepalive = Some(now);
                out.push(Out::Link(n, proto::keepalive(now.saturating_duration_since(self.epoch).as_micros() as u64)));
            }
        }
        out
    }

    /// Sending over uplink `n` failed (its interface went down, no route): it is dead now,
    /// without waiting for its silence.
    pub fn on_send_error(&mut self, n: usize) -> Vec<Out> {
        match self.links.get(n) {
            Some(l) if l.state == LinkState::Up => self.bury(n),
            _ => Vec::new(),
        }
    }

    fn heard(&mut self, n: usize, now: Instant) {
        // Back from the dead, an uplink starts at half the others' mean window and earns the
        // rest (srtla's starts at one packet and takes some 15 s to carry its share again).
        let others: Vec<i32> = self
            .links
            .iter()
            .enumerate()
            .filter(|(i, l)| *i != n && l.state == LinkState::Up)
            .map(|(_, l)| l.window)
            .collect();
        let half_mean =
            if others.is_empty() { WINDOW_START } else { others.iter().sum::<i32>() / others.len() as i32 / 2 };
        let link = &mut self.links[n];
        link.last_rcvd = Some(now);
        if link.registered && link.state != LinkState::Up {
            if link.state == LinkState::Dead {
                tracing::info!(link = %link.name, "uplink back");
                link.window = half_mean.max(WINDOW_MIN);
            }
            link.state = LinkState::Up;
        }
    }

    /// Marks uplink `n` dead and sends what it had in flight over the best other uplink.
    fn bury(&mut self, n: usize) -> Vec<Out> {
        let total: u64 = self.links.iter().map(|l| l.bytes_last).sum();
        if total > 0 {
            self.lost_share += self.links[n].bytes_last as f64 / total as f64;
        }
        let link = &mut self.links[n];
        tracing::warn!(link = %link.name, silent_ms = link.dead_after().as_millis() as u64, "uplink dead");
        link.state = LinkState::Dead;
        link.deaths += 1;
        link.window = WINDOW_MIN;
        link.srtt = None;
        let flights = std::mem::take(&mut link.flights);
        let mut out = Vec::with_capacity(flights.len());
        for f in flights {
            let Some(to) = schedule(&self.links, PacketKind::Resend) else { break };
            let other = &mut self.links[to];
            other.resent += 1;
            out.push(Out::Link(to, f.data.clone()));
            if other.flights.len() < FLIGHT_MAX {
                other.flights.push_back(f);
            }
        }
        out
    }

    fn on_srtla_ack(&mut self, n: usize, seqs: &[u32]) {
        for &seq in seqs {
            if self.ahead.len() < AHEAD_MAX && self.srt_acked.is_none_or(|a| !seq_before(seq, a)) {
                self.ahead.insert(seq);
            }
        }
        // One pass over the packets in flight, not one per number acknowledged.
        let acked: std::collections::HashSet<u32> = seqs.iter().copied().collect();
        let link = &mut self.links[n];
        let before = link.flights.len();
        link.flights.retain(|f| !acked.contains(&f.seq));
        for left in (link.flights.len()..before).rev() {
            if left as i32 * WINDOW_UNIT > link.window {
                link.window += WINDOW_GROW - 1;
            }
        }
        for l in &mut self.links {
            if l.state == LinkState::Up {
                l.window = (l.window + seqs.len() as i32).min(WINDOW_MAX);
            }
        }
    }

    /// Each packet in flight is looked up in the report (a binary search), so the work is
    /// bounded by the packets in flight whatever the report says.
    fn on_nak(&mut self, lost: &LossRanges) {
        if lost.is_empty() {
            return;
        }
        let mut counted = std::collections::HashSet::new();
        for l in &mut self.links {
            for f in &l.flights {
                // A packet sent twice (rescued) counts against the first uplink holding it.
                if lost.contains(f.seq) && counted.insert(f.seq) {
                    l.naks += 1;
                    l.window = (l.window - WINDOW_NAK).max(WINDOW_MIN);
                }
            }
        }
    }

    fn on_ngp(&mut self, n: usize, now: Instant) -> Vec<Out> {
        // Believed only when no uplink carries the stream (anyone can send a datagram from the
        // receiver's address; a group that answers is not forgotten) and the group is not
        // being made.
        let settled = matches!(self.reg, Reg::Joined { at } if now.saturating_duration_since(at) >= JOIN_WAIT);
        if settled && !self.is_up() {
            // The receiver forgot the group (restarted): make a new one.
            tracing::warn!("the bonding receiver does not know our group: registering again");
            for l in &mut self.links {
                l.registered = false;
                l.state = LinkState::Connecting;
            }
            self.reg = Reg::Start { next: n };
            return self.register(now);
        }
        Vec::new()
    }

    fn on_reg2(&mut self, n: usize, id: &GroupId, now: Instant) -> Vec<Out> {
        let asked = matches!(self.reg, Reg::Asked { link, .. } if link == n);
        if !asked || id[..SENDER_ID_LEN] != self.id[..SENDER_ID_LEN] {
            return Vec::new();
        }
        self.id = *id;
        self.reg = Reg::Joined { at: now };
        tracing::info!(link = %self.links[n].name, "bonded group registered");
        // The uplink that asked first: the receiver makes the group from its REG2 (the proof
        // that it received the id); the others join it, or try again a second later.
        let order = std::iter::once(n).chain((0..self.links.len()).filter(|&i| i != n));
        order
            .map(|i| {
                self.links[i].last_reg = Some(now);
                Out::Link(i, proto::reg2(&self.id))
            })
            .collect()
    }

    fn register(&mut self, now: Instant) -> Vec<Out> {
        let count = self.links.len();
        match self.reg {
            Reg::Asked { link, at } if now.saturating_duration_since(at) >= REG_RETRY => {
                self.reg = Reg::Start { next: (link + 1) % count.max(1) };
                self.register(now)
            }
            Reg::Start { next } if count > 0 => {
                self.reg = Reg::Asked { link: next, at: now };
                vec![Out::Link(next, proto::reg1(&self.id))]
            }
            Reg::Joined { .. } => {
                let mut out = Vec::new();
                for (i, l) in self.links.iter_mut().enumerate() {
                    let unanswered = !l.registered || l.state == LinkState::Dead;
                    if unanswered && l.last_reg.is_none_or(|t| now.saturating_duration_since(t) >= REG_RETRY) {
                        l.last_reg = Some(now);
                        out.push(Out::Link(i, proto::reg2(&self.id)));
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn data(seq: u32, resend: bool) -> Vec<u8> {
        let mut p = vec![0u8; 100];
        p[..4].copy_from_slice(&seq.to_be_bytes());
        p[4] = if resend { 0xc4 } else { 0xc0 };
        p
    }

    fn srt_ack(next: u32) -> Vec<u8> {
        let mut p = vec![0u8; 44];
        p[..2].copy_from_slice(&[0x80, 0x02]);
        p[16..20].copy_from_slice(&next.to_be_bytes());
        p
    }

    /// A sender whose uplinks all joined a group at `now`, each with round trip `rtts[i]` ms.
    fn joined(rtts: &[u64], now: Instant) -> Sender {
        let names = (0..rtts.len()).map(|i| format!("l{i}")).collect();
        let mut s = Sender::new(names, [7; SENDER_ID_LEN], now);
        let out = s.on_tick(now);
        assert_eq!(out, vec![Out::Link(0, proto::reg1(&s.id))]);
        let mut full = s.id;
        full[SENDER_ID_LEN..].fill(3);
        let out = s.on_link(0, &proto::reg2(&full), now);
        assert_eq!(out.len(), rtts.len());
        assert!(out.iter().all(|o| matches!(o, Out::Link(_, p) if *p == proto::reg2(&full))));
        for (i, &rtt) in rtts.iter().enumerate() {
            assert!(s.on_link(i, &proto::reg3(), now).is_empty());
            for _ in 0..8 {
                s.links[i].rtt_sample(Duration::from_millis(rtt), now);
            }
        }
        assert!(s.is_up());
        s
    }

    #[test]
    fn registration_follows_srtla() {
        let now = Instant::now();
        let mut s = Sender::new(vec!["a".into(), "b".into()], [7; SENDER_ID_LEN], now);
        assert_eq!(s.on_srt(&data(1, false)), None, "nothing goes out before a link is up");
        assert_eq!(s.on_tick(now), vec![Out::Link(0, proto::reg1(&s.id))]);
        // Unanswered, the next uplink asks.
        assert_eq!(s.on_tick(now + 1100 * MS), vec![Out::Link(1, proto::reg1(&s.id))]);
        // A REG2 whose first half is not ours, or on the wrong uplink, is nothing.
        let mut wrong = [0u8; proto::ID_LEN];
        wrong[0] = 1;
        assert!(s.on_link(1, &proto::reg2(&wrong), now).is_empty());
        let mut full = s.id;
        full[200] = 1;
        assert!(s.on_link(0, &proto::reg2(&full), now).is_empty());
        assert_eq!(s.on_link(1, &proto::reg2(&full), now).len(), 2);
        s.on_link(0, &proto::reg3(), now);
        assert_eq!(s.status()[0].state, LinkState::Up);
        assert_eq!(s.status()[1].state, LinkState::Connecting);
        // A REG_NGP while an uplink carries the stream, or while the group is being made, is
        // not believed: anyone can send one from the receiver's address, and an uplink's REG2
        // may reach the receiver before the one that makes the group.
        assert!(s.on_link(1, &proto::reg_ngp(), now).is_empty());
        assert!(s.on_link(1, &proto::reg_ngp(), now + JOIN_WAIT).is_empty(), "uplink 0 is up");
        // The receiver restarted: its silence kills the uplinks, then a new group is asked for
        // on the uplink that heard it.
        let later = now + JOIN_WAIT + 10 * MS;
        s.on_tick(later);
        assert!(!s.is_up());
        let out = s.on_link(1, &proto::reg_ngp(), later);
        assert!(matches!(out.as_slice(), [Out::Link(1, p)] if proto::is_reg1(p)), "{out:?}");
    }

    #[test]
    fn equal_links_share_and_a_slow_one_gets_less() {
        let now = Instant::now();
        let mut s = joined(&[60, 60, 900], now);
        let mut counts = [0u32; 3];
        for seq in 0..3000u32 {
            let n = s.on_srt(&data(seq, false)).expect("a link");
            counts[n] += 1;
            // The receiver acknowledges each packet 40 packets later, per link.
            if seq >= 40 {
                for i in 0..3 {
                    let acked: Vec<u32> =
                        s.links[i].flights.iter().filter(|f| f.seq + 40 <= seq).map(|f| f.seq).collect();
                    if !acked.is_empty() {
                        s.on_link(i, &proto::ack(&acked), now);
                    }
                }
            }
        }
        s.on_tick(now + Duration::from_secs(1));
        let st = s.status();
        let shares: f64 = st.iter().map(|l| l.share_pct).sum();
        assert!((shares - 100.0).abs() < 0.01, "{st:?}");
        assert!((st[0].rate_kbps - f64::from(counts[0]) * 0.8).abs() < 0.01, "100-byte packets: {st:?}");
        let (a, b, slow) = (counts[0], counts[1], counts[2]);
        assert!(a.abs_diff(b) < 300, "{counts:?}");
        assert!(slow * 5 < a, "{counts:?}");
        assert!(slow > 0, "the slow link still carries some: {counts:?}");
    }

    #[test]
    fn what_arrived_past_a_held_cumulative_ack_is_counted_until_the_ack_passes_it() {
        let now = Instant::now();
        let mut s = joined(&[60, 60], now);
        for seq in 0..20u32 {
            s.on_srt(&data(seq, false));
        }
        assert_eq!(s.delivered_ahead(), 0);
        // Packet 3 is held up (a slow uplink, or lost): SRT's ACK stays at 3 while the rest
        // arrive and the receiver's srtla ACKs list them.
        s.on_link(0, &srt_ack(3), now);
        let arrived: Vec<u32> = (0..20).filter(|&q| q != 3).collect();
        s.on_link(0, &proto::ack(&arrived[..8]), now);
        s.on_link(1, &proto::ack(&arrived[8..]), now);
        assert_eq!(s.delivered_ahead(), 16, "4-19 less 3, not 0-2 which SRT's ACK already passed");
        // Packet 3 arrives: SRT's ACK jumps past all of them.
        s.on_link(1, &srt_ack(20), now);
        assert_eq!(s.delivered_ahead(), 0);
        // An srtla ACK late for a packet SRT's ACK already passed counts for nothing.
        s.on_link(1, &proto::ack(&[3]), now);
        assert_eq!(s.delivered_ahead(), 0);
        // An older SRT ACK arriving late does not take the count back.
        s.on_srt(&data(20, false));
        s.on_link(0, &proto::ack(&[20]), now);
        s.on_link(0, &srt_ack(10), now);
        assert_eq!(s.delivered_ahead(), 1);
    }

    #[test]
    fn the_queue_is_the_least_of_the_uplinks_that_carry_the_stream() {
        let now = Instant::now();
        let mut s = joined(&[60, 80, 900], now);
        assert_eq!(s.queue_delay(), Some(Duration::ZERO), "all at their lowest; nothing carried yet");
        for (l, bytes) in s.links.iter_mut().zip([45_000, 45_000, 10_000]) {
            l.bytes_last = bytes;
        }
        let at = |s: &mut Sender, n: usize, ms: u64, t: Instant| {
            for _ in 0..30 {
                s.links[n].rtt_sample(Duration::from_millis(ms), t);
            }
        };
        // One 4G uplink queues: the scheduler has the other.
        at(&mut s, 0, 160, now + 100 * MS);
        assert_eq!(s.queue_delay(), Some(Duration::ZERO));
        // Both queue: the bond does.
        at(&mut s, 1, 120, now + 200 * MS);
        let q = s.queue_delay().expect("timed");
        assert!(q >= 35 * MS && q <= 40 * MS, "{q:?}");
        // The slow uplink, under a fifth of the bytes, hides nothing however calm it is.
        at(&mut s, 2, 900, now + 300 * MS);
        assert_eq!(s.queue_delay(), Some(q));
        // Ten seconds on, a round trip that stayed up is the uplink's own.
        at(&mut s, 1, 120, now + 11 * Duration::from_secs(1));
        assert!(s.queue_delay().expect("timed") < 5 * MS);
    }

    #[test]
    fn a_resend_takes_the_shortest_round_trip_with_room_and_a_control_packet_the_shortest() {
        let now = Instant::now();
        let mut s = joined(&[80, 30, 200], now);
        assert_eq!(s.on_srt(&data(5, true)), Some(1));
        let mut ackack = vec![0u8; 16];
        ackack[..2].copy_from_slice(&[0x80, 0x06]);
        assert_eq!(s.on_srt(&ackack), Some(1));
        assert_eq!(s.links[1].flights.len(), 1, "only data is kept for a rescue");
        // The shortest round trip's window full: a resend goes to the next shortest with room,
        // SRT's control still over the shortest.
        s.links[1].window = 3 * WINDOW_UNIT;
        s.on_srt(&data(6, true));
        s.on_srt(&data(7, true));
        assert_eq!(s.links[1].flights.len(), 3);
        assert_eq!(s.on_srt(&data(8, true)), Some(0));
        assert_eq!(s.on_srt(&ackack), Some(1));
        // None with room: where new data would go.
        s.links[0].window = WINDOW_MIN;
        s.links[2].window = WINDOW_MIN;
        s.links[0].flights.push_back(Flight { seq: 9, data: data(9, false) });
        s.links[2].flights.push_back(Flight { seq: 10, data: data(10, false) });
        let as_data = schedule(&s.links, PacketKind::Data);
        assert!(as_data.is_some());
        assert_eq!(s.on_srt(&data(11, true)), as_data);
    }

    #[test]
    fn a_nak_shrinks_the_window_of_the_link_that_carried_it() {
        let now = Instant::now();
        let mut s = joined(&[50, 50], now);
        let n = s.on_srt(&data(9, false)).expect("a link");
        let before = s.links[n].window;
        let mut nak = vec![0u8; 20];
        nak[..2].copy_from_slice(&[0x80, 0x03]);
        nak[16..20].copy_from_slice(&9u32.to_be_bytes());
        assert_eq!(s.on_link(1 - n, &nak, now), vec![Out::Srt(nak.clone())]);
        assert_eq!(s.links[n].window, before - WINDOW_NAK);
        assert_eq!(s.links[n].naks, 1);
        assert_eq!(s.links[1 - n].naks, 0);
    }

    #[test]
    fn a_hostile_loss_report_counts_each_packet_in_flight_once() {
        // Issue 57, finding 4: 1496 bytes of ranges, each as long as a range is read, over
        // every packet the uplinks remember in flight.
        let now = Instant::now();
        let mut s = joined(&[50, 50], now);
        for seq in 0..(2 * FLIGHT_MAX as u32) {
            s.links[(seq % 2) as usize].flights.push_back(Flight { seq, data: Vec::new() });
        }
        let mut nak = vec![0u8; 16];
        nak[..2].copy_from_slice(&[0x80, 0x03]);
        while nak.len() + 8 <= 1496 {
            nak.extend_from_slice(&0x8000_0000u32.to_be_bytes());
            nak.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
        }
        let Heard::SrtNak(ranges) = Heard::read(&nak) else { panic!("not a loss report") };
        assert!(ranges.contains(0) && ranges.contains(4096) && !ranges.contains(4097));
        assert_eq!(s.on_heard(0, Heard::SrtNak(ranges), &nak, now), vec![Out::Srt(nak.clone())]);
        assert_eq!((s.links[0].naks, s.links[1].naks), (FLIGHT_MAX as u64, FLIGHT_MAX as u64));
        assert_eq!(s.links[0].window, WINDOW_MIN);
        // An srtla ACK of every packet on uplink 1 empties it in one pass.
        let seqs: Vec<u32> = (0..(2 * FLIGHT_MAX as u32)).filter(|q| q % 2 == 1).collect();
        for chunk in seqs.chunks(370) {
            s.on_link(1, &proto::ack(chunk), now);
        }
        assert!(s.links[1].flights.is_empty());
        assert_eq!(s.links[0].flights.len(), FLIGHT_MAX);
    }

    #[test]
    fn a_silent_link_dies_in_time_and_its_packets_go_over_the_others() {
        let t0 = Instant::now();
        let mut s = joined(&[60, 60], t0);
        for seq in 0..20 {
            s.on_srt(&data(seq, false));
        }
        let on_1: Vec<u32> = s.links[1].flights.iter().map(|f| f.seq).collect();
        assert!(!on_1.is_empty());
        // SRT's ACK up to 3 leaves those in flight; link 0 keeps talking, link 1 falls silent.
        s.on_link(0, &srt_ack(3), t0);
        s.on_link(1, &srt_ack(3), t0);
        let dead_after = s.links[1].dead_after();
        assert_eq!(dead_after, DEAD_FLOOR, "60 ms links are dead after the floor");
        let mut t = t0;
        let mut died = None;
        let mut rescued = Vec::new();
        while t < t0 + Duration::from_secs(2) {
            t += 20 * MS;
            s.on_link(0, &proto::keepalive(0), t);
            for o in s.on_tick(t) {
                if let Out::Link(0, p) = o {
                    if let Packet::SrtData(seq) = proto::parse(&p) {
                        rescued.push(seq);
                    }
                }
            }
            if died.is_none() && s.links[1].state == LinkState::Dead {
                died = Some(t - t0);
            }
        }
        let died = died.expect("link 1 died");
        assert!(died <= dead_after + 20 * MS && died > dead_after - 20 * MS, "{died:?}");
        let expected: Vec<u32> = on_1.into_iter().filter(|&q| q >= 3).collect();
        assert_eq!(rescued, expected);
        // Everything now goes over link 0; a word from link 1 brings it back at half link 0's
        // window.
        assert!((0..10).all(|q| s.on_srt(&data(100 + q, false)) == Some(0)));
        s.on_link(1, &proto::keepalive(0), t);
        assert_eq!(s.links[1].state, LinkState::Up);
        assert_eq!(s.links[1].window, s.links[0].window / 2);
        assert_eq!(s.status()[1].deaths, 1);
    }

    #[test]
    fn a_dead_uplink_takes_its_share_of_the_sending() {
        let now = Instant::now();
        let mut s = joined(&[60, 60, 60], now);
        for (l, bytes) in s.links.iter_mut().zip([57_000, 43_000, 0]) {
            l.bytes_last = bytes;
        }
        s.on_send_error(2);
        assert_eq!(s.reading().lost_share, 0.0, "an uplink that carried nothing loses nothing");
        s.on_send_error(1);
        assert!((s.reading().lost_share - 0.43).abs() < 1e-9, "{}", s.lost_share());
        s.on_send_error(1);
        assert!((s.lost_share() - 0.43).abs() < 1e-9, "dead once, counted once");
    }

    #[test]
    fn a_send_error_kills_at_once() {
        let now = Instant::now();
        let mut s = joined(&[60, 60], now);
        s.on_srt(&data(1, false));
        s.on_srt(&data(2, false));
        let out = s.on_send_error(1);
        assert_eq!(s.links[1].state, LinkState::Dead);
        assert!(out.iter().all(|o| matches!(o, Out::Link(0, _))));
        assert!(s.on_send_error(1).is_empty(), "dead once");
    }

    #[test]
    fn keepalives_measure_the_round_trip() {
        let t0 = Instant::now();
        let mut s = joined(&[60], t0);
        s.links[0].srtt = None;
        let out = s.on_tick(t0 + 100 * MS);
        let Some(Out::Link(0, k)) = out.iter().find(|o| matches!(o, Out::Link(0, p) if p[0] == 0x90)) else {
            panic!("no keepalive: {out:?}")
        };
        s.on_link(0, k, t0 + 142 * MS);
        assert_eq!(s.status()[0].rtt_ms, Some(42.0));
        assert_eq!(s.status()[0].to_string(), "l0: up, RTT 42 ms, 0.0 Mbit/s, 0 %");
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_before(0x7fff_fffe, 1));
        assert!(!seq_before(1, 0x7fff_fffe));
        assert!(seq_before(5, 6));
        assert!(!seq_before(6, 6));
    }
}
