//! Helpers for the telebridge's tests: a bridge box's configuration, its recordings, and boxes
//! run inside network namespaces (their panels reached with curl inside the namespace).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{wait_for, Proc};

/// A bridge box's configuration: small pictures (two encoders and two decoders share the
/// machine), what arrives recorded in `dir`, no UPnP search (it would go out on the host's
/// network; the NAT test has a router of its own).
pub fn bridge_config(dir: &Path, name: &str, srt_port: u16) -> PathBuf {
    bridge_config_with(dir, name, srt_port, "port_mapping = false\n")
}

pub fn bridge_config_with(dir: &Path, name: &str, srt_port: u16, bridge_extra: &str) -> PathBuf {
    let path = dir.join("telebridge.toml");
    let record = dir.join("received-%H%M%S.ts");
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\nrole = \"bridge\"\n[video]\nwidth = 640\nheight = 360\nfps = 25\nbitrate_kbps = 800\n\
             [bridge]\nport = {srt_port}\nrecord = \"file:{}\"\n{bridge_extra}",
            record.display()
        ),
    )
    .expect("write the configuration");
    path
}

pub fn recordings(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    v.retain(|p| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("received-") && n.ends_with(".ts"))
    });
    v.sort();
    v
}

/// One request to a box in network namespace `ns`, with curl run inside it (the test itself
/// stays in the host's namespace); the session cookie lives in `jar`. Returns (status, body).
pub fn ns_http(ns: &str, jar: &Path, method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", ns, "curl", "-s", "-m", "30", "-X", method, "-H", "X-Telebridge-Csrf: 1"]);
    cmd.args(["-H", "Content-Type: application/json", "-b"]).arg(jar).arg("-c").arg(jar);
    if let Some(b) = body {
        cmd.args(["-d", b]);
    }
    cmd.args(["-w", "\n%{http_code}", url]);
    let out = cmd.output().expect("run curl in the namespace");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// A box in a namespace: its directory, panel URL and cookie jar.
pub struct NsBox {
    pub ns: String,
    pub dir: PathBuf,
    pub url: String,
    _proc: Proc,
}

impl NsBox {
    /// `telebridge run --sim` in namespace `ns`, its panel on `addr`:8080, configured by
    /// `config`, set up with the password "a test password".
    pub fn start(ns: &str, addr: &str, name: &str, dir: PathBuf, config: &Path) -> NsBox {
        let ns = ns.to_string();
        let mut cmd = std::process::Command::new("ip");
        cmd.args(["netns", "exec", &ns, env!("CARGO_BIN_EXE_telebridge")]);
        cmd.env("RUST_LOG", "info").args(["run", "--sim", "--http", &format!("{addr}:8080"), "--config"]).arg(config);
        let proc = Proc::spawn(cmd, &dir, "box");
        let b = NsBox { ns, url: format!("http://{addr}:8080"), _proc: proc, dir };
        let up = wait_for(Duration::from_secs(15), || b.call("GET", "/healthz", None).0 == 200);
        assert!(up.is_some(), "{name} did not answer; see {}", b.dir.join("box.stderr").display());
        let code = super::setup_code(&b.dir.join("box.stderr"));
        let setup = format!(r#"{{"code": "{code}", "password": "a test password"}}"#);
        let (status, body) = b.call("POST", "/api/setup", Some(&setup));
        assert_eq!(status, 200, "setup: {body}");
        b
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        ns_http(&self.ns, &self.dir.join("cookies"), method, &format!("{}{path}", self.url), body)
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        serde_json::from_str(&self.call("GET", path, None).1).unwrap_or(serde_json::Value::Null)
    }

    pub fn frames_decoded(&self) -> u64 {
        self.json("/api/status")["media"]["receiving"]["decoder"]["frames_decoded"].as_u64().unwrap_or(0)
    }
}
