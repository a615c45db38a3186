//! Counts MPEG-TS continuity errors in what arrives: packets lost for good (SRT's "dropped"),
//! which GStreamer 1.22's srtsrc does not report. Each PID's 4-bit continuity counter must step
//! by one on every packet that carries payload.

/// Continuity state over a stream of TS bytes (any buffer boundaries).
#[derive(Debug, Clone)]
pub struct ContinuityCheck {
    last_cc: Box<[Option<u8>; 8192]>,
    partial: Vec<u8>,
    /// Payload packets seen with a gap before them.
    pub errors: u64,
    /// Packets checked.
    pub packets: u64,
    /// 188-byte pieces that did not start with the sync byte: what arrives is not MPEG-TS (or
    /// not aligned on 188 bytes).
    pub not_ts: u64,
}

impl Default for ContinuityCheck {
    fn default() -> Self {
        Self { last_cc: Box::new([None; 8192]), partial: Vec::new(), errors: 0, packets: 0, not_ts: 0 }
    }
}

impl ContinuityCheck {
    /// Feeds bytes as they arrive.
    pub fn feed(&mut self, mut data: &[u8]) {
        if !self.partial.is_empty() {
            let need = 188 - self.partial.len();
            let take = need.min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.partial.len() == 188 {
                let p = std::mem::take(&mut self.partial);
                self.packet(&p);
            }
        }
        let mut chunks = data.chunks_exact(188);
        for p in &mut chunks {
            self.packet(p);
        }
        self.partial.extend_from_slice(chunks.remainder());
    }

    /// Forgets every PID's counter (a new connection starts a new stream).
    pub fn reset(&mut self) {
        self.last_cc.fill(None);
        self.partial.clear();
    }

    fn packet(&mut self, p: &[u8]) {
        if p[0] != 0x47 {
            // Lost sync: start over at the next buffer.
            self.partial.clear();
            self.not_ts += 1;
            return;
        }
        let pid = (usize::from(p[1] & 0x1f) << 8) | usize::from(p[2]);
        if pid == 0x1fff {
            return;
        }
        let has_payload = p[3] & 0x10 != 0;
        let discontinuity = p[3] & 0x20 != 0 && p[4] > 0 && p[5] & 0x80 != 0;
        let cc = p[3] & 0x0f;
        self.packets += 1;
        if has_payload {
            if let Some(last) = self.last_cc[pid] {
                if !discontinuity && cc != (last + 1) & 0x0f && cc != last {
                    self.errors += 1;
                }
            }
            self.last_cc[pid] = Some(cc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(pid: u16, cc: u8) -> Vec<u8> {
        let mut p = vec![0xffu8; 188];
        p[0] = 0x47;
        p[1] = (pid >> 8) as u8 & 0x1f;
        p[2] = pid as u8;
        p[3] = 0x10 | (cc & 0x0f);
        p
    }

    #[test]
    fn counts_gaps_per_pid_across_buffer_boundaries() {
        let mut stream = Vec::new();
        for cc in 0..20u8 {
            if cc != 7 {
                stream.extend(pkt(0x100, cc)); // one packet of PID 0x100 lost
            }
            stream.extend(pkt(0x101, cc));
        }
        let mut c = ContinuityCheck::default();
        for chunk in stream.chunks(1000) {
            c.feed(chunk);
        }
        assert_eq!(c.errors, 1);
        assert_eq!(c.packets, 39);
    }

    #[test]
    fn bytes_that_are_not_ts_are_counted() {
        let mut c = ContinuityCheck::default();
        let mut x = 0x1234_5678u32;
        let noise: Vec<u8> = (0..1316 * 10)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x as u8) & 0x3f // never 0x47
            })
            .collect();
        for chunk in noise.chunks(1316) {
            c.feed(chunk);
        }
        assert_eq!((c.packets, c.not_ts), (0, 70));
        c.feed(&pkt(0x100, 0));
        assert_eq!((c.packets, c.not_ts), (1, 70), "a real packet after them still counts");
    }

    #[test]
    fn wraps_and_tolerates_duplicates() {
        let mut c = ContinuityCheck::default();
        for cc in (0..40u8).map(|i| i % 16) {
            c.feed(&pkt(0x200, cc));
        }
        c.feed(&pkt(0x200, 7)); // duplicate of the last
        assert_eq!(c.errors, 0);
    }
}
