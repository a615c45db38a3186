//! The receiving end of a bond, as a state machine without sockets: groups of connections
//! (one per uplink of a sender) registered by srtla's handshake, their SRT packets handed on
//! to one SRT peer per group, SRT's answers sent back (ACKs over every connection so each link
//! learns of delivery at once, the rest over the connection heard from last), an srtla ACK
//! every ten data packets per connection or [`ACK_AFTER`] after the first it lists, whichever
//! comes first (srtla_rec waits for ten), keepalives echoed. Compatible with srtla_send and
//! with srtla_rec's behaviour; bounded against strangers (groups, connections per group,
//! timeouts), and a registered address cannot be taken over by another group.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

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
    reorder: Reorder,
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
#[derive(Debug, Default)]
pub struct Receiver {
    groups: Vec<Group>,
    next_token: u64,
    limits: Limits,
}

impl Receiver {
    /// A receiver with these bounds.
    pub fn new(limits: Limits) -> Self {
        Receiver { groups: Vec::new(), next_token: 1, limits }
    }

    /// A datagram from a sender. `fresh` is random bytes for a new group's half of the id.
    pub fn on_datagram(
        &mut self,
        from: SocketAddr,
        data: &[u8],
        now: Instant,
        fresh: &[u8; SENDER_ID_LEN],
    ) -> Vec<Action> {
        match proto::parse(data) {
            Packet::Reg1(id) => return vec![self.register_group(from, id, now, fresh)],
            Packet::Reg2(id) => return vec![self.register_conn(from, id, now)],
            _ => {}
        }
        let Some((g, c)) = self.find_conn(from) else { return Vec::new() };
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

    /// Drops silent connections and empty groups; returns the groups gone (close their sockets).
    pub fn on_tick(&mut self, now: Instant) -> Vec<GroupToken> {
        let limits = self.limits;
        for g in &mut self.groups {
            g.conns.retain(|c| now.saturating_duration_since(c.last_rcvd) <= limits.conn_timeout);
        }
        let (gone, kept): (Vec<Group>, Vec<Group>) = std::mem::take(&mut self.groups)
            .into_iter()
            .partition(|g| g.conns.is_empty() && now.saturating_duration_since(g.created) > limits.group_timeout);
        self.groups = kept;
        gone.into_iter().map(|g| g.token).collect()
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

    fn register_group(&mut self, from: SocketAddr, id: &GroupId, now: Instant, fresh: &[u8; SENDER_ID_LEN]) -> Action {
        // An address already in a group, or the last one to register one, cannot make another.
        let known = self.groups.iter().any(|g| g.last_addr == from || g.conns.iter().any(|c| c.addr == from));
        if known || self.groups.len() >= self.limits.max_groups {
            return Action::Reply(from, proto::reg_err());
        }
        let mut full = [0u8; ID_LEN];
        full[..SENDER_ID_LEN].copy_from_slice(&id[..SENDER_ID_LEN]);
        full[SENDER_ID_LEN..].copy_from_slice(fresh);
        let token = GroupToken(self.next_token);
        self.next_token += 1;
        let reorder = Reorder::new(self.limits.reorder_max);
        self.groups.push(Group { token, id: full, conns: Vec::new(), created: now, last_addr: from, reorder });
        tracing::info!(group = token.0, sender = %from, "bonded group registered");
        Action::Reply(from, proto::reg2(&full))
    }

    fn register_conn(&mut self, from: SocketAddr, id: &GroupId, now: Instant) -> Action {
        let Some(g) = self.groups.iter().position(|g| ct_eq(&g.id, id)) else {
            return Action::Reply(from, proto::reg_ngp());
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
        let acts = r.on_datagram(addr(ports[0]), &proto::reg1(&id), now, &[0xab; SENDER_ID_LEN]);
        let [Action::Reply(to, reg2)] = acts.as_slice() else { panic!("{acts:?}") };
        assert_eq!(*to, addr(ports[0]));
        let Packet::Reg2(full) = proto::parse(reg2) else { panic!("not REG2") };
        assert_eq!(&full[..SENDER_ID_LEN], &id[..SENDER_ID_LEN]);
        assert_eq!(&full[SENDER_ID_LEN..], &[0xab; SENDER_ID_LEN]);
        let full = *full;
        for &p in ports {
            let acts = r.on_datagram(addr(p), &proto::reg2(&full), now, &[0; SENDER_ID_LEN]);
            assert_eq!(acts, vec![Action::Reply(addr(p), proto::reg3())]);
        }
        full
    }

    #[test]
    fn a_sender_registers_and_its_packets_go_on_with_an_ack_every_ten() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits::default());
        join(&mut r, &[1000, 1001], now);
        let mut acks = 0;
        for seq in 0..20 {
            let from = addr(1000 + (seq % 2) as u16);
            for a in r.on_datagram(from, &data(seq), now, &[0; SENDER_ID_LEN]) {
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

    #[test]
    fn strangers_are_refused() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits { max_groups: 1, max_conns: 2, ..Limits::default() });
        let full = join(&mut r, &[1000, 1001], now);
        // Unknown addresses' data is dropped; an unknown id gets NGP.
        assert!(r.on_datagram(addr(2000), &data(1), now, &[0; SENDER_ID_LEN]).is_empty());
        let other = [9u8; ID_LEN];
        assert_eq!(
            r.on_datagram(addr(2000), &proto::reg2(&other), now, &[0; SENDER_ID_LEN]),
            vec![Action::Reply(addr(2000), proto::reg_ngp())]
        );
        // Too many groups, too many connections, and a member making another group.
        let err = |p| vec![Action::Reply(addr(p), proto::reg_err())];
        assert_eq!(r.on_datagram(addr(2000), &proto::reg1(&other), now, &[0; SENDER_ID_LEN]), err(2000));
        assert_eq!(r.on_datagram(addr(2001), &proto::reg2(&full), now, &[0; SENDER_ID_LEN]), err(2001));
        let mut r = Receiver::new(Limits::default());
        join(&mut r, &[1000], now);
        assert_eq!(r.on_datagram(addr(1000), &proto::reg1(&other), now, &[0; SENDER_ID_LEN]), err(1000));
        // A guessed id close to the real one is no id.
        let mut near = full;
        near[200] ^= 1;
        assert_eq!(
            r.on_datagram(addr(3000), &proto::reg2(&near), now, &[0; SENDER_ID_LEN]),
            vec![Action::Reply(addr(3000), proto::reg_ngp())]
        );
    }

    #[test]
    fn keepalives_are_echoed_and_silence_is_dropped() {
        let now = Instant::now();
        let mut r = Receiver::new(Limits::default());
        join(&mut r, &[1000, 1001], now);
        let k = proto::keepalive(42);
        assert_eq!(r.on_datagram(addr(1000), &k, now, &[0; SENDER_ID_LEN]), vec![Action::Reply(addr(1000), k.clone())]);
        let later = now + Duration::from_secs(8);
        r.on_datagram(addr(1000), &k, later, &[0; SENDER_ID_LEN]);
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
        let mut r = Receiver::new(Limits { reorder_max: Duration::ZERO, ..Limits::default() });
        join(&mut r, &[1000, 1001], now);
        for seq in 0..3 {
            let acts = r.on_datagram(addr(1001), &data(seq), now + seq * Duration::from_millis(5), &[0; SENDER_ID_LEN]);
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
