//! The HTTP side of the box: the REST API over the appliance daemon (and the panel). Every
//! request that changes something needs a session and passes a CSRF check; until the first
//! password is set, only the setup endpoints answer. Under `--sim` it also shows the simulated
//! GPIO and presses its button (the simulated hardware needs no login, as a real button does not).

pub mod auth;
pub mod backup;
pub mod history;
pub mod metrics;
pub mod server;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use telebridge_appliance::{ConfigStore, DaemonCommand, DaemonHandle, StoreError};
use telebridge_config::Config;
use telebridge_gpio::{ButtonEvent, Led};
use tracing::{info, warn};

use crate::auth::{Auth, COOKIE, MIN_PASSWORD};
use crate::history::History;

/// How the setup code file starts (and how a stale one is known before it is removed).
const SETUP_FILE_HEAD: &str = "Telebridge setup code: ";

/// Removes the setup code file once the password is set: the code is spent, and a file that
/// says otherwise only misleads. Only a file that is ours (it starts with our words) goes.
fn remove_setup_code_file(path: &str) {
    let path = std::path::Path::new(path);
    if std::fs::read_to_string(path).is_ok_and(|t| t.starts_with(SETUP_FILE_HEAD)) {
        match std::fs::remove_file(path) {
            Ok(()) => info!(file = %path.display(), "setup code file removed (the password is set)"),
            Err(e) => warn!(file = %path.display(), error = %e, "cannot remove the spent setup code file"),
        }
    }
}

/// Everything the handlers share.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The daemon.
    pub daemon: DaemonHandle,
    /// The editable configuration.
    pub store: Arc<ConfigStore>,
    /// Sessions, attempts, setup code.
    pub auth: Arc<Auth>,
    /// The one thread that checks and hashes passwords.
    pub checker: auth::Checker,
    /// One row a second for 24 h.
    pub history: Arc<History>,
}

impl AppState {
    /// State for a daemon (call inside the runtime: it starts recording the history); when no
    /// password is set yet, makes the one-time setup code, logs it and writes it to
    /// `web.setup_code_file`.
    pub fn new(daemon: DaemonHandle, store: Arc<ConfigStore>) -> Self {
        let file = store.file();
        let code = file.web.password_hash.is_empty().then(auth::new_setup_code);
        if let Some(code) = &code {
            // The one secret that is logged, by design: it is how the owner gets in the first time.
            warn!(setup_code = %code, "first start: no password yet; open the panel and enter this setup code");
            let path = std::path::Path::new(&file.web.setup_code_file);
            match std::fs::write(path, format!("{SETUP_FILE_HEAD}{code}\n")) {
                Ok(()) => info!(file = %path.display(), "setup code written"),
                Err(e) => warn!(file = %path.display(), error = %e, "cannot write the setup code file"),
            }
        }
        if let Some(code) = &code {
            let text = format!("Setup code: {code}\nOpen the panel and enter it to choose a password.");
            let _ = daemon.commands.try_send(DaemonCommand::SetupText(Some(text)));
        }
        if code.is_none() {
            remove_setup_code_file(&file.web.setup_code_file);
        }
        let state = Self {
            daemon,
            store,
            auth: Arc::new(Auth::new(code)),
            checker: auth::Checker::start(),
            history: Arc::new(History::default()),
        };
        state.spawn_history();
        state
    }

    /// Records one history row a second until the daemon goes away.
    fn spawn_history(&self) {
        let (history, mut status) = (self.history.clone(), self.daemon.status.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                if status.has_changed().is_err() {
                    break;
                }
                let s = status.borrow_and_update().clone();
                let state = serde_json::to_value(s.machine.state).unwrap_or_default();
                let unix = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                history.record(unix, state.as_str().unwrap_or(""), s.media.as_ref());
            }
        });
    }
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    let panel = PANEL.iter().fold(Router::new(), |r, (path, _, _)| r.route(path, get(panel_file)));
    let open = panel
        .route("/healthz", get(healthz))
        .route("/api/setup", get(setup_status).post(setup))
        .route("/api/session", post(login).delete(logout))
        .route("/metrics", get(metrics_handler))
        .route("/api/openapi.json", get(openapi));
    let protected = Router::new()
        .route("/api/status", get(status))
        .route("/api/config", get(get_config).put(put_config))
        .route("/api/config/backup", get(backup_config))
        .route("/api/config/restore", post(restore_config))
        .route("/api/live", post(live))
        .route("/api/events", get(events))
        .route("/api/stats.csv", get(stats_csv))
        .route("/api/logs", get(logs))
        .route("/api/preview.jpg", get(preview))
        .route("/api/password", post(change_password))
        .route("/api/reboot", post(reboot))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_session));
    let mut r = open.merge(protected);
    if state.daemon.sim.is_some() {
        r = r
            .route("/api/sim/gpio", get(sim_gpio))
            .route("/api/sim/button", post(sim_button))
            .route("/api/sim/stall", post(sim_stall))
            .route("/api/sim/signal", post(sim_signal));
    }
    r.layer(middleware::from_fn(csrf)).layer(middleware::from_fn(no_store)).with_state(state)
}

/// The API's answers (status, configuration, logs, metrics) are the box's state at one moment
/// and may carry what only a session should see: no cache keeps them.
async fn no_store(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/metrics";
    let mut resp = next.run(req).await;
    if api {
        resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    }
    resp
}

pub use server::serve;

fn error(code: StatusCode, message: impl Into<String>) -> Response {
    (code, Json(json!({ "error": message.into() }))).into_response()
}

fn client_ip(req_ext: &axum::http::Extensions) -> IpAddr {
    req_ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// The header a non-browser client sends instead of an `Origin`.
pub const CSRF_HEADER: &str = "x-telebridge-csrf";

/// Requests that change something must come from the panel's own origin (a browser sends
/// `Origin`), or carry [`CSRF_HEADER`] (which a cross-site form cannot set).
async fn csrf(req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let h = req.headers();
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    match h.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => {
            let bare = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).unwrap_or("");
            if bare.is_empty() || bare != host {
                return error(StatusCode::FORBIDDEN, format!("origin {origin} is not this box ({host})"));
            }
        }
        None if h.contains_key(CSRF_HEADER) => {}
        None => {
            return error(
                StatusCode::FORBIDDEN,
                format!("a request that changes something needs an Origin header or {CSRF_HEADER}: 1"),
            )
        }
    }
    next.run(req).await
}

fn session_token(h: &HeaderMap) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == COOKIE).then(|| v.to_string())
    })
}

async fn require_session(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if s.auth.setup_code().is_some() {
        return error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code");
    }
    match session_token(req.headers()) {
        Some(t) if s.auth.valid(&t, Instant::now()) => next.run(req).await,
        _ => error(StatusCode::UNAUTHORIZED, "log in first (POST /api/session)"),
    }
}

fn session_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", auth::SESSION_TTL.as_secs())
}

/// The panel's files, embedded at build time (web-ui/, under 300 KB with uPlot).
const PANEL: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../../../web-ui/index.html")),
    ("/app.js", "text/javascript; charset=utf-8", include_str!("../../../web-ui/app.js")),
    ("/app.css", "text/css; charset=utf-8", include_str!("../../../web-ui/app.css")),
    (
        "/vendor/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web-ui/vendor/uPlot.iife.min.js"),
    ),
    ("/vendor/uPlot.min.css", "text/css; charset=utf-8", include_str!("../../../web-ui/vendor/uPlot.min.css")),
];

async fn panel_file(uri: axum::http::Uri) -> Response {
    match PANEL.iter().find(|(p, _, _)| *p == uri.path()) {
        Some((_, kind, body)) => (
            [
                (header::CONTENT_TYPE, *kind),
                (header::CACHE_CONTROL, "no-cache"),
                (header::CONTENT_SECURITY_POLICY, "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *body,
        )
            .into_response(),
        None => error(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The OpenAPI document of this API.
pub const OPENAPI: &str = include_str!("../openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// The panel's total size, bytes.
pub fn panel_size() -> usize {
    PANEL.iter().map(|(_, _, b)| b.len()).sum()
}

async fn healthz(State(s): State<AppState>) -> Response {
    if s.daemon.heartbeat.age() < Duration::from_secs(2) {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        error(StatusCode::SERVICE_UNAVAILABLE, "the main loop is not turning")
    }
}

async fn setup_status(State(s): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({ "needed": s.auth.setup_code().is_some(), "min_password": MIN_PASSWORD }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupBody {
    code: String,
    password: String,
}

/// The answer to an attempt refused before anything was checked (see [`auth`]).
fn refused(ip: IpAddr, refusal: auth::Refusal) -> Response {
    let retry_after = |mut r: Response, secs: u64| {
        if let Ok(v) = secs.to_string().parse() {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        r
    };
    match refusal {
        auth::Refusal::Locked(wait) => retry_after(
            error(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many wrong attempts from {ip}: wait {} s", wait.as_secs() + 1),
            ),
            wait.as_secs() + 1,
        ),
        auth::Refusal::TooMany => retry_after(
            error(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many attempts from {ip} at once: {} a minute are checked", auth::MAX_FAILURES),
            ),
            auth::FAILURE_WINDOW.as_secs(),
        ),
        auth::Refusal::Busy => retry_after(
            error(StatusCode::SERVICE_UNAVAILABLE, "the box is checking other passwords: try again in a few seconds"),
            5,
        ),
    }
}

async fn setup(State(s): State<AppState>, req: Request) -> Response {
    let ip = client_ip(req.extensions());
    let Some(code) = s.auth.setup_code() else {
        return error(StatusCode::CONFLICT, "the password is already set; log in instead");
    };
    let attempt = match s.auth.begin(ip, Instant::now()) {
        Ok(a) => a,
        Err(refusal) => return refused(ip, refusal),
    };
    let Some(Json(body)) = json_body::<SetupBody>(req).await else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "body must be {\"code\": \"1234-5678\", \"password\": \"...\"}",
        );
    };
    if body.code.trim() != code {
        attempt.failed(Instant::now());
        warn!(%ip, "wrong setup code");
        return error(
            StatusCode::FORBIDDEN,
            "wrong setup code: it is on the HDMI output, in the log and on the boot partition",
        );
    }
    if let Some(r) = password_rule("password", &body.password) {
        return r;
    }
    match set_password(&s, body.password).await {
        Ok(()) => {
            s.auth.finish_setup();
            attempt.succeeded();
            remove_setup_code_file(&s.store.file().web.setup_code_file);
            let _ = s.daemon.commands.send(DaemonCommand::SetupText(None)).await;
            info!(%ip, "setup done: password set");
            let token = s.auth.new_session(Instant::now());
            ([(header::SET_COOKIE, session_cookie(&token))], Json(json!({ "ok": true }))).into_response()
        }
        Err(r) => r,
    }
}

/// A new password's length rule, as an answer naming `field` when it is broken.
fn password_rule(field: &str, password: &str) -> Option<Response> {
    let n = password.chars().count();
    (!(MIN_PASSWORD..=auth::MAX_PASSWORD).contains(&n)).then(|| {
        error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{field}: {n} characters; it must have at least {MIN_PASSWORD} and at most {}", auth::MAX_PASSWORD),
        )
    })
}

async fn set_password(s: &AppState, password: String) -> Result<(), Response> {
    let hash = s.checker.hash(password).await.map_err(|e| {
        warn!(error = %e, "cannot hash the new password");
        error(StatusCode::SERVICE_UNAVAILABLE, "the box is busy checking passwords: try again in a few seconds")
    })?;
    let mut c = s.store.file();
    c.web.password_hash = hash;
    s.store.replace(c).await.map(|_| ()).map_err(store_error)
}

/// The largest small JSON body (login, live, password...) read.
const SMALL_BODY: usize = 16 << 10;
/// The largest configuration or backup read.
const LARGE_BODY: usize = 1 << 20;
/// How long a body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The request's body, at most `limit` bytes, arriving within [`BODY_TIMEOUT`].
async fn read_body(req: Request, limit: usize) -> Result<axum::body::Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(req.into_body(), limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {limit} bytes, or broken"))),
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        )),
    }
}

async fn json_body<T: serde::de::DeserializeOwned>(req: Request) -> Option<Json<T>> {
    let bytes = read_body(req, SMALL_BODY).await.ok()?;
    serde_json::from_slice(&bytes).ok().map(Json)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    password: String,
}

async fn login(State(s): State<AppState>, req: Request) -> Response {
    let ip = client_ip(req.extensions());
    if s.auth.setup_code().is_some() {
        return error(StatusCode::FORBIDDEN, "setup required: open the panel and enter the setup code");
    }
    let attempt = match s.auth.begin(ip, Instant::now()) {
        Ok(a) => a,
        Err(refusal) => return refused(ip, refusal),
    };
    let Some(Json(body)) = json_body::<LoginBody>(req).await else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"password\": \"...\"}");
    };
    let hash = s.store.file().web.password_hash;
    let ok = body.password.chars().count() <= auth::MAX_PASSWORD && s.checker.verify(body.password, hash).await;
    if !ok {
        attempt.failed(Instant::now());
        warn!(%ip, "wrong password");
        return error(StatusCode::UNAUTHORIZED, "wrong password");
    }
    attempt.succeeded();
    let token = s.auth.new_session(Instant::now());
    ([(header::SET_COOKIE, session_cookie(&token))], Json(json!({ "ok": true }))).into_response()
}

async fn logout(State(s): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(t) = session_token(&headers) {
        s.auth.end(&t);
    }
    let clear = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    ([(header::SET_COOKIE, clear)], StatusCode::NO_CONTENT).into_response()
}

async fn status(State(s): State<AppState>) -> Response {
    let st = s.daemon.status.borrow().clone();
    Json(st).into_response()
}

async fn get_config(State(s): State<AppState>) -> Response {
    Json(s.store.file().redacted()).into_response()
}

fn store_error(e: StoreError) -> Response {
    match e {
        StoreError::Invalid(errs) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({
                "error": "the configuration was not changed",
                "errors": errs.0.iter().map(|e| json!({ "field": e.field, "message": e.message })).collect::<Vec<_>>(),
            })),
        )
            .into_response(),
        StoreError::Save { .. } => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        StoreError::Stopped => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

async fn put_config(State(s): State<AppState>, req: Request) -> Response {
    let bytes = match read_body(req, LARGE_BODY).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let new: Config = match serde_json::from_slice(&bytes) {
        Ok(c) => c,
        Err(e) => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({ "error": "the configuration was not changed", "errors": [{ "field": "", "message": e.to_string() }] })),
            )
                .into_response()
        }
    };
    let running = s.store.file();
    let mut new = new.with_secrets_from(&running);
    if new.web.password_hash != running.web.password_hash {
        // The password changes through setup only, never as a hash pasted into the config.
        new.web.password_hash = running.web.password_hash.clone();
    }
    match s.store.replace(new).await {
        Ok(_) => Json(json!({ "ok": true, "config": s.store.file().redacted() })).into_response(),
        Err(e) => store_error(e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LiveBody {
    live: bool,
}

async fn live(State(s): State<AppState>, req: Request) -> Response {
    let Some(Json(body)) = json_body::<LiveBody>(req).await else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"live\": true} or {\"live\": false}");
    };
    if s.daemon.commands.send(DaemonCommand::Live(body.live)).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    (StatusCode::ACCEPTED, Json(json!({ "live": body.live }))).into_response()
}

/// Server-sent events: `sample` once a second (the `--stats json` line of the running media,
/// with the state), `state` when the state changes.
async fn events(State(s): State<AppState>) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = s.daemon.status.clone();
    let stream = futures_util::stream::unfold(
        (rx, None::<String>, Instant::now()),
        |(rx, last_state, last_sample)| async move {
            let mut last_state = last_state;
            let mut last_sample = last_sample;
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if rx.has_changed().is_err() {
                    return None;
                }
                let st = rx.borrow().clone();
                let state =
                    serde_json::to_value(st.machine.state).unwrap_or_default().as_str().unwrap_or("").to_string();
                if last_state.as_deref() != Some(state.as_str()) {
                    let ev = SseEvent::default().event("state").json_data(&st.machine).unwrap_or_default();
                    return Some((Ok(ev), (rx, Some(state), last_sample)));
                }
                if last_sample.elapsed() >= Duration::from_secs(1) {
                    last_sample = Instant::now();
                    let data = json!({ "state": state, "leds": st.led_patterns, "media": st.media, "alerts": st.alerts, "input": st.input });
                    let ev = SseEvent::default().event("sample").json_data(&data).unwrap_or_default();
                    return Some((Ok(ev), (rx, last_state, last_sample)));
                }
                last_state = Some(state);
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Deserialize)]
struct CsvQuery {
    minutes: Option<u32>,
}

async fn stats_csv(State(s): State<AppState>, Query(q): Query<CsvQuery>) -> Response {
    let minutes = q.minutes.unwrap_or(5).clamp(1, 24 * 60);
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"telebridge-{minutes}min.csv\"")),
        ],
        s.history.csv(minutes),
    )
        .into_response()
}

/// The current picture, small (320 px wide), made at most once a second by the encoder.
async fn preview(State(s): State<AppState>) -> Response {
    let jpeg = s.daemon.preview.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match jpeg {
        Some(bytes) => {
            ([(header::CONTENT_TYPE, "image/jpeg"), (header::CACHE_CONTROL, "no-store")], bytes).into_response()
        }
        None => error(StatusCode::NOT_FOUND, "no picture: the encoder is not running"),
    }
}

#[derive(Deserialize)]
struct LogsQuery {
    lines: Option<usize>,
}

/// The daemon's last log lines (no secrets are ever logged).
async fn logs(Query(q): Query<LogsQuery>) -> Response {
    Json(json!({ "lines": telebridge_appliance::logs::tail(q.lines.unwrap_or(100).min(telebridge_appliance::logs::LINES)) }))
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PasswordBody {
    current: String,
    new: String,
}

/// Changes the password: the current one must be given; every other session ends.
async fn change_password(State(s): State<AppState>, req: Request) -> Response {
    let ip = client_ip(req.extensions());
    let attempt = match s.auth.begin(ip, Instant::now()) {
        Ok(a) => a,
        Err(refusal) => return refused(ip, refusal),
    };
    let Some(Json(body)) = json_body::<PasswordBody>(req).await else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"current\": \"...\", \"new\": \"...\"}");
    };
    let hash = s.store.file().web.password_hash;
    let current_ok = body.current.chars().count() <= auth::MAX_PASSWORD && s.checker.verify(body.current, hash).await;
    if !current_ok {
        attempt.failed(Instant::now());
        return error(StatusCode::FORBIDDEN, "current: wrong password");
    }
    attempt.succeeded();
    if let Some(r) = password_rule("new", &body.new) {
        return r;
    }
    if let Err(r) = set_password(&s, body.new).await {
        return r;
    }
    s.auth.end_all();
    info!(%ip, "password changed; every session ended");
    let token = s.auth.new_session(Instant::now());
    ([(header::SET_COOKIE, session_cookie(&token))], Json(json!({ "ok": true }))).into_response()
}

/// Reboots the box (`systemctl reboot`); refused under `--sim`, where there is no box.
async fn reboot(State(s): State<AppState>) -> Response {
    if s.daemon.sim.is_some() {
        return error(StatusCode::CONFLICT, "simulation: there is no box to reboot");
    }
    warn!("reboot requested from the panel");
    let status = tokio::task::spawn_blocking(|| std::process::Command::new("systemctl").arg("reboot").status()).await;
    match status.map_err(std::io::Error::other).and_then(|r| r) {
        Ok(st) if st.success() => (StatusCode::ACCEPTED, Json(json!({ "rebooting": true }))).into_response(),
        Ok(st) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("systemctl reboot: {st}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("systemctl reboot: {e}")),
    }
}

/// The header that carries a backup's password (never a query string, which gets logged).
pub const BACKUP_PASSWORD_HEADER: &str = "x-backup-password";

#[derive(Deserialize)]
struct BackupQuery {
    secrets: Option<u8>,
}

/// `GET /api/config/backup`: the configuration as one TOML file, secrets as `****`; with
/// `?secrets=1` everything, encrypted with the password in `X-Backup-Password`.
async fn backup_config(State(s): State<AppState>, Query(q): Query<BackupQuery>, headers: HeaderMap) -> Response {
    let password = headers.get(BACKUP_PASSWORD_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let with_secrets = q.secrets == Some(1);
    if with_secrets && password.is_none() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("a backup with secrets needs a password in {BACKUP_PASSWORD_HEADER}"),
        );
    }
    let config = s.store.file();
    let pw = if with_secrets { password } else { None };
    let made = tokio::task::spawn_blocking(move || backup::export(&config, pw.as_deref())).await;
    match made {
        Ok(Ok(file)) => {
            let name = if with_secrets { "telebridge-backup.tbk" } else { "telebridge-backup.toml" };
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                    (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
                ],
                file,
            )
                .into_response()
        }
        Ok(Err(e)) => error(StatusCode::UNPROCESSABLE_ENTITY, e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `POST /api/config/restore`: the body is a backup file (its password, when encrypted, in
/// `X-Backup-Password`); it goes through the same validation as any change and restarts only
/// what changed. Secrets left as `****` keep the box's own.
async fn restore_config(State(s): State<AppState>, req: Request) -> Response {
    let password = req.headers().get(BACKUP_PASSWORD_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = match read_body(req, LARGE_BODY).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let text = String::from_utf8_lossy(&bytes).to_string();
    let read = tokio::task::spawn_blocking(move || backup::import(&text, password.as_deref())).await;
    let restored = match read {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return error(StatusCode::UNPROCESSABLE_ENTITY, e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let running = s.store.file();
    let mut new = restored.with_secrets_from(&running);
    if new.web.password_hash.is_empty() {
        // A backup of a box without a password must not remove this box's.
        new.web.password_hash = running.web.password_hash.clone();
    }
    match s.store.replace(new).await {
        Ok(_) => Json(json!({ "ok": true, "config": s.store.file().redacted() })).into_response(),
        Err(e) => store_error(e),
    }
}

/// Prometheus: a session or the read-only bearer token of `web.metrics_token`.
async fn metrics_handler(State(s): State<AppState>, headers: HeaderMap) -> Response {
    let token = s.store.file().web.metrics_token;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| !token.is_empty() && t == token);
    let session = session_token(&headers).is_some_and(|t| s.auth.valid(&t, Instant::now()));
    if !bearer && !session {
        return error(StatusCode::UNAUTHORIZED, "log in, or send Authorization: Bearer <web.metrics_token>");
    }
    let st = s.daemon.status.borrow().clone();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics::render(&st)).into_response()
}

async fn sim_gpio(State(s): State<AppState>) -> Response {
    let Some(state) = s.daemon.sim_state() else { return error(StatusCode::NOT_FOUND, "no simulated GPIO") };
    let patterns = s.daemon.status.borrow().led_patterns;
    let mut leds = serde_json::Map::new();
    let mut shown = serde_json::Map::new();
    for (i, led) in Led::ALL.iter().enumerate() {
        let name = serde_json::to_value(led).unwrap_or_default().as_str().unwrap_or("").to_string();
        leds.insert(name.clone(), json!(state.leds[i]));
        shown.insert(name, serde_json::to_value(patterns[i]).unwrap_or_default());
    }
    let cable = s.daemon.sim_cable.as_ref().map(|c| c.load(std::sync::atomic::Ordering::Relaxed));
    Json(json!({
        "backend": "sim",
        "leds": leds,
        "patterns": shown,
        "button_pressed": state.button_pressed,
        "hdmi_cable": cable,
    }))
    .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalBody {
    present: bool,
}

/// Plugs the simulated HDMI cable in or pulls it out: pulled, the test pattern stops sending
/// frames (as a real input does) and the box notices within a couple of seconds.
async fn sim_signal(State(s): State<AppState>, body: Option<Json<SignalBody>>) -> Response {
    let Some(Json(body)) = body else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"present\": true|false}");
    };
    let Some(cable) = s.daemon.sim_cable.as_ref() else {
        return error(StatusCode::NOT_FOUND, "no simulated HDMI cable");
    };
    cable.store(body.present, std::sync::atomic::Ordering::Relaxed);
    info!(plugged_in = body.present, "simulated HDMI cable");
    Json(json!({ "hdmi_cable": body.present })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ButtonBody {
    hold_ms: u64,
}

/// Holds the simulated button down for `hold_ms`, then lets go; answers after the release with
/// what the box made of it.
async fn sim_button(State(s): State<AppState>, body: Option<Json<ButtonBody>>) -> Response {
    let Some(Json(body)) = body else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"hold_ms\": N}, N from 50 to 20000");
    };
    if !(50..=20_000).contains(&body.hold_ms) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("hold_ms: {} is out of range 50-20000 (a press needs 30 ms to count)", body.hold_ms),
        );
    }
    let Some(sim) = s.daemon.sim.clone() else { return error(StatusCode::NOT_FOUND, "no simulated GPIO") };
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
async fn sim_stall(State(s): State<AppState>, body: Option<Json<StallBody>>) -> Response {
    let Some(Json(body)) = body else { return error(StatusCode::UNPROCESSABLE_ENTITY, "body must be {\"ms\": N}") };
    if body.ms > 60_000 {
        return error(StatusCode::UNPROCESSABLE_ENTITY, format!("ms: {} is out of range 0-60000", body.ms));
    }
    if s.daemon.commands.send(DaemonCommand::Stall(Duration::from_millis(body.ms))).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping");
    }
    (StatusCode::ACCEPTED, Json(json!({ "stall_ms": body.ms }))).into_response()
}
