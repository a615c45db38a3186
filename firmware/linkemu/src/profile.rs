//! Link profiles as `bench/links.toml` writes them (a copy of the project's
//! scenarios/links.toml): one direction-symmetric path, with figures from public measurements.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::impairment::{BurstLoss, LinkEvent, LinkParams};

/// The file: a list of profiles.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profiles {
    /// The profiles, in file order.
    pub profile: Vec<LinkProfile>,
}

/// One link profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkProfile {
    /// Short name (`lan`, `4g-fixed`, ...).
    pub name: String,
    /// Where the figures come from.
    #[serde(default)]
    pub source: String,
    /// Round-trip time the link adds, split evenly over both directions, ms.
    #[serde(default)]
    pub rtt_ms: f64,
    /// Standard deviation of the one-way delay, ms.
    #[serde(default)]
    pub jitter_ms: f64,
    /// Whether jitter may reorder packets (netem's behaviour); by default the link stays FIFO.
    #[serde(default)]
    pub reorder: bool,
    /// Independent random loss per packet, each direction, percent.
    #[serde(default)]
    pub loss_pct: f64,
    /// Gilbert-Elliott burst loss.
    #[serde(default)]
    pub burst_loss: Option<BurstLoss>,
    /// Bottleneck capacity each direction, kbit/s (0 = unlimited).
    #[serde(default)]
    pub rate_kbps: f64,
    /// The bottleneck's buffer, ms of traffic at `rate_kbps` (default 100 ms).
    #[serde(default)]
    pub queue_ms: Option<f64>,
    /// Time-varying changes.
    #[serde(default)]
    pub events: Vec<LinkEvent>,
    /// For sweeps: RTT from, to, step (ms).
    #[serde(default)]
    pub sweep_rtt_ms: Option<[f64; 3]>,
    /// The bottleneck's rate over time, on the way out (see [`crate::trace`]).
    #[serde(default)]
    pub trace: Option<String>,
}

/// Why profiles could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read.
    #[error("cannot read {0}: {1}")]
    Io(String, std::io::Error),
    /// Not valid TOML or unknown fields.
    #[error("{0}: {1}")]
    Parse(String, String),
    /// No profile of that name.
    #[error("no profile {name:?}; the profiles are: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names in the file.
        known: String,
    },
}

impl Profiles {
    /// The profiles built into this program (bench/links.toml as it was built), so that
    /// `telebridge measure --link NAME` works outside the repository.
    pub fn shipped() -> Self {
        Self::parse(SHIPPED_TOML).expect("the shipped profiles parse (tested)")
    }

    /// The profiles of `path`, or the built-in ones.
    pub fn load_or_shipped(path: Option<&Path>) -> Result<Self, ProfileError> {
        match path {
            Some(p) => Self::load(p),
            None => Ok(Self::shipped()),
        }
    }

    /// Reads a profiles file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io(path.display().to_string(), e))?;
        Self::parse(&text).map_err(|e| ProfileError::Parse(path.display().to_string(), e))
    }

    /// Parses profiles from TOML text.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The profile called `name`.
    pub fn get(&self, name: &str) -> Result<&LinkProfile, ProfileError> {
        self.profile.iter().find(|p| p.name == name).ok_or_else(|| ProfileError::Unknown {
            name: name.to_string(),
            known: self.profile.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
        })
    }
}

impl LinkProfile {
    /// The impairment parameters of one direction.
    pub fn params(&self) -> LinkParams {
        LinkParams {
            one_way_delay: Duration::from_secs_f64(self.rtt_ms.max(0.0) / 2000.0),
            jitter: Duration::from_secs_f64(self.jitter_ms.max(0.0) / 1000.0),
            reorder: self.reorder,
            loss_pct: self.loss_pct,
            burst_loss: self.burst_loss,
            rate_kbps: self.rate_kbps,
            queue: Duration::from_secs_f64(self.queue_ms.unwrap_or(100.0).max(0.0) / 1000.0),
        }
    }

    /// The profile's capacity trace, if it has one.
    pub fn capacity_trace(&self) -> Result<Option<crate::trace::CapacityTrace>, crate::trace::TraceError> {
        self.trace.as_deref().map(crate::trace::CapacityTrace::parse).transpose()
    }

    /// The RTTs of a sweep profile, in order (just the profile's RTT if it has no sweep).
    pub fn sweep(&self) -> Vec<f64> {
        match self.sweep_rtt_ms {
            Some([from, to, step]) if step > 0.0 => {
                let n = ((to - from) / step).floor() as usize;
                (0..=n).map(|i| from + step * i as f64).collect()
            }
            _ => vec![self.rtt_ms],
        }
    }
}

/// bench/links.toml, built in.
pub const SHIPPED_TOML: &str = include_str!("../../../bench/links.toml");

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = SHIPPED_TOML;

    #[test]
    fn reads_the_shipped_profiles_as_they_are() {
        let p = Profiles::parse(SHIPPED).unwrap();
        let names: Vec<_> = p.profile.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["lan", "metro-17ms", "transatlantic-100ms", "us-west-180ms", "sydney-360ms", "4g-fixed", "vpn-sweep"]
        );
        let g = p.get("4g-fixed").unwrap();
        assert_eq!(g.events.len(), 3);
        assert_eq!(g.params().one_way_delay, Duration::from_millis(75));
        assert_eq!(g.params().queue, Duration::from_millis(300));
        assert_eq!(p.get("vpn-sweep").unwrap().sweep().len(), 41);
        let err = p.get("mars").unwrap_err().to_string();
        assert!(err.starts_with("no profile \"mars\"; the profiles are: lan, metro-17ms"), "{err}");
    }
}
