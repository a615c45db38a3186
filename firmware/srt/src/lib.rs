//! SRT for Telebridge, on the system libsrt (the reference implementation) directly: callers,
//! rendezvous and listeners that serve any number of callers, both directions on one
//! connection, libsrt's full statistics, the reconnect policy and the reasons libsrt gives when
//! it rejects a connection. Options come from [`telebridge_config::SrtUrl`].

pub mod addr;
pub mod backoff;
pub mod connect;
pub mod epoll;
pub mod error;
pub(crate) mod ffi;
pub mod input;
pub mod latency;
pub mod library;
pub mod listen_hook;
pub mod output;
pub mod peer;
pub mod reject;
pub mod socket;
pub mod stats;
pub mod status;
pub mod supervisor;
pub mod ts_check;
pub mod ways;

pub use backoff::Backoff;
pub use ffi::check_library;
pub use input::{InputState, InputStatus, SrtInput};
pub use output::{OutputState, OutputStatus, SrtOutput};
pub use reject::{install_log_hook, RejectReason};
pub use stats::SrtStats;
