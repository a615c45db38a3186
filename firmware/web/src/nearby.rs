//! The boxes on the local network: this box's announcement kept up to date with its name, role,
//! pairing state and panel port (`web.announce`), and `GET /api/discovered` for the Pair page.
//!
//! Discovery runs only when the panel listens beyond loopback: a panel nobody else can reach
//! has nothing to announce, and a box under test on loopback sends nothing to the LAN.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use telebridge_discovery::{Announcement, BoxId, Discovery, Found};
use tracing::warn;

use crate::error::ApiError;
use crate::AppState;

/// How often the announcement is compared with the box's state (a change is announced at the
/// next turn).
const KEEP_EVERY: Duration = Duration::from_secs(1);

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

/// `GET /api/discovered`.
#[derive(Debug, Serialize)]
pub struct DiscoveredView {
    /// The boxes found, by name (never this box).
    pub boxes: Vec<Found>,
    /// Whether this box announces itself now.
    pub announcing: bool,
    /// Why the list stays empty or this box is not announced, in words.
    pub note: Option<String>,
}

impl Nearby {
    /// Discovery for a box whose panel listens on `panel`, its id derived from `seed` (the
    /// machine id and the configuration's path).
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

    /// No discovery (the API's tests, a daemon without a panel).
    pub fn off(why: &str) -> Self {
        Self { discovery: None, off: Some(why.into()), id: BoxId::from_seed(why), panel: ([127, 0, 0, 1], 0).into() }
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

    /// Announces `what` (`None`: says goodbye).
    fn announce(&self, what: Option<&Announcement>) {
        let Some(d) = &self.discovery else { return };
        let address: Option<IpAddr> = Some(self.panel.ip()).filter(|ip| !ip.is_unspecified());
        if let Err(e) = d.announce(what, address) {
            warn!(error = %e, "cannot announce this box");
        }
    }

    /// Whether `ip` is an address a box on the network announced (a hint, not a proof: see
    /// `telebridge_pairing::addresses`).
    pub fn announced(&self, ip: IpAddr) -> bool {
        self.discovery.as_ref().is_some_and(|d| d.list().iter().any(|f| f.addresses.contains(&ip)))
    }

    /// Stops announcing (a goodbye, so the other boxes drop this one at once).
    pub fn stop(&self) {
        self.announce(None);
    }
}

/// What this box announces now, from its running configuration and its pairing; `None` when
/// `web.announce` is off or the configuration does not validate.
fn announcement(s: &AppState, nearby: &Nearby) -> Option<Announcement> {
    let config = s.store.running()?;
    config.raw.web.announce.then(|| Announcement {
        id: nearby.id.clone(),
        name: config.name.clone(),
        role: config.role,
        pairing: s.pairing.announced_state(),
        panel_port: nearby.panel.port(),
    })
}

/// Keeps the announcement up to date while the daemon runs.
pub(crate) fn spawn_keeper(s: &AppState) {
    if s.nearby.discovery.is_none() {
        return;
    }
    let s = s.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(KEEP_EVERY);
        loop {
            tick.tick().await;
            let what = announcement(&s, &s.nearby);
            let nearby = s.nearby.clone();
            // A change says goodbye first, which waits for mdns-sd's thread.
            let _ = tokio::task::spawn_blocking(move || nearby.announce(what.as_ref())).await;
        }
    });
}

/// `GET /api/discovered`: the boxes found on the local network.
pub(crate) async fn discovered(State(s): State<AppState>) -> Result<Json<DiscoveredView>, ApiError> {
    let announcing = s.nearby.discovery.is_some() && announcement(&s, &s.nearby).is_some();
    let note = match (&s.nearby.off, announcing) {
        (Some(why), _) => Some(format!("not looking for boxes: {why}")),
        (None, false) => Some("this box is not announced (web.announce is off)".into()),
        (None, true) => None,
    };
    let boxes = s.nearby.discovery.as_ref().map(Discovery::list).unwrap_or_default();
    Ok(Json(DiscoveredView { boxes, announcing, note }))
}
