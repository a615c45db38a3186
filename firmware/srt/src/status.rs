//! What every output reports (SRT, RTMP, recording): its state and counters, one type for all
//! (the contract's, which the panel reads without knowing srt).

pub use telebridge_contract::srt::{OutputState, OutputStatus};
