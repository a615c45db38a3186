//! Settings laid over the ones a box has: a `telebridge.toml` the owner left on the boot
//! partition names only what it changes (`role = "decoder"`), and the rest (the password hash,
//! what the panel set) stays. Tables merge key by key; any other value, an array such as
//! `outputs` included, is replaced whole.

use crate::{parse, Config};

/// `overlay` laid over `base` (both TOML texts), parsed: the errors name every wrong field of
/// the result, as [`parse`] does. `base` is the box's own file; an empty one is the defaults.
pub fn overlay(base: &str, overlay: &str) -> Result<Config, Vec<String>> {
    let mut merged: toml::Table = toml::from_str(base).map_err(|e| vec![format!("the current settings: {e}")])?;
    let top: toml::Table = toml::from_str(overlay).map_err(|e| vec![e.to_string().trim_end().to_string()])?;
    merge(&mut merged, top);
    let text = toml::to_string(&merged).map_err(|e| vec![e.to_string()])?;
    parse(&text)
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(key, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn named_settings_change_and_the_rest_stays() {
        let base =
            "name = \"studio\"\n[web]\npassword_hash = \"$argon2id$v=19$x\"\n[video]\nbitrate_kbps = 6000\nfps = 25\n\
                    [[outputs]]\nurl = \"srt://:9000?mode=listener\"\n";
        let c = overlay(base, "role = \"decoder\"\n[video]\nfps = 50\n").unwrap();
        assert_eq!(c.role, "decoder");
        assert_eq!(c.name, "studio");
        assert_eq!(c.web.password_hash, "$argon2id$v=19$x");
        assert_eq!((c.video.bitrate_kbps, c.video.fps), (6000, 50));
        assert_eq!(c.outputs.len(), 1);
        // An array is replaced whole, not appended to.
        let c =
            overlay(base, "[[outputs]]\nurl = \"rtmp://a/b/c\"\n[[outputs]]\nurl = \"file:/media/x.ts\"\n").unwrap();
        assert_eq!(c.outputs.iter().map(|o| o.url.as_str()).collect::<Vec<_>>(), ["rtmp://a/b/c", "file:/media/x.ts"]);
        // Over nothing: the defaults with the overlay.
        assert_eq!(overlay("", "name = \"x\"\n").unwrap().name, "x");
        assert_eq!(overlay("", "").unwrap(), Config::default());
    }

    #[test]
    fn every_wrong_field_is_named() {
        let errs = overlay("name = \"studio\"\n", "[video]\nwidth = \"wide\"\nbitrate = 1\n").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("video.width: ")), "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("video.bitrate: ") && e.contains("unknown field")), "{errs:?}");
        let errs = overlay("", "[video\n").unwrap_err();
        assert!(errs[0].contains("line 1"), "{errs:?}");
    }
}
