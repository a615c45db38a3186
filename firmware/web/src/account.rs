//! The owner's account: first-run setup with the code, log in and out, the password change.

use std::net::IpAddr;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use telebridge_contract::daemon::DaemonCommand;
use tracing::{info, warn};

use crate::auth::{self, COOKIE, MIN_PASSWORD};
use crate::body::{read_body, Shape, SMALL_BODY};
use crate::error::{error, refused, ApiError};
use crate::middleware::{client_ip, cookie, device_cookie, session_cookie, session_token};
use crate::AppState;

pub(crate) async fn setup_status(State(s): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    Ok(Json(json!({ "needed": s.auth.setup_code().is_some(), "min_password": MIN_PASSWORD })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetupBody {
    code: String,
    password: String,
}

impl Shape for SetupBody {
    const SHAPE: &'static str = r#"{"code": "1234-5678", "password": "..."}"#;
}

pub(crate) async fn setup(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let ip = client_ip(req.extensions());
    let Some(code) = s.auth.setup_code() else {
        return Err(error(StatusCode::CONFLICT, "the password is already set; log in instead"));
    };
    let (body, attempt) = attempt_body::<SetupBody>(&s, ip, req).await?;
    if !crate::auth::setup_code_matches(&body.code, &code) {
        attempt.failed(Instant::now());
        warn!(%ip, "wrong setup code");
        return Err(error(
            StatusCode::FORBIDDEN,
            "wrong setup code: it is on the HDMI output, in the log and on the boot partition",
        ));
    }
    password_rule("password", &body.password)?;
    set_password(&s, body.password).await?;
    s.auth.finish_setup();
    attempt.succeeded();
    // The code is spent: a file that says otherwise only misleads.
    s.host.publish_setup_code(&s.store.file().web.setup_code_file, None);
    let _ = s.daemon.commands().send(DaemonCommand::SetupText(None)).await;
    info!(%ip, "setup done: password set");
    Ok(new_session(&s))
}

/// A new session, in its cookie, and the known-device cookie (a browser that logged in keeps
/// its place among the password checks: [`auth::KEPT_FOR_KNOWN`]).
fn new_session(s: &AppState) -> Response {
    let token = s.auth.new_session(Instant::now());
    let device = crate::device::device_token(&s.store.file().web.password_hash);
    // Appended, not inserted (an array of pairs keeps the last of one name); the session's first.
    let cookies =
        AppendHeaders([(header::SET_COOKIE, session_cookie(&token)), (header::SET_COOKIE, device_cookie(&device))]);
    (cookies, Json(json!({ "ok": true }))).into_response()
}

/// Whether the request comes from a browser that logged in before, under this password.
fn known_device(s: &AppState, headers: &HeaderMap) -> bool {
    cookie(headers, crate::device::DEVICE_COOKIE)
        .is_some_and(|t| crate::device::known_device(&s.store.file().web.password_hash, &t))
}

/// The body of a request that asks for a password check, read before the check is begun: an
/// address that may not try now is refused unread, and a body that does not arrive within its
/// time or does not parse counts as a wrong attempt (issue 36, finding 3: half-sent bodies held
/// every check while their senders were never locked out).
async fn attempt_body<T: serde::de::DeserializeOwned + Shape>(
    s: &AppState,
    ip: IpAddr,
    req: Request,
) -> Result<(T, auth::Attempt), ApiError> {
    s.auth.admit(ip, Instant::now()).map_err(|r| refused(ip, r))?;
    let known = known_device(s, req.headers());
    let bytes = read_body(req, SMALL_BODY).await.inspect_err(|_| {
        s.auth.failed_unread(ip, Instant::now());
        warn!(%ip, "a login body that did not arrive in time: counted as a wrong attempt");
    })?;
    let body = serde_json::from_slice::<T>(&bytes).map_err(|_| {
        s.auth.failed_unread(ip, Instant::now());
        // (Not serde's words: they could quote the password.)
        error(StatusCode::UNPROCESSABLE_ENTITY, format!("body must be {}", T::SHAPE))
    })?;
    let attempt = s.auth.begin(ip, Instant::now(), known).map_err(|r| refused(ip, r))?;
    Ok((body, attempt))
}

/// A new password's length rule, as an answer naming `field` when it is broken.
fn password_rule(field: &str, password: &str) -> Result<(), ApiError> {
    let n = password.chars().count();
    if (MIN_PASSWORD..=auth::MAX_PASSWORD).contains(&n) {
        return Ok(());
    }
    Err(error(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("{field}: {n} characters; it must have at least {MIN_PASSWORD} and at most {}", auth::MAX_PASSWORD),
    ))
}

async fn set_password(s: &AppState, password: String) -> Result<(), ApiError> {
    let hash = s.checker.hash(password).await.map_err(|e| {
        warn!(error = %e, "cannot hash the new password");
        error(StatusCode::SERVICE_UNAVAILABLE, "the box is busy checking passwords: try again in a few seconds")
    })?;
    let mut c = s.store.file();
    c.web.password_hash = hash;
    s.store.replace(c).await.map(|_| ()).map_err(ApiError::from)
}

/// Checks `password` against the box's for `attempt`: `Ok` when right (the caller ends the
/// attempt), `Err(None)` when wrong (counted against `ip`), `Err(Some(answer))` when the box
/// could not check it now (not counted: no answer is not a wrong password).
async fn check(
    s: &AppState,
    ip: IpAddr,
    attempt: auth::Attempt,
    password: String,
) -> Result<auth::Attempt, Option<ApiError>> {
    if password.chars().count() > auth::MAX_PASSWORD {
        attempt.failed(Instant::now());
        return Err(None);
    }
    match s.checker.verify(password, s.store.file().web.password_hash).await {
        Some(true) => Ok(attempt),
        Some(false) => {
            attempt.failed(Instant::now());
            Err(None)
        }
        None => Err(Some(refused(ip, auth::Refusal::Busy))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginBody {
    password: String,
}

impl Shape for LoginBody {
    const SHAPE: &'static str = r#"{"password": "..."}"#;
}

pub(crate) async fn login(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let ip = client_ip(req.extensions());
    if s.auth.setup_code().is_some() {
        return Err(error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code"));
    }
    let (body, attempt) = attempt_body::<LoginBody>(&s, ip, req).await?;
    match check(&s, ip, attempt, body.password).await {
        Ok(attempt) => attempt.succeeded(),
        Err(None) => {
            warn!(%ip, "wrong password");
            return Err(error(StatusCode::UNAUTHORIZED, "wrong password"));
        }
        Err(Some(busy)) => return Err(busy),
    }
    Ok(new_session(&s))
}

pub(crate) async fn logout(State(s): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(t) = session_token(&headers) {
        s.auth.end(&t);
    }
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    Ok(([(header::SET_COOKIE, clear)], StatusCode::NO_CONTENT).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasswordBody {
    current: String,
    new: String,
}

impl Shape for PasswordBody {
    const SHAPE: &'static str = r#"{"current": "...", "new": "..."}"#;
}

/// Changes the password: the current one must be given; every other session ends.
pub(crate) async fn change_password(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let ip = client_ip(req.extensions());
    let (body, attempt) = attempt_body::<PasswordBody>(&s, ip, req).await?;
    match check(&s, ip, attempt, body.current).await {
        Ok(attempt) => attempt.succeeded(),
        Err(None) => return Err(error(StatusCode::FORBIDDEN, "current: wrong password")),
        Err(Some(busy)) => return Err(busy),
    }
    password_rule("new", &body.new)?;
    set_password(&s, body.new).await?;
    s.auth.end_all();
    info!(%ip, "password changed; every session ended");
    Ok(new_session(&s))
}
