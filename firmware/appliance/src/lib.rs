//! The orchestrator: the only crate that knows every component. It wires the encoder pipeline
//! (media) to SRT outputs (srt) and publishes statistics.

pub mod decoder_role;
pub mod encoder_role;
mod error;
pub mod measure;
pub mod outputs;
pub mod relay_role;
pub mod stats;

pub use decoder_role::{run_decoder, DecodeOptions, DecodeSample, DecodeSampleCallback, DecodeSummary};
pub use encoder_role::{run_encoder, select_encoder, EncoderCommand, RunOptions, SampleCallback};
pub use error::AppError;
pub use relay_role::{run_relay, RelayOptions, RelaySample, RelaySummary};
pub use stats::{EncoderStats, StatsSample, Summary};
