//! What a new configuration changes in a running box: restart only what changed. A changed
//! output (say, a new RTMP key) is removed and added again; the encoder keeps running. Changes
//! to the picture, sound, role or decoder restart the media; the panel's address and the GPIO
//! pins take effect at the next start.

use telebridge_config::{OutputSpec, Role, ValidConfig};

/// The steps from one configuration to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangePlan {
    /// Stop and start the media (encoder or decoder) if it runs.
    pub restart_media: bool,
    /// Outputs to stop, by name.
    pub remove_outputs: Vec<String>,
    /// Outputs to start.
    pub add_outputs: Vec<(String, OutputSpec)>,
    /// Settings that take effect at the next start of the daemon.
    pub next_start: Vec<&'static str>,
}

impl ChangePlan {
    /// Whether anything changes now.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        !self.restart_media && self.remove_outputs.is_empty() && self.add_outputs.is_empty()
    }
}

/// Works out the plan from `old` to `new`.
pub fn plan(old: &ValidConfig, new: &ValidConfig) -> ChangePlan {
    let (o, n) = (&old.raw, &new.raw);
    let mut p = ChangePlan {
        restart_media: o.role != n.role
            || o.name != n.name
            || match new.role {
                Role::Encoder => o.video != n.video || o.audio != n.audio,
                Role::Decoder => o.decoder != n.decoder,
                Role::Bridge => {
                    o.video != n.video || o.audio != n.audio || o.decoder != n.decoder || o.bridge != n.bridge
                }
            },
        ..ChangePlan::default()
    };
    if o.web.listen != n.web.listen {
        p.next_start.push("web.listen");
    }
    if o.gpio != n.gpio {
        p.next_start.push("gpio");
    }
    if matches!(new.role, Role::Encoder | Role::Bridge) && !p.restart_media {
        for (name, spec) in &old.outputs {
            if !new.outputs.iter().any(|(n2, s2)| n2 == name && s2 == spec) {
                p.remove_outputs.push(name.clone());
            }
        }
        for (name, spec) in &new.outputs {
            if !old.outputs.iter().any(|(n2, s2)| n2 == name && s2 == spec) {
                p.add_outputs.push((name.clone(), spec.clone()));
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use telebridge_config::{Config, OutputConfig};

    use super::*;

    fn valid(f: impl FnOnce(&mut Config)) -> ValidConfig {
        let mut c = Config {
            outputs: vec![
                OutputConfig { url: "srt://:9000?mode=listener".into(), name: Some("studio".into()) },
                OutputConfig { url: "rtmp://live.example/app/KEY-ONE".into(), name: Some("youtube".into()) },
            ],
            ..Config::default()
        };
        f(&mut c);
        c.validate().unwrap()
    }

    #[test]
    fn a_new_rtmp_key_restarts_that_output_only() {
        let p = plan(&valid(|_| {}), &valid(|c| c.outputs[1].url = "rtmp://live.example/app/KEY-TWO".into()));
        assert!(!p.restart_media);
        assert_eq!(p.remove_outputs, ["youtube"]);
        assert_eq!(p.add_outputs.len(), 1);
        assert_eq!(p.add_outputs[0].0, "youtube");
    }

    #[test]
    fn adding_and_removing_outputs() {
        let p = plan(
            &valid(|_| {}),
            &valid(|c| {
                c.outputs.remove(0);
                c.outputs.push(OutputConfig::new("file:/media/rec.ts"));
            }),
        );
        assert!(!p.restart_media);
        assert_eq!(p.remove_outputs, ["studio"]);
        assert_eq!(p.add_outputs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["file:/media/rec.ts"]);
    }

    #[test]
    fn picture_changes_restart_the_media_and_nothing_else_is_needed() {
        let p = plan(&valid(|_| {}), &valid(|c| c.video.bitrate_kbps = 6000));
        assert!(p.restart_media);
        assert!(p.remove_outputs.is_empty() && p.add_outputs.is_empty());
    }

    #[test]
    fn the_decoder_section_does_not_touch_an_encoder() {
        let p = plan(&valid(|_| {}), &valid(|c| c.decoder.input = "srt://:9100?mode=listener".into()));
        assert!(p.is_empty(), "{p:?}");
        let p = plan(
            &valid(|c| c.role = "decoder".into()),
            &valid(|c| {
                c.role = "decoder".into();
                c.decoder.input = "srt://:9100?mode=listener".into();
            }),
        );
        assert!(p.restart_media);
    }

    #[test]
    fn pins_and_address_wait_for_the_next_start() {
        let p = plan(
            &valid(|_| {}),
            &valid(|c| {
                c.web.listen = "0.0.0.0:8080".into();
                c.gpio.led_live = 12;
            }),
        );
        assert!(p.is_empty());
        assert_eq!(p.next_start, ["web.listen", "gpio"]);
    }

    #[test]
    fn the_same_configuration_changes_nothing() {
        assert_eq!(plan(&valid(|_| {}), &valid(|_| {})), ChangePlan::default());
    }
}
