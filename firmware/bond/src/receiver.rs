//! The receiving end of a bond, as a state machine without sockets: groups of connections
//! (one per uplink of a sender) registered by srtla's handshake, their SRT packets handed on
//! to one SRT peer per group, SRT's answers sent back (ACKs over every connection so each link
//! learns of delivery at once, the rest over the connection heard from last), an srtla ACK
//! every ten data packets per connection or [`ACK_AFTER`] after the first it lists, whichever
//! comes first (srtla_rec waits for ten), keepalives echoed. Compatible with srtla_send and
//! with srtla_rec's behaviour; bounded against strangers (groups, connections per group,
//! timeouts), and a registered address cannot be taken over by another group.
//!
//! A group takes a place only once its sender proved it receives at its address (issue 57,
//! finding 1: bare `REG1`s from spoofed sources, or 200 registrations from one host, filled the
//! table and a real sender got `REG_ERR`). The receiver's half of the id answered to a `REG1`
//! is a keyed hash of the sender's half and the sender's address ([`Cookie`]): no state is
//! kept for it, and the group is made when that address sends the whole id back in its
//! `REG2`. One source (an IPv4 address, an IPv6 /64) holds at most [`Limits::per_source`] (8)
//! groups; a full table gives up a group that carries no SRT data (one that never did first),
//! never one with data on the way. A datagram from an address no group knows is dropped before
//! it is read, unless it is a registration.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde::Serialize;

use crate::proto::{self, GroupId, Packet, ACK_EVERY, ID_LEN, SENDER_ID_LEN, SRT_MIN_LEN};
use crate::reorder::{Reorder, ReorderStatus};

/// The longest a received packet waits for its srtla ACK. srtla_rec acknowledges every ten
/// packets only: on an uplink carrying 30 packets a second a packet then waits 150 ms on
/// average, and a packet that a slow uplink holds back keeps SRT's cumulative ACK back, so
/// these ACKs are how the sender learns what arrived meanwhile (its rate law reads them).
/// srtla_send takes ACKs of any length.
pub const ACK_AFTER: Duration = Duration::from_millis(20);

/// Bounds on what strangers can make the receiver hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Groups at once (srtla_rec: 200).
    pub max_groups: usize,
    /// Groups one source (an IPv4 address, an IPv6 /64) makes and holds at once (several
    /// senders behind one carrier NAT address share it).
    pub per_source: usize,
    /// A group whose last SRT data packet came longer ago than this carries nothing: a full
    /// table may give it up for a new one.
    pub carrying: Duration,
    /// Connections per group (srtla_rec: 8).
    pub max_conns: usize,
    /// A connection silent this long is dropped (srtla_rec: 10 s).
    pub conn_timeout: Duration,
    /// A group left without connections this long after it was made is dropped.
    pub group_timeout: Duration,
    /// The longest a packet after a gap waits for the gap to fill (a third of the SRT latency:
    /// SRT must still have time to resend what is really lost); zero holds nothing.
    pub reorder_max: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_groups: 200,
            per_source: 8,
            carrying: Duration::from_secs(2),
            max_conns: 8,
            conn_timeout: Duration::from_secs(10),
            group_timeout: Duration::from_secs(10),
            reorder_max: Duration::from_millis(50),
        }
    }
}

/// Names a group for the I/O around the receiver (its socket toward the SRT peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupToken(pub u64);

/// What the receiver asks of its sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send these bytes to this sender's address, from the bonding socket.
    Reply(SocketAddr, Vec<u8>),
    /// Hand these bytes on to this group's SRT peer (opening its socket if new).
    Forward(GroupToken, Vec<u8>),
}

#[derive(Debug)]
struct Conn {
    addr: SocketAddr,
    last_rcvd: Instant,
    log: Vec<u32>,
    /// When the log's first packet came.
    log_since: Option<Instant>,
    packets: u64,
}

impl Conn {
    /// The srtla ACK of what the log holds, to this connection; empties the log.
    fn flush_acks(&mut self) -> Action {
        self.log_since = None;
        Action::Reply(self.addr, proto::ack(&std::mem::take(&mut self.log)))
    }
}

#[derive(Debug)]
struct Group {
    token: GroupToken,
    id: GroupId,
    conns: Vec<Conn>,
    created: Instant,
    last_addr: SocketAddr,
    /// The address that made it (proved it receives there).
    source: SocketAddr,
    /// When it last carried an SRT data packet.
    last_data: Option<Instant>,
    reorder: Reorder,
}

impl Group {
    /// Whether SRT data came within `within`: such a group is never given up for another.
    fn carries(&self, now: Instant, within: Duration) -> bool {
        self.last_data.is_some_and(|t| now.saturating_duration_since(t) <= within)
    }
}

/// The receiver's half of a group id, answered to a `REG1`: HMAC-SHA256 under the receiver's
/// key of the sender's half and address, stretched to 128 bytes. Nothing is kept; a `REG2`
/// from that address carrying it proves the address receives (a spoofed `REG1`'s answer goes
/// to the address spoofed).
#[derive(Clone)]
pub struct Cookie {
    key: [u8; 32],
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cookie(****)")
    }
}

impl Cookie {
    /// Cookies under `key` (random, made at the receiver's start).
    pub fn new(key: [u8; 32]) -> Self {
        Cookie { key }
    }

    /// The receiver's half for this sender's half at this address.
    pub fn half(&self, sender_half: &[u8], from: SocketAddr) -> [u8; SENDER_ID_LEN] {
        let mut out = [0u8; SENDER_ID_LEN];
        for (i, chunk) in out.chunks_mut(32).enumerate() {
            let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key");
            m.update(b"telebridge bond group\0");
            m.update(&[i as u8]);
            m.update(sender_half);
            match from.ip() {
                std::net::IpAddr::V4(v4) => m.update(&v4.octets()),
                std::net::IpAddr::V6(v6) => m.update(&v6.octets()),
            }
            m.update(&from.port().to_be_bytes());
            chunk.copy_from_slice(&m.finalize().into_bytes()[..chunk.len()]);
        }
        out
    }

    /// Whether `id` is the whole id this receiver answered to a `REG1` from `from`.
    fn proves(&self, id: &GroupId, from: SocketAddr) -> bool {
        let want = self.half(&id[..SENDER_ID_LEN], from);
        want.iter().zip(&id[SENDER_ID_LEN..]).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// Who counts as one source: an IPv4 address, an IPv6 /64.
fn source_of(a: SocketAddr) -> std::net::IpAddr {
    match a.ip() {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            std::net::IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        std::net::IpAddr::V6(v6) => {
            std::net::IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED))
        }
        v4 => v4,
    }
}

/// One connection of a group, for status and metrics.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConnStatus {
    /// The sender's address on this uplink.
    pub addr: String,
    /// SRT data packets received over it.
    pub packets: u64,
    /// Since it was last heard, ms.
    pub silent_ms: u64,
}

/// One group (one bonded sender), for status and metrics.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupStatus {
    /// The group.
    pub token: GroupToken,
    /// Its connections.
    pub conns: Vec<ConnStatus>,
    /// Its reorder buffer.
    pub reorder: ReorderStatus,
}

/// The receiver's state.
#[derive(Debug)]
pub struct Receiver {
    groups: Vec<Group>,
    next_token: u64,
    limits: Limits,
    cookie: Cookie,
    /// Groups given up for new ones since the last tick (their sockets are closed then).
    released: Vec<GroupToken>,
}

impl Receiver {
    /// A receiver with these bounds, answering `REG1`s with `cookie`'s halves.
    pub fn new(limits: Limits, cookie: Cookie) -> Self {
        Receiver { groups: Vec::new(), next_token: 1, limits, cookie, released: Vec::new() }
    }

    /// A datagram from a sender.
    pub fn on_datagram(&mut self, from: SocketAddr, data: &[u8], now: Instant) -> Vec<Action> {
        // Who sent it first: from an address no group knows only a registration is read
        // (issue 57, finding 7).
        let known = self.find_conn(from);
        if known.is_none() && !proto::is_registration(data) {
            return Vec::new();
        }
        match proto::parse(data) {
            Packet::Reg1(id) => return vec![self.answer_reg1(from, id)],
            Packet::Reg2(id) => return vec![self.register_conn(from, id, now)],
            _ => {}
        }
        let Some((g, c)) = known else { return Vec::new() };
        let group = &mut self.groups[g];
        let conn = &mut group.conns[c];
        conn.last_rcvd = now;
        match proto::parse(data) {
            Packet::Keepalive(_) => return vec![Action::Reply(from, data.to_vec())],
            _ if data.len() < SRT_MIN_LEN => return Vec::new(),
            Packet::SrtData(seq) => {
                conn.packets += 1;
                conn.log.push(seq);
                conn.log_since.get_or_insert(now);
                let mut out = Vec::with_capacity(2);
                if conn.log.len() == ACK_EVERY {
                    out.push(conn.flush_acks());
                }
                group.last_addr = from;
                group.last_data = Some(now);
                let token = group.token;
                let ready = group.reorder.push(seq, proto::is_retransmit(data), data.to_vec(), now);
                out.extend(ready.into_iter().map(|p| Action::Forward(token, p)));
                return out;
            }
            _ => {}
        }
        group.last_addr = from;
        vec![Action::Forward(group.token, data.to_vec())]
    }

    /// Packets whose gap waited long enough: hand them on; srtla ACKs that waited
    /// [`ACK_AFTER`]: send them.
    pub fn due(&mut self, now: Instant) -> Vec<Action> {
        let mut out = Vec::new();
        for g in &mut self.groups {
            for c in &mut g.conns {
                if c.log_since.is_some_and(|t| now.saturating_duration_since(t) >= ACK_AFTER) {
                    out.push(c.flush_acks());
                }
            }
            out.extend(g.reorder.due(now).into_iter().map(|p| Action::Forward(g.token, p)));
        }
        out
    }

    /// When [`Self::due`] next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let acks = self.groups.iter().flat_map(|g| g.conns.iter().filter_map(|c| c.log_since.map(|t| t + ACK_AFTER)));
        self.groups.iter().filter_map(|g| g.reorder.deadline()).chain(acks).min()
    }

    /// A datagram from a group's SRT peer: where to send it.
    pub fn on_srt(&self, token: GroupToken, data: &[u8]) -> Vec<SocketAddr> {
        let Some(group) = self.groups.iter().find(|g| g.token == token) else { return Vec::new() };
        match proto::parse(data) {
            Packet::SrtAck(_) => group.conns.iter().map(|c| c.addr).collect(),
            _ => vec![group.last_addr],
        }
    }

    /// Drops silent connections and empty groups; returns the groups gone, those given up for
    /// new ones included (close their sockets).
    pub fn on_tick(&mut self, now: Instant) -> Vec<GroupToken> {
        let limits = self.limits;
        for g in &mut self.groups {
            g.conns.retain(|c| now.saturating_duration_since(c.last_rcvd) <= limits.conn_timeout);
        }
        let (gone, kept): (Vec<Group>, Vec<Group>) = std::mem::take(&mut self.groups)
            .into_iter()
            .partition(|g| g.conns.is_empty() && now.saturating_duration_since(g.created) > limits.group_timeout);
        self.groups = kept;
        let mut out = std::mem::take(&mut self.released);
        out.extend(gone.into_iter().map(|g| g.token));
        out
    }

    /// Every group and its connections.
    pub fn status(&self, now: Instant) -> Vec<GroupStatus> {
        self.groups
            .iter()
            .map(|g| GroupStatus {
                token: g.token,
                conns: g
                    .conns
                    .iter()
                    .map(|c| ConnStatus {
                        addr: c.addr.to_string(),
                        packets: c.packets,
                        silent_ms: now.saturating_duration_since(c.last_rcvd).as_millis() as u64,
                    })
                    .collect(),
                reorder: g.reorder.status(),
            })
            .collect()
    }

    fn find_conn(&self, addr: SocketAddr) -> Option<(usize, usize)> {
        self.groups
            .iter()
            .enumerate()
            .find_map(|(g, group)| group.conns.iter().position(|c| c.addr == addr).map(|c| (g, c)))
    }

    /// A `REG1`: the whole id, its second half the cookie for this address. Nothing is kept.
    fn answer_reg1(&self, from: SocketAddr, id: &GroupId) -> Action {
        // An address already in a group cannot make another.
        if self.find_conn(from).is_some() {
            return Action::Reply(from, proto::reg_err());
        }
        let mut full = [0u8; ID_LEN];
        full[..SENDER_ID_LEN].copy_from_slice(&id[..SENDER_ID_LEN]);
        full[SENDER_ID_LEN..].copy_from_slice(&self.cookie.half(&id[..SENDER_ID_LEN], from));
        Action::Reply(from, proto::reg2(&full))
    }

    /// A `REG2` whose id no group has, with the cookie of its address: the group is made, if
    /// its source may hold another and the table has room or a group carrying nothing.
    fn make_group(&mut self, from: SocketAddr, id: &GroupId, now: Instant) -> Result<usize, Action> {
        let refuse = || Action::Reply(from, proto::reg_err());
        let src = source_of(from);
        let carrying = self.limits.carrying;
        let mine: Vec<usize> = (0..self.groups.len()).filter(|&g| source_of(self.groups[g].source) == src).collect();
        if mine.len() >= self.limits.per_source {
            // The source's own idle group, least lately heard, gives way: a box restarting its
            // sender does not wait for its old groups to time out.
            let idle = mine.into_iter().filter(|&g| !self.groups[g].carries(now, carrying));
            let oldest = idle.min_by_key(|&g| self.groups[g].last_data.unwrap_or(self.groups[g].created));
            let Some(g) = oldest else { return Err(refuse()) };
            self.give_up(g);
        } else if self.groups.len() >= self.limits.max_groups {
            // One that never carried data first, the oldest; then the longest idle.
            let idle = (0..self.groups.len()).filter(|&g| !self.groups[g].carries(now, carrying));
            let victim = idle.min_by_key(|&g| {
                (self.groups[g].last_data.is_some(), self.groups[g].last_data, self.groups[g].created)
            });
            let Some(g) = victim else { return Err(refuse()) };
            self.give_up(g);
        }
        let token = GroupToken(self.next_token);
        self.next_token += 1;
        let reorder = Reorder::new(self.limits.reorder_max);
        self.groups.push(Group {
            token,
            id: *id,
            conns: Vec::new(),
            created: now,
            last_addr: from,
            source: from,
            last_data: None,
            reorder,
        });
        tracing::info!(group = token.0, sender = %from, "bonded group registered");
        Ok(self.groups.len() - 1)
    }

    fn give_up(&mut self, g: usize) {
        let gone = self.groups.remove(g);
        self.released.push(gone.token);
        tracing::info!(group = gone.token.0, sender = %gone.source, "bonded group given up for a new one (it carried no SRT data)");
    }

    fn register_conn(&mut self, from: SocketAddr, id: &GroupId, now: Instant) -> Action {
        let g = match self.groups.iter().position(|g| ct_eq(&g.id, id)) {
            Some(g) => g,
            None if self.cookie.proves(id, from) => match self.make_group(from, id, now) {
                Ok(g) => g,
                Err(refusal) => return refusal,
            },
            None => return Action::Reply(from, proto::reg_ngp()),
        };
        if let Some((other, _)) = self.find_conn(from) {
            if other != g {
                return Action::Reply(from, proto::reg_err());
            }
        } else {
            if self.groups[g].conns.len() >= self.limits.max_conns {
                return Action::Reply(from, proto::reg_err());
            }
            self.groups[g].conns.push(Conn {
                addr: from,
                last_rcvd: now,
                log: Vec::with_capacity(ACK_EVERY),
                log_since: None,
                packets: 0,
            });
            tracing::info!(group = self.groups[g].token.0, link = %from, "bonded connection registered");
        }
        self.groups[g].last_addr = from;
        Action::Reply(from, proto::reg3())
    }
}

/// Compares ids in constant time (the id is the group's only credential).
fn ct_eq(a: &GroupId, b: &GroupId) -> bool {
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie() -> Cookie {
        Cookie::new([5; 32])
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn data(seq: u32) -> Vec<u8> {
        let mut p = vec![0u8; 200];
        p[..4].copy_from_slice(&seq.to_be_bytes());
        p
    }

    /// Registers a group from `ports[0]` and joins every port; returns the whole id.
    fn join(r: &mut Receiver, ports: &[u16], now: Instant) -> GroupId {
        let mut id = [0u8; ID_LEN];
        id[0] = ports[0] as u8;
        let acts = r.on_datagram(addr(ports[0]), &proto::reg1(&id), now);
        let [Action::Reply(to, reg2)] = acts.as_slice() else { panic!("{acts:?}") };
        assert_eq!(*to, addr(ports[0]));
        let Packet::Reg2(full) = proto::parse(reg2) else { panic!("not REG2") };
        assert_eq!(&full[..SENDER_ID_LEN], &id[..SENDER_ID_LEN]);
        assert_eq!(full[SENDER_ID_LEN..], cookie().half(&id[..SENDER_ID_LEN], addr(ports[0])));
        let full = *full;
        for &p in ports {
            let acts = r.on_datagram(addr(p), &proto::reg2(&full), now);
            assert_eq!(acts, vec![Action::Reply(addr(p), proto::reg3())]);
        }
        full
    }

    #[test]
    fn a_sender_registers_and_its_packets_go_on_with_an_ack_every_ten() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits::default(), cookie());
        join(&mut r, &[1000, 1001], now);
        let mut acks = 0;
        for seq in 0..20 {
            let from = addr(1000 + (seq % 2) as u16);
            for a in r.on_datagram(from, &data(seq), now) {
                match a {
                    Action::Forward(GroupToken(1), p) => assert_eq!(p, data(seq)),
                    Action::Reply(to, ack) => {
                        assert_eq!(to, from);
                        let Packet::Ack(seqs) = proto::parse(&ack) else { panic!("not an ack") };
                        assert_eq!(seqs.len(), 10);
                        assert!(seqs.iter().all(|s| s % 2 == seq % 2));
                        acks += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(acks, 2);
        // SRT's ACK goes back over both connections, anything else over the last one heard.
        let mut ack = vec![0u8; 44];
        ack[..2].copy_from_slice(&[0x80, 0x02]);
        assert_eq!(r.on_srt(GroupToken(1), &ack), vec![addr(1000), addr(1001)]);
        let mut nak = vec![0u8; 20];
        nak[..2].copy_from_slice(&[0x80, 0x03]);
        assert_eq!(r.on_srt(GroupToken(1), &nak), vec![addr(1001)]);
    }

    /// A group made from `from` alone (REG1, then REG2 with the id answered); its token.
    fn make(r: &mut Receiver, from: SocketAddr, now: Instant) -> Option<GroupToken> {
        let mut id = [0u8; ID_LEN];
        id[..8].copy_from_slice(&from.port().to_be_bytes().repeat(4));
        let acts = r.on_datagram(from, &proto::reg1(&id), now);
        let [Action::Reply(_, answer)] = acts.as_slice() else { panic!("{acts:?}") };
        let Packet::Reg2(full) = proto::parse(answer) else { return None };
        let full = *full;
        let acts = r.on_datagram(from, &proto::reg2(&full), now);
        (acts == vec![Action::Reply(from, proto::reg3())]).then(|| {
            let s = r.status(now);
            s.iter().find(|g| g.conns.iter().any(|c| c.addr == from.to_string())).expect("its group").token
        })
    }

    fn host(a: u8, b: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, a, b], port))
    }

    #[test]
    fn strangers_are_refused() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits { max_groups: 1, max_conns: 2, ..Limits::default() }, cookie());
        let full = join(&mut r, &[1000, 1001], now);
        r.on_datagram(addr(1000), &data(1), now);
        // Unknown addresses' data is dropped; an unknown id gets NGP.
        assert!(r.on_datagram(addr(2000), &data(1), now).is_empty());
        let other = [9u8; ID_LEN];
        assert_eq!(
            r.on_datagram(addr(2000), &proto::reg2(&other), now),
            vec![Action::Reply(addr(2000), proto::reg_ngp())]
        );
        // A full table of groups carrying data, too many connections, and a member making
        // another group.
        let err = |p| vec![Action::Reply(addr(p), proto::reg_err())];
        assert_eq!(make(&mut r, addr(2000), now), None);
        assert_eq!(r.on_datagram(addr(2001), &proto::reg2(&full), now), err(2001));
        let mut r = Receiver::new(Limits::default(), cookie());
        join(&mut r, &[1000], now);
        assert_eq!(r.on_datagram(addr(1000), &proto::reg1(&other), now), err(1000));
        // A guessed id close to the real one is no id.
        let mut near = full;
        near[200] ^= 1;
        assert_eq!(
            r.on_datagram(addr(3000), &proto::reg2(&near), now),
            vec![Action::Reply(addr(3000), proto::reg_ngp())]
        );
    }

    #[test]
    fn a_registration_from_an_address_that_does_not_receive_takes_no_place() {
        // Issue 57, finding 1: bare REG1s (their answers never read, so spoofed sources do) and
        // REG2s with an id answered to another address.
        let now = Instant::now();
        let mut r = Receiver::new(Limits::default(), cookie());
        let id = [3u8; ID_LEN];
        for k in 0..20_000u32 {
            let from = host((k >> 8) as u8, k as u8, 4000);
            let acts = r.on_datagram(from, &proto::reg1(&id), now);
            assert!(
                matches!(acts.as_slice(), [Action::Reply(to, p)] if *to == from && matches!(proto::parse(p), Packet::Reg2(_)))
            );
        }
        assert!(r.status(now).is_empty(), "a REG1 keeps nothing");
        // The id answered to one address, sent back from another, is no proof.
        let acts = r.on_datagram(host(0, 1, 4000), &proto::reg1(&id), now);
        let [Action::Reply(_, answer)] = acts.as_slice() else { panic!() };
        let Packet::Reg2(full) = proto::parse(answer) else { panic!() };
        let full = *full;
        assert_eq!(
            r.on_datagram(host(9, 9, 4000), &proto::reg2(&full), now),
            vec![Action::Reply(host(9, 9, 4000), proto::reg_ngp())]
        );
        assert!(r.status(now).is_empty());
        // From the address it was answered to, it makes the group, and other uplinks join it.
        assert_eq!(
            r.on_datagram(host(0, 1, 4000), &proto::reg2(&full), now),
            vec![Action::Reply(host(0, 1, 4000), proto::reg3())]
        );
        assert_eq!(
            r.on_datagram(host(9, 9, 4000), &proto::reg2(&full), now),
            vec![Action::Reply(host(9, 9, 4000), proto::reg3())]
        );
        assert_eq!(r.status(now).len(), 1);
        assert_eq!(r.status(now)[0].conns.len(), 2);
        // A receiver with another key (restarted) does not know it: REG_NGP, and the sender
        // starts again.
        let mut again = Receiver::new(Limits::default(), Cookie::new([6; 32]));
        assert_eq!(
            again.on_datagram(host(0, 1, 4000), &proto::reg2(&full), now),
            vec![Action::Reply(host(0, 1, 4000), proto::reg_ngp())]
        );
    }

    #[test]
    fn one_host_holds_a_few_groups_and_a_sender_with_data_is_never_given_up() {
        let now = Instant::now();
        let limits = Limits::default();
        let mut r = Receiver::new(limits, cookie());
        // One host, 200 ports: it holds per_source groups, its newest in place of its oldest.
        for port in 0..200u16 {
            assert!(make(&mut r, host(7, 7, 5000 + port), now + Duration::from_millis(u64::from(port))).is_some());
        }
        assert_eq!(r.status(now).len(), limits.per_source);
        // A real sender registers and sends.
        let real = make(&mut r, host(1, 1, 9000), now).expect("the real sender registers");
        r.on_datagram(host(1, 1, 9000), &data(1), now);
        // 300 more hosts, each kept alive by keepalives: the table fills with them, they give
        // way to each other, never the sender with data.
        let mut at = now;
        for k in 0..300u16 {
            at = now + Duration::from_millis(u64::from(k) * 10);
            let from = host(20 + (k / 200) as u8, (k % 200) as u8, 6000);
            assert!(make(&mut r, from, at).is_some(), "a group that carried nothing gives way");
            r.on_datagram(from, &proto::keepalive(1), at);
            r.on_datagram(host(1, 1, 9000), &data(u32::from(k) + 2), at);
        }
        let s = r.status(at);
        assert_eq!(s.len(), limits.max_groups);
        assert!(s.iter().any(|g| g.token == real), "the sender with data in flight kept its place");
        // With every place carrying data, a newcomer is refused.
        let mut r = Receiver::new(Limits { max_groups: 3, ..limits }, cookie());
        for k in 0..3 {
            make(&mut r, host(2, k, 7000), now).expect("room");
            r.on_datagram(host(2, k, 7000), &data(1), now);
        }
        assert_eq!(make(&mut r, host(3, 3, 7000), now), None);
        // Once one stops carrying for longer than `carrying`, it gives way.
        let later = now + limits.carrying + Duration::from_millis(1);
        r.on_datagram(host(2, 0, 7000), &data(2), later);
        r.on_datagram(host(2, 1, 7000), &data(2), later);
        assert!(make(&mut r, host(3, 3, 7000), later).is_some());
        let held: Vec<String> = r.status(later).iter().map(|g| g.conns[0].addr.clone()).collect();
        assert!(!held.contains(&"10.0.2.2:7000".to_string()), "{held:?}");
        assert!(r.on_tick(later).contains(&GroupToken(3)), "its socket is closed");
    }

    #[test]
    fn keepalives_are_echoed_and_silence_is_dropped() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits::default(), cookie());
        join(&mut r, &[1000, 1001], now);
        let k = proto::keepalive(42);
        assert_eq!(r.on_datagram(addr(1000), &k, now), vec![Action::Reply(addr(1000), k.clone())]);
        let later = now + Duration::from_secs(8);
        r.on_datagram(addr(1000), &k, later);
        assert!(r.on_tick(later + Duration::from_secs(3)).is_empty());
        let s = r.status(later + Duration::from_secs(3));
        assert_eq!(s[0].conns.len(), 1, "{s:?}");
        assert_eq!(s[0].conns[0].addr, "127.0.0.1:1000");
        assert_eq!(r.on_tick(later + Duration::from_secs(30)), vec![GroupToken(1)]);
        assert!(r.status(later).is_empty());
    }

    #[test]
    fn a_slow_uplink_hears_its_ack_after_twenty_ms_not_after_ten_packets() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits { reorder_max: Duration::ZERO, ..Limits::default() }, cookie());
        join(&mut r, &[1000, 1001], now);
        for seq in 0..3 {
            let acts = r.on_datagram(addr(1001), &data(seq), now + seq * Duration::from_millis(5));
            assert!(acts.iter().all(|a| matches!(a, Action::Forward(..))), "{acts:?}");
        }
        assert_eq!(r.deadline(), Some(now + ACK_AFTER));
        assert!(r.due(now + ACK_AFTER - Duration::from_millis(1)).is_empty());
        let acts = r.due(now + ACK_AFTER);
        let [Action::Reply(to, ack)] = acts.as_slice() else { panic!("{acts:?}") };
        assert_eq!(*to, addr(1001));
        let Packet::Ack(seqs) = proto::parse(ack) else { panic!("not an ack") };
        assert_eq!(seqs, vec![0, 1, 2]);
        // Nothing left to acknowledge: nothing due.
        assert_eq!(r.deadline(), None);
        assert!(r.due(now + Duration::from_secs(1)).is_empty());
    }
}
