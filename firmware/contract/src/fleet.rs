//! Where the box stands with its fleet server, as the fleet client (the appliance's
//! `house::fleet`) writes it and the panel's System page reads it (`GET /api/fleet`).

use std::sync::Mutex;

use serde::Serialize;

/// What the fleet client is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FleetState {
    /// No server configured.
    #[default]
    Off,
    /// Polling; nothing assigned.
    Idle,
    /// Fetching a bundle.
    Downloading,
    /// A fetched bundle waits (on air, the maintenance window, the server's release).
    Waiting,
    /// The root helper installs it.
    Installing,
    /// Back on a new version, confirming it.
    Confirming,
    /// The server cannot be reached or refuses the box.
    Unreachable,
}

/// The fleet client's standing, for the panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct FleetView {
    /// What it is doing.
    pub state: FleetState,
    /// The server (`https://host:port`), without tokens.
    pub server: String,
    /// The box's id there.
    pub controller_id: String,
    /// The version the box runs.
    pub version: String,
    /// In words: what it does or waits for, or why the server cannot be used.
    pub message: String,
    /// The action worked on, if any, and its version.
    pub action: Option<(String, String)>,
    /// Bytes of the bundle fetched, and of how many.
    pub downloaded: Option<(u64, Option<u64>)>,
    /// When the server last answered, seconds since the Unix epoch.
    pub last_answer_unix: Option<u64>,
}

/// The standing, shared between the client that writes it and the panel.
#[derive(Debug, Default)]
pub struct FleetBoard(Mutex<FleetView>);

impl FleetBoard {
    /// The standing now.
    pub fn view(&self) -> FleetView {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes it.
    pub fn update(&self, f: impl FnOnce(&mut FleetView)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }
}
