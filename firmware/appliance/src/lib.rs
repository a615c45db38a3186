//! The orchestrator: the only crate that knows every component. It wires the encoder pipeline
//! (media) to SRT outputs (srt) and publishes statistics.

pub mod advice;
mod changes;
pub mod config_store;
pub mod daemon;
pub mod decoder_stats;
pub mod devices;
mod error;
pub mod logs;
pub mod measure;
pub mod outputs;
pub(crate) use telebridge_rate as rate;
pub mod roles;
pub mod sample;
pub mod sd_notify;
pub mod signal;
pub mod slate;
pub mod state;
pub mod stats;
pub mod talk;
pub mod tally;

pub use changes::{plan as plan_changes, ChangePlan};
pub use config_store::{ConfigStore, StoreError};
pub use daemon::{DaemonCommand, DaemonHandle, DaemonOptions, DaemonStatus};
pub use error::AppError;
pub use roles::bridge::{run_bridge, BridgeOptions, BridgeSample, BridgeSampleCallback, BridgeSummary};
pub use roles::decoder::{run_decoder, DecodeOptions, DecodeSample, DecodeSampleCallback, DecodeSummary};
pub use roles::encoder::{run_encoder, select_encoder, EncoderCommand, RunOptions, SampleCallback};
pub use roles::peer::{PeerFeed, PeerLink, PEER_OUTPUT};
pub use roles::relay::{run_relay, RelayOptions, RelaySample, RelaySummary};
pub use sample::{LinkView, MediaSample};
pub use stats::{EncoderStats, StatsSample, Summary};
pub use telebridge_pairing::PeerRoute;
