//! What the panel asks of the machine under the daemon, which runs as the `telebridge` user and
//! may not do it itself: reboot, install an update bundle, write the setup code on the boot
//! partition. The appliance asks the root helper (`telebridge_appliance::house::host`); the API
//! only calls [`Host`].

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where the last update stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateState {
    /// None asked for since the box started, or the helper said nothing.
    Idle,
    /// A bundle is being checked and written.
    Installing,
    /// Written: the box boots into it at its next start.
    Installed,
    /// Refused or broken off: the message says why.
    Failed,
}

/// The last update's state, as `GET /api/update` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateStatus {
    /// Where it stands.
    pub state: UpdateState,
    /// In words: what is being done, or why it failed.
    pub message: String,
}

/// Why the machine did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No root helper here (a development machine, `--sim`, the tests): nothing can be done.
    #[error("{0} is done by the box's helper (telebridge-helper.path), which runs where systemd starts the daemon")]
    NoHelper(&'static str),
    /// The request could not be written.
    #[error("{what}: {detail}")]
    Request {
        /// What failed, in the user's words ("cannot ask for a reboot").
        what: &'static str,
        /// The system's words.
        detail: String,
    },
}

/// The machine under the daemon.
pub trait Host: Send + Sync + std::fmt::Debug + 'static {
    /// Asks for a reboot.
    fn reboot(&self) -> Result<(), HostError>;
    /// The last update's state.
    fn update_status(&self) -> UpdateStatus;
    /// Where an update bundle is to be stored before [`Host::install`].
    fn bundle_path(&self) -> Result<PathBuf, HostError>;
    /// Hands the bundle stored at `path` to the installer.
    fn install(&self, path: &Path) -> Result<(), HostError>;
    /// Publishes the one-time setup code (`Some`) in the file `web.setup_code_file` names, or
    /// removes the spent one (`None`).
    fn publish_setup_code(&self, file: &str, code: Option<&str>);
}
