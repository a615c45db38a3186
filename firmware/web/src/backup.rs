//! Configuration backups: one TOML file. Without secrets it is readable text with every secret
//! as `****` (restoring it keeps the box's own secrets). With secrets it is encrypted with a
//! password the user gives: argon2id turns the password and a random salt into a key, and
//! ChaCha20-Poly1305 seals the TOML (so a wrong password or a damaged file is detected).

use argon2::Argon2;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use rand_core::{OsRng, RngCore};
use telebridge_config::Config;

/// The first line of an encrypted backup.
pub const MAGIC: &str = "TELEBRIDGE-BACKUP-1 encrypted (argon2id, chacha20poly1305)";
/// The shortest backup password accepted.
pub const MIN_PASSWORD: usize = 8;

fn key(password: &str, salt: &[u8]) -> Result<Key, String> {
    let mut k = [0u8; 32];
    Argon2::default().hash_password_into(password.as_bytes(), salt, &mut k).map_err(|e| e.to_string())?;
    Ok(k.into())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The backup file of `config`: redacted text, or (with a password) everything, encrypted.
pub fn export(config: &Config, password: Option<&str>) -> Result<String, String> {
    match password {
        None => toml::to_string_pretty(&config.redacted()).map_err(|e| e.to_string()),
        Some(pw) => {
            if pw.chars().count() < MIN_PASSWORD {
                return Err(format!("backup password: it must have at least {MIN_PASSWORD} characters"));
            }
            let text = toml::to_string_pretty(config).map_err(|e| e.to_string())?;
            let mut salt = [0u8; 16];
            let mut nonce = [0u8; 12];
            OsRng.fill_bytes(&mut salt);
            OsRng.fill_bytes(&mut nonce);
            let sealed = ChaCha20Poly1305::new(&key(pw, &salt)?)
                .encrypt(Nonce::from_slice(&nonce), text.as_bytes())
                .map_err(|_| "cannot encrypt".to_string())?;
            Ok(format!("{MAGIC}\n{}\n{}\n{}\n", hex(&salt), hex(&nonce), hex(&sealed)))
        }
    }
}

/// Reads the configuration of a backup, refusing a file that does not name every section a
/// backup has: an empty, blank or partial file would otherwise restore the defaults for what it
/// leaves out (a decoder would become an encoder).
fn complete(text: &str) -> Result<Config, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| format!("not a Telebridge backup: {}", e.message()))?;
    let expected = toml::Table::try_from(Config::default()).map_err(|e| e.to_string())?;
    let missing: Vec<&str> =
        expected.keys().filter(|k| *k != "outputs" && !table.contains_key(*k)).map(String::as_str).collect();
    if !missing.is_empty() {
        return Err(format!(
            "not a complete Telebridge backup: it has no {} (a backup names every section); nothing was restored",
            missing.join(", ")
        ));
    }
    table.try_into().map_err(|e: toml::de::Error| format!("not a Telebridge backup: {}", e.message()))
}

/// Reads a backup file back into a configuration (secrets still `****` in a plain one).
pub fn import(file: &str, password: Option<&str>) -> Result<Config, String> {
    let Some(rest) = file.strip_prefix(MAGIC) else {
        return complete(file);
    };
    let pw = password.ok_or("this backup is encrypted: give its password")?;
    let mut lines = rest.lines().filter(|l| !l.trim().is_empty());
    let damaged = || "the backup file is damaged".to_string();
    let salt = lines.next().and_then(unhex).ok_or_else(damaged)?;
    let nonce = lines.next().and_then(unhex).filter(|n| n.len() == 12).ok_or_else(damaged)?;
    let sealed = lines.next().and_then(unhex).ok_or_else(damaged)?;
    let text = ChaCha20Poly1305::new(&key(pw, &salt)?)
        .decrypt(Nonce::from_slice(&nonce), sealed.as_slice())
        .map_err(|_| "wrong backup password, or the file is damaged".to_string())?;
    let text = String::from_utf8(text).map_err(|_| damaged())?;
    complete(&text).map_err(|e| format!("the backup's configuration does not read: {e}"))
}

#[cfg(test)]
mod tests {
    use telebridge_config::OutputConfig;

    use super::*;

    fn config() -> Config {
        Config { outputs: vec![OutputConfig::new("rtmp://live.example/app/SECRETKEY")], ..Config::default() }
    }

    #[test]
    fn plain_backups_hide_secrets() {
        let file = export(&config(), None).unwrap();
        assert!(!file.contains("SECRETKEY") && file.contains("/app/****"), "{file}");
        assert_eq!(import(&file, None).unwrap().outputs[0].url, "rtmp://live.example/app/****");
    }

    #[test]
    fn empty_blank_comment_only_and_partial_files_restore_nothing() {
        for file in ["", "   \n\n", "# only a comment\n", "name = \"studio\"\n"] {
            let e = import(file, None).unwrap_err();
            assert!(e.starts_with("not a complete Telebridge backup: it has no "), "{file:?}: {e}");
            assert!(e.contains("role") && e.contains("decoder"), "{e}");
        }
        let mut full = export(&config(), None).unwrap();
        assert!(import(&full, None).is_ok());
        full = full.replace("role = \"encoder\"\n", "");
        assert!(import(&full, None).unwrap_err().contains("it has no role"), "one missing key is named");
    }

    #[test]
    fn encrypted_backups_round_trip_and_refuse_a_wrong_password() {
        let file = export(&config(), Some("backup password")).unwrap();
        assert!(file.starts_with(MAGIC) && !file.contains("SECRETKEY") && !file.contains("rtmp"), "{file}");
        assert_eq!(import(&file, Some("backup password")).unwrap(), config());
        assert_eq!(
            import(&file, Some("another password")).unwrap_err(),
            "wrong backup password, or the file is damaged"
        );
        assert_eq!(import(&file, None).unwrap_err(), "this backup is encrypted: give its password");
        let damaged = file.replace(&file.lines().nth(3).unwrap()[..4], "0000");
        assert!(import(&damaged, Some("backup password")).is_err());
        assert!(export(&config(), Some("short")).unwrap_err().contains("at least 8"));
    }
}
