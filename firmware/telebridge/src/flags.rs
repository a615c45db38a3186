//! Command-line flags over the configuration file: one way for a flag to set a field, used by
//! `encode` and `run` alike, remembering which flag set which field so that an error names the
//! flag the user typed (`--fps: 100 is out of range`), not the file's field.

use telebridge_config::{Config, FieldError, OutputConfig, ValidationErrors};

/// Which fields the flags set, and from which flag.
#[derive(Debug, Default)]
pub struct Flags {
    used: Vec<(&'static str, &'static str)>,
}

impl Flags {
    /// `flag` set `field` to `value`, when given.
    pub fn string(&mut self, target: &mut String, value: Option<&String>, field: &'static str, flag: &'static str) {
        if let Some(v) = value {
            target.clone_from(v);
            self.used.push((field, flag));
        }
    }

    /// `flag` set `field` to `value`, when given.
    pub fn number(&mut self, target: &mut u32, value: Option<u32>, field: &'static str, flag: &'static str) {
        if let Some(v) = value {
            *target = v;
            self.used.push((field, flag));
        }
    }

    /// `--size WIDTHxHEIGHT`, when given.
    pub fn size(&mut self, config: &mut Config, size: Option<&String>) -> Result<(), String> {
        let Some(size) = size else { return Ok(()) };
        let parsed = size.split_once('x').and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
        let (w, h) = parsed.ok_or_else(|| format!("--size {size:?} is not WIDTHxHEIGHT (e.g. 1280x720)"))?;
        config.video.width = w;
        config.video.height = h;
        self.used.push(("video.width", "--size"));
        self.used.push(("video.height", "--size"));
        Ok(())
    }

    /// `--output`, any number: they replace the file's outputs.
    pub fn outputs(&mut self, config: &mut Config, outputs: &[String]) {
        if !outputs.is_empty() {
            config.outputs = outputs.iter().map(OutputConfig::new).collect();
            self.used.push(("outputs", "--output"));
        }
    }

    /// The flag that set `field`, if one did.
    pub fn flag_for(&self, field: &str) -> Option<&'static str> {
        self.used.iter().find(|(f, _)| *f == field).map(|(_, flag)| *flag)
    }

    /// The problems, each naming the flag that set its field (`video.fps: ...` becomes
    /// `--fps: ...`, `outputs[1].url: ...` becomes `--output #2: ...`).
    pub fn name(&self, errs: &ValidationErrors) -> Vec<FieldError> {
        errs.0
            .iter()
            .map(|e| {
                let flag = self
                    .used
                    .iter()
                    .find(|(field, _)| e.field == *field || (*field == "outputs" && e.field.starts_with("outputs[")));
                match flag {
                    Some((_, "--output")) => {
                        let n: usize = e
                            .field
                            .trim_start_matches("outputs[")
                            .split(']')
                            .next()
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0);
                        FieldError { field: format!("--output #{}", n + 1), message: e.message.clone() }
                    }
                    Some((_, flag)) => FieldError { field: flag.to_string(), message: e.message.clone() },
                    None => e.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_flag_that_set_the_field() {
        let mut c = Config::default();
        let mut f = Flags::default();
        f.number(&mut c.video.fps, Some(100), "video.fps", "--fps");
        f.outputs(&mut c, &["srt://:9000".into(), "srt://h:1?latency=5".into()]);
        f.string(&mut c.name, None, "name", "--name");
        c.audio.bitrate_kbps = 1;
        let named = f.name(&c.validate().unwrap_err());
        let fields: Vec<&str> = named.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["--fps", "audio.bitrate_kbps", "--output #2"], "{named:?}");
        let mut c = Config::default();
        assert!(f.size(&mut c, Some(&"big".to_string())).unwrap_err().contains("is not WIDTHxHEIGHT"));
        f.size(&mut c, Some(&"640x360".to_string())).unwrap();
        assert_eq!((c.video.width, c.video.height), (640, 360));
    }
}
