//! `GET /api/discovered`: the boxes on the local network, for the Pair page, as discovery found
//! them ([`NearbyBoxes`]; the box's wiring keeps this box's announcement).

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use telebridge_contract::nearby::{Found, NearbyBoxes};

use crate::error::ApiError;
use crate::AppState;

/// `GET /api/discovered`.
#[derive(Debug, Serialize)]
pub struct DiscoveredView {
    /// The boxes found, by name (never this box).
    pub boxes: Vec<Found>,
    /// Whether this box announces itself now.
    pub announcing: bool,
    /// Why the list stays empty or this box is not announced, in words.
    pub note: Option<String>,
}

/// No discovery (the API's tests, a box that does not look), and why.
#[derive(Debug)]
pub struct NotLooking(pub String);

impl NearbyBoxes for NotLooking {
    fn found(&self) -> Vec<Found> {
        Vec::new()
    }

    fn announced(&self, _: std::net::IpAddr) -> bool {
        false
    }

    fn off(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

/// `GET /api/discovered`: the boxes found on the local network.
pub(crate) async fn discovered(State(s): State<AppState>) -> Result<Json<DiscoveredView>, ApiError> {
    let off = s.nearby.off();
    let announcing = off.is_none() && s.store.running().is_some_and(|c| c.raw.web.announce);
    let note = match (off, announcing) {
        (Some(why), _) => Some(format!("not looking for boxes: {why}")),
        (None, false) => Some("this box is not announced (web.announce is off)".into()),
        (None, true) => None,
    };
    Ok(Json(DiscoveredView { boxes: s.nearby.found(), announcing, note }))
}
