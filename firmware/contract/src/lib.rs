//! The contract between the box's parts and its panel: the status types one part reports and
//! another (the daemon, the API, the metrics) reads, with no behaviour behind them. A leaf: it
//! depends on nothing of the workspace, so a transport (srt) and the panel's side (web) can
//! share a type without depending on the part that makes it (issue 62).
//!
//! So far: an output's status and libsrt's counters (`srt`: made by srt and the outputs, read by
//! the daemon, the panel and the metrics) and a bonded output's uplinks (`uplink`: made by bond,
//! carried in the output's status); the daemon's status and commands are to follow.

pub mod srt;
pub mod uplink;
