//! The appliance daemon as a benchmark drives it: `telebridge run --sim` started with its own
//! configuration in a scratch folder and set up through its panel, and HTTP requests to it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;

/// What one HTTP request got back.
#[derive(Debug, Default)]
pub struct Reply {
    /// The status (0: no answer).
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// The session cookie it set, if any (`name=value`).
    pub cookie: Option<String>,
}

/// One HTTP/1.1 request to the panel on loopback, as a script sends it.
pub fn http(port: u16, method: &str, path: &str, cookie: &str, body: &str) -> Reply {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return Reply::default() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nX-Telebridge-Csrf: 1\r\n\
         Cookie: {cookie}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return Reply::default();
    }
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let head_end = resp.windows(4).position(|w| w == b"\r\n\r\n").map_or(resp.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&resp[..head_end]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let cookie = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .starts_with("set-cookie:")
            .then(|| l[11..].trim().split(';').next().unwrap_or("").to_string())
    });
    Reply { status, body: resp[head_end..].to_vec(), cookie }
}

/// A daemon started for a benchmark and logged in.
#[derive(Debug)]
pub struct SimDaemon {
    /// The process.
    pub child: Child,
    /// Its panel's port on loopback.
    pub port: u16,
    /// The session cookie.
    pub cookie: String,
}

/// Starts `telebridge run --sim` from `bin` with `args` (outputs, `--start-live`...), its
/// configuration and log in `dir`, and sets the password through the panel.
pub fn start(bin: &Path, dir: &Path, args: &[String]) -> anyhow::Result<SimDaemon> {
    start_with(bin, dir, args, "")
}

/// As [`start`], with `tables` (TOML tables other than `[web]`, e.g. `[video]`) in its
/// configuration.
pub fn start_with(bin: &Path, dir: &Path, args: &[String], tables: &str) -> anyhow::Result<SimDaemon> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let config = dir.join("telebridge.toml");
    std::fs::write(&config, format!("{tables}\n[web]\nsetup_code_file = \"{}\"\n", dir.join("setup.txt").display()))?;
    let log = dir.join("daemon.log");
    let child = Command::new(bin)
        .args(["run", "--sim", "--http", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&config)
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    let mut code = None;
    for _ in 0..100 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        code = text.split("setup_code=").nth(1).map(|r| r.chars().take(9).collect::<String>());
        if code.is_some() && http(port, "GET", "/healthz", "", "").status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let code = code.context("the daemon printed no setup code")?;
    let setup =
        http(port, "POST", "/api/setup", "", &format!(r#"{{"code":"{code}","password":"benchmark password"}}"#));
    anyhow::ensure!(setup.status == 200, "setup answered {}", setup.status);
    let cookie = setup.cookie.context("setup set no session cookie")?;
    Ok(SimDaemon { child, port, cookie })
}
