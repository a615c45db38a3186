//! What the API needs of the daemon, declared here: the status it publishes, the commands it
//! takes, whether its main loop turns, the preview, and (under `--sim`) the simulated hardware.
//! The appliance's [`DaemonHandle`] is one; the API's tests also run against a fake.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use telebridge_sync::Locked;

use telebridge_appliance::{DaemonCommand, DaemonHandle, DaemonStatus};
use telebridge_gpio::backend::SimBoard;
use tokio::sync::{mpsc, watch};

/// The daemon as the API sees it.
pub trait Daemon: Send + Sync + std::fmt::Debug + 'static {
    /// The latest status, and its changes.
    fn status(&self) -> watch::Receiver<DaemonStatus>;
    /// Where commands go.
    fn commands(&self) -> mpsc::Sender<DaemonCommand>;
    /// How long ago the main loop last turned.
    fn heartbeat_age(&self) -> Duration;
    /// The latest preview JPEG, while the encoder runs.
    fn preview(&self) -> Option<Vec<u8>>;
    /// The simulated board, under `--sim`.
    fn sim(&self) -> Option<SimBoard>;
    /// The simulated HDMI cable, under `--sim` (`true`: plugged in).
    fn sim_cable(&self) -> Option<Arc<AtomicBool>>;
    /// Control messages from the paired box (the bridge's connection); `None` when the daemon
    /// has no bridge.
    fn peer_messages(&self) -> Option<tokio::sync::broadcast::Receiver<Vec<u8>>> {
        None
    }
    /// The latest JPEG of what arrives from the paired box (bridge role).
    fn received_preview(&self) -> Option<Vec<u8>> {
        None
    }
}

impl Daemon for DaemonHandle {
    fn status(&self) -> watch::Receiver<DaemonStatus> {
        self.status.clone()
    }

    fn commands(&self) -> mpsc::Sender<DaemonCommand> {
        self.commands.clone()
    }

    fn heartbeat_age(&self) -> Duration {
        self.heartbeat.age()
    }

    fn preview(&self) -> Option<Vec<u8>> {
        self.preview.locked().clone()
    }

    fn sim(&self) -> Option<SimBoard> {
        self.sim.clone()
    }

    fn sim_cable(&self) -> Option<Arc<AtomicBool>> {
        self.sim_cable.clone()
    }

    fn peer_messages(&self) -> Option<tokio::sync::broadcast::Receiver<Vec<u8>>> {
        Some(self.peer_messages.subscribe())
    }

    fn received_preview(&self) -> Option<Vec<u8>> {
        self.received_preview.locked().clone()
    }
}
