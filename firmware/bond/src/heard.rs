//! What the bonding sender reads of a datagram from the receiver, before its state is locked.

use crate::proto::{self, GroupId, LossRanges, Packet};

/// A datagram from the receiver, read before the sender's state is locked: whatever a
/// datagram holds, what is left to do under the lock is bounded by the packets in flight
/// (issue 57, finding 4: one 1496-byte loss report held the lock for 140-220 ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard<'a> {
    /// `REG_NGP`: the receiver does not know the group.
    RegNgp,
    /// `REG2`: the group's whole id.
    Reg2(&'a GroupId),
    /// `REG_ERR` or `REG_NAK`.
    Refused,
    /// `REG3`: this uplink joined.
    Reg3,
    /// An echoed keepalive and our stamp in it.
    Keepalive(Option<u64>),
    /// srtla's ACK of these sequence numbers.
    Ack(Vec<u32>),
    /// SRT's ACK: the next number the receiver waits for.
    SrtAck(u32),
    /// SRT's loss report, sorted for lookups.
    SrtNak(LossRanges),
    /// Anything else: handed to libsrt.
    Other,
}

impl<'a> Heard<'a> {
    /// Reads a datagram from the receiver.
    pub fn read(data: &'a [u8]) -> Self {
        match proto::parse(data) {
            Packet::RegNgp => Heard::RegNgp,
            Packet::Reg2(id) => Heard::Reg2(id),
            Packet::RegErr | Packet::RegNak => Heard::Refused,
            Packet::Reg3 => Heard::Reg3,
            Packet::Keepalive(body) => Heard::Keepalive(proto::keepalive_stamp(body)),
            Packet::Ack(seqs) => Heard::Ack(seqs),
            Packet::SrtAck(next) => Heard::SrtAck(next),
            Packet::SrtNak(list) => Heard::SrtNak(LossRanges::new(list)),
            _ => Heard::Other,
        }
    }
}
