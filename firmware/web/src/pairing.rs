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

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use telebridge_appliance::DaemonCommand;
use telebridge_pairing::store::{StoredSide, Via};
use telebridge_pairing::{
    link_route, link_url, wire, PairError, PairRecord, PairingCode, PeerRoute, Reach, Refusal, Shower, ShowerError,
    Side, Typer, TyperError,
};
use tracing::{info, warn};

use crate::body::read_body;
use crate::error::ApiError;
use crate::pair_client::{self, Answer};
use crate::reach::{self, Mapping, MappingSlot};
use crate::AppState;

/// The panel's port when the address typed names none.
const DEFAULT_PANEL_PORT: u16 = 80;

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
    /// When A answered a hello (its round trip to B's confirmation is A's measurement).
    answered: Option<Instant>,
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
    /// The last thing that happened ("wrong code: a new one is shown").
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
        let inner = Inner { shower: Shower::new(box_id), record, answered: None, last: None, unpaired: None };
        Self { path, inner: Mutex::new(inner), mapping: Arc::new(Mutex::new(Mapping::Unknown)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
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

    /// A control message from the paired box: the pairing it ended when it was its farewell
    /// (forgotten here too).
    fn on_peer_message(&self, data: &[u8]) -> Option<PairRecord> {
        let mut inner = self.lock();
        let record = inner.record.clone()?;
        if !telebridge_pairing::control::is_farewell(&record, data, unix_now()) {
            warn!("a control message from the paired box that is not its farewell: ignored");
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
        Some(record)
    }

    fn view(&self, config: Option<&telebridge_config::ValidConfig>) -> PairingView {
        let mut inner = self.lock();
        if let Ok(fresh) = PairingCode::generate() {
            if inner.shower.expire(fresh, Instant::now()) {
                inner.last = Some("no confirmation came in time: the code was burnt, a new one is shown".into());
            }
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
        let port = config.map_or(7700, |c| c.bridge.port);
        let mapping = self.mapping.lock().unwrap_or_else(|p| p.into_inner()).clone();
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

async fn announce(s: &AppState) {
    let link = match s.store.running() {
        Some(c) => s.pairing.link(&c),
        None => Err("the configuration does not validate".into()),
    };
    let _ = s.daemon.commands().send(DaemonCommand::PeerLink(Box::new(link))).await;
}

/// Hears the paired box's control messages for as long as the daemon runs.
pub(crate) fn spawn_listener(s: &AppState) {
    let Some(mut rx) = s.daemon.peer_messages() else { return };
    let s = s.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(m) => {
                    if let Some(ended) = s.pairing.on_peer_message(&m) {
                        forget_mapping(&s, &ended);
                        announce(&s).await;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

/// `GET /api/pairing`.
pub(crate) async fn get_pairing(State(s): State<AppState>) -> Json<PairingView> {
    Json(s.pairing.view(s.store.running().as_ref()))
}

/// `POST /api/pairing/open`: show a new code.
pub(crate) async fn open(State(s): State<AppState>) -> Result<Json<PairingView>, ApiError> {
    open_code(&s)?;
    Ok(Json(s.pairing.view(s.store.running().as_ref())))
}

/// Shows a new code (the panel's button, or a long press of the box's button).
fn open_code(s: &AppState) -> Result<(), ApiError> {
    let code = fresh_code()?;
    {
        let mut inner = s.pairing.lock();
        inner.shower.open(code, Instant::now());
        inner.last = Some("pairing open: type the code into the other box's panel".into());
    }
    info!("pairing opened: a code is shown");
    // This box will listen: ask its router to pass the port meanwhile.
    *s.pairing.mapping.lock().unwrap_or_else(|p| p.into_inner()) = Mapping::Unknown;
    let config = s.store.running();
    let (slot, port) = (s.pairing.mapping.clone(), config.as_ref().map_or(7700, |c| c.bridge.port));
    if config.is_some_and(|c| c.raw.bridge.port_mapping) {
        tokio::spawn(async move { reach::refresh(&slot, port).await });
    } else {
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Mapping::None("switched off: bridge.port_mapping".into());
    }
    Ok(())
}

/// What the HDMI output says of the pairing while it shows no picture: the code to type into
/// the other box, or that this bridge is not paired (nothing for other roles, or when paired).
pub fn screen_text(view: &PairingView, bridge: bool) -> Option<String> {
    match (&view.code, &view.paired) {
        (Some(code), _) => {
            Some(format!("Pairing code {code}\nType it into the other box's panel (Pair) with this box's address"))
        }
        (None, None) if bridge => Some(match &view.last {
            Some(last) => format!("Not paired ({last}): pair in the panel, or hold the button 10 s for a code"),
            None => "Not paired: pair in the panel, or hold the button 10 s for a code".into(),
        }),
        _ => None,
    }
}

/// Keeps the HDMI output's pairing words current (the code changes when one is burnt or
/// expires), and opens pairing when the box's button asks for it (a long press, bridge role).
pub(crate) fn spawn_screen_keeper(s: &AppState) {
    let s = s.clone();
    tokio::spawn(async move {
        let mut status = s.daemon.status();
        let mut requests = status.borrow().pairing_requests;
        let mut shown: Option<String> = None;
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let now = status.borrow_and_update().pairing_requests;
                    if now > requests {
                        requests = now;
                        info!("the button asked for a pairing code");
                        if let Err(e) = open_code(&s) {
                            warn!(error = ?e, "cannot open pairing");
                        }
                    }
                }
                _ = tick.tick() => {}
            }
            let config = s.store.running();
            let bridge = config.as_ref().is_some_and(|c| c.role == telebridge_config::Role::Bridge);
            let text = screen_text(&s.pairing.view(config.as_ref()), bridge);
            if text != shown {
                shown = text.clone();
                if s.daemon.commands().send(DaemonCommand::PairingText(text)).await.is_err() {
                    break;
                }
            }
        }
    });
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
        forget_mapping(&s, &r);
        announce(&s).await;
    }
    Ok(Json(s.pairing.view(s.store.running().as_ref())))
}

/// How long the farewell needs to reach the other box: its SRT latency and a round trip, and a
/// margin; at most 3 s.
fn farewell_wait(s: &AppState) -> std::time::Duration {
    let status = s.daemon.status().borrow().clone();
    let peer = status
        .media
        .as_ref()
        .and_then(|m| m.outputs().iter().find(|o| o.name == telebridge_appliance::PEER_OUTPUT).map(|o| o.srt.clone()));
    let ms = peer.map_or(0.0, |srt| srt.negotiated_latency_ms as f64 + 2.0 * srt.rtt_ms + 250.0);
    std::time::Duration::from_millis(ms.clamp(0.0, 3000.0) as u64)
}

/// `POST /api/pair/hello` (box B to box A, no session): A's answer to B's hello.
pub(crate) async fn hello(State(s): State<AppState>, req: Request) -> Response {
    let body = match read_body(req, wire::MAX_BYTES).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let text = String::from_utf8_lossy(&body);
    let mut inner = s.pairing.lock();
    if let Ok(fresh) = PairingCode::generate() {
        inner.shower.expire(fresh, Instant::now());
    }
    match inner.shower.on_hello(&text, Instant::now()) {
        Ok(answer) => {
            inner.answered = Some(Instant::now());
            ([(header::CONTENT_TYPE, "application/json")], answer).into_response()
        }
        Err(e) => shower_error(e).into_response(),
    }
}

fn shower_error(e: ShowerError) -> ApiError {
    match e {
        ShowerError::Refused(Refusal::Wait(d)) => {
            ApiError::Later(StatusCode::TOO_MANY_REQUESTS, e.to_string(), d.as_secs().max(1))
        }
        ShowerError::Refused(Refusal::Busy) => ApiError::Later(StatusCode::CONFLICT, e.to_string(), 2),
        ShowerError::Refused(_) | ShowerError::Unexpected => ApiError::User(StatusCode::CONFLICT, e.to_string()),
        ShowerError::Wire(_) => ApiError::User(StatusCode::BAD_REQUEST, e.to_string()),
        ShowerError::Pair(PairError::WrongCode) => {
            ApiError::User(StatusCode::FORBIDDEN, "wrong code: this box now shows a new one".into())
        }
        ShowerError::Pair(_) => ApiError::User(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// What A tells B once paired.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Welcome {
    /// A's bridge port (B calls it at the address it typed)...
    srt_port: u16,
    /// ...or here: the public address A's router passes to A.
    srt_address: Option<String>,
}

/// The router's mapping of a pairing that ended, removed (this box listened through it).
fn forget_mapping(s: &AppState, r: &PairRecord) {
    if r.reach == Reach::Listen && r.via == Via::PortMapping {
        let port = s.store.running().map_or(7700, |c| c.bridge.port);
        *s.pairing.mapping.lock().unwrap_or_else(|p| p.into_inner()) = Mapping::Unknown;
        tokio::task::spawn_blocking(move || reach::unmap(port));
    }
}

/// Keeps the router's mapping while this box listens through it: asked again at start (it may
/// have lapsed while the box was off) and every [`reach::RENEW_EVERY`].
pub(crate) fn spawn_mapping_keeper(s: &AppState) {
    let s = s.clone();
    tokio::spawn(async move {
        loop {
            let through_router =
                s.pairing.lock().record.as_ref().is_some_and(|r| r.reach == Reach::Listen && r.via == Via::PortMapping);
            let needed = through_router && s.store.running().is_some_and(|c| c.raw.bridge.port_mapping);
            if needed {
                let port = s.store.running().map_or(7700, |c| c.bridge.port);
                reach::refresh(&s.pairing.mapping, port).await;
            }
            tokio::time::sleep(reach::RENEW_EVERY).await;
        }
    });
}

/// `POST /api/pair/confirm` (box B to box A, no session): paired, or the code burnt.
pub(crate) async fn confirm(State(s): State<AppState>, req: Request) -> Result<Json<Welcome>, ApiError> {
    // B's public address as this box sees it: where a rendezvous would meet it.
    let b_seen = crate::middleware::client_ip(req.extensions());
    let body = read_body(req, wire::MAX_BYTES).await.map_err(|_| {
        ApiError::User(StatusCode::BAD_REQUEST, format!("a confirmation is at most {} bytes", wire::MAX_BYTES))
    })?;
    let text = String::from_utf8_lossy(&body);
    let fresh = fresh_code()?;
    let (verdict, answered) = {
        let mut inner = s.pairing.lock();
        let verdict = inner.shower.on_confirm(&text, fresh, Instant::now());
        if matches!(verdict, Err(ShowerError::Pair(PairError::WrongCode))) {
            inner.last = Some("a wrong code was tried: it was burnt and a new one is shown".into());
            warn!("pairing: a wrong code was tried; a new code is shown");
        }
        (verdict, inner.answered.take())
    };
    let secrets = verdict.map_err(shower_error)?;
    let rtt_ms = answered.map_or(0, |t| t.elapsed().as_millis().min(u128::from(u32::MAX)) as u32);
    let mut record = PairRecord::new(Side::A, secrets, Reach::Listen, None, rtt_ms, unix_now());
    let srt_address = match s.pairing.mapping.lock().unwrap_or_else(|p| p.into_inner()).clone() {
        Mapping::Mapped { public } => Some(public),
        _ => None,
    };
    let srt_port = s.store.running().map_or(7700, |c| c.bridge.port);
    if srt_address.is_some() {
        record.via = Via::PortMapping;
    } else {
        record.rendezvous = Some(std::net::SocketAddr::new(b_seen, srt_port).to_string());
    }
    s.pairing.keep(record)?;
    announce(&s).await;
    Ok(Json(Welcome { srt_port, srt_address }))
}

/// What the owner types into box B.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JoinBody {
    /// Box A's panel: `HOST` or `HOST:PORT`.
    address: String,
    /// The code A shows.
    code: String,
}

/// `address` as `HOST:PORT` (the panel's port by default).
fn panel_address(address: &str) -> Result<String, ApiError> {
    let a = address.trim().trim_start_matches("http://").trim_end_matches('/');
    let bad = || {
        ApiError::User(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("address: {address:?} is not HOST or HOST:PORT (the other box's panel, e.g. 192.168.1.20 or studio-a.local:8080)"),
        )
    };
    if a.is_empty() || a.contains(['/', ' ', '@', '?', '#']) {
        return Err(bad());
    }
    let has_port = match a.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            port.parse::<u16>().map_err(|_| bad())?;
            true
        }
        _ => false,
    };
    Ok(if has_port {
        a.to_string()
    } else if a.contains(':') && !a.starts_with('[') {
        format!("[{a}]:{DEFAULT_PANEL_PORT}")
    } else {
        format!("{a}:{DEFAULT_PANEL_PORT}")
    })
}

/// A's refusal as B's answer: its status and words, with who said them.
fn from_a(address: &str, a: &Answer) -> ApiError {
    let words = serde_json::from_str::<serde_json::Value>(&a.body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
        .unwrap_or_else(|| format!("answered {}", a.status));
    let message = format!("{address}: {words}");
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::BAD_GATEWAY);
    match (a.retry_after, status.is_client_error()) {
        (Some(secs), _) => ApiError::Later(status, message, secs),
        (None, true) => ApiError::User(status, message),
        (None, false) => ApiError::User(StatusCode::BAD_GATEWAY, message),
    }
}

/// `POST /api/pairing/join` `{address, code}`: this box (B) pairs with the box at `address`.
pub(crate) async fn join(State(s): State<AppState>, req: Request) -> Result<Json<PairingView>, ApiError> {
    let body = read_body(req, crate::body::SMALL_BODY).await.map_err(|_| {
        ApiError::User(
            StatusCode::BAD_REQUEST,
            "body must be {\"address\": \"HOST[:PORT]\", \"code\": \"7Q4-KM2\"}".into(),
        )
    })?;
    let JoinBody { address, code } = serde_json::from_slice(&body).map_err(|e| {
        ApiError::User(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("body must be {{\"address\": \"HOST[:PORT]\", \"code\": \"7Q4-KM2\"}}: {e}"),
        )
    })?;
    let address = panel_address(&address)?;
    let config = s
        .store
        .running()
        .ok_or_else(|| ApiError::User(StatusCode::CONFLICT, "the configuration does not validate".into()))?;
    let (typer, hello) = Typer::begin(&code, &config.name)
        .map_err(|e| ApiError::User(StatusCode::UNPROCESSABLE_ENTITY, format!("code: {e}")))?;
    let unreachable = |e: pair_client::ClientError| ApiError::User(StatusCode::BAD_GATEWAY, e.to_string());
    let answer = pair_client::post(&address, "/api/pair/hello", &hello).await.map_err(unreachable)?;
    if answer.status != 200 {
        return Err(from_a(&address, &answer));
    }
    let (verdict, confirmation) = typer.on_answer(&answer.body);
    let Some(confirmation) = confirmation else {
        let e = verdict.err().map(|e| e.to_string()).unwrap_or_default();
        return Err(ApiError::User(StatusCode::BAD_GATEWAY, format!("{address} is not a telebridge box: {e}")));
    };
    // Sent also after a wrong code, so that A burns it at once.
    let welcome = pair_client::post(&address, "/api/pair/confirm", &confirmation).await.map_err(unreachable)?;
    let secrets = match verdict {
        Ok(secrets) => secrets,
        Err(TyperError::Pair(PairError::WrongCode)) => {
            s.pairing.lock().last = Some(format!("wrong code for {address}: it now shows a new one"));
            return Err(ApiError::User(
                StatusCode::FORBIDDEN,
                format!("code: wrong code for {address}; it now shows a new one: type that"),
            ));
        }
        Err(e) => return Err(ApiError::User(StatusCode::BAD_GATEWAY, format!("{address}: {e}"))),
    };
    if welcome.status != 200 {
        return Err(from_a(&address, &welcome));
    }
    let Welcome { srt_port, srt_address } = serde_json::from_str(&welcome.body).map_err(|e| {
        ApiError::User(StatusCode::BAD_GATEWAY, format!("{address} answered a pairing it did not explain: {e}"))
    })?;
    let rtt = answer.connect.min(welcome.connect);
    let rtt_ms = rtt.as_micros().div_ceil(1000).min(u128::from(u32::MAX)) as u32;
    let host = address.rsplit_once(':').map_or(address.as_str(), |(h, _)| h);
    let (peer, via) = match srt_address {
        Some(public) => (public, Via::PortMapping),
        None => (format!("{host}:{srt_port}"), Via::Direct),
    };
    let rendezvous = (via == Via::Direct).then(|| peer.clone());
    let mut record = PairRecord::new(Side::B, secrets, Reach::Call, Some(peer), rtt_ms, unix_now());
    record.via = via;
    record.rendezvous = rendezvous;
    s.pairing.keep(record)?;
    announce(&s).await;
    Ok(Json(s.pairing.view(Some(&config))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hdmi_output_shows_the_code_or_says_the_bridge_is_not_paired() {
        let view =
            |code: Option<&str>| PairingView { code: code.map(str::to_string), paired: None, last: None, reach: None };
        assert_eq!(
            screen_text(&view(Some("7Q4-KM2")), true).as_deref(),
            Some("Pairing code 7Q4-KM2\nType it into the other box's panel (Pair) with this box's address")
        );
        assert_eq!(
            screen_text(&view(None), true).as_deref(),
            Some("Not paired: pair in the panel, or hold the button 10 s for a code")
        );
        assert_eq!(screen_text(&view(None), false), None, "an encoder says nothing of pairing");
        let unpaired =
            PairingView { last: Some("studio-a unpaired this box: pair again to connect".into()), ..view(None) };
        assert!(screen_text(&unpaired, true).unwrap().starts_with("Not paired (studio-a unpaired this box"));
    }

    #[test]
    fn the_address_typed_becomes_host_and_panel_port() {
        let ok = |a: &str| panel_address(a).map_err(|e| format!("{e:?}")).unwrap();
        assert_eq!(ok("192.168.1.20"), "192.168.1.20:80");
        assert_eq!(ok("http://studio-a.local:8080/"), "studio-a.local:8080");
        assert_eq!(ok("fd00::7"), "[fd00::7]:80");
        assert_eq!(ok("[fd00::7]:8080"), "[fd00::7]:8080");
        for bad in ["", "a b", "host:99999", "user@host", "host/path"] {
            let e = panel_address(bad).unwrap_err();
            assert!(format!("{e:?}").contains("is not HOST or HOST:PORT"), "{bad}: {e:?}");
        }
    }
}
