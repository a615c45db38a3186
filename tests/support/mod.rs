//! Helpers for end-to-end tests: run the real binary against real peers (srt-live-transmit,
//! ffmpeg/ffprobe, GStreamer's srt elements) on loopback, with ports chosen by the OS.

#![allow(dead_code)]

pub mod bridge;

use std::fs::File;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The telebridge binary Cargo built for these tests.
pub fn telebridge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_telebridge"));
    c.env("RUST_LOG", "info");
    c
}

/// Serialises the tests that run a real-time encoder: on a 2-core machine several x264
/// encoders at once starve each other and the timings the tests check would be the machine's.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A UDP port that was free a moment ago.
pub fn free_udp_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind an ephemeral UDP port");
    s.local_addr().expect("local addr").port()
}

/// A scratch directory kept under target/ so that a failing test leaves its files to look at.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// A child process that is killed when dropped.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    /// Spawns with stdout and stderr going to files in `dir`.
    pub fn spawn(mut cmd: Command, dir: &Path, name: &str) -> Proc {
        let out = File::create(dir.join(format!("{name}.stdout"))).expect("stdout file");
        let err = File::create(dir.join(format!("{name}.stderr"))).expect("stderr file");
        let child =
            cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        Proc { child, name: name.to_string() }
    }

    /// Sends a signal (e.g. "STOP", "CONT", "KILL", "INT").
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill -{sig} {}", self.name);
    }

    /// Waits for exit up to `timeout`; kills it if it does not exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// srt-live-transmit from SRT `uri` to a file (through stdout, as `file://con`).
pub fn slt_to_file(uri: &str, out: &Path, dir: &Path, name: &str) -> Proc {
    let file = File::create(out).expect("output file");
    let err = File::create(dir.join(format!("{name}.stderr"))).expect("stderr file");
    let child = Command::new("srt-live-transmit")
        .args(["-q", uri, "file://con"])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .expect("spawn srt-live-transmit (install srt-tools)");
    Proc { child, name: name.to_string() }
}

/// Stream facts as ffprobe reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInfo {
    pub codec: String,
    /// `Main`, `High`, `Constrained Baseline`... (H.264), `LC` (AAC).
    pub profile: String,
    pub width: u32,
    pub height: u32,
    pub fps: String,
}

/// The streams in a file or at a URL (ffprobe gets 10 s).
pub fn ffprobe_streams(input: impl AsRef<std::ffi::OsStr>) -> Vec<StreamInfo> {
    let out = Command::new("timeout")
        .args([
            "10",
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,profile,width,height,r_frame_rate",
            "-of",
            "json",
        ])
        .arg(input)
        .output()
        .expect("run ffprobe");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["streams"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| StreamInfo {
                    codec: s["codec_name"].as_str().unwrap_or("").to_string(),
                    profile: s["profile"].as_str().unwrap_or("").to_string(),
                    width: s["width"].as_u64().unwrap_or(0) as u32,
                    height: s["height"].as_u64().unwrap_or(0) as u32,
                    fps: s["r_frame_rate"].as_str().unwrap_or("").to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How many video frames ffmpeg can decode from a file.
pub fn decodable_frames(input: &Path) -> u64 {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "quiet",
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(input)
        .output()
        .expect("run ffprobe");
    // ffprobe prints the stream once under its program and once on its own.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').parse().ok())
        .max()
        .unwrap_or(0)
}

/// Polls `cond` every 100 ms until it holds or `timeout` passes; returns the time it took.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Whether a socket in the network namespace `table` describes (`/proc/net/udp`, or
/// `/proc/PID/net/tcp` for a process in another namespace) is bound to `port` on any address,
/// in `state` (the kernel's hex state: `07` a bound UDP socket, `0A` a listening TCP one). The
/// IPv6 table (`…6`) is read too.
fn socket_in(table: &str, port: u16, state: &str) -> bool {
    let port = format!(":{port:04X}");
    [table.to_string(), format!("{table}6")].iter().any(|t| {
        std::fs::read_to_string(t).unwrap_or_default().lines().skip(1).any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1).is_some_and(|local| local.ends_with(&port)) && f.get(3) == Some(&state)
        })
    })
}

/// Waits until something on this machine has UDP `port` bound (an SRT listener is ready for
/// callers once it has); panics naming `what` after 15 s.
pub fn wait_udp_bound(port: u16, what: &str) {
    let ready = wait_for(Duration::from_secs(15), || socket_in("/proc/net/udp", port, "07"));
    assert!(ready.is_some(), "{what} did not bind UDP port {port} within 15 s");
}

/// Waits until nothing on this machine has UDP `port` bound (a killed listener's port is free).
pub fn wait_udp_free(port: u16, what: &str) {
    let free = wait_for(Duration::from_secs(15), || !socket_in("/proc/net/udp", port, "07"));
    assert!(free.is_some(), "{what}: UDP port {port} still bound after 15 s");
}

/// Waits until something listens on TCP `port` (on this machine; with `pid`, in that process's
/// network namespace); panics naming `what` after 15 s.
pub fn wait_tcp_listening(port: u16, pid: Option<u32>, what: &str) {
    let table = pid.map_or_else(|| "/proc/net/tcp".to_string(), |p| format!("/proc/{p}/net/tcp"));
    let ready = wait_for(Duration::from_secs(15), || socket_in(&table, port, "0A"));
    assert!(ready.is_some(), "{what} did not listen on TCP port {port} within 15 s");
}

/// As [`wait_udp_bound`], in the network namespace of process `pid`.
pub fn wait_udp_bound_in(pid: u32, port: u16, what: &str) {
    let table = format!("/proc/{pid}/net/udp");
    let ready = wait_for(Duration::from_secs(15), || socket_in(&table, port, "07"));
    assert!(ready.is_some(), "{what} did not bind UDP port {port} within 15 s");
}

/// Size of a file, 0 if missing.
pub fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The JSON lines a `--stats json` run printed.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The encoder's `--stats json` summary line.
pub fn summary(path: &Path) -> serde_json::Value {
    json_lines(path)
        .into_iter()
        .find_map(|v| v.get("summary").cloned())
        .unwrap_or_else(|| panic!("no summary in {}", path.display()))
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `telebridge decode` with stats, as a child process.
pub fn decoder(dir: &Path, name: &str, input: &str, extra: &[&str]) -> Proc {
    let mut cmd = telebridge();
    cmd.args(["decode", "--input", input, "--stats", "json"]);
    if !extra.contains(&"--sink") {
        cmd.args(["--sink", "fake"]);
    }
    cmd.args(extra);
    Proc::spawn(cmd, dir, name)
}

/// `telebridge encode` from the test source with stats, as a child process.
pub fn encoder(dir: &Path, name: &str, outputs: &[&str], extra: &[&str]) -> Proc {
    Proc::spawn(encode_command(outputs, extra), dir, name)
}

/// The command [`encoder`] runs, for a test to add to (an environment variable) before spawning.
pub fn encode_command(outputs: &[&str], extra: &[&str]) -> Command {
    let mut cmd = telebridge();
    cmd.args(["encode", "--source", "test", "--stats", "json"]);
    for o in outputs {
        cmd.args(["--output", o]);
    }
    cmd.args(extra);
    cmd
}

/// A TCP port that was free a moment ago.
pub fn free_tcp_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral TCP port");
    l.local_addr().expect("local addr").port()
}

/// nginx with the RTMP module on `port`, from the fixture in tests/fixtures, in `dir`.
pub fn nginx_rtmp(dir: &Path, port: u16, name: &str) -> Proc {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("logs")).expect("nginx dir");
    let conf = include_str!("../fixtures/nginx-rtmp.conf").replace("PORT", &port.to_string());
    std::fs::write(root.join("nginx.conf"), conf).expect("nginx.conf");
    let mut cmd = Command::new("nginx");
    cmd.arg("-p").arg(&root).arg("-c").arg(root.join("nginx.conf"));
    let p = Proc::spawn(cmd, dir, name);
    let up = wait_for(Duration::from_secs(5), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    assert!(up.is_some(), "nginx did not start; see {}", dir.join(format!("{name}.stderr")).display());
    p
}

/// The session cookie of each box (by port) a test has logged into.
static SESSIONS: std::sync::Mutex<Vec<(u16, String)>> = std::sync::Mutex::new(Vec::new());

/// Where the box whose panel is on a port is reached, when not on loopback (a box in a network
/// namespace): see [`box_at`].
static ADDRESSES: std::sync::Mutex<Vec<(u16, std::net::IpAddr)>> = std::sync::Mutex::new(Vec::new());

/// The box whose panel listens on `port` is reached at `ip` (in a network namespace) by
/// [`http`] and the helpers over it.
pub fn box_at(port: u16, ip: std::net::IpAddr) {
    let mut a = ADDRESSES.lock().unwrap_or_else(|p| p.into_inner());
    a.retain(|(p, _)| *p != port);
    a.push((port, ip));
}

/// One HTTP/1.1 request to the box's API (on loopback unless [`box_at`] said otherwise), as a
/// script would send it (the CSRF header, and the session cookie once [`first_login`] ran);
/// returns the status and the body.
pub fn http(method: &str, port: u16, path: &str, body: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let ip = ADDRESSES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(p, _)| *p == port)
        .map_or(std::net::IpAddr::from([127, 0, 0, 1]), |(_, ip)| *ip);
    let Ok(mut s) = std::net::TcpStream::connect((ip, port)) else { return (0, String::new()) };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let body = body.unwrap_or("");
    let cookie = SESSIONS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(p, _)| *p == port)
        .map(|(_, c)| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nX-Telebridge-Csrf: 1\r\n{cookie}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or(("", ""));
    if let Some(c) = head.lines().find_map(|l| l.strip_prefix("set-cookie: ")).and_then(|c| c.split(';').next()) {
        let mut sessions = SESSIONS.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|(p, _)| *p != port);
        sessions.push((port, c.to_string()));
    }
    (status, body.to_string())
}

/// The session cookie [`http`] keeps for the box on `port` (after [`first_login`]).
pub fn session_cookie(port: u16) -> Option<String> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(p, _)| *p == port).map(|(_, c)| c.clone())
}

/// First start: reads the setup code from the box's log (`DIR/NAME.stderr`) and sets the
/// password; the session cookie is kept for [`http`].
pub fn first_login(port: u16, dir: &Path, name: &str, password: &str) {
    let code = setup_code(&dir.join(format!("{name}.stderr")));
    let (status, body) =
        http("POST", port, "/api/setup", Some(&format!(r#"{{"code": "{code}", "password": "{password}"}}"#)));
    assert_eq!(status, 200, "setup: {body}");
}

/// The one-time setup code a box logged in `log` (waits up to 10 s for it).
pub fn setup_code(log: &Path) -> String {
    let mut code = None;
    wait_for(Duration::from_secs(10), || {
        code = std::fs::read_to_string(log)
            .ok()
            .and_then(|l| l.split("setup_code=").nth(1).map(|rest| rest.chars().take(9).collect::<String>()));
        code.is_some()
    });
    code.unwrap_or_else(|| panic!("no setup code in {}", log.display()))
}

/// `GET path` as JSON (Null when the box does not answer).
pub fn get_json(port: u16, path: &str) -> serde_json::Value {
    let (_, body) = http("GET", port, path, None);
    serde_json::from_str(&body).unwrap_or(serde_json::Value::Null)
}

/// `telebridge run --sim` serving its panel on `http_port`, set up with the password
/// "a test password" (the session kept for [`http`]).
pub fn run_sim(dir: &Path, name: &str, http_port: u16, extra: &[&str], env: &[(&str, &str)]) -> Proc {
    run_sim_with(telebridge(), dir, name, http_port, extra, env)
}

/// [`run_sim`] with the command to start it (`telebridge()`, or it under a wrapper).
pub fn run_sim_with(
    mut cmd: Command,
    dir: &Path,
    name: &str,
    http_port: u16,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Proc {
    cmd.args(["run", "--sim", "--http", &format!("127.0.0.1:{http_port}")]).args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let p = Proc::spawn(cmd, dir, name);
    let up = wait_for(Duration::from_secs(10), || http("GET", http_port, "/healthz", None).0 == 200);
    assert!(up.is_some(), "the daemon did not answer; see {}", dir.join(format!("{name}.stderr")).display());
    first_login(http_port, dir, name, "a test password");
    p
}

/// The link emulator between a sender and `port` on loopback (UDP relay mode): `link` both
/// ways with `events`, the way to `port` with `trace` if given (seeds 1 and 2). Keep the runtime
/// as long as the relay.
pub fn link_to(
    port: u16,
    link: linkemu::LinkParams,
    events: Vec<linkemu::impairment::LinkEvent>,
    trace: Option<&str>,
) -> (tokio::runtime::Runtime, linkemu::relay::Relay) {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let mut there = linkemu::Impairment::new(link.clone(), events.clone(), 1);
    if let Some(t) = trace {
        there = there.with_trace(linkemu::CapacityTrace::parse(t).expect("a capacity trace"));
    }
    let relay = runtime
        .block_on(linkemu::relay::start(
            "127.0.0.1:0".parse().expect("an address"),
            format!("127.0.0.1:{port}").parse().expect("an address"),
            there,
            linkemu::Impairment::new(link, events, 2),
        ))
        .expect("the link emulator starts");
    (runtime, relay)
}
