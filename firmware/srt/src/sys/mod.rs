//! Every unsafe line of the crate: libsrt's declarations (`ffi`) and the safe layer over them
//! (sockets, addresses, epoll, the listen hook, libsrt's errors and log). Outside this module
//! the crate is safe Rust (the workspace denies unsafe code; only this module allows it), and
//! the policy (latency, ways, reconnects, reject reasons in words) is pure (issue 62).

pub mod addr;
pub mod epoll;
pub mod error;
pub(crate) mod ffi;
pub mod listen_hook;
pub(crate) mod log;
pub mod socket;
