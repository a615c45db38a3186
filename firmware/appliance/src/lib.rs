//! The orchestrator: the only crate that knows every component. Two rooms, one above the
//! other:
//!
//! - [`roles`]: what the box does with media (encode and send, receive and show, both with a
//!   paired box, relay, measure), each a struct stepped by its loop's events, with the leaves
//!   only they use (statistics, outputs, the slate's words, the signal watch, talkback's lock);
//! - [`daemon`]: `telebridge run`, above the roles: its state machine (`state`), the main loop
//!   that starts and stops a role, change plans (`changes`), the editable configuration
//!   (`config_store`), the tally, systemd notify, the one-second sample it publishes (`sample`)
//!   and what the panel's menus offer (`devices`).
//!
//! At the root, what both use: errors (`AppError`) and the log ring (`logs`).

pub mod daemon;
mod error;
pub mod logs;
pub(crate) use telebridge_rate as rate;
pub mod roles;

pub use daemon::{config_store, devices, sample, sd_notify, state, tally};
pub use roles::{decoder_stats, measure, outputs, stats, talk};

pub use daemon::changes::{plan as plan_changes, ChangePlan};
pub use daemon::config_store::{ConfigStore, StoreError};
pub use daemon::sample::{LinkView, MediaSample};
pub use daemon::{DaemonCommand, DaemonHandle, DaemonOptions, DaemonStatus};
pub use error::AppError;
pub use roles::bridge::{run_bridge, BridgeOptions, BridgeSample, BridgeSampleCallback, BridgeSummary};
pub use roles::decoder::{run_decoder, DecodeOptions, DecodeSample, DecodeSampleCallback, DecodeSummary};
pub use roles::encoder::{run_encoder, select_encoder, EncoderCommand, RunOptions, SampleCallback};
pub use roles::peer::{PeerFeed, PeerLink, PEER_OUTPUT};
pub use roles::relay::{run_relay, RelayOptions, RelaySample, RelaySummary};
pub use roles::stats::{EncoderStats, StatsSample, Summary};
pub use telebridge_pairing::PeerRoute;
