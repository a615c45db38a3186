//! srtla's wire format (BELABOX/srtla, `common.h`): the packets that register a group of
//! connections and keep them alive, beside the SRT packets they carry untouched. Everything is
//! big-endian; a datagram's first 16 bits say what it is.
//!
//! Registration: the sender's first link sends `REG2` with its own id; a receiver that does not
//! know it answers `REG_NGP`; the sender sends `REG1` (its 128-byte half of the id); the
//! receiver creates the group and answers `REG2` with the whole 256-byte id (its own random
//! second half); the sender then sends that `REG2` on every link, each answered by `REG3`.

/// Length of a group id.
pub const ID_LEN: usize = 256;
/// The half of the id the sender chooses.
pub const SENDER_ID_LEN: usize = ID_LEN / 2;
/// Shortest SRT packet (its header).
pub const SRT_MIN_LEN: usize = 16;
/// A receiver acknowledges every this many data packets per connection.
pub const ACK_EVERY: usize = 10;

const SRT_ACK: u16 = 0x8002;
const SRT_NAK: u16 = 0x8003;
const KEEPALIVE: u16 = 0x9000;
const ACK: u16 = 0x9100;
const REG1: u16 = 0x9200;
const REG2: u16 = 0x9201;
const REG3: u16 = 0x9202;
const REG_ERR: u16 = 0x9210;
const REG_NGP: u16 = 0x9211;
const REG_NAK: u16 = 0x9212;

/// A group id: the sender's half, then the receiver's.
pub type GroupId = [u8; ID_LEN];

/// One datagram, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    /// srtla keepalive; the receiver echoes it whole, so what follows the type (our timestamp)
    /// comes back.
    Keepalive(&'a [u8]),
    /// srtla ACK: the SRT sequence numbers of the last data packets received on this connection.
    Ack(Vec<u32>),
    /// Group registration with the sender's half of the id.
    Reg1(&'a GroupId),
    /// The whole id: from the receiver, the group made; from the sender, a connection joining.
    Reg2(&'a GroupId),
    /// A connection registered.
    Reg3,
    /// Registration refused.
    RegErr,
    /// No such group: start again with `REG1`.
    RegNgp,
    /// Registration refused (reserved by srtla).
    RegNak,
    /// An SRT data packet and its sequence number.
    SrtData(u32),
    /// SRT's ACK, carrying the next sequence number the receiver expects.
    SrtAck(u32),
    /// SRT's loss report, read lazily: [`NakList::ranges`].
    SrtNak(NakList<'a>),
    /// Another SRT control packet (handshake, keepalive, shutdown, ...).
    SrtControl,
    /// Too short or of an unknown type.
    Unknown,
}

fn be16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// Reads one datagram.
pub fn parse(data: &[u8]) -> Packet<'_> {
    let Some(kind) = be16(data, 0) else { return Packet::Unknown };
    let id = || data.get(2..).and_then(|d| <&GroupId>::try_from(d).ok());
    match kind {
        KEEPALIVE => Packet::Keepalive(&data[2..]),
        ACK => Packet::Ack((1..data.len() / 4).filter_map(|i| be32(data, i * 4)).collect()),
        REG1 => id().map_or(Packet::Unknown, Packet::Reg1),
        REG2 => id().map_or(Packet::Unknown, Packet::Reg2),
        // At any length: receivers that pad their replies to 32 bytes (some carriers' NATs drop
        // tiny datagrams) are answered as srtla_send does; 0x9202 is no SRT control type.
        REG3 => Packet::Reg3,
        REG_ERR => Packet::RegErr,
        REG_NGP => Packet::RegNgp,
        REG_NAK => Packet::RegNak,
        _ if data.len() < SRT_MIN_LEN => Packet::Unknown,
        _ if kind & 0x8000 == 0 => be32(data, 0).map_or(Packet::Unknown, Packet::SrtData),
        SRT_ACK => be32(data, 16).map_or(Packet::SrtControl, Packet::SrtAck),
        SRT_NAK => Packet::SrtNak(NakList(&data[16..])),
        _ => Packet::SrtControl,
    }
}

/// SRT's compressed loss list as it came: a number with the top bit set starts a range ending
/// at the next. Reading it costs nothing until [`Self::ranges`] walks it, and walking it costs
/// one step per range, never per sequence number: a 1500-byte datagram of ranges names at most
/// 187 of them, however many numbers they span (issue 57, finding 4: expanded, one such
/// datagram was 1.5 million numbers, each looked for among the packets in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NakList<'a>(&'a [u8]);

impl<'a> NakList<'a> {
    /// The ranges reported lost, `(first, last)` inclusive, each at most [`NAK_RANGE_MAX`]
    /// numbers long (a longer one is more than a second of any stream: it is cut there), in the
    /// order given. A range whose end is missing stands for its first number.
    pub fn ranges(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let mut words = self.0.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
        std::iter::from_fn(move || {
            let w = words.next()?;
            if w & 0x8000_0000 == 0 {
                return Some((w, w));
            }
            let first = w & 0x7fff_ffff;
            let last = words.next().map_or(first, |l| l & 0x7fff_ffff);
            let span = last.wrapping_sub(first) & 0x7fff_ffff;
            Some((first, first.wrapping_add(span.min(NAK_RANGE_MAX - 1)) & 0x7fff_ffff))
        })
    }

    /// Whether `seq` is reported lost. One step per range.
    pub fn contains(&self, seq: u32) -> bool {
        self.ranges()
            .any(|(first, last)| (seq.wrapping_sub(first) & 0x7fff_ffff) <= (last.wrapping_sub(first) & 0x7fff_ffff))
    }

    /// Every number reported lost, expanded (for tests and small lists).
    pub fn seqs(&self) -> Vec<u32> {
        self.ranges()
            .flat_map(|(first, last)| {
                let n = last.wrapping_sub(first) & 0x7fff_ffff;
                (0..=n).map(move |k| first.wrapping_add(k) & 0x7fff_ffff)
            })
            .collect()
    }
}

/// A loss report's ranges sorted and merged, for looking packets up by sequence number: one
/// binary search per packet in flight, whatever the report holds. Built before the sender's
/// state is locked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LossRanges(Vec<(u32, u32)>);

impl LossRanges {
    /// The ranges of `list`, a range across the wrap of SRT's 31-bit numbers split in two.
    pub fn new(list: NakList<'_>) -> Self {
        const MASK: u32 = 0x7fff_ffff;
        let mut v = Vec::new();
        for (first, last) in list.ranges() {
            if last >= first {
                v.push((first, last));
            } else {
                v.push((first, MASK));
                v.push((0, last));
            }
        }
        v.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        LossRanges(merged)
    }

    /// Whether `seq` is reported lost.
    pub fn contains(&self, seq: u32) -> bool {
        let i = self.0.partition_point(|&(a, _)| a <= seq);
        i > 0 && seq <= self.0[i - 1].1
    }

    /// Whether nothing is reported.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The longest range a loss report is read with.
pub const NAK_RANGE_MAX: u32 = 4097;

/// The first two bytes of a datagram, read as srtla's and SRT's control types are: whether it
/// is a registration (`REG1` or `REG2`), the only kind a sender not yet known may send.
pub fn is_registration(data: &[u8]) -> bool {
    matches!(be16(data, 0), Some(REG1 | REG2))
}

/// Whether a datagram is a group registration (`REG1`).
pub fn is_reg1(data: &[u8]) -> bool {
    data.len() == 2 + ID_LEN && be16(data, 0) == Some(REG1)
}

/// Whether an SRT data packet is a retransmission (the R flag of its second word).
pub fn is_retransmit(data: &[u8]) -> bool {
    data.len() >= SRT_MIN_LEN && data[0] & 0x80 == 0 && data[4] & 0x04 != 0
}

fn typed(kind: u16, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + body.len());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// `REG1` with the sender's id (its second half is ignored by the receiver).
pub fn reg1(id: &GroupId) -> Vec<u8> {
    typed(REG1, id)
}

/// `REG2` with a whole id.
pub fn reg2(id: &GroupId) -> Vec<u8> {
    typed(REG2, id)
}

/// `REG3`.
pub fn reg3() -> Vec<u8> {
    typed(REG3, &[])
}

/// `REG_ERR`.
pub fn reg_err() -> Vec<u8> {
    typed(REG_ERR, &[])
}

/// `REG_NGP`.
pub fn reg_ngp() -> Vec<u8> {
    typed(REG_NGP, &[])
}

/// A keepalive carrying `stamp` (echoed back by every srtla receiver).
pub fn keepalive(stamp: u64) -> Vec<u8> {
    typed(KEEPALIVE, &stamp.to_be_bytes())
}

/// The stamp of an echoed keepalive of ours.
pub fn keepalive_stamp(body: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(body.get(..8)?.try_into().ok()?))
}

/// An srtla ACK for these sequence numbers.
pub fn ack(seqs: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 4 * seqs.len());
    out.extend_from_slice(&(u32::from(ACK) << 16).to_be_bytes());
    for s in seqs {
        out.extend_from_slice(&s.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srt_data(seq: u32, retransmit: bool) -> Vec<u8> {
        let mut p = vec![0u8; 1316 + 16];
        p[..4].copy_from_slice(&seq.to_be_bytes());
        p[4] = if retransmit { 0xc4 } else { 0xc0 };
        p
    }

    fn srt_control(kind: u16, body: &[u32]) -> Vec<u8> {
        let mut p = vec![0u8; 16];
        p[..2].copy_from_slice(&kind.to_be_bytes());
        for w in body {
            p.extend_from_slice(&w.to_be_bytes());
        }
        p
    }

    #[test]
    fn registration_packets_read_back() {
        let mut id = [0u8; ID_LEN];
        id[0] = 7;
        id[255] = 9;
        assert_eq!(parse(&reg1(&id)), Packet::Reg1(&id));
        assert_eq!(parse(&reg2(&id)), Packet::Reg2(&id));
        assert_eq!(parse(&reg3()), Packet::Reg3);
        assert_eq!(parse(&reg_ngp()), Packet::RegNgp);
        assert_eq!(parse(&reg_err()), Packet::RegErr);
        // Replies padded to 32 bytes (CERALIVE's and irlserver's receivers) read the same.
        for reply in [reg3(), reg_ngp(), reg_err()] {
            let mut padded = reply.clone();
            padded.resize(32, 0);
            assert_eq!(parse(&padded), parse(&reply), "{reply:02x?} padded");
        }
        // srtla checks the lengths exactly: a short REG1 is nothing.
        assert_eq!(parse(&reg1(&id)[..100]), Packet::Unknown);
        assert_eq!(reg1(&id).len(), 258);
    }

    #[test]
    fn srt_packets_are_told_apart() {
        assert_eq!(parse(&srt_data(41, false)), Packet::SrtData(41));
        assert!(!is_retransmit(&srt_data(41, false)));
        assert!(is_retransmit(&srt_data(41, true)));
        assert_eq!(parse(&srt_control(0x8002, &[1000, 5])), Packet::SrtAck(1000));
        assert_eq!(parse(&srt_control(0x8000, &[4])), Packet::SrtControl);
        assert_eq!(parse(&[0u8; 8]), Packet::Unknown);
        assert_eq!(parse(&[]), Packet::Unknown);
    }

    #[test]
    fn nak_ranges_expand() {
        let nak = srt_control(0x8003, &[5, 0x8000_0000 | 10, 13, 20]);
        let Packet::SrtNak(list) = parse(&nak) else { panic!("not a NAK") };
        assert_eq!(list.seqs(), vec![5, 10, 11, 12, 13, 20]);
        assert_eq!(list.ranges().collect::<Vec<_>>(), vec![(5, 5), (10, 13), (20, 20)]);
        assert!(list.contains(12) && list.contains(20) && !list.contains(14) && !list.contains(4));
        // A range whose end is missing stands for its first number.
        let lone = srt_control(0x8003, &[0x8000_0007]);
        let Packet::SrtNak(one) = parse(&lone) else { panic!("not a NAK") };
        assert_eq!(one.seqs(), vec![7]);
        // A hostile range is bounded, and a range across the wrap of SRT's 31-bit numbers holds.
        let huge = srt_control(0x8003, &[0x8000_0000, 0x7fff_ffff]);
        let Packet::SrtNak(v) = parse(&huge) else { panic!("not a NAK") };
        assert_eq!(v.seqs().len(), NAK_RANGE_MAX as usize);
        let wrap = srt_control(0x8003, &[0x8000_0000 | 0x7fff_fffe, 1]);
        let Packet::SrtNak(w) = parse(&wrap) else { panic!("not a NAK") };
        assert_eq!(w.seqs(), vec![0x7fff_fffe, 0x7fff_ffff, 0, 1]);
        assert!(w.contains(0) && !w.contains(2) && !w.contains(0x7fff_fffd));
        // Sorted and merged, the same answers by binary search.
        let r = LossRanges::new(w);
        assert!(r.contains(0x7fff_ffff) && r.contains(0) && r.contains(1) && !r.contains(2) && !r.contains(5));
        let overlapping = srt_control(0x8003, &[0x8000_0000 | 10, 20, 0x8000_0000 | 15, 30, 12, 40]);
        let Packet::SrtNak(o) = parse(&overlapping) else { panic!("not a NAK") };
        let r = LossRanges::new(o);
        assert_eq!(r, LossRanges(vec![(10, 30), (40, 40)]));
        assert!((10..=30).all(|s| r.contains(s)) && r.contains(40) && !r.contains(31) && !r.contains(9));
    }

    #[test]
    fn acks_and_keepalives_round_trip() {
        let a = ack(&[1, 2, 3]);
        assert_eq!(&a[..4], &[0x91, 0, 0, 0]);
        assert_eq!(parse(&a), Packet::Ack(vec![1, 2, 3]));
        let k = keepalive(123_456_789);
        let Packet::Keepalive(body) = parse(&k) else { panic!("not a keepalive") };
        assert_eq!(keepalive_stamp(body), Some(123_456_789));
        // srtla_send's own keepalives carry nothing.
        assert_eq!(parse(&[0x90, 0]), Packet::Keepalive(&[]));
        assert_eq!(keepalive_stamp(&[]), None);
    }
}
