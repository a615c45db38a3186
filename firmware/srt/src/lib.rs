//! SRT for Telebridge, on the system libsrt (the reference implementation) directly: callers,
//! rendezvous and listeners that serve any number of callers, both directions on one
//! connection, libsrt's full statistics, the reconnect policy and the reasons libsrt gives when
//! it rejects a connection. Options come from [`telebridge_config::SrtUrl`].

pub mod backoff;
pub mod connect;
pub mod input;
pub mod latency;
pub mod library;
pub mod output;
pub mod peer;
pub mod reject;
pub mod stats;
pub mod status;
pub mod supervisor;
#[allow(unsafe_code)]
mod sys;
pub mod ts_check;
pub mod ways;

pub(crate) use sys::ffi;
pub use sys::{addr, epoll, error, listen_hook, socket};

pub use backoff::Backoff;
pub use ffi::check_library;
pub use input::{InputState, InputStatus, SrtInput};
pub use output::{OutputState, OutputStatus, SrtOutput};
pub use reject::{install_log_hook, RejectReason};
pub use stats::SrtStats;

/// One line of libsrt's log (from `sys::log`, on libsrt's threads): rejections are recorded
/// for the status, errors go to `tracing`. Wired here, at the root, so that the unsafe layer
/// calls up without depending on the policy above it.
fn on_libsrt_line(level: i32, text: &str) {
    reject::on_libsrt_line(level, text);
}
