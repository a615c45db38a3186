//! The sender's clock, read from the TS bytes as they arrive: a decoder must start afresh when
//! a sender starts its stream again on the same connection.

/// Notices a sender that started its stream again on the same connection (an encoder restarted
/// for a new picture size while its outputs stayed connected): the program clock (PCR) goes
/// back, jumps far ahead, or is flagged discontinuous, or a stream's presentation time (PTS)
/// goes back or jumps. A decoder that went on would see every stream's times jump and sort them
/// out each its own way; one started afresh sees a new stream.
///
/// The PTS counts as much as the PCR: a muxer may send its first sound and even its first
/// picture before its first PCR (GStreamer's mpegtsmux does, now and then, after a restart), and
/// a keyframe handed to the old decoder is a keyframe the new one waits a second for.
///
/// It keeps the latest program tables (PAT and PMT) for the new decoder: a sender's muxer sends
/// them just before its first picture, often in the message before the one with the new clock,
/// and a decoder without them waits for the next tables and the next keyframe (a second).
#[derive(Debug, Clone, Default)]
pub struct TimelineWatch {
    pcr: Option<(u16, u64)>,
    /// The latest PTS of each PID that carried one (the first few PIDs).
    pts: Vec<(u16, u64)>,
    /// Bytes of a packet cut by a message boundary (a sender reading a pipe sends what it read).
    partial: Vec<u8>,
    pat: Option<Vec<u8>>,
    pmt: Option<(u16, Vec<u8>)>,
}

/// 90 kHz ticks of PCR or PTS that count as a jump ahead (5 s).
const PCR_JUMP: u64 = 5 * 90_000;
/// 90 kHz ticks back that count as going back (10 ms).
const PCR_BACK: u64 = 900;
/// 90 kHz ticks a PTS may go back in one stream (pictures reordered around B-frames go back by
/// a few frames; 1 s is far more than any encoder reorders).
const PTS_BACK: u64 = 90_000;
const PCR_WRAP: u64 = 1 << 33;
/// PIDs whose PTS is followed (a program has a picture, a sound or two, subtitles).
const PTS_PIDS: usize = 8;

impl TimelineWatch {
    /// Feeds TS bytes as they arrive (any boundaries); `true` if the stream's clock started
    /// again in them.
    pub fn feed(&mut self, data: &[u8]) -> bool {
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(data);
        let mut restarted = false;
        let mut i = 0;
        while i + 188 <= bytes.len() {
            // In step only where a sync byte starts this packet and the next (or the data ends).
            if bytes[i] != 0x47 || bytes.get(i + 188).is_some_and(|&b| b != 0x47) {
                i += 1;
                continue;
            }
            restarted |= self.packet(&bytes[i..i + 188]);
            i += 188;
        }
        self.partial = bytes[i..].to_vec();
        restarted
    }

    fn packet(&mut self, p: &[u8]) -> bool {
        let pid = (u16::from(p[1] & 0x1f) << 8) | u16::from(p[2]);
        let unit_start = p[1] & 0x40 != 0;
        if pid == 0 && unit_start {
            self.pat = Some(p.to_vec());
            if let Some(pmt) = pat_first_pmt_pid(p) {
                if self.pmt.as_ref().is_none_or(|(id, _)| *id != pmt) {
                    self.pmt = Some((pmt, Vec::new()));
                }
            }
        } else if unit_start && self.pmt.as_ref().is_some_and(|(id, _)| *id == pid) {
            self.pmt = Some((pid, p.to_vec()));
        }
        let mut restarted = false;
        if let Some(pts) = pes_pts(p).filter(|_| unit_start) {
            if self.pts.iter().any(|&(id, last)| id == pid && moved(last, pts, PTS_BACK)) {
                self.start_again();
                restarted = true;
            }
            if let Some(entry) = self.pts.iter_mut().find(|(id, _)| *id == pid) {
                entry.1 = pts;
            } else if self.pts.len() < PTS_PIDS {
                self.pts.push((pid, pts));
            }
        }
        // An adaptation field long enough to hold flags and a PCR.
        if p[3] & 0x20 == 0 || p[4] < 7 || p[5] & 0x10 == 0 {
            return restarted;
        }
        // The clock of the PID that carried the first PCR (the PMT names one).
        if self.pcr.is_some_and(|(first, _)| first != pid) {
            return restarted;
        }
        let discontinuity = p[5] & 0x80 != 0;
        let base = (u64::from(p[6]) << 25)
            | (u64::from(p[7]) << 17)
            | (u64::from(p[8]) << 9)
            | (u64::from(p[9]) << 1)
            | (u64::from(p[10]) >> 7);
        if self.pcr.is_some_and(|(_, last)| discontinuity || moved(last, base, PCR_BACK)) {
            self.start_again();
            restarted = true;
        }
        self.pcr = Some((pid, base));
        restarted
    }

    /// Forgets the old stream's times: the new stream's first PCR and PTS are not a restart.
    fn start_again(&mut self) {
        self.pcr = None;
        self.pts.clear();
    }

    /// The latest program tables seen (PAT, then PMT), to start a new decoder with.
    pub fn tables(&self) -> Vec<u8> {
        let mut out = self.pat.clone().unwrap_or_default();
        if let Some((_, pmt)) = &self.pmt {
            out.extend_from_slice(pmt);
        }
        out
    }
}

/// Whether a 90 kHz time went back more than `back` ticks or jumped ahead more than 5 s from
/// `last` (modulo the 33-bit wrap).
fn moved(last: u64, now: u64, back: u64) -> bool {
    let ahead = now.wrapping_sub(last) % PCR_WRAP;
    let went_back = last.wrapping_sub(now) % PCR_WRAP;
    (went_back > back && went_back < PCR_WRAP / 2) || (ahead > PCR_JUMP && ahead < PCR_WRAP / 2)
}

/// The PTS of the PES that starts in this packet, if it carries one.
fn pes_pts(p: &[u8]) -> Option<u64> {
    let start = if p[3] & 0x20 != 0 { 5 + usize::from(p[4]) } else { 4 };
    let h = p.get(start..start + 14)?;
    // A start code, an optional header (marker bits 10) with the PTS flag.
    if h[..3] != [0, 0, 1] || h[6] & 0xc0 != 0x80 || h[7] & 0x80 == 0 {
        return None;
    }
    let b = &h[9..14];
    Some(
        (u64::from(b[0] >> 1 & 7) << 30)
            | (u64::from(b[1]) << 22)
            | (u64::from(b[2] >> 1) << 15)
            | (u64::from(b[3]) << 7)
            | u64::from(b[4] >> 1),
    )
}

/// The PID of the first program's PMT in a PAT packet that starts its section.
fn pat_first_pmt_pid(p: &[u8]) -> Option<u16> {
    let mut i = 4;
    if p[3] & 0x20 != 0 {
        i += 1 + usize::from(p[4]);
    }
    let pointer = usize::from(*p.get(i)?);
    let s = p.get(i + 1 + pointer..)?;
    if s.first() != Some(&0) || s.len() < 8 {
        return None;
    }
    let len = (usize::from(s[1] & 0x0f) << 8) | usize::from(s[2]);
    // Programs from byte 8 to the CRC's 4 bytes at the end of the section.
    let programs = s.get(8..(3 + len).saturating_sub(4))?;
    programs
        .chunks_exact(4)
        .find(|e| u16::from_be_bytes([e[0], e[1]]) != 0)
        .map(|e| (u16::from(e[2] & 0x1f) << 8) | u16::from(e[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcr_packet(pid: u16, base: u64, discontinuity: bool) -> Vec<u8> {
        let mut p = vec![0xffu8; 188];
        p[0] = 0x47;
        p[1] = (pid >> 8) as u8 & 0x1f;
        p[2] = pid as u8;
        p[3] = 0x30;
        p[4] = 7;
        p[5] = 0x10 | if discontinuity { 0x80 } else { 0 };
        p[6] = (base >> 25) as u8;
        p[7] = (base >> 17) as u8;
        p[8] = (base >> 9) as u8;
        p[9] = (base >> 1) as u8;
        p[10] = ((base & 1) << 7) as u8 | 0x7e;
        p[11] = 0;
        p
    }

    /// A packet that starts a PES with a PTS, with a PCR in its adaptation field if given.
    fn pes_packet(pid: u16, pts: u64, pcr: Option<u64>) -> Vec<u8> {
        let mut p = match pcr {
            Some(base) => pcr_packet(pid, base, false),
            None => {
                let mut p = vec![0xffu8; 188];
                p[..4].copy_from_slice(&[0x47, (pid >> 8) as u8 & 0x1f, pid as u8, 0x10]);
                p
            }
        };
        p[1] |= 0x40;
        let at = if pcr.is_some() { 12 } else { 4 };
        let b = [
            0x21 | ((pts >> 29) as u8 & 0x0e),
            (pts >> 22) as u8,
            0x01 | ((pts >> 14) as u8 & 0xfe),
            (pts >> 7) as u8,
            0x01 | ((pts << 1) as u8 & 0xfe),
        ];
        p[at..at + 9].copy_from_slice(&[0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5]);
        p[at + 9..at + 14].copy_from_slice(&b);
        p
    }

    #[test]
    fn a_new_stream_whose_first_pictures_come_before_its_first_pcr_is_noticed_at_once() {
        let s = 90_000u64;
        let (video, audio) = (0x41, 0x42);
        let mut w = TimelineWatch::default();
        // Four seconds of the old stream: pictures every 33 ms (B-frames reordered: one in three
        // 67 ms before the one before it), a PCR with every third, sound every 21 ms.
        for k in 0..120u64 {
            let pts = 3600 * s + k * s / 30 + if k % 3 == 2 { 0 } else { s / 15 };
            let pcr = (k % 3 == 0).then_some(3600 * s - s / 10 + k * s / 30);
            assert!(!w.feed(&pes_packet(video, pts, pcr)), "picture {k}");
            assert!(!w.feed(&pes_packet(audio, 3600 * s + k * s / 30, None)), "sound {k}");
        }
        // The new stream: sound, then a picture, each before the first PCR.
        assert!(w.feed(&pes_packet(audio, 3600 * s + s / 5, None)), "the new sound's time went back");
        assert!(!w.feed(&pes_packet(video, 3600 * s + s / 4, None)), "the new stream is one restart");
        assert!(!w.feed(&pes_packet(video, 3600 * s + s / 4 + s / 30, Some(3600 * s + s / 8))));
        assert!(!w.feed(&pes_packet(audio, 3600 * s + s / 5 + s / 47, None)));
        // A picture first, with no PCR, then the PCR: one restart, at the picture.
        let mut w = TimelineWatch::default();
        for k in 0..60u64 {
            assert!(!w.feed(&pes_packet(video, 3600 * s + k * s / 30, Some(3600 * s + k * s / 30 - s / 10))));
        }
        assert!(w.feed(&pes_packet(video, 3600 * s + s / 3, None)));
        assert!(!w.feed(&pes_packet(video, 3600 * s + s / 3 + s / 30, Some(3600 * s + s / 4))));
        // A jump far ahead in one stream's PTS is a restart too.
        assert!(w.feed(&pes_packet(video, 3700 * s, None)));
    }

    #[test]
    fn a_stream_started_again_on_the_same_connection_is_noticed() {
        let mut w = TimelineWatch::default();
        let s = 90_000u64;
        let mut t = 3600 * s;
        // A second of PCRs every 40 ms, in SRT messages of seven packets with other packets.
        for _ in 0..25 {
            let mut msg = pcr_packet(0x41, t, false);
            // Payload-only packets of another PID.
            for _ in 0..6 {
                let mut other = vec![0xffu8; 188];
                other[..4].copy_from_slice(&[0x47, 0x01, 0x00, 0x10]);
                msg.extend(other);
            }
            assert!(!w.feed(&msg));
            t += s / 25;
        }
        // The encoder restarted: its muxer's clock begins again at 3600 s.
        assert!(w.feed(&pcr_packet(0x41, 3600 * s, false)));
        assert!(!w.feed(&pcr_packet(0x41, 3600 * s + s / 25, false)));
        // Flagged discontinuous, a jump of a minute; another PID's PCR is not the clock.
        assert!(w.feed(&pcr_packet(0x41, 3600 * s + 2 * s / 25, true)));
        assert!(w.feed(&pcr_packet(0x41, 3660 * s, false)));
        assert!(!w.feed(&pcr_packet(0x100, 0, false)));
        // Messages cut anywhere (a sender that sends what it read from a pipe): no false clock
        // from a packet read out of step, and the clock still followed.
        let mut w = TimelineWatch::default();
        let mut stream = Vec::new();
        for k in 0..50u64 {
            stream.extend(pcr_packet(0x41, 3600 * s + k * s / 25, false));
            let mut other = vec![0xffu8; 188];
            other[..4].copy_from_slice(&[0x47, 0x01, 0x00, 0x10]);
            stream.extend(other);
        }
        // A stray sync byte where a packet's payload is, as real payloads have.
        stream[188 * 3 + 100] = 0x47;
        for chunk in stream.chunks(1000) {
            assert!(!w.feed(chunk));
        }
        let back = pcr_packet(0x41, 3600 * s, false);
        assert!(!w.feed(&back[..100]));
        assert!(w.feed(&back[100..]), "the clock going back, across two messages");
        // The tables to start the new decoder with: the PAT and the PMT it names.
        let mut pat = vec![0xffu8; 188];
        pat[..4].copy_from_slice(&[0x47, 0x40, 0x00, 0x10]);
        // Pointer 0; table 0, section length 13; stream id, version, sections; program 1 at PID 0x20.
        pat[4..21].copy_from_slice(&[0, 0, 0xb0, 13, 0, 1, 0xc1, 0, 0, 0, 1, 0xe0, 0x20, 1, 2, 3, 4]);
        let mut pmt = vec![0xffu8; 188];
        pmt[..5].copy_from_slice(&[0x47, 0x40, 0x20, 0x10, 0]);
        let mut w = TimelineWatch::default();
        w.feed(&pat);
        w.feed(&pmt);
        assert_eq!(w.tables(), [pat.clone(), pmt.clone()].concat());
        // The 33-bit clock wrapping is no restart.
        let mut w = TimelineWatch::default();
        assert!(!w.feed(&pcr_packet(0x41, PCR_WRAP - s / 50, false)));
        assert!(!w.feed(&pcr_packet(0x41, s / 50, false)));
    }
}
