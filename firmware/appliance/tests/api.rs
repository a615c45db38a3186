//! The API, request by request (`router.oneshot(...)`), over a real daemon (simulated GPIO, no
//! pipeline started) and a real configuration file in a temporary directory.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use telebridge_appliance::daemon::{self, DaemonOptions};
use telebridge_appliance::house::host::RootHelper;
use telebridge_config::{Config, OutputConfig, Overrides};
use telebridge_web::{router, AppState, ConfigStore, CSRF_HEADER};
use tower::ServiceExt;

const ORIGIN: &str = "http://box.local";
const PASSPHRASE: &str = "pass-phrase-0123456789";
const KEY: &str = "live_123456_SECRETKEY";
const TOKEN: &str = "metrics-token-0123456789";

struct Box_ {
    app: Router,
    daemon: telebridge_appliance::DaemonHandle,
    dir: tempfile::TempDir,
    cookie: Option<String>,
}

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config {
        // The panel is opened as http://box.local: the box's own name.
        name: "box".into(),
        outputs: vec![
            OutputConfig {
                url: format!("srt://192.0.2.1:9000?passphrase={PASSPHRASE}&pbkeylen=32"),
                name: Some("studio".into()),
            },
            OutputConfig { url: format!("rtmp://live.example/app/{KEY}"), name: Some("platform".into()) },
        ],
        ..Config::default()
    };
    c.gpio.backend = "sim".into();
    c.web.metrics_token = TOKEN.into();
    c.web.setup_code_file = dir.join("setup.txt").display().to_string();
    c
}

async fn start() -> Box_ {
    start_with(None).await
}

/// As [`start`], the box's devices read under `devices` (a made-up tree) when given.
async fn start_with(devices: Option<std::path::PathBuf>) -> Box_ {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("telebridge.toml");
    let file = config(dir.path());
    telebridge_config::save_atomic(&path, &file).unwrap();
    let valid = file.validate().unwrap();
    let (handle, _task) =
        daemon::start(DaemonOptions { config: valid, peer_link: Err("not paired".into()) }, std::future::pending())
            .unwrap();
    let identity: Overrides = Arc::new(|c| c);
    let store = Arc::new(ConfigStore::new(Some(path), file, identity, handle.commands.clone()));
    let mut state = AppState::new(handle.clone(), store, Arc::new(RootHelper));
    telebridge_appliance::house::tasks::spawn(&state);
    if let Some(root) = devices {
        state.devices_root = Arc::new(root);
    }
    Box_ { app: router(state), daemon: handle, dir, cookie: None }
}

impl Box_ {
    /// GETs `uri` (200 each time) every 100 ms until `done` holds of its body, for 10 s at
    /// most: the last body.
    async fn get_until(&mut self, uri: &str, done: impl Fn(&str) -> bool) -> String {
        let mut body = String::new();
        for _ in 0..100 {
            let (s, b) = self.call("GET", uri, None, &[]).await;
            assert_eq!(s, StatusCode::OK, "{uri}: {b}");
            body = b;
            if done(&body) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        body
    }

    async fn call(
        &mut self,
        method: &str,
        uri: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, String) {
        let mut req = Request::builder().method(method).uri(uri).header(header::HOST, "box.local");
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = match body {
            Some(b) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).unwrap();
        req.extensions_mut().insert(ConnectInfo::<SocketAddr>("192.0.2.50:40000".parse().unwrap()));
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        if let Some(c) = resp.headers().get(header::SET_COOKIE) {
            let c = c.to_str().unwrap();
            assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict"), "{c}");
            self.cookie = Some(c.split(';').next().unwrap().to_string());
        }
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&bytes).to_string())
    }

    /// A write as the panel sends it: same origin.
    async fn write(&mut self, method: &str, uri: &str, body: Value) -> (StatusCode, String) {
        self.call(method, uri, Some(body), &[("origin", ORIGIN)]).await
    }

    fn setup_code(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("setup.txt")).unwrap();
        text.trim().rsplit(' ').next().unwrap().to_string()
    }

    async fn set_up(&mut self) {
        let code = self.setup_code();
        let (s, b) = self.write("POST", "/api/setup", json!({"code": code, "password": "correct horse"})).await;
        assert_eq!(s, StatusCode::OK, "{b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_start_answers_only_setup_until_the_code_and_a_password_are_given() {
    let mut b = start().await;
    let (s, body) = b.call("GET", "/api/setup", None, &[]).await;
    assert_eq!((s, body.contains("\"needed\":true")), (StatusCode::OK, true), "{body}");
    for uri in ["/api/status", "/api/config", "/api/stats.csv"] {
        let (s, body) = b.call("GET", uri, None, &[]).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}: {body}");
        assert!(body.contains("setup required"), "{body}");
    }
    let (s, _) = b.write("POST", "/api/session", json!({"password": "anything"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // The HDMI output shows the code (a fake sink here; kmssink on the box).
    let code = b.setup_code();
    let mut status = b.daemon.status.clone();
    let shown = tokio::time::timeout(std::time::Duration::from_secs(10), status.wait_for(|s| s.screen.is_some())).await;
    let screen = shown.unwrap().unwrap().screen.clone().unwrap();
    assert!(screen.contains(&format!("Setup code: {code}")), "{screen}");
    let (s, body) = b.write("POST", "/api/setup", json!({"code": "0000-0000", "password": "correct horse"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("wrong setup code"));
    let (s, body) = b.write("POST", "/api/setup", json!({"code": code, "password": "short"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("password: 5 characters; it must have at least 8"), "{body}");
    b.set_up().await;
    // The hash, never the password, is in the saved file; setup is closed.
    let saved = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert!(saved.contains("password_hash = \"$argon2id$") && !saved.contains("correct horse"), "{saved}");
    let (s, _) = b.write("POST", "/api/setup", json!({"code": code, "password": "another one"})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = b.call("GET", "/api/status", None, &[]).await;
    assert_eq!(s, StatusCode::OK, "the setup session works");
    let cleared =
        tokio::time::timeout(std::time::Duration::from_secs(10), status.wait_for(|s| s.screen.is_none())).await;
    assert!(cleared.is_ok(), "the setup code stayed on screen after setup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_logout_csrf_and_the_sixth_wrong_password() {
    let mut b = start().await;
    b.set_up().await;
    b.cookie = None;
    // Unauthenticated: reads and writes get 401.
    assert_eq!(b.call("GET", "/api/status", None, &[]).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(b.write("POST", "/api/live", json!({"live": true})).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(b.write("PUT", "/api/config", json!({})).await.0, StatusCode::UNAUTHORIZED);
    // A foreign Origin, or none without the header: 403, before any password check.
    let (s, body) = b
        .call("POST", "/api/session", Some(json!({"password": "correct horse"})), &[("origin", "http://evil.example")])
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("evil.example"));
    assert_eq!(
        b.call("POST", "/api/session", Some(json!({"password": "correct horse"})), &[]).await.0,
        StatusCode::FORBIDDEN
    );
    // Five wrong passwords: 401 each; the sixth attempt, even the right one, 429.
    for _ in 0..5 {
        assert_eq!(b.write("POST", "/api/session", json!({"password": "wrong"})).await.0, StatusCode::UNAUTHORIZED);
    }
    let (s, body) = b.write("POST", "/api/session", json!({"password": "correct horse"})).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body.contains("too many wrong attempts"), "{body}");
    assert!(b.cookie.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_reads_writes_and_ends() {
    let mut b = start().await;
    b.set_up().await;
    b.cookie = None;
    let (s, _) =
        b.call("POST", "/api/session", Some(json!({"password": "correct horse"})), &[(CSRF_HEADER, "1")]).await;
    assert_eq!(s, StatusCode::OK, "a script with the CSRF header and no Origin may log in");
    let (s, body) = b.call("GET", "/api/status", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    let st: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(st["machine"]["state"], "ready");
    assert_eq!(st["led_patterns"][0], "on");
    let (s, _) = b.write("DELETE", "/api/session", json!({})).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    // The browser dropped the cookie; an old copy is no longer valid either.
    let old = b.cookie.replace("telebridge_session=".into());
    assert!(old.is_some());
    assert_eq!(b.call("GET", "/api/status", None, &[]).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_come_back_and_a_put_keeps_them() {
    let mut b = start().await;
    b.set_up().await;
    let (s, body) = b.call("GET", "/api/config", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    for secret in [PASSPHRASE, KEY, TOKEN, "argon2"] {
        assert!(!body.contains(secret), "{secret} came back: {body}");
    }
    let (_, status) = b.call("GET", "/api/status", None, &[]).await;
    assert!(!status.contains(KEY) && !status.contains(PASSPHRASE));
    // Change the bitrate, send everything else back as shown: saved, secrets intact.
    let mut c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["outputs"][1]["url"], "rtmp://live.example/app/****");
    c["video"]["bitrate_kbps"] = json!(6000);
    let (s, resp) = b.write("PUT", "/api/config", c).await;
    assert_eq!(s, StatusCode::OK, "{resp}");
    assert!(!resp.contains(KEY));
    let saved = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert!(saved.contains("bitrate_kbps = 6000"), "{saved}");
    assert!(saved.contains(KEY) && saved.contains(PASSPHRASE) && saved.contains(TOKEN), "secrets lost: {saved}");
    assert!(saved.contains("$argon2id$"), "the password hash was lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_with_three_bad_fields_gets_three_messages_and_changes_nothing() {
    let mut b = start().await;
    b.set_up().await;
    let before = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["video"]["fps"] = json!(500);
    c["video"]["bitrate_kbps"] = json!(1);
    c["outputs"][0]["url"] = json!("srt://192.0.2.1:9000?latency=99999");
    let (s, resp) = b.write("PUT", "/api/config", c).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{resp}");
    let r: Value = serde_json::from_str(&resp).unwrap();
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{resp}");
    let fields: Vec<&str> = errors.iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["video.fps", "video.bitrate_kbps", "outputs[0].url"]);
    assert!(errors[0]["message"].as_str().unwrap().contains("500 is out of range 9-60"), "{resp}");
    assert_eq!(std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap(), before);
    // An unknown field is refused by name.
    let (s, resp) = b.write("PUT", "/api/config", json!({"video": {"bitrate": 3000}})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(resp.contains("unknown field `bitrate`"), "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_events_history_and_metrics() {
    let mut b = start().await;
    b.set_up().await;
    let (s, body) = b.write("POST", "/api/live", json!({"on": true})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (s, _) = b.write("POST", "/api/live", json!({"live": false})).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    // Not live: no preview, said in words (the browser test sees the picture once live).
    let (s, body) = b.call("GET", "/api/preview.jpg", None, &[]).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(body.contains("the encoder is not running"), "{body}");
    // Events: the first is the state.
    let mut req = Request::builder().uri("/api/events").header(header::COOKIE, b.cookie.clone().unwrap());
    req = req.header(header::HOST, "box.local");
    let resp = b.app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = resp.into_body();
    let frame = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame()).await.unwrap().unwrap().unwrap();
    let text = String::from_utf8_lossy(frame.data_ref().unwrap()).to_string();
    assert!(text.starts_with("event: state\ndata: {"), "{text}");
    assert!(text.contains("\"state\":\"ready\""), "{text}");
    // History: a row a second, so one within a few seconds.
    let csv = b.get_until("/api/stats.csv?minutes=5", |csv| csv.lines().count() >= 2).await;
    assert!(csv.starts_with("unix_time,state,rtt_ms,"), "{csv}");
    assert!(csv.lines().count() >= 2, "no history row within 10 s: {csv}");
    // Metrics: the session, or the bearer token; nothing without.
    let saved_cookie = b.cookie.take();
    assert_eq!(b.call("GET", "/metrics", None, &[]).await.0, StatusCode::UNAUTHORIZED);
    let (s, _) = b.call("GET", "/metrics", None, &[("authorization", "Bearer wrong-token-0000000")]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let bearer = format!("Bearer {TOKEN}");
    let (s, text) = b.call("GET", "/metrics", None, &[("authorization", &bearer)]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(text.contains("telebridge_state{state=\"ready\"} 1"), "{text}");
    assert!(text.contains("# TYPE telebridge_uptime_seconds counter"), "{text}");
    b.cookie = saved_cookie;
    assert_eq!(b.call("GET", "/metrics", None, &[]).await.0, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_gpio_shows_leds_and_presses_the_button() {
    let mut b = start().await;
    // The power LED lights once the LED task has run.
    let body = b.get_until("/api/sim/gpio", |body| body.contains("\"power\":true")).await;
    let g: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(g["leds"]["power"], true, "{g}");
    assert_eq!(g["patterns"]["link"], "off");
    let (s, body) = b.write("POST", "/api/sim/button", json!({"hold_ms": 5})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_is_served_small_and_self_contained() {
    let mut b = start().await;
    let (s, html) = b.call("GET", "/", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(html.contains("<script src=\"/app.js\"></script>"));
    for (path, _) in [
        ("/app.js", ()),
        ("/status.js", ()),
        ("/settings.js", ()),
        ("/app.css", ()),
        ("/vendor/uPlot.iife.min.js", ()),
        ("/vendor/uPlot.min.css", ()),
    ] {
        assert_eq!(b.call("GET", path, None, &[]).await.0, StatusCode::OK, "{path}");
    }
    // Nothing from the internet, and well under 300 KB in all.
    assert!(!html.contains("http://") && !html.contains("https://"), "{html}");
    let size = telebridge_web::panel_size();
    eprintln!("panel: {size} bytes");
    assert!(size < 300_000, "{size} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_and_restore_round_trip_with_and_without_secrets() {
    let mut b = start().await;
    b.set_up().await;
    // Plain: no secrets in it; restoring it brings the bitrate back and keeps the secrets.
    let (s, plain) = b.call("GET", "/api/config/backup", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(plain.contains("bitrate_kbps = 4000") && !plain.contains(KEY) && !plain.contains(PASSPHRASE), "{plain}");
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["video"]["bitrate_kbps"] = json!(7000);
    c["outputs"][1]["url"] = json!("rtmp://live.example/app/OTHERKEY");
    assert_eq!(b.write("PUT", "/api/config", c).await.0, StatusCode::OK);
    let restore = |b: &mut Box_, file: String, pw: Option<&'static str>| {
        let mut headers = vec![("origin", ORIGIN)];
        if let Some(p) = pw {
            headers.push(("x-backup-password", p));
        }
        let req = Request::builder()
            .method("POST")
            .uri("/api/config/restore")
            .header(header::HOST, "box.local")
            .header(header::COOKIE, b.cookie.clone().unwrap());
        let req = headers.iter().fold(req, |r, (k, v)| r.header(*k, *v)).body(Body::from(file)).unwrap();
        let app = b.app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap();
            let status = resp.status();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8_lossy(&body).to_string())
        }
    };
    let (s, resp) = restore(&mut b, plain.clone(), None).await;
    assert_eq!(s, StatusCode::OK, "{resp}");
    let saved = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert!(saved.contains("bitrate_kbps = 4000"), "{saved}");
    assert!(saved.contains("OTHERKEY"), "a plain backup keeps the box's current key: {saved}");

    // With secrets: encrypted with a password; the key comes back only with the right one.
    let (s, body) = b.call("GET", "/api/config/backup?secrets=1", None, &[]).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (s, sealed) =
        b.call("GET", "/api/config/backup?secrets=1", None, &[("x-backup-password", "backup pass 1")]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(!sealed.contains("OTHERKEY") && sealed.starts_with("TELEBRIDGE-BACKUP-1"), "{sealed}");
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["outputs"][1]["url"] = json!("rtmp://live.example/app/THIRDKEY");
    assert_eq!(b.write("PUT", "/api/config", c).await.0, StatusCode::OK);
    let (s, resp) = restore(&mut b, sealed.clone(), Some("wrong pass 12")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(resp.contains("wrong backup password"), "{resp}");
    let (s, resp) = restore(&mut b, sealed, Some("backup pass 1")).await;
    assert_eq!(s, StatusCode::OK, "{resp}");
    assert!(!resp.contains("OTHERKEY"));
    let saved = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert!(saved.contains("OTHERKEY") && !saved.contains("THIRDKEY"), "{saved}");
    // Nonsense is refused and changes nothing.
    let (s, resp) = restore(&mut b, "not a backup [".into(), None).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(resp.contains("not a Telebridge backup"), "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_names_every_endpoint() {
    let mut b = start().await;
    let (s, body) = b.call("GET", "/api/openapi.json", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    let routes = [
        ("/api/setup", "get"),
        ("/api/setup", "post"),
        ("/api/session", "post"),
        ("/api/session", "delete"),
        ("/api/status", "get"),
        ("/api/config", "get"),
        ("/api/config", "put"),
        ("/api/config/backup", "get"),
        ("/api/config/restore", "post"),
        ("/api/live", "post"),
        ("/api/tally", "post"),
        ("/api/events", "get"),
        ("/api/stats.csv", "get"),
        ("/metrics", "get"),
        ("/healthz", "get"),
        ("/api/sim/gpio", "get"),
        ("/api/sim/button", "post"),
        ("/api/sim/stall", "post"),
        ("/api/logs", "get"),
        ("/api/password", "post"),
        ("/api/reboot", "post"),
        ("/api/pairing", "get"),
        ("/api/pairing", "delete"),
        ("/api/pairing/open", "post"),
        ("/api/pairing/join", "post"),
        ("/api/pair/hello", "post"),
        ("/api/pair/confirm", "post"),
        ("/api/preview-received.jpg", "get"),
        ("/api/devices", "get"),
    ];
    for (path, method) in routes {
        assert!(doc["paths"][path][method].is_object(), "{method} {path} is not documented");
        // And the route exists: anything but 404/405.
        let (s, _) = b.call(&method.to_uppercase(), path, Some(json!({})), &[("origin", ORIGIN)]).await;
        assert!(s != StatusCode::NOT_FOUND && s != StatusCode::METHOD_NOT_ALLOWED, "{method} {path}: {s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_change_logs_and_reboot() {
    let mut b = start().await;
    b.set_up().await;
    let other = b.cookie.clone();
    let (s, body) = b.write("POST", "/api/password", json!({"current": "wrong one", "new": "new password"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let (s, body) = b.write("POST", "/api/password", json!({"current": "correct horse", "new": "short"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (s, body) =
        b.write("POST", "/api/password", json!({"current": "correct horse", "new": "battery staple"})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_ne!(b.cookie, other, "a new session");
    // The old session is gone; the new password logs in, the old one does not.
    let mine = b.cookie.replace(other.unwrap());
    assert_eq!(b.call("GET", "/api/status", None, &[]).await.0, StatusCode::UNAUTHORIZED);
    b.cookie = mine;
    assert_eq!(b.call("GET", "/api/status", None, &[]).await.0, StatusCode::OK);
    assert_eq!(b.write("POST", "/api/session", json!({"password": "correct horse"})).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(b.write("POST", "/api/session", json!({"password": "battery staple"})).await.0, StatusCode::OK);
    let (s, body) = b.call("GET", "/api/logs?lines=50", None, &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["lines"].is_array());
    let (s, body) = b.write("POST", "/api/reboot", json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(body.contains("simulation"), "{body}");
}

// The findings of the hostile test (issue 17), each of which failed before its fix.

/// Sends `n` logins with `password` at the same moment, from one address; returns the statuses.
async fn burst(b: &Box_, n: usize, password: &str) -> Vec<StatusCode> {
    let start = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (app, start) = (b.app.clone(), start.clone());
            let body = json!({ "password": password }).to_string();
            tokio::spawn(async move {
                let mut req = Request::builder()
                    .method("POST")
                    .uri("/api/session")
                    .header(header::HOST, "box.local")
                    .header(CSRF_HEADER, "1")
                    .body(Body::from(body))
                    .unwrap();
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>("198.51.100.9:40000".parse().unwrap()));
                start.wait().await;
                app.oneshot(req).await.unwrap().status()
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_wrong_passwords_gets_five_checks_and_then_even_the_right_one_waits() {
    let mut b = start().await;
    b.set_up().await;
    let statuses = burst(&b, 100, "wrong password").await;
    let checked = statuses.iter().filter(|s| **s == StatusCode::UNAUTHORIZED).count();
    let refused = statuses.len() - checked;
    eprintln!("100 at once: {checked} checked (401), {refused} refused unchecked (429 or 503)");
    assert!((1..=5).contains(&checked), "{checked} of 100 simultaneous wrong passwords were checked");
    assert!(
        statuses.iter().all(|s| [
            StatusCode::UNAUTHORIZED,
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::SERVICE_UNAVAILABLE
        ]
        .contains(s)),
        "{statuses:?}"
    );
    // One at a time, the address has what is left of its five, then it is locked.
    let mut more = 0;
    while burst(&b, 1, "wrong password").await == [StatusCode::UNAUTHORIZED] {
        more += 1;
        assert!(checked + more <= 5, "{} wrong passwords checked in a minute", checked + more);
    }
    assert_eq!(checked + more, 5);
    let right = burst(&b, 1, "correct horse").await;
    assert_eq!(right, [StatusCode::TOO_MANY_REQUESTS], "the right password got in while the address was locked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decoder_inputs_passphrase_never_comes_back() {
    let mut b = start().await;
    b.set_up().await;
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["decoder"]["input"] = json!("srt://:19850?mode=listener&passphrase=DecInputSecret4242");
    let (s, resp) = b.write("PUT", "/api/config", c).await;
    assert_eq!(s, StatusCode::OK, "{resp}");
    assert!(!resp.contains("DecInputSecret4242"), "in the PUT response: {resp}");
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    assert!(!body.contains("DecInputSecret4242"), "in GET /api/config: {body}");
    assert!(body.contains("srt://:19850?mode=listener&passphrase=****"), "{body}");
    let (_, plain) = b.call("GET", "/api/config/backup", None, &[]).await;
    assert!(!plain.contains("DecInputSecret4242"), "in the plain backup: {plain}");
    // Sent back as shown: the box keeps its passphrase.
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["video"]["bitrate_kbps"] = json!(5000);
    assert_eq!(b.write("PUT", "/api/config", c).await.0, StatusCode::OK);
    let saved = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert!(saved.contains("passphrase=DecInputSecret4242"), "{saved}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_or_partial_restore_changes_nothing() {
    let mut b = start().await;
    b.set_up().await;
    let before = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    for file in ["", "  \n", "# a comment\n", "name = \"x\"\n"] {
        let req = Request::builder()
            .method("POST")
            .uri("/api/config/restore")
            .header(header::HOST, "box.local")
            .header("origin", ORIGIN)
            .header(header::COOKIE, b.cookie.clone().unwrap())
            .body(Body::from(file))
            .unwrap();
        let resp = b.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let body = String::from_utf8_lossy(&resp.into_body().collect().await.unwrap().to_bytes()).to_string();
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{file:?}: {body}");
        assert!(body.contains("not a complete Telebridge backup"), "{body}");
    }
    let after = std::fs::read_to_string(b.dir.path().join("telebridge.toml")).unwrap();
    assert_eq!(before, after, "the configuration changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_saved_file_stays_private_and_setup_removes_the_spent_code_file() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = start().await;
    let path = b.dir.path().join("telebridge.toml");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(b.dir.path().join("setup.txt").exists());
    b.set_up().await;
    assert!(!b.dir.path().join("setup.txt").exists(), "the setup code file stayed after setup");
    let (_, body) = b.call("GET", "/api/config", None, &[]).await;
    let mut c: Value = serde_json::from_str(&body).unwrap();
    c["video"]["bitrate_kbps"] = json!(5000);
    assert_eq!(b.write("PUT", "/api/config", c).await.0, StatusCode::OK);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the configuration (password hash, stream secrets) became {mode:o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_answers_are_never_cached() {
    let mut b = start().await;
    b.set_up().await;
    for uri in ["/api/status", "/api/config", "/api/setup", "/api/logs"] {
        let mut req = Request::builder().uri(uri).header(header::HOST, "box.local");
        req = req.header(header::COOKIE, b.cookie.clone().unwrap());
        let mut req = req.body(Body::empty()).unwrap();
        req.extensions_mut().insert(ConnectInfo::<SocketAddr>("192.0.2.50:40000".parse().unwrap()));
        let resp = b.app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{uri}");
        let cc = resp.headers().get(header::CACHE_CONTROL).map(|v| v.to_str().unwrap().to_string());
        assert_eq!(cc.as_deref(), Some("no-store"), "{uri}");
    }
}

/// Issue 58: what the API saves, the box runs. Configurations made of the panel's choices (what
/// `/api/devices` lists, read from a made-up Pi) and of what a person might type instead (a
/// source `hdmi`, a negative bitrate, an empty width, a long name, a bond over a missing
/// interface), 300 of them: each the API accepts passes `telebridge config check`'s own reading
/// (load the saved file, validate it); each it refuses leaves the file as it was, byte for byte,
/// and names a field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_configuration_the_api_saves_passes_config_check() {
    // A made-up Pi: a TC358743 on unicam, a USB headset, HDMI, two uplinks.
    let pi = tempfile::tempdir().unwrap();
    for (p, text) in [
        ("sys/class/video4linux/video0/name", "unicam-image"),
        ("sys/class/video4linux/video0/index", "0"),
        ("proc/device-tree/model", "Raspberry Pi 4 Model B"),
        ("proc/asound/cards", " 0 [Headset        ]: USB-Audio - Plantronics Headset\n"),
        ("dev/dri/card0", ""),
        ("sys/class/net/eth0/operstate", "up"),
        ("sys/class/net/wwan0/operstate", "down"),
    ] {
        let path = pi.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut b = start_with(Some(pi.path().to_path_buf())).await;
    b.set_up().await;
    let (s, body) = b.call("GET", "/api/devices", None, &[]).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let devices: Value = serde_json::from_str(&body).unwrap();
    let menu = |key: &str| -> Vec<Value> {
        devices[key].as_array().unwrap().iter().map(|c| c["value"].clone()).collect::<Vec<_>>()
    };
    let (video, audio, sinks, talk_in, talk_out) =
        (menu("video_sources"), menu("audio_sources"), menu("video_sinks"), menu("talk_sources"), menu("talk_outputs"));
    assert_eq!(video, [json!("test"), json!("v4l2:/dev/video0"), json!("libcamera")], "{devices}");
    assert!(audio.contains(&json!("alsa:hw:CARD=Headset")) && sinks.contains(&json!("kms")), "{devices}");
    let path = b.dir.path().join("telebridge.toml");
    let mut seed: u64 = 0x5eed_cafe;
    let mut pick = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut accepted, mut refused) = (0, 0);
    for case in 0..300 {
        let (_, body) = b.call("GET", "/api/config", None, &[]).await;
        let mut c: Value = serde_json::from_str(&body).unwrap();
        // Each field: one of the menu's choices, or (one time in eight) something typed instead.
        let mut either = |good: &[Value], bad: &[Value]| {
            if pick(8) == 0 {
                bad[pick(bad.len())].clone()
            } else {
                good[pick(good.len())].clone()
            }
        };
        c["role"] = either(&[json!("encoder"), json!("decoder"), json!("bridge")], &[json!("both")]);
        c["video"]["source"] = either(&video, &[json!("hdmi"), json!("v4l2:"), json!("")]);
        c["audio"]["source"] = either(&audio, &[json!("mic"), json!("alsa:")]);
        c["decoder"]["sink"] = either(&sinks, &[json!("hdmi")]);
        c["talkback"]["source"] = either(&talk_in, &[json!("usb")]);
        c["talkback"]["output"] = either(&talk_out, &[json!("speaker")]);
        c["video"]["bitrate_kbps"] = either(&[json!(4000), json!(800)], &[json!(-5), json!(null), json!(60000)]);
        c["video"]["width"] = either(&[json!(1280), json!(640)], &[json!(0), json!(null), json!(641)]);
        let name = either(&[json!("studio"), json!("uplink 2")], &[json!("n".repeat(10_000)), json!("a\nb")]);
        let url = either(
            &[
                json!("srt://192.0.2.1:9000?passphrase=****&pbkeylen=32"),
                json!("srt://:9100?mode=listener"),
                json!("srt://192.0.2.9:5000?bond=eth0,wwan0"),
                json!("rtmp://live.example/app/****"),
            ],
            &[json!("srt://192.0.2.1:9000?latency=9000"), json!("udp://192.0.2.1:1")],
        );
        c["outputs"] = json!([{ "url": url, "name": name }]);
        let before = std::fs::read(&path).unwrap();
        let (s, body) = b.write("PUT", "/api/config", c.clone()).await;
        if s == StatusCode::OK {
            accepted += 1;
            let saved = telebridge_config::load(&path).unwrap_or_else(|e| panic!("case {case}: {e}\n{c}"));
            if let Err(e) = saved.validate() {
                panic!("case {case}: the API saved what config check refuses: {e}\n{c}");
            }
        } else {
            refused += 1;
            assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "case {case}: {body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            let errors = v["errors"].as_array().unwrap_or_else(|| panic!("case {case}: {body}"));
            assert!(errors.iter().all(|e| !e["message"].as_str().unwrap_or("").contains("line 1")), "{body}");
            assert!(errors.iter().any(|e| !e["field"].as_str().unwrap_or("").is_empty()), "case {case}: {body}");
            assert_eq!(std::fs::read(&path).unwrap(), before, "case {case}: a refused save changed the file");
        }
    }
    eprintln!("{accepted} configurations saved and checked, {refused} refused with the file unchanged");
    assert!(accepted >= 20 && refused >= 100, "{accepted} accepted, {refused} refused: the cases do not reach both");
}
