//! This box's part in discovery: the responder started for the panel's address (or why not),
//! its id, its announcement and its goodbye; the API reads the boxes found through
//! [`NearbyBoxes`].
//!
//! Discovery runs only when the panel listens beyond loopback: a panel nobody else can reach
//! has nothing to announce, and a box under test on loopback sends nothing to the LAN.

use std::net::{IpAddr, SocketAddr};

use telebridge_contract::nearby::{Found, NearbyBoxes};
use tracing::warn;

use crate::{Announcement, BoxId, Discovery};

/// This box's part in discovery.
#[derive(Debug)]
pub struct Nearby {
    /// The responder, when discovery runs.
    discovery: Option<Discovery>,
    /// Why it does not, in words, for the panel.
    off: Option<String>,
    /// This box's id on the network.
    id: BoxId,
    /// Where the panel listens.
    panel: SocketAddr,
}

impl Nearby {
    /// Discovery for a box whose panel listens on `panel`, its id derived from `seed` (the
    /// machine id and the configuration's path: [`Nearby::seed`]).
    pub fn start(panel: SocketAddr, seed: &str) -> Self {
        let id = BoxId::from_seed(seed);
        if panel.ip().is_loopback() {
            let off = format!("the panel listens on {panel} only (web.listen): no box elsewhere could reach it");
            return Self { discovery: None, off: Some(off), id, panel };
        }
        let on = Some(panel.ip()).filter(|ip| !ip.is_unspecified());
        match Discovery::start(Some(id.clone()), on) {
            Ok(d) => Self { discovery: Some(d), off: None, id, panel },
            Err(e) => {
                warn!(error = %e, "boxes on the network will not be found, nor this one announced");
                Self { discovery: None, off: Some(e.to_string()), id, panel }
            }
        }
    }

    /// The seed of this box's id: the machine's id (never sent itself) and the configuration's
    /// path; a box without a configuration file (kept in memory) is a new box at each start.
    pub fn seed(config: Option<&std::path::Path>) -> String {
        let machine = std::fs::read_to_string("/etc/machine-id").unwrap_or_default();
        match config {
            Some(p) => format!("{} {}", machine.trim(), p.display()),
            None => format!("{} {} {:?}", machine.trim(), std::process::id(), std::time::SystemTime::now()),
        }
    }

    /// Whether discovery runs (and an announcement is worth keeping).
    pub fn runs(&self) -> bool {
        self.discovery.is_some()
    }

    /// This box's id on the network.
    pub fn id(&self) -> &BoxId {
        &self.id
    }

    /// The port the panel (and pairing) answers on, as announced.
    pub fn panel_port(&self) -> u16 {
        self.panel.port()
    }

    /// Announces `what` (`None`: says goodbye). Waits for mdns-sd's thread: call it where
    /// blocking is allowed.
    pub fn announce(&self, what: Option<&Announcement>) {
        let Some(d) = &self.discovery else { return };
        let address: Option<IpAddr> = Some(self.panel.ip()).filter(|ip| !ip.is_unspecified());
        if let Err(e) = d.announce(what, address) {
            warn!(error = %e, "cannot announce this box");
        }
    }

    /// Stops announcing (a goodbye, so the other boxes drop this one at once).
    pub fn stop(&self) {
        self.announce(None);
    }
}

impl NearbyBoxes for Nearby {
    fn found(&self) -> Vec<Found> {
        self.discovery.as_ref().map(Discovery::list).unwrap_or_default()
    }

    fn announced(&self, ip: IpAddr) -> bool {
        self.discovery.as_ref().is_some_and(|d| d.list().iter().any(|f| f.addresses.contains(&ip)))
    }

    fn off(&self) -> Option<String> {
        self.off.clone()
    }
}
