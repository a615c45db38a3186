//! The live monitor's signalling, WHEP (draft-ietf-wish-whep): a browser POSTs its SDP offer
//! for a feed (`/api/whep/programme`, `/api/whep/received`) and gets the box's answer, every
//! ICE candidate in it, with the viewer's own URL to DELETE when it is done. The daemon makes
//! the answer; this only carries it, behind the panel's login or the read-only token.

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use telebridge_contract::feed::Feed;
use telebridge_contract::monitor::{WatchRefusal, WatchRequest};
use tracing::warn;

use crate::body::read_body;
use crate::error::{error, ApiError};
use crate::live::token_matches;
use crate::middleware::{client_ip, session_token};
use crate::AppState;

/// The largest offer read: a browser's is 4-8 KB.
const OFFER_MAX: usize = 64 << 10;

/// The address of the box a connection came in at (the panel's server records it), where a
/// viewer's ICE candidates are gathered: the one address the browser is known to reach.
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub SocketAddr);

/// A session, or the read-only token as a bearer (a monitor wall).
fn admitted(s: &AppState, req: &Request) -> Result<(), ApiError> {
    if s.auth.setup_code().is_some() {
        return Err(error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code"));
    }
    let headers = req.headers();
    if session_token(headers).is_some_and(|t| s.auth.valid(&t, Instant::now())) {
        return Ok(());
    }
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if let Some(token) = given {
        let ip = client_ip(req.extensions());
        s.auth.admit(ip, Instant::now()).map_err(|r| crate::error::refused(ip, r))?;
        if token_matches(token, &s.store.file().web.metrics_token) {
            return Ok(());
        }
        s.auth.failed_unread(ip, Instant::now());
    }
    Err(error(StatusCode::UNAUTHORIZED, "log in, or send Authorization: Bearer <web.metrics_token>"))
}

fn feed_of(name: &str) -> Result<Feed, ApiError> {
    Feed::parse(name).map_err(|why| error(StatusCode::NOT_FOUND, why))
}

fn is_sdp(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/sdp")))
}

/// `POST /api/whep/{feed}`: an SDP offer in, `201 Created` with the answer and the viewer's
/// `Location` out.
pub(crate) async fn offer(
    State(s): State<AppState>,
    Path(feed): Path<String>,
    req: Request,
) -> Result<Response, ApiError> {
    admitted(&s, &req)?;
    let feed = feed_of(&feed)?;
    if !is_sdp(req.headers()) {
        return Err(error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the offer as Content-Type: application/sdp"));
    }
    let from = req.extensions().get::<ConnectInfo<SocketAddr>>().map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
    let local = req.extensions().get::<LocalAddr>().map(|l| l.0.ip());
    let body = read_body(req, OFFER_MAX).await?;
    let offer =
        String::from_utf8(body.to_vec()).map_err(|_| error(StatusCode::BAD_REQUEST, "the offer is not text"))?;
    let request = WatchRequest { feed, offer, from, local };
    let daemon = s.daemon.clone();
    let answered = tokio::task::spawn_blocking(move || daemon.watch(&request))
        .await
        .map_err(|e| ApiError::Internal { what: "cannot answer the viewer", detail: e.to_string() })?;
    match answered {
        Ok(answer) => Ok((
            StatusCode::CREATED,
            [
                (header::CONTENT_TYPE, "application/sdp".to_string()),
                (header::LOCATION, format!("/api/whep/{}/{}", feed.name(), answer.id)),
            ],
            answer.sdp,
        )
            .into_response()),
        Err(refusal) => Err(match refusal {
            WatchRefusal::NotRunning(_) => error(StatusCode::CONFLICT, refusal.to_string()),
            WatchRefusal::Full { .. } | WatchRefusal::Off => {
                error(StatusCode::SERVICE_UNAVAILABLE, refusal.to_string())
            }
            WatchRefusal::Offer(_) => error(StatusCode::BAD_REQUEST, refusal.to_string()),
            WatchRefusal::Failed(detail) => {
                warn!(%detail, "a viewer could not be set up");
                ApiError::Internal { what: "cannot set the viewer up", detail }
            }
        }),
    }
}

/// `DELETE /api/whep/{feed}/{id}`: the viewer is done.
pub(crate) async fn end(
    State(s): State<AppState>,
    Path((feed, id)): Path<(String, u64)>,
    req: Request,
) -> Result<Response, ApiError> {
    admitted(&s, &req)?;
    feed_of(&feed)?;
    let daemon = s.daemon.clone();
    let ended = tokio::task::spawn_blocking(move || daemon.end_watch(id))
        .await
        .map_err(|e| ApiError::Internal { what: "cannot end the viewer", detail: e.to_string() })?;
    if ended {
        Ok(StatusCode::OK.into_response())
    } else {
        Err(error(StatusCode::NOT_FOUND, format!("no viewer {id}")))
    }
}
