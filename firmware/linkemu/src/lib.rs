//! A network link emulator in user space (this project's kernels have no netem).
//!
//! [`Impairment`] is the pure model of one direction of a link: a pure function of
//! (state, packet, now) -> verdict, seeded so a run can be repeated. [`relay`] applies it to a
//! UDP relay: listen on one port, forward to a target, relay replies back.

pub mod impairment;
pub mod ip_mode;
pub mod profile;
pub mod relay;
mod rng;
#[allow(unsafe_code)]
mod sys;
pub mod trace;

pub use impairment::{Impairment, LinkParams, Verdict};
pub use profile::{LinkProfile, Profiles};
pub use trace::{CapacityTrace, TraceError};
