//! Just enough MPEG-TS to cut segments cleanly: find keyframes (random access indicator) and
//! remember the PAT and PMT so each segment starts playable.

/// Whether a 188-byte packet starts a keyframe (adaptation field with random_access_indicator).
pub fn is_random_access(p: &[u8]) -> bool {
    p.len() >= 6 && p[0] == 0x47 && p[1] & 0x40 != 0 && p[3] & 0x20 != 0 && p[4] > 0 && p[5] & 0x40 != 0
}

/// The PID of a packet.
pub fn pid(p: &[u8]) -> u16 {
    (u16::from(p[1] & 0x1f) << 8) | u16::from(p[2])
}

/// The PMT PID announced in a PAT packet (first program).
pub fn pmt_pid_from_pat(p: &[u8]) -> Option<u16> {
    if pid(p) != 0 || p[1] & 0x40 == 0 {
        return None;
    }
    let mut i = 4;
    if p[3] & 0x20 != 0 {
        i += 1 + usize::from(p[4]);
    }
    i += 1 + usize::from(*p.get(i)?); // pointer field
                                      // table header: table_id(1) section_length(2) ts_id(2) version(1) section(1) last(1) = 8
    let mut j = i + 8;
    while j + 4 <= p.len() {
        let program = u16::from_be_bytes([p[j], p[j + 1]]);
        let pmt = u16::from_be_bytes([p[j + 2], p[j + 3]]) & 0x1fff;
        if program != 0 {
            return Some(pmt);
        }
        j += 4;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pat_and_keyframe() {
        let mut pat = [0xffu8; 188];
        pat[..4].copy_from_slice(&[0x47, 0x40, 0x00, 0x10]);
        pat[4] = 0; // pointer
        pat[5..13].copy_from_slice(&[0x00, 0xb0, 0x0d, 0x00, 0x01, 0xc1, 0x00, 0x00]);
        pat[13..17].copy_from_slice(&[0x00, 0x01, 0xe0, 0x20]); // program 1 -> PMT PID 0x20
        assert_eq!(pmt_pid_from_pat(&pat), Some(0x20));
        let mut key = [0xffu8; 188];
        key[..6].copy_from_slice(&[0x47, 0x41, 0x00, 0x30, 0x07, 0x50]);
        assert!(is_random_access(&key));
        key[5] = 0x10;
        assert!(!is_random_access(&key));
    }
}
