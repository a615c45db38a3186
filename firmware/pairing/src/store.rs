//! A pairing as each box keeps it: one file, owner-only (0600), written atomically; unpairing
//! removes it (and its `.prev`). The secrets are [`Secret`]s: `Debug` and `Display` print `****`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use telebridge_config::Secret;

use crate::exchange::{PairSecrets, Side};

/// The pairing a box keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairRecord {
    /// Names the pair (not secret).
    pub pair_id: String,
    /// The other box's id.
    pub peer_id: String,
    /// `a` when this box showed the code, `b` when it was typed into it.
    pub side: StoredSide,
    /// How this box reaches the other: `listen` (the other calls it) or `call` ([`Self::peer`]).
    pub reach: Reach,
    /// The other box's SRT address (`HOST:PORT`) when this box calls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// How the listening box is reached.
    #[serde(default)]
    pub via: Via,
    /// The other box's public address (`IP:PORT`) for an SRT rendezvous, tried in turn with the
    /// listen/call way when that does not connect (both behind NAT, no port open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendezvous: Option<String>,
    /// The round trip to the other box measured while pairing, ms (the calling box sets the
    /// SRT latency from it).
    pub rtt_ms: u32,
    /// The connection's SRT stream id.
    pub stream_id: String,
    /// The connection's SRT passphrase (AES-256).
    pub passphrase: Secret,
    /// The key the two boxes prove themselves with later.
    pub pair_key: Secret,
    /// When the pairing was made (Unix seconds).
    pub paired_at_unix: u64,
}

/// [`Side`] as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoredSide {
    /// This box showed the code.
    A,
    /// The code was typed into this box.
    B,
}

/// How the listening box is reached from the calling one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// At the address the calling box typed: the same network, or a port forwarded by hand.
    #[default]
    Direct,
    /// At the public address the listening box's router maps to it (UPnP, renewed by the box).
    PortMapping,
}

/// Which end of the SRT connection a box is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// It listens on its bridge port; the other box calls it.
    Listen,
    /// It calls the other box.
    Call,
}

impl PairRecord {
    /// The record of a pairing just made on `side`: how this box reaches the other, and the
    /// round trip measured.
    pub fn new(
        side: Side,
        secrets: PairSecrets,
        reach: Reach,
        peer: Option<String>,
        rtt_ms: u32,
        paired_at_unix: u64,
    ) -> Self {
        Self {
            pair_id: secrets.pair_id,
            peer_id: secrets.peer_id,
            side: match side {
                Side::A => StoredSide::A,
                Side::B => StoredSide::B,
            },
            reach,
            peer,
            via: Via::Direct,
            rendezvous: None,
            rtt_ms,
            stream_id: secrets.link.stream_id,
            passphrase: secrets.link.passphrase,
            pair_key: secrets.pair_key,
            paired_at_unix,
        }
    }
}

/// Why a stored pairing could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The file is not a pairing record.
    #[error("{path} is not a pairing record ({message}); unpair and pair again")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        message: String,
    },
}

/// Saves `record` to `path` (0600, atomically; the previous one kept as `.prev`).
pub fn save(path: &Path, record: &PairRecord) -> Result<(), StoreError> {
    let io_err = |source| StoreError::Io { path: path.to_path_buf(), source };
    let text = toml::to_string_pretty(record).map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    telebridge_config::write_secret_file(path, text.as_bytes()).map_err(io_err)
}

/// The pairing at `path`; `None` when there is none.
pub fn load(path: &Path) -> Result<Option<PairRecord>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::Io { path: path.to_path_buf(), source }),
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| StoreError::Invalid { path: path.to_path_buf(), message: e.message().to_string() })
}

/// Forgets the pairing at `path` (and its `.prev`): unpairing.
pub fn remove(path: &Path) -> Result<(), StoreError> {
    let mut prev = path.as_os_str().to_owned();
    prev.push(".prev");
    for p in [path.to_path_buf(), PathBuf::from(prev)] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(StoreError::Io { path: p, source }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::exchange::StreamKeys;

    fn record() -> PairRecord {
        let secrets = PairSecrets {
            pair_id: "0123456789abcdef".into(),
            peer_id: "box-b".into(),
            link: StreamKeys { stream_id: "telebridge/0123".into(), passphrase: Secret::new("9".repeat(64)) },
            pair_key: Secret::new("k".repeat(64)),
        };
        PairRecord::new(Side::B, secrets, Reach::Call, Some("192.0.2.7:7700".into()), 34, 1_796_000_000)
    }

    #[test]
    fn saved_owner_only_read_back_the_same_and_removed_with_its_prev() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairing.toml");
        assert!(load(&path).unwrap().is_none());
        save(&path, &record()).unwrap();
        save(&path, &record()).unwrap();
        for p in [path.clone(), dir.path().join("pairing.toml.prev")] {
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "{}", p.display());
        }
        assert_eq!(load(&path).unwrap(), Some(record()));
        remove(&path).unwrap();
        assert!(!path.exists() && !dir.path().join("pairing.toml.prev").exists());
        remove(&path).unwrap();
    }

    #[test]
    fn secrets_never_in_debug_and_a_bad_file_says_what_to_do() {
        let r = record();
        let shown = format!("{r:?}");
        assert!(!shown.contains("999999") && !shown.contains("kkkk"), "{shown}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairing.toml");
        std::fs::write(&path, "pair_id = 3\n").unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("is not a pairing record") && e.ends_with("unpair and pair again"), "{e}");
    }
}
