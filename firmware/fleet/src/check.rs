//! A downloaded bundle checked against the digest the server gave, as its bytes arrive (a
//! resumed download feeds what is on disk first), and the version the box runs read from its
//! image's `os-release`.

use sha1::Digest as _;

use crate::ddi::Digest;

/// A digest being computed.
#[derive(Debug, Clone)]
pub enum Check {
    /// SHA-256.
    Sha256(sha2::Sha256, [u8; 32]),
    /// SHA-1.
    Sha1(sha1::Sha1, [u8; 20]),
}

impl Check {
    /// Starts a check against `want`.
    pub fn new(want: &Digest) -> Self {
        match want {
            Digest::Sha256(w) => Check::Sha256(sha2::Sha256::new(), *w),
            Digest::Sha1(w) => Check::Sha1(sha1::Sha1::new(), *w),
        }
    }

    /// Takes the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Check::Sha256(h, _) => h.update(bytes),
            Check::Sha1(h, _) => h.update(bytes),
        }
    }

    /// Whether all the bytes hash to what the server gave; the error names both.
    pub fn verify(self) -> Result<(), String> {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let (name, got, want) = match self {
            Check::Sha256(h, w) => ("sha256", hex(&h.finalize()), hex(&w)),
            Check::Sha1(h, w) => ("sha1", hex(&h.finalize()), hex(&w)),
        };
        if got == want {
            Ok(())
        } else {
            Err(format!("the bundle's {name} is {got}, the server gave {want}: the file is not the one assigned"))
        }
    }
}

/// The image's version from an `os-release` file's `IMAGE_VERSION=` (the version the image and
/// its bundle were built as), unquoted; `None` when the file has none.
pub fn image_version(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|l| {
        let v = l.trim().strip_prefix("IMAGE_VERSION=")?;
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        (!v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic())).then(|| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_digest_is_checked_over_every_piece() {
        // sha1("abc") and sha256("abc"), from FIPS 180's examples.
        let sha1 = crate::ddi::Digest::Sha1([
            0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0,
            0xd8, 0x9d,
        ]);
        let mut c = Check::new(&sha1);
        c.update(b"a");
        c.update(b"bc");
        assert_eq!(c.verify(), Ok(()));
        let mut c = Check::new(&sha1);
        c.update(b"abd");
        let e = c.verify().unwrap_err();
        assert!(e.contains("sha1") && e.contains("a9993e36"), "{e}");
        let mut w = [0u8; 32];
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        for (i, b) in w.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        let mut c = Check::new(&Digest::Sha256(w));
        c.update(b"abc");
        assert_eq!(c.verify(), Ok(()));
    }

    #[test]
    fn the_image_version_is_read_from_os_release() {
        let text = "PRETTY_NAME=\"Debian GNU/Linux 12\"\nIMAGE_ID=telebridge\nIMAGE_VERSION=\"0.1.1\"\n";
        assert_eq!(image_version(text).as_deref(), Some("0.1.1"));
        assert_eq!(image_version("ID=debian\n"), None);
        assert_eq!(image_version("IMAGE_VERSION=\n"), None);
    }
}
