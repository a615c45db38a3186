//! The HTTP side of the box: the REST API over the appliance daemon (and, with the web issue,
//! the panel). Under `--sim` it also shows the simulated GPIO and presses its button.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use telebridge_appliance::{DaemonCommand, DaemonHandle};
use telebridge_gpio::{ButtonEvent, Led};

/// The API's routes over a running daemon.
pub fn router(daemon: DaemonHandle) -> Router {
    let mut r = Router::new()
        .route("/", get(index))
        .route("/healthz", get(healthz))
        .route("/api/status", get(status))
        .route("/api/live", post(live));
    if daemon.sim.is_some() {
        r = r
            .route("/api/sim/gpio", get(sim_gpio))
            .route("/api/sim/button", post(sim_button))
            .route("/api/sim/stall", post(sim_stall));
    }
    r.with_state(daemon)
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

fn error(code: StatusCode, message: impl Into<String>) -> Response {
    (code, Json(json!({ "error": message.into() }))).into_response()
}

async fn index(State(d): State<DaemonHandle>) -> Html<String> {
    let s = d.status.borrow().clone();
    let state = serde_json::to_value(s.machine.state).unwrap_or_default();
    Html(format!(
        "<!doctype html><meta charset=utf-8><meta name=viewport content=\"width=device-width\">\
         <title>{name}</title><h1>{name}</h1><p>{role}: {state}{reason}</p>\
         <p>API: <a href=/api/status>/api/status</a></p>",
        name = html_escape(&s.name),
        role = s.role,
        state = state.as_str().unwrap_or(""),
        reason = s.machine.reason.as_deref().map(|r| format!(" ({})", html_escape(r))).unwrap_or_default(),
    ))
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

async fn healthz(State(d): State<DaemonHandle>) -> Response {
    if d.heartbeat.age() < Duration::from_secs(2) {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        error(StatusCode::SERVICE_UNAVAILABLE, "the main loop is not turning")
    }
}

async fn status(State(d): State<DaemonHandle>) -> Response {
    let s = d.status.borrow().clone();
    Json(s).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LiveBody {
    live: bool,
}

async fn live(State(d): State<DaemonHandle>, body: Option<Json<LiveBody>>) -> Response {
    let Some(Json(body)) = body else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"live\": true} or {\"live\": false}");
    };
    if d.commands.send(DaemonCommand::Live(body.live)).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    (StatusCode::ACCEPTED, Json(json!({ "live": body.live }))).into_response()
}

async fn sim_gpio(State(d): State<DaemonHandle>) -> Response {
    let Some(state) = d.sim_state() else { return error(StatusCode::NOT_FOUND, "no simulated GPIO") };
    let patterns = d.status.borrow().led_patterns;
    let mut leds = serde_json::Map::new();
    let mut shown = serde_json::Map::new();
    for (i, led) in Led::ALL.iter().enumerate() {
        let name = serde_json::to_value(led).unwrap_or_default().as_str().unwrap_or("").to_string();
        leds.insert(name.clone(), json!(state.leds[i]));
        shown.insert(name, serde_json::to_value(patterns[i]).unwrap_or_default());
    }
    Json(json!({ "backend": "sim", "leds": leds, "patterns": shown, "button_pressed": state.button_pressed }))
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ButtonBody {
    hold_ms: u64,
}

/// Holds the simulated button down for `hold_ms`, then lets go; answers after the release with
/// what the box made of it.
async fn sim_button(State(d): State<DaemonHandle>, body: Option<Json<ButtonBody>>) -> Response {
    let Some(Json(body)) = body else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"hold_ms\": N}, N from 50 to 20000");
    };
    if !(50..=20_000).contains(&body.hold_ms) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("hold_ms: {} is out of range 50-20000 (a press needs 30 ms to count)", body.hold_ms),
        );
    }
    let Some(sim) = d.sim.clone() else { return error(StatusCode::NOT_FOUND, "no simulated GPIO") };
    sim.set_button(true);
    tokio::time::sleep(Duration::from_millis(body.hold_ms)).await;
    sim.set_button(false);
    // The debouncer needs its 30 ms to see the release.
    tokio::time::sleep(Duration::from_millis(60)).await;
    let meaning = if body.hold_ms >= telebridge_gpio::HOLD_SETUP_MS {
        ButtonEvent::HoldSetup
    } else if body.hold_ms >= telebridge_gpio::HOLD_STOP_MS {
        ButtonEvent::HoldStop
    } else {
        ButtonEvent::Press
    };
    Json(json!({ "held_ms": body.hold_ms, "means": meaning })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StallBody {
    ms: u64,
}

/// Blocks the daemon's main loop (simulation only): shows the watchdog at work.
async fn sim_stall(State(d): State<DaemonHandle>, body: Option<Json<StallBody>>) -> Response {
    let Some(Json(body)) = body else { return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"ms\": N}") };
    if body.ms > 60_000 {
        return error(StatusCode::UNPROCESSABLE_ENTITY, format!("ms: {} is out of range 0-60000", body.ms));
    }
    if d.commands.send(DaemonCommand::Stall(Duration::from_millis(body.ms))).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    (StatusCode::ACCEPTED, Json(json!({ "stall_ms": body.ms }))).into_response()
}
