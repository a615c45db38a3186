//! Box A's side of the exchange: the two requests box B makes, without a session.

use std::time::Instant;
use telebridge_pairing::control::WelcomeFacts;
use telebridge_sync::Locked;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use telebridge_pairing::guard::{FIRST_WAIT, MAX_WRONG};
use telebridge_pairing::store::Via;
use telebridge_pairing::{wire, PairError, PairRecord, Reach, Refusal, ShowerError, Side};
use tracing::warn;

use super::unix_now;
use crate::auth::client_key;
use crate::body::read_body;
use crate::error::ApiError;
use crate::reach::Mapping;
use crate::AppState;

/// `POST /api/pair/hello` (box B to box A, no session): A's answer to B's hello.
pub(crate) async fn hello(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let from = client_key(crate::middleware::client_ip(req.extensions()));
    let body = read_body(req, wire::MAX_BYTES).await?;
    let text = String::from_utf8_lossy(&body);
    let mut inner = s.pairing.lock();
    match inner.shower.on_hello(&text, from, Instant::now()) {
        Ok(answer) => Ok(([(header::CONTENT_TYPE, "application/json")], answer).into_response()),
        Err(e) => Err(shower_error(e)),
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
        ShowerError::Pair(PairError::WrongCode) => ApiError::User(
            StatusCode::FORBIDDEN,
            format!(
                "wrong code: check the code this box shows (the next try from here waits {} s)",
                FIRST_WAIT.as_secs()
            ),
        ),
        ShowerError::Pair(_) => ApiError::User(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// What A tells B once paired.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Welcome {
    /// A's bridge port (B calls it at the address it typed)...
    pub(super) srt_port: u16,
    /// ...or here: the public address A's router passes to A.
    pub(super) srt_address: Option<String>,
    /// The addresses A owns: B calls one of these, not an address someone announced for A
    /// ([`telebridge_pairing::addresses`]). Absent from an older box.
    #[serde(default)]
    pub(super) addresses: Vec<String>,
    /// Both, tagged under the pair's key ([`telebridge_pairing::control::welcome_tag`]).
    pub(super) tag: String,
}

/// `POST /api/pair/confirm` (box B to box A, no session): paired, or a wrong try counted.
pub(crate) async fn confirm(State(s): State<AppState>, req: Request) -> Result<Json<Welcome>, ApiError> {
    // B's public address as this box sees it: where a rendezvous would meet it.
    let b_seen = crate::middleware::client_ip(req.extensions());
    let from = client_key(b_seen);
    let body = read_body(req, wire::MAX_BYTES).await.map_err(|_| {
        ApiError::User(StatusCode::BAD_REQUEST, format!("a confirmation is at most {} bytes", wire::MAX_BYTES))
    })?;
    let text = String::from_utf8_lossy(&body);
    let verdict = {
        let mut inner = s.pairing.lock();
        let verdict = inner.shower.on_confirm(&text, from, Instant::now());
        if matches!(verdict, Err(ShowerError::Pair(PairError::WrongCode))) {
            inner.last = Some(if inner.shower.closed() {
                format!("pairing closed after {MAX_WRONG} wrong codes were tried: open it again")
            } else {
                format!("a wrong code was tried from {b_seen}")
            });
            warn!(from = %b_seen, "pairing: a wrong code was tried");
        }
        verdict
    };
    let (secrets, answered) = verdict.map_err(shower_error)?;
    let rtt_ms = answered.elapsed().as_millis().min(u128::from(u32::MAX)) as u32;
    let mut record = PairRecord::new(Side::A, secrets, Reach::Listen, None, rtt_ms, unix_now());
    let srt_address = match s.pairing.mapping.locked().clone() {
        Mapping::Mapped { public } => Some(public),
        _ => None,
    };
    let srt_port = s.store.running().map_or(7700, |c| c.bridge.port);
    if srt_address.is_some() {
        record.via = Via::PortMapping;
    }
    // Where a rendezvous would meet B: kept also after a port mapping, which may not work.
    record.rendezvous = Some(std::net::SocketAddr::new(b_seen, srt_port).to_string());
    let addresses: Vec<String> =
        telebridge_pairing::addresses::own_addresses().iter().map(ToString::to_string).collect();
    let facts = WelcomeFacts { srt_port, srt_address: srt_address.as_deref(), addresses: &addresses };
    let tag = telebridge_pairing::control::welcome_tag(record.pair_key.expose(), &record.pair_id, &facts);
    s.pairing.keep(record)?;
    s.pairing.announce(s.store.running().as_ref(), &s.daemon.commands()).await;
    Ok(Json(Welcome { srt_port, srt_address, addresses, tag }))
}
