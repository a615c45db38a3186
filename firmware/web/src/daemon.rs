//! What the API needs of the daemon: the contract's [`Daemon`] (the appliance's daemon is one;
//! the API's tests also run against a fake).

pub use telebridge_contract::daemon::Daemon;
