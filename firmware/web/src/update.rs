//! Updates and reboots, which the machine does for the daemon (the contract's `Host`: the root
//! helper on a box): an update is a signed RAUC bundle streamed to where the host keeps it,
//! then handed to its installer; `GET /api/update` says how it went.

use std::path::Path;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::json;
use telebridge_contract::host::{HostError, UpdateState};
use tokio::io::AsyncWriteExt;
use tracing::info;

use crate::error::{error, ApiError};
use crate::AppState;

/// The largest bundle taken (a root file system, compressed).
pub(crate) const BUNDLE_LIMIT: u64 = 2 << 30;
/// How long a bundle may take to arrive (a slow Wi-Fi link).
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What the host's refusal means for the API: 503 without a helper, else an internal error.
fn host_error(e: HostError) -> ApiError {
    match e {
        HostError::NoHelper(_) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        HostError::Request { what, detail } => ApiError::Internal { what, detail },
    }
}

/// Reboots the box through the host; refused under `--sim`, where there is no box.
pub(crate) async fn reboot(State(s): State<AppState>) -> Result<Response, ApiError> {
    if s.daemon.sim().is_some() {
        return Err(error(StatusCode::CONFLICT, "simulation: there is no box to reboot"));
    }
    s.host.reboot().map_err(host_error)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "rebooting": true }))).into_response())
}

/// `GET /api/update`: the last update's state.
pub(crate) async fn status(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(s.host.update_status()).into_response())
}

/// `GET /api/fleet`: where the box stands with its fleet server.
pub(crate) async fn fleet(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(s.fleet.view()).into_response())
}

/// `POST /api/update`: the bundle as the body (`application/octet-stream`), at most 2 GiB.
/// Under `--sim` too: whether anything installs it is the host's to say.
pub(crate) async fn upload(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let path = s.host.bundle_path().map_err(host_error)?;
    if s.host.update_status().state == UpdateState::Installing {
        return Err(error(StatusCode::CONFLICT, "an update is being installed: wait for it"));
    }
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
    info!(bytes = size, "update bundle received");
    s.host.install(&path).map_err(host_error)?;
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
