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
use crate::error::{error, ApiError};
use crate::{AppState, CSRF_HEADER};

/// The API's answers (status, configuration, logs, metrics) are the box's state at one moment
/// and may carry what only a session should see: no cache keeps them.
pub(crate) async fn no_store(req: Request, next: Next) -> Result<Response, ApiError> {
    let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/metrics";
    let mut resp = next.run(req).await;
    if api {
        resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    }
    Ok(resp)
}

pub(crate) fn client_ip(req_ext: &axum::http::Extensions) -> IpAddr {
    req_ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// Whether `host` (a Host header: a name or address, perhaps with a port) names this box: an
/// address written as such (a page can only have such an origin if the user typed it), the
/// box's own host name or configured name, alone or under a local domain ([`LOCAL_SUFFIXES`]:
/// `NAME.local`, `NAME.lan`, ...), or `localhost`. A name of a
/// stranger's that resolves to the box (DNS rebinding: `evil.example` made to point at the box
/// after the page loaded) is not one of them, though its page's Origin equals its Host.
pub(crate) fn names_this_box(host: &str, own: &[String]) -> bool {
    let name = match host.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.parse::<u16>().is_ok() && (!h.contains(':') || h.ends_with(']')) => h,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
    if name.parse::<std::net::IpAddr>().is_ok() || name == "localhost" {
        return true;
    }
    own.iter().any(|o| {
        let o = o.trim_end_matches('.').to_ascii_lowercase();
        !o.is_empty()
            && (name == o
                || name
                    .strip_prefix(&o)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|suffix| LOCAL_SUFFIXES.contains(&suffix)))
    })
}

/// The domains a home or office network names its hosts under (mDNS's `local`, and what routers
/// and DHCP servers use): the box's own name under one of them names the box. A public domain
/// does not: a stranger can make `telebridge-3f2a.evil.example` point at the box.
const LOCAL_SUFFIXES: &[&str] =
    &["local", "lan", "home", "home.arpa", "internal", "localdomain", "intranet", "private", "fritz.box"];

/// The names this box answers to: its host name and its configured name.
fn own_names(s: &AppState) -> Vec<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    vec![host, s.store.file().name]
}

/// Requests that change something must come from the panel's own origin (a browser sends
/// `Origin`), naming this box ([`names_this_box`]), or carry [`CSRF_HEADER`] without an Origin
/// (which a cross-site form cannot set, and a browser's page always sends an Origin with).
pub(crate) async fn csrf(State(s): State<AppState>, req: Request, next: Next) -> Result<Response, ApiError> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(next.run(req).await);
    }
    let h = req.headers();
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    match h.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => {
            let bare = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).unwrap_or("");
            if bare.is_empty() || bare != host {
                return Err(error(StatusCode::FORBIDDEN, format!("origin {origin} is not this box ({host})")));
            }
            if !names_this_box(host, &own_names(&s)) {
                return Err(error(
                    StatusCode::FORBIDDEN,
                    format!("{host} is not a name of this box: open the panel by its address or its name"),
                ));
            }
        }
        None if h.contains_key(CSRF_HEADER) => {}
        // A bearer token and no cookie: nothing a browser sends on its own, so nothing a
        // foreign page could forge (a monitor wall's player asking for the live monitor).
        None if h.contains_key(header::AUTHORIZATION) && !h.contains_key(header::COOKIE) => {}
        None => {
            return Err(error(
                StatusCode::FORBIDDEN,
                format!("a request that changes something needs an Origin header or {CSRF_HEADER}: 1"),
            ))
        }
    }
    Ok(next.run(req).await)
}

pub(crate) fn session_token(h: &HeaderMap) -> Option<String> {
    cookie(h, COOKIE)
}

/// The value of the cookie `name`, if the request has it.
pub(crate) fn cookie(h: &HeaderMap, name: &str) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

pub(crate) async fn require_session(State(s): State<AppState>, req: Request, next: Next) -> Result<Response, ApiError> {
    if s.auth.setup_code().is_some() {
        return Err(error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code"));
    }
    match session_token(req.headers()) {
        Some(t) if s.auth.valid(&t, Instant::now()) => Ok(next.run(req).await),
        _ => Err(error(StatusCode::UNAUTHORIZED, "log in first (POST /api/session)")),
    }
}

pub(crate) fn session_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", auth::SESSION_TTL.as_secs())
}

/// The cookie that marks a browser that logged in before ([`auth::device_token`]).
pub(crate) fn device_cookie(token: &str) -> String {
    format!(
        "{}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        crate::device::DEVICE_COOKIE,
        crate::device::DEVICE_TTL.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_s_names_and_addresses_pass_and_a_rebound_name_does_not() {
        let own = vec!["telebridge-3f2a".to_string(), "studio-a".to_string()];
        for ok in [
            "192.168.1.20",
            "192.168.1.20:8080",
            "[fd00::7]:80",
            "[fd00::7]",
            "localhost:8080",
            "telebridge-3f2a.local",
            "Telebridge-3F2A.local.:80",
            "studio-a",
            "studio-a.local:8080",
            "telebridge-3f2a.lan",
            "telebridge-3f2a.fritz.box",
            "studio-a.home.arpa",
        ] {
            assert!(names_this_box(ok, &own), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "studio-a.evil.example",
            "telebridge-3f2a.local.evil",
            "telebridge-3f2a.com",
            "xstudio-a.lan",
            "",
        ] {
            assert!(!names_this_box(bad, &own), "{bad}");
        }
        assert!(!names_this_box("x.local", &[String::new()]), "an empty name matches nothing");
    }
}
