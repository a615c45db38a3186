//! The contract between the box's parts and its panel: the status types one part reports and
//! another (the daemon, the API, the metrics) reads, with no behaviour behind them. A leaf: it
//! depends on nothing of the workspace, so a transport (srt) and the panel's side (web) can
//! share a type without depending on the part that makes it (issue 62).
//!
//! It starts with a bonded output's uplinks (made by bond, carried in srt's output status, read
//! by the metrics); the daemon's status and commands are to follow.

pub mod uplink;
