//! What runs around every request: the CSRF check, the session check, no caching of the API's
//! answers, and who the client is.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::{self, COOKIE};
use crate::error::error;
use crate::{AppState, CSRF_HEADER};

/// The API's answers (status, configuration, logs, metrics) are the box's state at one moment
/// and may carry what only a session should see: no cache keeps them.
pub(crate) async fn no_store(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/metrics";
    let mut resp = next.run(req).await;
    if api {
        resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    }
    resp
}

pub(crate) fn client_ip(req_ext: &axum::http::Extensions) -> IpAddr {
    req_ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// Requests that change something must come from the panel's own origin (a browser sends
/// `Origin`), or carry [`CSRF_HEADER`] (which a cross-site form cannot set).
pub(crate) async fn csrf(req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let h = req.headers();
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    match h.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => {
            let bare = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).unwrap_or("");
            if bare.is_empty() || bare != host {
                return error(StatusCode::FORBIDDEN, format!("origin {origin} is not this box ({host})"));
            }
        }
        None if h.contains_key(CSRF_HEADER) => {}
        None => {
            return error(
                StatusCode::FORBIDDEN,
                format!("a request that changes something needs an Origin header or {CSRF_HEADER}: 1"),
            )
        }
    }
    next.run(req).await
}

pub(crate) fn session_token(h: &HeaderMap) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == COOKIE).then(|| v.to_string())
    })
}

pub(crate) async fn require_session(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if s.auth.setup_code().is_some() {
        return error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code");
    }
    match session_token(req.headers()) {
        Some(t) if s.auth.valid(&t, Instant::now()) => next.run(req).await,
        _ => error(StatusCode::UNAUTHORIZED, "log in first (POST /api/session)"),
    }
}

pub(crate) fn session_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", auth::SESSION_TTL.as_secs())
}
