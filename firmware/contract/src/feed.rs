//! The box's two feeds: what it sends and what it receives. The sound's meters and the live
//! monitor name them so.

use serde::{Deserialize, Serialize};

/// Which feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feed {
    /// What this box encodes and sends (encoder, bridge).
    Programme,
    /// What this box receives and shows (decoder, bridge).
    Received,
}

impl Feed {
    /// Both, in the order the panel shows them.
    pub const ALL: [Feed; 2] = [Feed::Programme, Feed::Received];

    /// Its name in the API, the metrics and URLs.
    pub fn name(self) -> &'static str {
        match self {
            Feed::Programme => "programme",
            Feed::Received => "received",
        }
    }

    /// The feed named `name` ([`Feed::name`]), or what is allowed.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            format!("{name:?} is not a feed: programme (what this box sends) or received (what it receives)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feed_reads_back_from_its_name_and_nothing_else_is_one() {
        for f in Feed::ALL {
            assert_eq!(Feed::parse(f.name()), Ok(f));
        }
        assert_eq!(
            Feed::parse("preview").unwrap_err(),
            "\"preview\" is not a feed: programme (what this box sends) or received (what it receives)"
        );
    }
}
