//! The orchestrator: the only crate that knows every component. Three rooms, each above the
//! one before:
//!
//! - [`roles`]: what the box does with media (encode and send, receive and show, both with a
//!   paired box, relay, measure), each a struct stepped by its loop's events, with the leaves
//!   only they use (statistics, outputs, the slate's words, the signal watch, talkback's lock);
//! - [`daemon`]: `telebridge run`'s main loop above the roles: it steps the contract's state
//!   machine, starts and stops a role, plans changes (`changes`), keeps the tally, speaks
//!   systemd's protocol and publishes the contract's status;
//! - [`house`]: the one place that wires the box: the panel's ports, the daemon, the editable
//!   configuration and its reload, discovery and this box's announcement, the pairing's tasks,
//!   the panel and systemd, started and stopped in order.
//!
//! What they report (the status, the samples, the state machine) is the contract crate's, so
//! the panel's side depends on it and not on this crate. At the root: errors (`AppError`) and
//! the libraries' logs routed through `tracing` (`logs`).

pub mod daemon;
mod error;
pub mod house;
pub mod logs;
pub(crate) use telebridge_rate as rate;
pub mod roles;

pub use daemon::{DaemonCommand, DaemonHandle, DaemonOptions, DaemonStatus};
pub use error::AppError;
pub use roles::bridge::{run_bridge, BridgeOptions, BridgeSampleCallback};
pub use roles::decoder::{run_decoder, DecodeOptions, DecodeSampleCallback};
pub use roles::encoder::{run_encoder, select_encoder, EncoderCommand, RunOptions, SampleCallback};
pub use roles::relay::{run_relay, RelayOptions};
pub use roles::{measure, outputs};
pub use telebridge_contract::roles::StatsSample;
