//! Pairing two boxes with a code, through their panels. Box A opens pairing and shows a code;
//! the owner types it into box B's panel with A's address; B asks A twice (`/api/pair/hello`,
//! `/api/pair/confirm`, the only pairing endpoints open without a session: they carry the
//! password-authenticated key exchange, which a stranger gets one guess at per code). Both
//! boxes store the pairing (0600) and their bridges connect.
//!
//! Who listens: A, since B has just reached it (the round trip is measured on the way, and the
//! calling box B sets the SRT latency from it).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use telebridge_sync::Locked;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use telebridge_config::ValidConfig;
use telebridge_contract::daemon::DaemonCommand;
use telebridge_contract::nearby::PairingState;
use telebridge_pairing::store::{StoredSide, Via};
use telebridge_pairing::{link_route, link_url, PairRecord, PairingCode, PeerRoute, Reach, Shower};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::error::ApiError;
use crate::reach::{self, Mapping, MappingSlot};
use crate::AppState;

mod join;
mod peer;

pub(crate) use join::join;
pub(crate) use peer::{confirm, hello};

/// A box's pairing: the code it may show, the pairing it holds.
#[derive(Debug)]
pub struct Pairing {
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
    /// What this box's router said about passing the bridge's port.
    mapping: MappingSlot,
}

#[derive(Debug)]
struct Inner {
    shower: Shower,
    record: Option<PairRecord>,
    /// The last thing that happened, in words, for the panel.
    last: Option<String>,
    /// Why the box holds no pairing, when it lost one ("studio-a unpaired this box").
    unpaired: Option<String>,
}

/// The pairing as the panel shows it (no secrets).
#[derive(Debug, Serialize)]
pub struct PairingView {
    /// The code this box shows (`7Q4-KM2`), while pairing is open.
    pub code: Option<String>,
    /// The pairing held, if any.
    pub paired: Option<PairedView>,
    /// The last thing that happened ("a wrong code was tried from 192.0.2.7").
    pub last: Option<String>,
    /// How the other box reaches this one (or will), in words: what the router did, or what
    /// the owner must do.
    pub reach: Option<String>,
}

/// A pairing held, without its secrets.
#[derive(Debug, Serialize)]
pub struct PairedView {
    /// The other box.
    pub peer: String,
    /// Names the pair.
    pub pair_id: String,
    /// `a`: this box showed the code; `b`: it was typed here.
    pub side: StoredSide,
    /// `listen` or `call`.
    pub reach: Reach,
    /// What this box calls, when it calls.
    pub calls: Option<String>,
    /// How the listening box is reached.
    pub via: Via,
    /// Where a rendezvous meets the other box, tried in turn when listen/call does not connect.
    pub rendezvous: Option<String>,
    /// The round trip measured while pairing, ms.
    pub rtt_ms: u32,
    /// The connection (no secrets).
    pub link: Option<String>,
    /// When (Unix seconds).
    pub paired_at_unix: u64,
}

fn fresh_code() -> Result<PairingCode, ApiError> {
    PairingCode::generate()
        .map_err(|e| ApiError::Internal { what: "cannot make a pairing code", detail: e.to_string() })
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Pairing {
    /// The pairing of box `box_id`, stored at `path` (none: kept in memory only), as found there.
    pub fn load(box_id: &str, path: Option<PathBuf>) -> Self {
        let record = match path.as_deref().map(telebridge_pairing::store::load) {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                warn!(error = %e, "the stored pairing cannot be read; the box is not paired");
                None
            }
            None => None,
        };
        let inner = Inner { shower: Shower::new(box_id), record, last: None, unpaired: None };
        Self { path, inner: Mutex::new(inner), mapping: Arc::new(Mutex::new(Mapping::Unknown)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.locked()
    }

    /// The bridge's connection for the pairing held, under `config`'s bridge settings, or why
    /// there is none.
    pub fn link(&self, config: &telebridge_config::ValidConfig) -> Result<PeerRoute, String> {
        let inner = self.lock();
        match &inner.record {
            Some(record) => link_route(record, &config.bridge).map_err(|e| e.to_string()),
            None => Err(inner
                .unpaired
                .clone()
                .unwrap_or_else(|| "not paired: pair with another box in the panel (Pairing)".into())),
        }
    }

    /// A control message from the paired box: its live state for the tally, or its farewell
    /// (the pairing it ended, forgotten here too).
    pub fn on_peer_message(&self, data: &[u8]) -> Option<PeerMessage> {
        let mut inner = self.lock();
        let record = inner.record.clone()?;
        if let Some(live) = telebridge_pairing::control::read_on_air(&record, data, unix_now()) {
            return Some(PeerMessage::Taken(live));
        }
        if !telebridge_pairing::control::is_farewell(&record, data, unix_now()) {
            warn!("a control message from the paired box that is neither its live state nor its farewell: ignored");
            return None;
        }
        if let Some(path) = &self.path {
            if let Err(e) = telebridge_pairing::store::remove(path) {
                warn!(error = %e, "cannot remove the pairing the other box ended");
            }
        }
        let why = format!("{} unpaired this box: pair again to connect", record.peer_id);
        info!(peer = %record.peer_id, "the paired box unpaired this box");
        inner.record = None;
        inner.last = Some(why.clone());
        inner.unpaired = Some(why);
        Some(PeerMessage::Farewell(record))
    }

    /// The pairing as the panel shows it, under `config`'s bridge settings.
    pub fn view(&self, config: Option<&ValidConfig>) -> PairingView {
        let mut inner = self.lock();
        let expired = inner.shower.expire(Instant::now());
        if expired.closed {
            inner.last = Some(format!(
                "pairing closed after {} wrong codes were tried: open it again",
                telebridge_pairing::guard::MAX_WRONG
            ));
        } else if expired.late > 0 {
            inner.last = Some("a pairing attempt sent no confirmation in time: counted as a wrong code".into());
        }
        let paired = inner.record.as_ref().map(|r| PairedView {
            peer: r.peer_id.clone(),
            pair_id: r.pair_id.clone(),
            side: r.side,
            reach: r.reach,
            calls: r.peer.clone(),
            via: r.via,
            rendezvous: r.rendezvous.clone(),
            rtt_ms: r.rtt_ms,
            link: config.and_then(|c| link_url(r, &c.bridge).ok()).map(|u| u.to_string()),
            paired_at_unix: r.paired_at_unix,
        });
        let code = inner.shower.code(Instant::now());
        let port = bridge_port(config);
        let mapping = self.mapping.locked().clone();
        let reach = match inner.record.as_ref().map(|r| (r.reach, r.via)) {
            Some((Reach::Call, Via::PortMapping)) => {
                Some("this box calls the other's public address; its router passes the port (UPnP)".into())
            }
            Some((Reach::Call, Via::Direct)) => Some("this box calls the other at the address typed".into()),
            Some((Reach::Listen, _)) => Some(mapping.words(port)),
            None if code.is_some() => Some(mapping.words(port)),
            None => None,
        };
        PairingView { code, paired, last: inner.last.clone(), reach }
    }

    /// Where this box stands on pairing, as it announces it on the network.
    pub fn announced_state(&self) -> PairingState {
        let inner = self.lock();
        if inner.shower.code(Instant::now()).is_some() {
            PairingState::Open
        } else if inner.record.is_some() {
            PairingState::Paired
        } else {
            PairingState::Unpaired
        }
    }

    /// Keeps `record` (stored first, so a pairing the box could not keep is not announced).
    fn keep(&self, record: PairRecord) -> Result<(), ApiError> {
        if let Some(path) = &self.path {
            telebridge_pairing::store::save(path, &record)
                .map_err(|e| ApiError::Internal { what: "cannot store the pairing", detail: e.to_string() })?;
        }
        info!(peer = %record.peer_id, pair = %record.pair_id, reach = ?record.reach, rtt_ms = record.rtt_ms, "paired");
        let mut inner = self.lock();
        inner.last = Some(format!("paired with {}", record.peer_id));
        inner.record = Some(record);
        Ok(())
    }
}

/// What the paired box said on the bridge's connection.
#[derive(Debug)]
pub enum PeerMessage {
    /// It has this box's picture on air (its tally message), or not.
    Taken(bool),
    /// It unpaired: the pairing it ended.
    Farewell(PairRecord),
}

/// Where a configuration puts the bridge's port (7700 with none that validates).
fn bridge_port(config: Option<&ValidConfig>) -> u16 {
    config.map_or(7700, |c| c.bridge.port)
}

impl Pairing {
    /// Hands the daemon the bridge's connection for the pairing now held (or why there is none).
    pub async fn announce(&self, config: Option<&ValidConfig>, daemon: &mpsc::Sender<DaemonCommand>) {
        let link = match config {
            Some(c) => self.link(c),
            None => Err("the configuration does not validate".into()),
        };
        let _ = daemon.send(DaemonCommand::PeerLink(Box::new(link))).await;
    }

    /// Whether this box has the paired box's picture on air, for its tally, when paired: the
    /// signed message.
    pub fn taken_message(&self, taken: bool) -> Option<Vec<u8>> {
        let record = self.lock().record.clone()?;
        Some(telebridge_pairing::control::on_air(&record, taken, unix_now()))
    }

    /// Shows a new code (the panel's button, or a long press of the box's button), and asks the
    /// router to pass the bridge's port meanwhile (this box will listen) when `config` allows.
    pub fn open(&self, config: Option<&ValidConfig>) -> Result<(), ApiError> {
        let code = fresh_code()?;
        {
            let mut inner = self.lock();
            inner.shower.open(code, Instant::now());
            inner.last = Some("pairing open: type the code into the other box's panel".into());
        }
        info!("pairing opened: a code is shown");
        *self.mapping.locked() = Mapping::Unknown;
        let (slot, port) = (self.mapping.clone(), bridge_port(config));
        if config.is_some_and(|c| c.bridge.port_mapping) {
            tokio::spawn(async move { reach::refresh(&slot, port).await });
        } else {
            *slot.locked() = Mapping::None("switched off: bridge.port_mapping".into());
        }
        Ok(())
    }

    /// The router's mapping of a pairing that ended, removed (this box listened through it).
    pub fn forget_mapping(&self, ended: &PairRecord, config: Option<&ValidConfig>) {
        if ended.reach == Reach::Listen && ended.via == Via::PortMapping {
            let port = bridge_port(config);
            *self.mapping.locked() = Mapping::Unknown;
            tokio::task::spawn_blocking(move || reach::unmap(port));
        }
    }

    /// Asks the router again for the mapping this box listens through, if it listens through
    /// one and `config` allows it.
    pub async fn keep_mapping(&self, config: Option<&ValidConfig>) {
        let through_router =
            self.lock().record.as_ref().is_some_and(|r| r.reach == Reach::Listen && r.via == Via::PortMapping);
        if through_router && config.is_some_and(|c| c.bridge.port_mapping) {
            reach::refresh(&self.mapping, bridge_port(config)).await;
        }
    }
}

/// `GET /api/pairing`.
pub(crate) async fn get_pairing(State(s): State<AppState>) -> Result<Json<PairingView>, ApiError> {
    Ok(Json(s.pairing.view(s.store.running().as_ref())))
}

/// `POST /api/pairing/open`: show a new code.
pub(crate) async fn open(State(s): State<AppState>) -> Result<Json<PairingView>, ApiError> {
    let config = s.store.running();
    s.pairing.open(config.as_ref())?;
    Ok(Json(s.pairing.view(config.as_ref())))
}

/// `DELETE /api/pairing`: forget the pairing; the bridge tells the other box and stops.
pub(crate) async fn unpair(State(s): State<AppState>) -> Result<Json<PairingView>, ApiError> {
    let held = s.pairing.lock().record.clone();
    if let Some(record) = &held {
        // The farewell goes on the bridge's connection, if it is up; the connection stays until
        // the other box has it (SRT hands it over after its latency).
        let farewell = telebridge_pairing::control::farewell(record, unix_now());
        let _ = s.daemon.commands().send(DaemonCommand::ToPeer(farewell)).await;
        tokio::time::sleep(farewell_wait(&s)).await;
    }
    if let Some(path) = &s.pairing.path {
        telebridge_pairing::store::remove(path)
            .map_err(|e| ApiError::Internal { what: "cannot remove the pairing", detail: e.to_string() })?;
    }
    let gone = {
        let mut inner = s.pairing.lock();
        let gone = inner.record.take();
        inner.last = gone.as_ref().map(|r| format!("unpaired from {}", r.peer_id));
        inner.unpaired = Some("unpaired on this box: pair again to connect".into());
        gone
    };
    if let Some(r) = gone {
        info!(peer = %r.peer_id, "unpaired");
        let config = s.store.running();
        s.pairing.forget_mapping(&r, config.as_ref());
        s.pairing.announce(config.as_ref(), &s.daemon.commands()).await;
    }
    Ok(Json(s.pairing.view(s.store.running().as_ref())))
}

/// How long the farewell needs to reach the other box: its SRT latency and a round trip, and a
/// margin; at most 3 s.
fn farewell_wait(s: &AppState) -> std::time::Duration {
    let status = s.daemon.status().borrow().clone();
    let peer = status.media.as_ref().and_then(|m| {
        m.outputs().iter().find(|o| o.name == telebridge_contract::sample::PEER_OUTPUT).map(|o| o.srt.clone())
    });
    let ms = peer.map_or(0.0, |srt| srt.negotiated_latency_ms as f64 + 2.0 * srt.rtt_ms + 250.0);
    std::time::Duration::from_millis(ms.clamp(0.0, 3000.0) as u64)
}
