//! Fleet updates from one server (issue 61): the box as a client of Eclipse hawkBit's Direct
//! Device Integration API (DDI), which hawkBit, gooseBit and the services built on them serve.
//!
//! Two pure parts, the client around them thin: [`ddi`] reads what the server answers and
//! writes what the box sends; [`plan`] decides what the box does with an assigned bundle (fetch,
//! wait while on air or outside the maintenance window, install through the root helper,
//! reboot, confirm once healthy, report a fallback) as a function of where it stands, what
//! happened and what it knows of itself. [`check`] hashes the bundle as it arrives.

pub mod check;
pub mod ddi;
pub mod plan;
