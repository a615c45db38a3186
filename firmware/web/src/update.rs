//! Updates and reboots. Both need root and the daemon runs as the `telebridge` user, so it only
//! asks: it writes a request into its runtime directory (`/run/telebridge`, systemd's
//! `RuntimeDirectory=`), and a root helper that watches it (`telebridge-helper.path`) acts. An
//! update is a signed RAUC bundle uploaded through the panel: streamed to the state directory
//! (`/var/lib/telebridge`, the data partition), then the helper runs `rauc install`, which checks
//! the signature against the image's keyring and writes the root slot that is not running, and
//! reboots into it; a slot whose daemon is not ready within minutes sends the box back to the
//! one before (docs/image.md). The helper says how it went in `update-status` (state, message),
//! in its own folder ([`crate::helper`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tracing::{info, warn};

use crate::error::{error, ApiError};
use crate::helper::{answers_dir, request, requests_dir};
use crate::AppState;

/// The largest bundle taken (a root file system, compressed).
pub(crate) const BUNDLE_LIMIT: u64 = 2 << 30;
/// How long a bundle may take to arrive (a slow Wi-Fi link).
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The bundle's name in the state directory.
const BUNDLE: &str = "update.raucb";

fn no_helper(what: &str) -> ApiError {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "{what} is done by the box's helper (telebridge-helper.path), which runs where systemd starts the daemon"
        ),
    )
}

/// Reboots the box through the helper; refused under `--sim`, where there is no box.
pub(crate) async fn reboot(State(s): State<AppState>) -> Result<Response, ApiError> {
    if s.daemon.sim().is_some() {
        return Err(error(StatusCode::CONFLICT, "simulation: there is no box to reboot"));
    }
    let Some(dir) = requests_dir() else { return Err(no_helper("rebooting")) };
    warn!("reboot requested from the panel");
    match request(&dir, "reboot-request", "reboot\n") {
        Ok(()) => Ok((StatusCode::ACCEPTED, Json(json!({ "rebooting": true }))).into_response()),
        Err(e) => Err(ApiError::Internal { what: "cannot ask for a reboot", detail: e.to_string() }),
    }
}

/// What the helper said of the last update.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct UpdateStatus {
    /// idle | installing | installed | failed
    state: String,
    /// In words: what is being done, or why it failed.
    message: String,
}

/// Reads the helper's `update-status` (first line the state, the rest the message).
fn read_status(text: Option<&str>) -> UpdateStatus {
    let Some(text) = text else { return UpdateStatus { state: "idle".into(), message: String::new() } };
    let (state, message) = text.split_once('\n').unwrap_or((text, ""));
    let state = match state.trim() {
        s @ ("installing" | "installed" | "failed") => s.to_string(),
        other => return UpdateStatus { state: "failed".into(), message: format!("unreadable helper status: {other}") },
    };
    UpdateStatus { state, message: message.trim().to_string() }
}

/// The last update's state: installing while the request waits for the helper, else what the
/// helper last said in its own folder.
fn current_status() -> UpdateStatus {
    if requests_dir().is_some_and(|d| d.join("update-request").exists()) {
        return UpdateStatus { state: "installing".into(), message: "handing the bundle to the helper".into() };
    }
    let text = answers_dir().and_then(|d| std::fs::read_to_string(d.join("update-status")).ok());
    read_status(text.as_deref())
}

/// `GET /api/update`: the last update's state.
pub(crate) async fn status() -> Result<Response, ApiError> {
    Ok(Json(current_status()).into_response())
}

/// `POST /api/update`: the bundle as the body (`application/octet-stream`), at most 2 GiB.
/// Under `--sim` too: whether anything installs it is the helper's to say.
pub(crate) async fn upload(req: Request) -> Result<Response, ApiError> {
    let Some(dir) = requests_dir() else { return Err(no_helper("updating")) };
    let Some(state_dir) = std::env::var_os("STATE_DIRECTORY").map(PathBuf::from) else {
        return Err(no_helper("updating"));
    };
    if current_status().state == "installing" {
        return Err(error(StatusCode::CONFLICT, "an update is being installed: wait for it"));
    }
    let path = state_dir.join(BUNDLE);
    let written = tokio::time::timeout(UPLOAD_TIMEOUT, save_body(req, &path)).await;
    let size = match written {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            let _ = tokio::fs::remove_file(&path).await;
            return Err(e);
        }
        Err(_) => {
            let _ = tokio::fs::remove_file(&path).await;
            return Err(error(
                StatusCode::REQUEST_TIMEOUT,
                format!("the bundle did not arrive within {} minutes", UPLOAD_TIMEOUT.as_secs() / 60),
            ));
        }
    };
    info!(bytes = size, "update bundle received; asking the helper to install it");
    if let Err(e) = request(&dir, "update-request", &format!("{}\n", path.display())) {
        return Err(ApiError::Internal { what: "cannot ask for the update", detail: e.to_string() });
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "state": "installing", "bytes": size }))).into_response())
}

/// Streams the body to `path`, at most [`BUNDLE_LIMIT`] bytes, synced before it is handed on.
async fn save_body(req: Request, path: &Path) -> Result<u64, ApiError> {
    let io = |e: std::io::Error| ApiError::Internal { what: "cannot store the bundle", detail: e.to_string() };
    let mut file = tokio::fs::File::create(path).await.map_err(io)?;
    let mut stream = req.into_body().into_data_stream();
    let mut size: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| error(StatusCode::BAD_REQUEST, format!("the upload broke off: {e}")))?;
        size += chunk.len() as u64;
        if size > BUNDLE_LIMIT {
            return Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("a bundle is at most {BUNDLE_LIMIT} bytes")));
        }
        file.write_all(&chunk).await.map_err(io)?;
    }
    if size == 0 {
        return Err(error(StatusCode::UNPROCESSABLE_ENTITY, "the body is empty: send the .raucb file as the body"));
    }
    file.sync_all().await.map_err(io)?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_helpers_words_are_read_and_nothing_else_is_believed() {
        assert_eq!(read_status(None).state, "idle");
        let s = read_status(Some("installing\nchecking the bundle's signature (12 bytes)\n"));
        assert_eq!(
            (s.state.as_str(), s.message.as_str()),
            ("installing", "checking the bundle's signature (12 bytes)")
        );
        let s = read_status(Some("failed\nrauc: signature verification failed\n"));
        assert_eq!(s.state, "failed");
        assert!(s.message.contains("signature"));
        assert_eq!(read_status(Some("installed")).message, "");
        let s = read_status(Some("exploded\nwhatever"));
        assert_eq!(s.state, "failed");
        assert!(s.message.contains("exploded"), "{}", s.message);
    }
}
