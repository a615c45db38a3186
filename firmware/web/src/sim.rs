//! The simulated hardware of `--sim`: GPIO, the button, the HDMI cable, a stalled main loop.
//! It stands for physical access and needs no login; it exists only under `--sim`.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use telebridge_contract::daemon::DaemonCommand;
use telebridge_contract::gpio::{ButtonEvent, Led, LedPattern, HOLD_SETUP_MS, HOLD_STOP_MS};
use tracing::info;

use crate::body::{Shape, SmallJson};
use crate::error::{error, ApiError};
use crate::AppState;

pub(crate) async fn sim_gpio(State(s): State<AppState>) -> Result<Response, ApiError> {
    let Some(state) = s.daemon.sim().map(|b| b.state()) else {
        return Err(error(StatusCode::NOT_FOUND, "no simulated GPIO"));
    };
    let patterns = s.daemon.status().borrow().led_patterns;
    let leds: std::collections::BTreeMap<&str, bool> =
        Led::ALL.iter().enumerate().map(|(i, led)| (led.name(), state.leds[i])).collect();
    let shown: std::collections::BTreeMap<&str, LedPattern> =
        Led::ALL.iter().enumerate().map(|(i, led)| (led.name(), patterns[i])).collect();
    let cable = s.daemon.sim_cable().map(|c| c.load(std::sync::atomic::Ordering::Relaxed));
    Ok(Json(json!({
        "backend": "sim",
        "leds": leds,
        "patterns": shown,
        "button_pressed": state.button_pressed,
        "tally_in": state.tally_in,
        "hdmi_cable": cable,
    }))
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SignalBody {
    present: bool,
}

impl Shape for SignalBody {
    const SHAPE: &'static str = r#"{"present": true|false}"#;
}

/// Plugs the simulated HDMI cable in or pulls it out: pulled, the test pattern stops sending
/// frames (as a real input does) and the box notices within a couple of seconds.
pub(crate) async fn sim_signal(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<SignalBody>,
) -> Result<Response, ApiError> {
    let Some(cable) = s.daemon.sim_cable() else {
        return Err(error(StatusCode::NOT_FOUND, "no simulated HDMI cable"));
    };
    cable.store(body.present, std::sync::atomic::Ordering::Relaxed);
    info!(plugged_in = body.present, "simulated HDMI cable");
    Ok(Json(json!({ "hdmi_cable": body.present })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TallyInBody {
    on_air: bool,
}

impl Shape for TallyInBody {
    const SHAPE: &'static str = r#"{"on_air": true|false}"#;
}

/// Closes (`on_air`) or opens the simulated vision mixer's tally contact on the tally input.
pub(crate) async fn sim_tally_in(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<TallyInBody>,
) -> Result<Response, ApiError> {
    let Some(board) = s.daemon.sim() else {
        return Err(error(StatusCode::NOT_FOUND, "no simulated GPIO"));
    };
    board.set_tally_in(body.on_air);
    info!(on_air = body.on_air, "simulated tally contact");
    Ok(Json(json!({ "tally_in": body.on_air })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ButtonBody {
    hold_ms: u64,
}

impl Shape for ButtonBody {
    const SHAPE: &'static str = r#"{"hold_ms": N}, N from 50 to 20000"#;
}

/// Holds the simulated button down for `hold_ms`, then lets go; answers after the release with
/// what the box made of it.
pub(crate) async fn sim_button(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<ButtonBody>,
) -> Result<Response, ApiError> {
    if !(50..=20_000).contains(&body.hold_ms) {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("hold_ms: {} is out of range 50-20000 (a press needs 30 ms to count)", body.hold_ms),
        ));
    }
    let Some(sim) = s.daemon.sim() else { return Err(error(StatusCode::NOT_FOUND, "no simulated GPIO")) };
    sim.set_button(true);
    tokio::time::sleep(Duration::from_millis(body.hold_ms)).await;
    sim.set_button(false);
    // The debouncer needs its 30 ms to see the release.
    tokio::time::sleep(Duration::from_millis(60)).await;
    let meaning = if body.hold_ms >= HOLD_SETUP_MS {
        ButtonEvent::HoldSetup
    } else if body.hold_ms >= HOLD_STOP_MS {
        ButtonEvent::HoldStop
    } else {
        ButtonEvent::Press
    };
    Ok(Json(json!({ "held_ms": body.hold_ms, "means": meaning })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StallBody {
    ms: u64,
}

impl Shape for StallBody {
    const SHAPE: &'static str = r#"{"ms": N}"#;
}

/// Blocks the daemon's main loop (simulation only): shows the watchdog at work.
pub(crate) async fn sim_stall(
    State(s): State<AppState>,
    SmallJson(body): SmallJson<StallBody>,
) -> Result<Response, ApiError> {
    if body.ms > 60_000 {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, format!("ms: {} is out of range 0-60000", body.ms)));
    }
    crate::live::tell(&s, DaemonCommand::Stall(Duration::from_millis(body.ms))).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "stall_ms": body.ms }))).into_response())
}
