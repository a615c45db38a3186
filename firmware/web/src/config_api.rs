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

/// `GET /api/devices`: what the panel's menus offer (capture devices, sound cards, displays,
/// network interfaces), read now.
pub(crate) async fn devices(State(s): State<AppState>) -> Result<Response, ApiError> {
    let root = s.devices_root.clone();
    let found = tokio::task::spawn_blocking(move || telebridge_config::devices::Devices::probe(&root)).await;
    match found {
        Ok(d) => Ok(Json(d).into_response()),
        Err(e) => Err(ApiError::Internal { what: "cannot list the devices", detail: e.to_string() }),
    }
}

pub(crate) async fn put_config(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let bytes = read_body(req, LARGE_BODY).await?;
    let new: Config = match serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&bytes)) {
        Ok(c) => c,
        Err(e) => {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            return Err(ApiError::Invalid(vec![(field, in_words(&e.into_inner().to_string()))]));
        }
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

/// A JSON reader's complaint about one field, in words a person reads under it ("invalid
/// value: integer `-5`, expected u32 at line 1 column 127" becomes "-5 is not allowed: a whole
/// number of 0 or more is needed"). What it does not know it keeps, without the position.
fn in_words(message: &str) -> String {
    let m = message.split(" at line ").next().unwrap_or(message);
    let between = |s: &str| s.split('`').nth(1).map(str::to_string);
    let unsigned = m.ends_with("expected u8")
        || m.ends_with("expected u16")
        || m.ends_with("expected u32")
        || m.ends_with("expected u64");
    let number = unsigned || m.ends_with("expected i32") || m.ends_with("expected i64");
    if m.starts_with("invalid type: null") {
        return if number { "empty: a number is needed".into() } else { "empty: a value is needed".into() };
    }
    if number && m.starts_with("invalid value: integer") {
        let v = between(m).unwrap_or_default();
        return if unsigned && v.starts_with('-') {
            format!("{v} is not allowed: a whole number of 0 or more is needed")
        } else {
            format!("{v} is too large")
        };
    }
    if number && m.starts_with("invalid type: floating point") {
        let v = between(m).unwrap_or_default();
        return format!("{v} is not a whole number");
    }
    if number && m.starts_with("invalid type: string") {
        let v = m.split('"').nth(1).unwrap_or_default();
        return format!("{v:?} is not a number");
    }
    if m.starts_with("invalid type:") && m.ends_with("expected a boolean") {
        return "must be true or false".into();
    }
    m.to_string()
}

#[cfg(test)]
mod tests {
    use super::in_words;

    #[test]
    fn a_wrong_number_is_said_in_words() {
        let said = |json: &str| {
            let mut d = serde_json::Deserializer::from_str(json);
            let e = serde_path_to_error::deserialize::<_, telebridge_config::Config>(&mut d).unwrap_err();
            (e.path().to_string(), in_words(&e.into_inner().to_string()))
        };
        let (field, words) = said(r#"{"video": {"bitrate_kbps": -5}}"#);
        assert_eq!(
            (field.as_str(), words.as_str()),
            ("video.bitrate_kbps", "-5 is not allowed: a whole number of 0 or more is needed")
        );
        assert_eq!(said(r#"{"video": {"width": null}}"#).1, "empty: a number is needed");
        assert_eq!(said(r#"{"video": {"fps": 2.5}}"#).1, "2.5 is not a whole number");
        assert_eq!(said(r#"{"video": {"fps": "ten"}}"#).1, "\"ten\" is not a number");
        assert_eq!(said(r#"{"video": {"width": 99999999999}}"#).1, "99999999999 is too large");
        let (field, words) = said(r#"{"outputs": [{"url": "srt://a:1", "nmae": "x"}]}"#);
        assert_eq!(field, "outputs[0].nmae");
        assert!(words.starts_with("unknown field `nmae`, expected"), "{words}");
        assert!(!words.contains("line 1"), "{words}");
    }
}
