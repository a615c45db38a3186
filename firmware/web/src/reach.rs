//! How the paired boxes reach each other, decided for the user. The box that shows the code
//! (A) listens: the other has just reached it. If A's router takes UPnP requests, A asks it to
//! pass the bridge's UDP port (when pairing opens, and again every [`RENEW_EVERY`] while
//! paired and listening), and tells B the public address to call; if not, B calls the address it
//! typed, which works on one network or where the owner forwarded the port by hand, and the
//! panel says so.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use telebridge_sync::Locked;

use telebridge_pairing::upnp::{Gateway, UpnpError};
use tracing::{info, warn};

/// How long a mapping is asked for.
pub const LEASE: Duration = Duration::from_secs(3600);
/// How often a mapping is asked for again while it is needed.
pub const RENEW_EVERY: Duration = Duration::from_secs(20 * 60);
/// The mapping's name in the router's list.
const WHAT: &str = "telebridge bridge";

/// What the router said, for the panel and for B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// Not asked yet, or being asked.
    Unknown,
    /// The router passes `public` (its address and the port) to this box.
    Mapped {
        /// `IP:PORT` on the router's public side.
        public: String,
    },
    /// No mapping: why, in words.
    None(String),
}

impl Mapping {
    /// The words for the panel.
    pub fn words(&self, port: u16) -> String {
        match self {
            Mapping::Unknown => "asking the router to pass the bridge's port (UPnP) ...".into(),
            Mapping::Mapped { public } => {
                format!("the router passes UDP {port} at {public} to this box (UPnP; renewed while paired)")
            }
            Mapping::None(why) => format!(
                "no port mapping ({why}): a box on this network can call this one; from elsewhere, forward UDP {port} to this box in the router"
            ),
        }
    }
}

/// Shared mapping state.
pub type MappingSlot = Arc<Mutex<Mapping>>;

/// Asks the router for the mapping of UDP `port` (blocking; up to about 3 s without a router).
pub fn map(port: u16) -> Mapping {
    let asked = Gateway::discover().and_then(|g| {
        g.map_udp(port, LEASE, WHAT)?;
        g.external_ip()
    });
    match asked {
        Ok(ip) => {
            let public = std::net::SocketAddr::new(ip, port).to_string();
            info!(%public, port, "the router passes the bridge's port to this box (UPnP)");
            Mapping::Mapped { public }
        }
        Err(e) => {
            match &e {
                UpnpError::NoRouter => info!("no UPnP router: the bridge's port is not mapped"),
                _ => warn!(error = %e, "the router did not map the bridge's port"),
            }
            Mapping::None(e.to_string())
        }
    }
}

/// Removes the mapping of UDP `port` (best effort).
pub fn unmap(port: u16) {
    if let Ok(g) = Gateway::discover() {
        match g.unmap_udp(port) {
            Ok(()) => info!(port, "port mapping removed"),
            Err(e) => warn!(error = %e, "cannot remove the port mapping"),
        }
    }
}

/// Asks (off the runtime) and stores the answer in `slot`.
pub async fn refresh(slot: &MappingSlot, port: u16) -> Mapping {
    let m = tokio::task::spawn_blocking(move || map(port)).await.unwrap_or(Mapping::None("cancelled".into()));
    *slot.locked() = m.clone();
    m
}
