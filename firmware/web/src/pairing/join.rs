//! Box B's side: the owner types A's address and code; B asks A twice and keeps the pairing.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use telebridge_pairing::store::Via;
use telebridge_pairing::{PairError, PairRecord, Reach, Side, Typer, TyperError};

use super::peer::Welcome;
use super::{unix_now, PairingView};
use crate::body::{Shape, SmallJson};
use crate::error::{ApiError, ErrorBody};
use crate::pair_client::{self, Answer};
use crate::AppState;
use telebridge_pairing::control::WelcomeFacts;

/// The panel's port when the address typed names none.
const DEFAULT_PANEL_PORT: u16 = 80;

/// What the owner types into box B.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JoinBody {
    /// Box A's panel: `HOST` or `HOST:PORT`.
    address: String,
    /// The code A shows.
    code: String,
}

impl Shape for JoinBody {
    const SHAPE: &'static str = r#"{"address": "HOST[:PORT]", "code": "7Q4-KM2"}"#;
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
    let words = ErrorBody::read(&a.body).map_or_else(|| format!("answered {}", a.status), |b| b.error);
    let message = format!("{address}: {words}");
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::BAD_GATEWAY);
    match (a.retry_after, status.is_client_error()) {
        (Some(secs), _) => ApiError::Later(status, message, secs),
        (None, true) => ApiError::User(status, message),
        (None, false) => ApiError::User(StatusCode::BAD_GATEWAY, message),
    }
}

/// `POST /api/pairing/join` `{address, code}`: this box (B) pairs with the box at `address`.
pub(crate) async fn join(
    State(s): State<AppState>,
    SmallJson(JoinBody { address, code }): SmallJson<JoinBody>,
) -> Result<Json<PairingView>, ApiError> {
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
    // Sent also after a wrong code, so that A counts the try at once.
    let welcome = pair_client::post(&address, "/api/pair/confirm", &confirmation).await.map_err(unreachable)?;
    let secrets = match verdict {
        Ok(secrets) => secrets,
        Err(TyperError::Pair(PairError::WrongCode)) => {
            s.pairing.lock().last = Some(format!("wrong code for {address}"));
            return Err(ApiError::User(
                StatusCode::FORBIDDEN,
                format!(
                    "code: wrong code for {address}: check the code it shows and type it again (in {} s)",
                    telebridge_pairing::guard::FIRST_WAIT.as_secs()
                ),
            ));
        }
        Err(e) => return Err(ApiError::User(StatusCode::BAD_GATEWAY, format!("{address}: {e}"))),
    };
    if welcome.status != 200 {
        return Err(from_a(&address, &welcome));
    }
    let Welcome { srt_port, srt_address, addresses, tag } = serde_json::from_str(&welcome.body).map_err(|e| {
        ApiError::User(StatusCode::BAD_GATEWAY, format!("{address} answered a pairing it did not explain: {e}"))
    })?;
    let facts = WelcomeFacts { srt_port, srt_address: srt_address.as_deref(), addresses: &addresses };
    if !telebridge_pairing::control::welcome_genuine(secrets.pair_key.expose(), &secrets.pair_id, &facts, &tag) {
        return Err(ApiError::User(
            StatusCode::BAD_GATEWAY,
            format!(
                "{address}'s answer was altered on the way (its tag is wrong): not paired; unpair on it and pair again"
            ),
        ));
    }
    let rtt = answer.connect.min(welcome.connect);
    let rtt_ms = rtt.as_micros().div_ceil(1000).min(u128::from(u32::MAX)) as u32;
    let (typed_host, panel_port) = address.rsplit_once(':').map_or((address.as_str(), ""), |(h, p)| (h, p));
    let host = where_to_call(&s, typed_host, panel_port, &addresses).await?;
    let (peer, via) = match srt_address {
        Some(public) => (public, Via::PortMapping),
        None => (host_port(&host, srt_port), Via::Direct),
    };
    // Where a rendezvous would meet A: the address called, also after A's router said it
    // passes the port (a router behind another one, or a stranger's fake one, says so too).
    let rendezvous = Some(host_port(&host, srt_port));
    let mut record = PairRecord::new(Side::B, secrets, Reach::Call, Some(peer), rtt_ms, unix_now());
    record.via = via;
    record.rendezvous = rendezvous;
    s.pairing.keep(record)?;
    s.pairing.announce(s.store.running().as_ref(), &s.daemon.commands()).await;
    Ok(Json(s.pairing.view(Some(&config))))
}

/// `HOST:PORT`, an IPv6 address in brackets.
fn host_port(host: &str, port: u16) -> String {
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        _ => format!("{host}:{port}"),
    }
}

/// How long B waits for one of A's own addresses to answer on A's panel port.
const OWN_ANSWER: std::time::Duration = std::time::Duration::from_secs(2);

/// The host B calls A at: the one typed if it is one of the addresses A says it owns, else the
/// first of those that answers on A's panel port (issue 57, finding 2; see
/// `telebridge_pairing::addresses`).
async fn where_to_call(s: &AppState, typed_host: &str, panel_port: &str, own: &[String]) -> Result<String, ApiError> {
    use telebridge_pairing::addresses::{call_at, read_list, CallAt};
    let own = read_list(own);
    let typed: Option<std::net::IpAddr> = typed_host.trim_start_matches('[').trim_end_matches(']').parse().ok();
    let port: u16 = panel_port.parse().unwrap_or(DEFAULT_PANEL_PORT);
    let mut answered = Vec::new();
    if !own.is_empty() && !typed.is_some_and(|t| own.contains(&t)) {
        let tries =
            own.iter().map(|ip| {
                let to = std::net::SocketAddr::new(*ip, port);
                async move {
                    matches!(tokio::time::timeout(OWN_ANSWER, tokio::net::TcpStream::connect(to)).await, Ok(Ok(_)))
                }
            });
        answered = futures_util::future::join_all(tries).await;
    }
    let announced = typed.is_some_and(|ip| s.nearby.announced(ip));
    let answers = |ip| own.iter().position(|o| *o == ip).and_then(|i| answered.get(i).copied()).unwrap_or(false);
    match call_at(typed, &own, answers, announced) {
        Ok(CallAt::Typed) => Ok(typed_host.trim_start_matches('[').trim_end_matches(']').to_string()),
        Ok(CallAt::Own(ip)) => {
            tracing::warn!(typed = %typed_host, calling = %ip, "pairing: the address picked is not the paired box's own; calling one it owns");
            Ok(ip.to_string())
        }
        Err(e) => Err(ApiError::User(StatusCode::BAD_GATEWAY, format!("address: {e}: not paired"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
