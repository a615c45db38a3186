//! The box at work: health, status, Go live, the event stream, the history, the preview, the
//! log, Prometheus, reboot.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use telebridge_contract::daemon::DaemonCommand;

use telebridge_contract::machine::State as BoxState;

use crate::body::{Shape, SmallJson};
use crate::error::{error, ApiError};
use crate::middleware::session_token;
use crate::{metrics, AppState};

pub(crate) async fn healthz(State(s): State<AppState>) -> Result<Response, ApiError> {
    if s.daemon.heartbeat_age() < Duration::from_secs(2) {
        Ok((StatusCode::OK, "ok\n").into_response())
    } else {
        Err(error(StatusCode::SERVICE_UNAVAILABLE, "the main loop is not turning"))
    }
}

pub(crate) async fn status(State(s): State<AppState>) -> Result<Response, ApiError> {
    let st = s.daemon.status().borrow().clone();
    // The box's clock now: the panel reads "since" and "last frame" times against it, not
    // against the browser's clock, which may be off.
    let mut v = serde_json::to_value(&st).unwrap_or_default();
    v["now_unix_ms"] = json!(unix_ms());
    Ok(Json(v).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LiveBody {
    live: bool,
}

impl Shape for LiveBody {
    const SHAPE: &'static str = r#"{"live": true} or {"live": false}"#;
}

pub(crate) async fn live(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<LiveBody>,
) -> Result<Response, ApiError> {
    // An encoder with nothing to send to is refused in words, not started and called live.
    let nothing = s.store.running().is_some_and(|c| c.role == telebridge_config::Role::Encoder && c.outputs.is_empty());
    if body.live && nothing {
        return Err(ApiError::User(
            StatusCode::CONFLICT,
            "outputs: none; an encoder goes live to at least one output: add one (SRT, RTMP or a recording)".into(),
        ));
    }
    tell(&s, DaemonCommand::Live(body.live)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "live": body.live }))).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TallyBody {
    on_air: bool,
}

impl Shape for TallyBody {
    const SHAPE: &'static str = r#"{"on_air": true} or {"on_air": false}"#;
}

/// `POST /api/tally`: the control room's cue, this box's picture is on air (the tally LED, the
/// panel), or no longer.
pub(crate) async fn tally(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<TallyBody>,
) -> Result<Response, ApiError> {
    tell(&s, DaemonCommand::Tally(body.on_air)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "on_air": body.on_air }))).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TalkBody {
    talking: bool,
}

impl Shape for TalkBody {
    const SHAPE: &'static str = r#"{"talking": true} or {"talking": false}"#;
}

/// `POST /api/talk`: the talk button, down (renewed at least every 1.5 s while held: the panel
/// sends it every 500 ms) or up. Talkback with the paired box, in the bridge role.
pub(crate) async fn talk(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<TalkBody>,
) -> Result<Response, ApiError> {
    tell(&s, DaemonCommand::Talk(body.talking)).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "talking": body.talking }))).into_response())
}

/// Hands the daemon a command; a daemon that is stopping answers 503.
pub(crate) async fn tell(s: &AppState, command: DaemonCommand) -> Result<(), ApiError> {
    s.daemon
        .commands()
        .send(command)
        .await
        .map_err(|_| error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping"))
}

/// How often the events look at the daemon: the sound's meters go this often.
const METER_EVERY: Duration = Duration::from_millis(100);

/// Server-sent events: `sample` once a second (the `--stats json` line of the running media,
/// with the state), `state` when the state changes, `levels` ten times a second while a
/// stream with sound runs (each stream's peak and RMS per channel, and its silence).
pub(crate) async fn events(
    State(s): State<AppState>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let rx = s.daemon.status();
    let history = s.history.clone();
    let daemon = s.daemon.clone();
    let stream = futures_util::stream::unfold(
        (rx, history, None::<BoxState>, Instant::now()),
        move |(rx, history, last_state, last_sample)| {
            let daemon = daemon.clone();
            async move {
                let mut last_state = last_state;
                let mut last_sample = last_sample;
                loop {
                    tokio::time::sleep(METER_EVERY).await;
                    if rx.has_changed().is_err() {
                        return None;
                    }
                    let st = rx.borrow().clone();
                    let state = st.machine.state;
                    if last_state != Some(state) {
                        let ev = SseEvent::default().event("state").json_data(&st.machine).unwrap_or_default();
                        return Some((Ok(ev), (rx, history, Some(state), last_sample)));
                    }
                    if last_sample.elapsed() >= Duration::from_secs(1) {
                        last_sample = Instant::now();
                        let data = json!({
                            "state": state, "running": st.running, "leds": st.led_patterns, "media": st.media,
                            "links": st.links, "alerts": st.alerts, "input": st.input, "tally": st.tally, "talk": st.talk,
                            "row": history.latest_line(), "now_unix_ms": unix_ms(),
                        });
                        let ev = SseEvent::default().event("sample").json_data(&data).unwrap_or_default();
                        return Some((Ok(ev), (rx, history, last_state, last_sample)));
                    }
                    last_state = Some(state);
                    let levels = daemon.levels();
                    if !levels.is_empty() {
                        let ev = SseEvent::default().event("levels").json_data(&levels).unwrap_or_default();
                        return Some((Ok(ev), (rx, history, last_state, last_sample)));
                    }
                }
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[derive(Deserialize)]
pub(crate) struct CsvQuery {
    minutes: Option<u32>,
}

pub(crate) async fn stats_csv(State(s): State<AppState>, Query(q): Query<CsvQuery>) -> Result<Response, ApiError> {
    let minutes = q.minutes.unwrap_or(5).clamp(1, 24 * 60);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"telebridge-{minutes}min.csv\"")),
        ],
        s.history.csv(minutes),
    )
        .into_response())
}

/// The current picture, small (320 px wide), made at most once a second by the encoder.
pub(crate) async fn preview(State(s): State<AppState>) -> Result<Response, ApiError> {
    let jpeg = s.daemon.preview();
    match jpeg {
        Some(bytes) => {
            Ok(([(header::CONTENT_TYPE, "image/jpeg"), (header::CACHE_CONTROL, "no-store")], bytes).into_response())
        }
        None => Err(error(StatusCode::NOT_FOUND, "no picture: the encoder is not running")),
    }
}

/// `GET /api/preview-received.jpg`: what arrives from the paired box (bridge role).
pub(crate) async fn preview_received(State(s): State<AppState>) -> Result<Response, ApiError> {
    match s.daemon.received_preview() {
        Some(bytes) => {
            Ok(([(header::CONTENT_TYPE, "image/jpeg"), (header::CACHE_CONTROL, "no-store")], bytes).into_response())
        }
        None => Err(error(StatusCode::NOT_FOUND, "no picture: nothing arrives from a paired box")),
    }
}

#[derive(Deserialize)]
pub(crate) struct LogsQuery {
    lines: Option<usize>,
}

/// The daemon's last log lines (no secrets are ever logged).
pub(crate) async fn logs(Query(q): Query<LogsQuery>) -> Result<Response, ApiError> {
    Ok(Json(json!({ "lines": crate::logs::tail(q.lines.unwrap_or(100).min(crate::logs::LINES)) })).into_response())
}

/// Whether the bearer token `given` is `token`: compared in time that does not depend on where
/// they differ, and never equal to an unset token.
pub(crate) fn token_matches(given: &str, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    !token.is_empty() && bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// Prometheus: a session or the read-only bearer token of `web.metrics_token`. A wrong token
/// counts as a wrong password for its address (the same five a minute, then locked out).
pub(crate) async fn metrics_handler(
    State(s): State<AppState>,
    req: axum::extract::Request,
) -> Result<Response, ApiError> {
    let ip = crate::middleware::client_ip(req.extensions());
    let headers = req.headers();
    let token = s.store.file().web.metrics_token;
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let session = session_token(headers).is_some_and(|t| s.auth.valid(&t, Instant::now()));
    let bearer = match given {
        Some(_) if session => false,
        Some(t) => {
            if let Err(r) = s.auth.admit(ip, Instant::now()) {
                return Err(crate::error::refused(ip, r));
            }
            let ok = token_matches(t, &token);
            if !ok {
                s.auth.failed_unread(ip, Instant::now());
            }
            ok
        }
        None => false,
    };
    if !bearer && !session {
        return Err(error(StatusCode::UNAUTHORIZED, "log in, or send Authorization: Bearer <web.metrics_token>"));
    }
    let st = s.daemon.status().borrow().clone();
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics::render(&st)).into_response())
}

/// Milliseconds since the Unix epoch on the box's clock.
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_token_is_matched_whole_and_never_when_unset() {
        assert!(token_matches("s3cret-token", "s3cret-token"));
        assert!(!token_matches("s3cret-tokeN", "s3cret-token"));
        assert!(!token_matches("s3cret", "s3cret-token"));
        assert!(!token_matches("", ""));
    }
}
