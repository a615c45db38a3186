//! Reading and writing the TOML file. Writes are atomic (temporary file, fsync, rename) and keep
//! the previous version beside it as `NAME.prev`, so a crash mid-save leaves the old file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Config;

/// Where the daemon looks for its configuration unless told otherwise.
pub const DEFAULT_PATH: &str = "/etc/telebridge/telebridge.toml";

/// Why a configuration file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is not valid TOML or has unknown fields or wrong types.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said, with line and column.
        message: String,
    },
}

/// Reads and parses a configuration file (not yet validated: see [`Config::validate`]). A file
/// with several wrong types or unknown fields names every one, a line each.
pub fn load(path: &Path) -> Result<Config, LoadError> {
    let text = fs::read_to_string(path).map_err(|source| LoadError::Io { path: path.to_path_buf(), source })?;
    parse(&text).map_err(|errs| LoadError::Parse {
        path: path.to_path_buf(),
        message: errs.join(&format!("\n{}: ", path.display())),
    })
}

/// Parses a configuration's TOML, naming every field whose type is wrong or that is unknown
/// (`video.bitrate_kbps: ...`), not only the first; a file that is not TOML at all gets the
/// parser's one message with its line and column.
pub fn parse(text: &str) -> Result<Config, Vec<String>> {
    let first = match toml::from_str::<Config>(text) {
        Ok(c) => return Ok(c),
        Err(e) => e.to_string().trim_end().to_string(),
    };
    let Ok(table) = toml::from_str::<toml::Table>(text) else { return Err(vec![first]) };
    // Each top-level key alone, then each of its fields or items alone: the errors of one do
    // not hide the others'.
    let alone = |key: &str, value: toml::Value| -> Result<(), String> {
        let mut t = toml::Table::new();
        t.insert(key.to_string(), value);
        Config::deserialize(t).map(|_| ()).map_err(|e| plain_words(e.message()))
    };
    let mut errs = Vec::new();
    for (key, value) in &table {
        let Err(whole) = alone(key, value.clone()) else { continue };
        let before = errs.len();
        match value {
            toml::Value::Table(fields) => {
                for (field, v) in fields {
                    let one = toml::Table::from_iter([(field.clone(), v.clone())]);
                    if let Err(m) = alone(key, toml::Value::Table(one)) {
                        errs.push(format!("{key}.{field}: {m}"));
                    }
                }
            }
            toml::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Err(m) = alone(key, toml::Value::Array(vec![item.clone()])) {
                        errs.push(format!("{key}[{i}]: {m}"));
                    }
                }
            }
            _ => {}
        }
        if errs.len() == before {
            errs.push(format!("{key}: {whole}"));
        }
    }
    if errs.is_empty() {
        errs.push(first);
    }
    Err(errs)
}

/// serde's words for a type, as a user reads them.
fn plain_words(message: &str) -> String {
    [
        ("expected u32", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected a boolean", "expected true or false"),
    ]
    .iter()
    .fold(message.trim_end().to_string(), |m, (from, to)| m.replace(from, to))
}

/// The mode of the file and of its `.prev`: it holds the password hash and the stream secrets,
/// so only its owner (root on the box) may read it.
pub const FILE_MODE: u32 = 0o600;

/// Writes `config` to `path` atomically (mode 0600, whatever the file had) and keeps the file it
/// replaces as `path.prev` (also 0600).
pub fn save_atomic(path: &Path, config: &Config) -> io::Result<()> {
    let text = toml::to_string_pretty(config).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    write_secret_file(path, text.as_bytes())
}

/// Writes `bytes` to `path` atomically, readable by its owner only (mode 0600, whatever the file
/// had), keeping the file it replaces as `path.prev` (also 0600): for anything holding secrets
/// (the configuration, a pairing).
///
/// Nothing here follows a link (issue 57, finding 8: run as root in a folder the daemon can
/// write, the save's create+truncate, its copy to `.prev` and its chmod all followed links the
/// daemon could leave there): the temporary files are made new (`O_EXCL`, `O_NOFOLLOW`), the
/// old file is read only if it is a regular file (`O_NOFOLLOW`), and each lands by a rename,
/// which replaces a link named so rather than writing through it.
pub fn write_secret_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name =
        path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let name = file_name.to_string_lossy();
    let old = read_regular(path)?;
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    write_new(&tmp, bytes)?;
    if let Some(old) = old {
        let prev_tmp = dir.join(format!(".{name}.prev.tmp-{}", std::process::id()));
        write_new(&prev_tmp, &old)?;
        fs::rename(&prev_tmp, dir.join(format!("{name}.prev")))?;
    }
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// `bytes` into a file made new at `path` (mode 0600), synced. A leftover of a crash at that
/// name (a file, or a link someone left) is removed first, not written through.
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f =
        OpenOptions::new().write(true).create_new(true).custom_flags(libc_o_nofollow()).mode(FILE_MODE).open(path)?;
    // The umask may have taken bits the mode gave; 0600 exactly.
    f.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// What `path` holds, if it is a regular file; `None` if there is none, or if it is a link or
/// anything else (not read through).
fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut f = match OpenOptions::new().read(true).custom_flags(libc_o_nofollow()).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // ELOOP: a link.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !f.metadata()?.is_file() {
        return Ok(None);
    }
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(Some(out))
}

/// `O_NOFOLLOW` (its value differs between architectures: x86-64's is arm64's `O_DIRECTORY`).
const fn libc_o_nofollow() -> i32 {
    libc::O_NOFOLLOW
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OutputConfig, EXAMPLE_TOML};

    #[test]
    fn example_file_equals_defaults() {
        let parsed: Config = toml::from_str(EXAMPLE_TOML).unwrap();
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn empty_file_is_defaults() {
        assert_eq!(toml::from_str::<Config>("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_field_is_rejected_with_its_name() {
        let err = toml::from_str::<Config>("[video]\nbitrate = 3000\n").unwrap_err().to_string();
        assert!(err.contains("unknown field `bitrate`"), "{err}");
    }

    #[test]
    fn every_wrong_type_and_unknown_field_is_named_not_only_the_first() {
        let text = "name = 5\n[video]\nwidth = \"wide\"\nfps = 30\nbitrate = 3000\n[audio]\nbitrate_kbps = true\n\
                    [[outputs]]\nurl = \"srt://:9000\"\n[[outputs]]\nurl = 7\n";
        let errs = parse(text).unwrap_err();
        assert_eq!(errs.len(), 5, "{errs:#?}");
        let has = |prefix: &str, words: &str| errs.iter().any(|e| e.starts_with(prefix) && e.contains(words));
        assert!(has("name: ", "invalid type: integer `5`, expected a string"), "{errs:#?}");
        assert!(has("video.width: ", "expected a whole number"), "{errs:#?}");
        assert!(has("video.bitrate: ", "unknown field `bitrate`"), "{errs:#?}");
        assert!(has("audio.bitrate_kbps: ", "expected a whole number"), "{errs:#?}");
        assert!(has("outputs[1]: ", "invalid type: integer `7`"), "{errs:#?}");
        // Not TOML at all: the parser's one message with its place.
        let errs = parse("[video\nwidth = 1").unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("line 1"), "{errs:?}");
        assert_eq!(parse(EXAMPLE_TOML).unwrap(), Config::default());
    }

    #[test]
    fn a_save_follows_no_link_left_in_its_folder() {
        // Issue 57, finding 8: links where the save writes its temporary file, its .prev, and
        // the file itself; the files they point at are left as they were.
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = |n: &str| {
            let p = outside.path().join(n);
            fs::write(&p, "victim").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
            p
        };
        let path = dir.path().join("telebridge.toml");
        let (v_tmp, v_prev, v_file) = (victim("tmp"), victim("prev"), victim("file"));
        std::os::unix::fs::symlink(&v_tmp, dir.path().join(format!(".telebridge.toml.tmp-{}", std::process::id())))
            .unwrap();
        std::os::unix::fs::symlink(&v_prev, dir.path().join("telebridge.toml.prev")).unwrap();
        std::os::unix::fs::symlink(&v_file, &path).unwrap();
        save_atomic(&path, &Config::default()).unwrap();
        for v in [&v_tmp, &v_prev, &v_file] {
            assert_eq!(fs::read_to_string(v).unwrap(), "victim", "{} was written through a link", v.display());
            assert_eq!(fs::metadata(v).unwrap().permissions().mode() & 0o777, 0o644, "{} was chmodded", v.display());
        }
        // The file is a regular file now; the link at .prev is left (nothing regular to keep).
        assert!(fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(load(&path).unwrap(), Config::default());
        save_atomic(&path, &Config::default()).unwrap();
        assert!(fs::symlink_metadata(dir.path().join("telebridge.toml.prev")).unwrap().is_file());
    }

    #[test]
    fn save_then_load_round_trips_and_keeps_previous() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telebridge.toml");
        let mut c = Config::default();
        save_atomic(&path, &c).unwrap();
        c.video.bitrate_kbps = 6000;
        c.outputs.push(OutputConfig::new("srt://:9000?mode=listener"));
        save_atomic(&path, &c).unwrap();
        assert_eq!(load(&path).unwrap(), c);
        assert_eq!(load(&dir.path().join("telebridge.toml.prev")).unwrap(), Config::default());
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn saving_makes_the_file_and_its_previous_version_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telebridge.toml");
        fs::write(&path, "").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        save_atomic(&path, &Config::default()).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600, "the saved file");
        assert_eq!(mode(&dir.path().join("telebridge.toml.prev")), 0o600, "the previous version");
        save_atomic(&path, &Config::default()).unwrap();
        assert_eq!(mode(&path), 0o600, "and again");
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = load(Path::new("/nonexistent/telebridge.toml")).unwrap_err().to_string();
        assert!(err.starts_with("cannot read /nonexistent/telebridge.toml"), "{err}");
    }
}
