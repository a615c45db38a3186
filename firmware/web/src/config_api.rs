//! The configuration through the API: read (secrets hidden), change (validated, only what
//! changed restarts), back up and restore.

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use telebridge_config::Config;

use crate::backup;
use crate::body::{read_body, LARGE_BODY};
use crate::error::{error, ApiError};
use crate::{AppState, BACKUP_PASSWORD_HEADER};

pub(crate) async fn get_config(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(s.store.file().redacted()).into_response())
}

pub(crate) async fn put_config(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let bytes = read_body(req, LARGE_BODY).await?;
    let new: Config = match serde_json::from_slice(&bytes) {
        Ok(c) => c,
        Err(e) => return Err(ApiError::Invalid(vec![(String::new(), e.to_string())])),
    };
    let running = s.store.file();
    let mut new = new.with_secrets_from(&running);
    if new.web.password_hash != running.web.password_hash {
        // The password changes through setup only, never as a hash pasted into the config.
        new.web.password_hash = running.web.password_hash.clone();
    }
    match s.store.replace(new).await {
        Ok(_) => Ok(Json(json!({ "ok": true, "config": s.store.file().redacted() })).into_response()),
        Err(e) => Err(ApiError::from(e)),
    }
}

#[derive(Deserialize)]
pub(crate) struct BackupQuery {
    secrets: Option<u8>,
}

/// `GET /api/config/backup`: the configuration as one TOML file, secrets as `****`; with
/// `?secrets=1` everything, encrypted with the password in `X-Backup-Password`.
pub(crate) async fn backup_config(
    State(s): State<AppState>,
    Query(q): Query<BackupQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let password = headers.get(BACKUP_PASSWORD_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let with_secrets = q.secrets == Some(1);
    if with_secrets && password.is_none() {
        return Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("a backup with secrets needs a password in {BACKUP_PASSWORD_HEADER}"),
        ));
    }
    let config = s.store.file();
    let pw = if with_secrets { password } else { None };
    let made = tokio::task::spawn_blocking(move || backup::export(&config, pw.as_deref())).await;
    match made {
        Ok(Ok(file)) => {
            let name = if with_secrets { "telebridge-backup.tbk" } else { "telebridge-backup.toml" };
            Ok((
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                    (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
                ],
                file,
            )
                .into_response())
        }
        Ok(Err(e)) => Err(error(StatusCode::UNPROCESSABLE_ENTITY, e)),
        Err(e) => Err(ApiError::Internal { what: "cannot make the backup", detail: e.to_string() }),
    }
}

/// `POST /api/config/restore`: the body is a backup file (its password, when encrypted, in
/// `X-Backup-Password`); it goes through the same validation as any change and restarts only
/// what changed. Secrets left as `****` keep the box's own.
pub(crate) async fn restore_config(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let password = req.headers().get(BACKUP_PASSWORD_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = read_body(req, LARGE_BODY).await?;
    let text = String::from_utf8_lossy(&bytes).to_string();
    let read = tokio::task::spawn_blocking(move || backup::import(&text, password.as_deref())).await;
    let restored = match read {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(error(StatusCode::UNPROCESSABLE_ENTITY, e)),
        Err(e) => return Err(ApiError::Internal { what: "cannot read the backup", detail: e.to_string() }),
    };
    let running = s.store.file();
    let mut new = restored.with_secrets_from(&running);
    if new.web.password_hash.is_empty() {
        // A backup of a box without a password must not remove this box's.
        new.web.password_hash = running.web.password_hash.clone();
    }
    match s.store.replace(new).await {
        Ok(_) => Ok(Json(json!({ "ok": true, "config": s.store.file().redacted() })).into_response()),
        Err(e) => Err(ApiError::from(e)),
    }
}
