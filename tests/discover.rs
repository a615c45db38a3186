//! Boxes finding each other by mDNS (issue 39): two `run --sim` bridge boxes in two network
//! namespaces on one Linux bridge, one of them running as uid 65534 beside Debian's
//! avahi-daemon (as on the image). Each lists the other on its API (`/api/discovered`) within
//! 3 s of the other starting, never itself; a third box with `web.announce = false` finds them
//! and is found by neither; a box that shows a pairing code is seen as showing
//! one; `telebridge discover` lists both; a box that stops says goodbye and leaves the list.
//! Nothing leaves the namespaces and the bridge the test makes.

mod support;

use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// A Linux bridge with this test's address on it and a namespace per box, each with one veth
/// on the bridge (10.213.0.K). Deleted when dropped.
struct Lan {
    bridge: String,
    spaces: Vec<String>,
}

impl Lan {
    fn new(boxes: usize) -> Self {
        let id = std::process::id() % 100_000;
        let lan = Lan { bridge: format!("tbdbr{id}"), spaces: (0..boxes).map(|k| format!("tbd{k}-{id}")).collect() };
        lan.clean();
        ip(&["link", "add", &lan.bridge, "type", "bridge"]);
        ip(&["addr", "add", "10.213.0.1/24", "dev", &lan.bridge]);
        ip(&["link", "set", &lan.bridge, "up"]);
        for (k, ns) in lan.spaces.iter().enumerate() {
            let host_end = format!("tbd{k}h{id}");
            ip(&["netns", "add", ns]);
            ip(&["link", "add", &host_end, "type", "veth", "peer", "name", "eth0", "netns", ns]);
            ip(&["link", "set", &host_end, "master", &lan.bridge, "up"]);
            ip(&["-n", ns, "addr", "add", &format!("10.213.0.{}/24", k + 2), "dev", "eth0"]);
            ip(&["-n", ns, "link", "set", "eth0", "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        lan
    }

    fn address(&self, k: usize) -> IpAddr {
        IpAddr::from([10, 213, 0, k as u8 + 2])
    }

    fn clean(&self) {
        for ns in &self.spaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = Command::new("ip").args(["link", "del", &self.bridge]).output();
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        self.clean();
    }
}

/// A sim bridge box named `name` in the LAN's namespace `k`, its panel on every address of it;
/// `as_nobody`: as the image runs it, not as root (uid 65534, its own cache directory).
fn start_box(
    lan: &Lan,
    k: usize,
    dir: &std::path::Path,
    name: &str,
    port: u16,
    as_nobody: bool,
    extra: &[&str],
) -> Proc {
    box_at(port, lan.address(k));
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &lan.spaces[k]]);
    if as_nobody {
        let home = dir.join(format!("{name}-home"));
        std::fs::create_dir_all(&home).expect("home");
        std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
        cmd.args(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]).env("HOME", &home);
    }
    cmd.arg(env!("CARGO_BIN_EXE_telebridge"))
        .args(["run", "--sim", "--role", "bridge", "--name", name, "--http", &format!("0.0.0.0:{port}")])
        .args(extra)
        .env("RUST_LOG", "info");
    let p = Proc::spawn(cmd, dir, name);
    let up = wait_for(Duration::from_secs(10), || http("GET", port, "/healthz", None).0 == 200);
    assert!(up.is_some(), "{name} did not answer; see {}", dir.join(format!("{name}.stderr")).display());
    first_login(port, dir, name, "a test password");
    p
}

/// The boxes `port`'s box lists: (name, pairing, panel).
fn listed(port: u16) -> Vec<(String, String, String)> {
    let d = get_json(port, "/api/discovered");
    d["boxes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| {
                    let s = |k: &str| b[k].as_str().unwrap_or_default().to_string();
                    (s("name"), s("pairing"), s("panel"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn two_boxes_on_one_lan_find_each_other_see_a_code_shown_and_a_goodbye() {
    let _s = serial();
    let dir = scratch("discover");
    let lan = Lan::new(3);
    let (pa, pb) = (free_tcp_port(), free_tcp_port());
    let _b = start_box(&lan, 1, &dir, "studio-b", pb, false, &[]);
    let d = get_json(pb, "/api/discovered");
    assert_eq!(d["announcing"], true, "{d}");
    assert!(d["note"].is_null(), "{d}");

    // Avahi holds port 5353 in A's namespace first, as on the image: A's own responder shares it.
    let avahi = avahi_in(&lan.spaces[0], &dir);
    // Within 3 s of A answering on its panel (its start, GStreamer's registry and the first
    // password's hash come before, and vary with the machine's load).
    let spawned = Instant::now();
    let mut a = start_box(&lan, 0, &dir, "studio-a", pa, true, &[]);
    let up = Instant::now();
    let panel_a = format!("10.213.0.2:{pa}");
    let seen =
        wait_for(Duration::from_secs(10), || listed(pb).iter().any(|(n, _, p)| n == "studio-a" && *p == panel_a));
    let seen = seen.map(|_| (up.elapsed(), spawned.elapsed()));
    println!("studio-a listed by studio-b (since up, since started): {seen:?}");
    assert!(
        seen.is_some_and(|(t, _)| t <= Duration::from_secs(3)),
        "studio-a not in studio-b's list within 3 s: {seen:?}"
    );
    let on_a = wait_for(Duration::from_secs(5), || listed(pa).iter().any(|(n, _, _)| n == "studio-b"));
    assert!(on_a.is_some(), "studio-a lists studio-b: {:?}", listed(pa));
    assert!(listed(pb).iter().all(|(n, _, _)| n != "studio-b"), "a box never lists itself");
    assert!(listed(pa).iter().all(|(n, _, _)| n != "studio-a"), "a box never lists itself");

    // C has web.announce = false: it finds the others, none finds it, and it says why.
    let pc = free_tcp_port();
    let quiet = dir.join("quiet.toml");
    std::fs::write(&quiet, "[web]\nannounce = false\n").expect("write the configuration");
    let _c = start_box(&lan, 2, &dir, "studio-c", pc, false, &["--config", quiet.to_str().expect("a path")]);
    let c_finds = wait_for(Duration::from_secs(5), || listed(pc).len() == 2);
    assert!(c_finds.is_some(), "C lists A and B: {:?}", listed(pc));
    let d = get_json(pc, "/api/discovered");
    assert_eq!(d["announcing"], false, "{d}");
    assert!(d["note"].as_str().is_some_and(|n| n.contains("web.announce")), "{d}");
    // A window in which C must not appear on A's or B's list (not a wait for readiness).
    std::thread::sleep(Duration::from_secs(2));
    for port in [pa, pb] {
        assert!(listed(port).iter().all(|(n, _, _)| n != "studio-c"), "C was listed: {:?}", listed(port));
    }

    // A shows a pairing code: B sees it as the box to pick.
    assert_eq!(http("POST", pa, "/api/pairing/open", None).0, 200);
    let open = wait_for(Duration::from_secs(5), || listed(pb).iter().any(|(n, s, _)| n == "studio-a" && s == "open"));
    assert!(open.is_some(), "B sees A showing a code: {:?}", listed(pb));

    // The command line, from B's namespace.
    let out = Command::new("ip")
        .args(["netns", "exec", &lan.spaces[1], env!("CARGO_BIN_EXE_telebridge"), "discover", "--json", "--wait", "2s"])
        .output()
        .expect("telebridge discover");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let names: Vec<&str> = lines.iter().filter_map(|l| l["name"].as_str()).collect();
    assert!(names.contains(&"studio-a") && names.contains(&"studio-b"), "telebridge discover: {names:?}");
    let a_line = lines.iter().find(|l| l["name"] == "studio-a").expect("studio-a");
    assert_eq!(a_line["panel"], panel_a.as_str());
    assert_eq!(a_line["role"], "bridge");

    // A stops: its goodbye takes it off B's list.
    a.signal("TERM");
    let _ = a.wait_timeout(Duration::from_secs(10));
    let gone = wait_for(Duration::from_secs(3), || !listed(pb).iter().any(|(n, _, _)| n == "studio-a"));
    assert!(gone.is_some(), "studio-a still listed after it stopped: {:?}", listed(pb));
    let mut avahi = avahi;
    assert!(avahi.child.try_wait().expect("avahi").is_none(), "avahi-daemon kept running beside studio-a");
}

/// Debian's avahi-daemon in namespace `ns` (its own /run/avahi-daemon, no D-Bus, as root), up
/// and holding UDP 5353 when this returns.
fn avahi_in(ns: &str, dir: &std::path::Path) -> Proc {
    let conf = dir.join("avahi-daemon.conf");
    std::fs::write(
        &conf,
        "[server]\nhost-name=tbd-avahi\nuse-ipv6=no\nenable-dbus=no\n[publish]\npublish-hinfo=no\npublish-workstation=no\n",
    )
    .expect("avahi conf");
    let script = format!(
        "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && exec avahi-daemon -f {} --no-drop-root --no-chroot --no-rlimits",
        conf.display()
    );
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, "unshare", "--mount", "sh", "-c", &script]);
    let p = Proc::spawn(cmd, dir, "avahi");
    let log = dir.join("avahi.stderr");
    let up = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Server startup complete"))
    });
    assert!(up.is_some(), "avahi-daemon did not start: {}", std::fs::read_to_string(&log).unwrap_or_default());
    p
}

#[test]
fn a_box_on_loopback_neither_announces_nor_asks() {
    let _s = serial();
    let dir = scratch("discover-loopback");
    let port = free_tcp_port();
    let _p = run_sim(&dir, "lonely", port, &["--role", "bridge"], &[]);
    let d = get_json(port, "/api/discovered");
    assert_eq!(d["announcing"], false, "{d}");
    assert_eq!(d["boxes"], serde_json::json!([]));
    assert!(d["note"].as_str().is_some_and(|n| n.contains("loopback") || n.contains("127.0.0.1")), "{d}");
    let log = std::fs::read_to_string(dir.join("lonely.stderr")).unwrap_or_default();
    assert!(!log.contains("announced on the local network"), "{log}");
}
