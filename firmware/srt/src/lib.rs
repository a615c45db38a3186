//! SRT for Telebridge, through libsrt (the reference implementation) inside GStreamer's
//! `srtsink`/`srtsrc`: element options from [`telebridge_config::SrtUrl`], statistics,
//! the reconnect policy and the reasons libsrt gives when it rejects a connection.

pub mod backoff;
pub mod input;
pub mod output;
pub mod reject;
pub mod stats;
pub mod supervisor;
pub mod ts_check;

pub use backoff::Backoff;
pub use input::{InputState, InputStatus, SrtInput};
pub use output::{OutputState, OutputStatus, SrtOutput};
pub use reject::{install_log_hook, RejectReason};
pub use stats::SrtStats;
