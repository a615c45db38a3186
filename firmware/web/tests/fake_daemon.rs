//! The API over a fake daemon (the `Daemon` trait the web crate declares): what the API shows is
//! what the daemon publishes, and what the API is asked becomes the daemon's commands, with no
//! media, GPIO or main loop behind it.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use telebridge_config::Config;
use telebridge_contract::daemon::{DaemonCommand, DaemonStatus, InputInfo};
use telebridge_contract::gpio::{LedPattern, SimBoard};
use telebridge_contract::host::{Host, HostError, UpdateState, UpdateStatus};
use telebridge_contract::machine::{Machine, State};
use telebridge_contract::sound::{ChannelLevel, Feed, StreamLevels};
use telebridge_web::{router, AppState, ConfigStore, Daemon, CSRF_HEADER};
use tokio::sync::{mpsc, watch};
use tower::ServiceExt;

#[derive(Debug)]
struct FakeDaemon {
    status: watch::Receiver<DaemonStatus>,
    commands: mpsc::Sender<DaemonCommand>,
    preview: Option<Vec<u8>>,
    alive: Arc<Mutex<bool>>,
}

impl Daemon for FakeDaemon {
    fn status(&self) -> watch::Receiver<DaemonStatus> {
        self.status.clone()
    }
    fn commands(&self) -> mpsc::Sender<DaemonCommand> {
        self.commands.clone()
    }
    fn heartbeat_age(&self) -> Duration {
        if *self.alive.lock().unwrap() {
            Duration::ZERO
        } else {
            Duration::from_secs(60)
        }
    }
    fn preview(&self) -> Option<Vec<u8>> {
        self.preview.clone()
    }
    fn sim(&self) -> Option<SimBoard> {
        None
    }
    fn sim_cable(&self) -> Option<Arc<AtomicBool>> {
        None
    }
}

/// A machine with no helper, as a development machine has (the fake's host); it keeps the setup
/// codes it was asked to publish.
#[derive(Debug, Default)]
struct NoHelper {
    published: Mutex<Vec<Option<String>>>,
}

impl Host for NoHelper {
    fn reboot(&self) -> Result<(), HostError> {
        Err(HostError::NoHelper("rebooting"))
    }
    fn update_status(&self) -> UpdateStatus {
        UpdateStatus { state: UpdateState::Idle, message: String::new() }
    }
    fn bundle_path(&self) -> Result<std::path::PathBuf, HostError> {
        Err(HostError::NoHelper("updating"))
    }
    fn install(&self, _: &std::path::Path) -> Result<(), HostError> {
        Err(HostError::NoHelper("updating"))
    }
    fn publish_setup_code(&self, _: &str, code: Option<&str>) {
        self.published.lock().unwrap().push(code.map(str::to_string));
    }
}

fn status(state_name: &str) -> DaemonStatus {
    let machine = Machine::new(0);
    let [power, link, live, error] = machine.leds(0);
    DaemonStatus {
        name: state_name.into(),
        role: "encoder",
        led_patterns: [power, link, live, error, LedPattern::Off],
        tally: Default::default(),
        talk: Default::default(),
        machine,
        since_unix_ms: 0,
        gpio: "none",
        media: None,
        running: false,
        links: Vec::new(),
        uptime_s: 42,
        pending_restart: Vec::new(),
        screen: None,
        input: InputInfo { signal: true, format: "test 1280x720 30 fps, 4000 kbit/s".into() },
        alerts: vec!["an alert the fake publishes".into()],
        pairing_requests: 0,
        sound: vec![StreamLevels {
            stream: Feed::Programme,
            channels: vec![ChannelLevel::new(-6.5, -9.5), ChannelLevel::new(-100.0, -100.0)],
            silent_s: 0.0,
        }],
        viewers: Vec::new(),
    }
}

async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    body: &str,
    cookie: Option<&str>,
) -> (StatusCode, String, Option<String>) {
    let mut req = Request::builder().method(method).uri(uri).header(header::HOST, "box.local").header(CSRF_HEADER, "1");
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    let mut req = req.body(Body::from(body.to_string())).unwrap();
    req.extensions_mut().insert(ConnectInfo::<SocketAddr>("192.0.2.60:40000".parse().unwrap()));
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let cookie =
        resp.headers().get(header::SET_COOKIE).map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).to_string(), cookie)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_shows_what_the_daemon_publishes_and_passes_on_what_it_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = Config::default();
    file.web.setup_code_file = dir.path().join("setup.txt").display().to_string();
    // Something to go live to (an encoder with no output is refused).
    file.outputs.push(telebridge_config::OutputConfig::new("srt://127.0.0.1:9000"));
    let (status_tx, status_rx) = watch::channel(status("fake-box"));
    let (cmd_tx, mut cmd_rx) = mpsc::channel(16);
    let alive = Arc::new(Mutex::new(true));
    let fake = FakeDaemon { status: status_rx, commands: cmd_tx.clone(), preview: None, alive: alive.clone() };
    let store = Arc::new(ConfigStore::new(None, file, Arc::new(|c| c), cmd_tx));
    let host = Arc::new(NoHelper::default());
    let state = AppState::new(fake, store, host.clone());
    let app = router(state);

    // First start: the setup text goes to the daemon's screen, and the code to the host's file.
    let shown = tokio::time::timeout(Duration::from_secs(5), cmd_rx.recv()).await.unwrap().unwrap();
    let DaemonCommand::SetupText(Some(text)) = shown else { panic!("{shown:?}") };
    let code = text.lines().next().unwrap().strip_prefix("Setup code: ").unwrap().to_string();
    assert_eq!(*host.published.lock().unwrap(), [Some(code.clone())]);
    let (s, _, cookie) =
        call(&app, "POST", "/api/setup", &format!(r#"{{"code":"{code}","password":"fake password"}}"#), None).await;
    assert_eq!(s, StatusCode::OK);
    let cookie = cookie.unwrap();
    // The password is saved through the store (the daemon applies it), then the screen clears.
    assert!(matches!(cmd_rx.recv().await, Some(DaemonCommand::Apply(ref c)) if !c.raw.web.password_hash.is_empty()));
    assert!(matches!(cmd_rx.recv().await, Some(DaemonCommand::SetupText(None))));
    assert_eq!(*host.published.lock().unwrap(), [Some(code.clone()), None], "the spent code is removed");

    // What the daemon publishes is what the API shows, as it changes.
    let (s, body, _) = call(&app, "GET", "/api/status", "", Some(&cookie)).await;
    assert_eq!(s, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((v["name"].as_str(), v["alerts"][0].as_str()), (Some("fake-box"), Some("an alert the fake publishes")));
    let mut next = status("renamed");
    next.machine.state = State::Live;
    status_tx.send(next).unwrap();
    let (_, body, _) = call(&app, "GET", "/api/status", "", Some(&cookie)).await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((v["name"].as_str(), v["machine"]["state"].as_str()), (Some("renamed"), Some("live")));
    let (_, metrics, _) = call(&app, "GET", "/metrics", "", Some(&cookie)).await;
    assert!(metrics.contains("telebridge_state{state=\"live\"} 1"), "{metrics}");
    assert!(metrics.contains("telebridge_audio_peak_dbfs{stream=\"programme\",channel=\"0\"} -6.5\n"), "{metrics}");
    assert!(metrics.contains("telebridge_audio_rms_dbfs{stream=\"programme\",channel=\"1\"} -100\n"), "{metrics}");
    assert!(metrics.contains("telebridge_audio_silent_seconds{stream=\"programme\"} 0\n"), "{metrics}");

    // What the API is asked becomes the daemon's command.
    let (s, _, _) = call(&app, "POST", "/api/live", r#"{"live":true}"#, Some(&cookie)).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert!(matches!(cmd_rx.recv().await, Some(DaemonCommand::Live(true))));

    // No preview, and a main loop that stopped turning, are said as such.
    assert_eq!(call(&app, "GET", "/api/preview.jpg", "", Some(&cookie)).await.0, StatusCode::NOT_FOUND);
    assert_eq!(call(&app, "GET", "/healthz", "", None).await.0, StatusCode::OK);
    *alive.lock().unwrap() = false;
    assert_eq!(call(&app, "GET", "/healthz", "", None).await.0, StatusCode::SERVICE_UNAVAILABLE);
    // No simulated hardware: no simulation routes.
    assert_eq!(call(&app, "GET", "/api/sim/gpio", "", Some(&cookie)).await.0, StatusCode::NOT_FOUND);
}
