//! The telebridge through NAT: each box in its own LAN namespace behind a router namespace
//! that masquerades it (nftables), the two routers joined by an "internet" namespace. Box B's
//! owner pairs with box A's panel at A's router's public address (its panel port forwarded, as an
//! owner who pairs across the internet has it); how the bridge's UDP port reaches A is what
//! each case varies, and each case checks what the boxes chose, what their panels say, and
//! whether video flows:
//!
//! - `port mapping`: A's router runs miniupnpd; A asks it for the port (UPnP) and tells B the
//!   public address: video flows both ways.
//! - `forwarded by hand`: no UPnP, the owner forwarded UDP 7700: B calls the address it typed;
//!   video flows.
//! - `no way in`: no UPnP and nothing forwarded: A's panel says what to do; listening and
//!   calling get nowhere, and the boxes meet by SRT rendezvous at each other's public address
//!   (A saw B's while pairing; B typed A's): video flows both ways.
//!
//! The public side uses 198.20.0.0/24 (miniupnpd refuses the documentation ranges as
//! "private"); the namespaces route nowhere else. Needs root, nft and miniupnpd.

#![allow(clippy::unwrap_used)] // a failed system call or a missing field should fail the test

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::bridge::*;
use support::*;

/// Runs `ip` with `args`, failing the test when it fails.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// Runs `nft -f -` with `rules` in namespace `ns`.
fn nft(ns: &str, rules: &str) {
    use std::io::Write;
    let mut c = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(rules.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "nft in {ns}: {}", String::from_utf8_lossy(&out.stderr));
}

/// How A's router lets the bridge's port in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    /// miniupnpd runs on it.
    Upnp,
    /// A static forward of UDP 7700 to A.
    ByHand,
    /// Neither.
    None,
}

/// Two LANs behind two NAT routers, joined by an "internet"; deleted when dropped.
struct NatLab {
    prefix: String,
    _upnpd: Option<Proc>,
}

impl NatLab {
    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    fn new(prefix: &str, way: Way, dir: &Path) -> NatLab {
        let p = prefix;
        let mut lab = NatLab { prefix: p.to_string(), _upnpd: None };
        for n in ["wan", "nata", "lana", "natb", "lanb"] {
            let _ = Command::new("ip").args(["netns", "del", &lab.ns(n)]).output();
            ip(&["netns", "add", &lab.ns(n)]);
            ip(&["-n", &lab.ns(n), "link", "set", "lo", "up"]);
        }
        let wan = lab.ns("wan");
        ip(&["-n", &wan, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &wan, "link", "set", "br0", "up"]);
        for (side, k) in [("a", 1), ("b", 2)] {
            let (nat, lan) = (lab.ns(&format!("nat{side}")), lab.ns(&format!("lan{side}")));
            let (inner, outer) = (format!("{p}{side}i"), format!("{p}{side}o"));
            // LAN <-> router
            ip(&["link", "add", &format!("{inner}0"), "type", "veth", "peer", "name", &format!("{inner}1")]);
            ip(&["link", "set", &format!("{inner}0"), "netns", &lan]);
            ip(&["link", "set", &format!("{inner}1"), "netns", &nat]);
            ip(&["-n", &lan, "addr", "add", &format!("10.0.{k}.2/24"), "dev", &format!("{inner}0")]);
            ip(&["-n", &lan, "link", "set", &format!("{inner}0"), "up"]);
            ip(&["-n", &lan, "route", "add", "default", "via", &format!("10.0.{k}.1")]);
            ip(&["-n", &nat, "addr", "add", &format!("10.0.{k}.1/24"), "dev", &format!("{inner}1")]);
            ip(&["-n", &nat, "link", "set", &format!("{inner}1"), "up"]);
            // router <-> internet
            ip(&["link", "add", &format!("{outer}0"), "type", "veth", "peer", "name", &format!("{outer}1")]);
            ip(&["link", "set", &format!("{outer}0"), "netns", &nat]);
            ip(&["link", "set", &format!("{outer}1"), "netns", &wan]);
            ip(&["-n", &nat, "addr", "add", &format!("198.20.0.{k}/24"), "dev", &format!("{outer}0")]);
            ip(&["-n", &nat, "link", "set", &format!("{outer}0"), "up"]);
            ip(&["-n", &wan, "link", "set", &format!("{outer}1"), "master", "br0"]);
            ip(&["-n", &wan, "link", "set", &format!("{outer}1"), "up"]);
            let out = Command::new("ip")
                .args(["netns", "exec", &nat, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
                .output()
                .unwrap();
            assert!(out.status.success());
            // Only A's router lets anything in: its panel (so that B can pair), and the bridge's
            // port when the case says so.
            let forwards = if side == "a" {
                let mut f = format!("iifname \"{outer}0\" tcp dport 8080 dnat ip to 10.0.1.2:8080\n");
                if way == Way::ByHand {
                    f.push_str(&format!("iifname \"{outer}0\" udp dport 7700 dnat ip to 10.0.1.2:7700\n"));
                }
                f
            } else {
                String::new()
            };
            nft(
                &nat,
                &format!(
                    "table inet filter {{\n chain forward {{\n  type filter hook forward priority 0; policy drop;\n  ct state established,related accept\n  iifname \"{inner}1\" accept\n  ct status dnat accept\n  jump miniupnpd\n }}\n chain miniupnpd {{\n }}\n}}\n\
                     table inet nat {{\n chain prerouting {{\n  type nat hook prerouting priority -100; policy accept;\n  {forwards}  jump prerouting_miniupnpd\n }}\n chain postrouting {{\n  type nat hook postrouting priority 100; policy accept;\n  oifname \"{outer}0\" masquerade\n  jump postrouting_miniupnpd\n }}\n chain prerouting_miniupnpd {{\n }}\n chain postrouting_miniupnpd {{\n }}\n}}\n"
                ),
            );
        }
        if way == Way::Upnp {
            let conf = dir.join("miniupnpd.conf");
            std::fs::write(
                &conf,
                format!(
                    "ext_ifname={p}ao0\nlistening_ip={p}ai1\nport=5000\nenable_natpmp=yes\nenable_upnp=yes\nsecure_mode=yes\n\
                     uuid=3f1b2c8e-0d7a-4f5e-9b1a-6c2d3e4f5a6b\nallow 1024-65535 10.0.1.0/24 1024-65535\ndeny 0-65535 0.0.0.0/0 0-65535\n\
                     upnp_table_name=filter\nupnp_nat_table_name=nat\nupnp_forward_chain=miniupnpd\n\
                     upnp_nat_chain=prerouting_miniupnpd\nupnp_nat_postrouting_chain=postrouting_miniupnpd\n"
                ),
            )
            .unwrap();
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &lab.ns("nata"), "miniupnpd", "-d", "-P"])
                .arg(dir.join("miniupnpd.pid"))
                .arg("-f")
                .arg(&conf);
            lab._upnpd = Some(Proc::spawn(cmd, dir, "miniupnpd"));
            // SSDP from the LAN reaches the router by multicast.
            ip(&["-n", &lab.ns("lana"), "route", "add", "239.0.0.0/8", "dev", &format!("{p}ai0")]);
            std::thread::sleep(Duration::from_millis(500));
        }
        lab
    }
}

impl Drop for NatLab {
    fn drop(&mut self) {
        if let Some(p) = self._upnpd.take() {
            drop(p);
        }
        for n in ["lana", "lanb", "nata", "natb", "wan"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(n)]).output();
        }
    }
}

/// One case: the lab, two boxes, pairing through A's public address; (A, B) after both went live.
fn pair_across(way: Way, tag: &str) -> (NatLab, NsBox, NsBox) {
    let dir = scratch(&format!("nat-{tag}"));
    let prefix = format!("tn{}{}", std::process::id() % 10_000, &tag[..1]);
    let lab = NatLab::new(&prefix, way, &dir);
    let (dir_a, dir_b) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    // The boxes search for a router (in their own LAN namespace only).
    let config_a = bridge_config_with(&dir_a, "studio-a", 7700, "port_mapping = true\n");
    let config_b = bridge_config_with(&dir_b, "studio-b", 7700, "port_mapping = true\n");
    let a = NsBox::start(&lab.ns("lana"), "10.0.1.2", "studio-a", dir_a, &config_a);
    let b = NsBox::start(&lab.ns("lanb"), "10.0.2.2", "studio-b", dir_b, &config_b);
    let (status, body) = a.call("POST", "/api/pairing/open", None);
    assert_eq!(status, 200, "{body}");
    let code = serde_json::from_str::<serde_json::Value>(&body).unwrap()["code"].as_str().unwrap().to_string();
    // The router's answer (UPnP takes up to 2 s to find none).
    let asked = wait_for(Duration::from_secs(8), || {
        !a.json("/api/pairing")["reach"].as_str().unwrap_or("").starts_with("asking the router")
    });
    assert!(asked.is_some(), "{}", a.json("/api/pairing"));
    let join = format!(r#"{{"address": "198.20.0.1:8080", "code": "{code}"}}"#);
    let (status, body) = b.call("POST", "/api/pairing/join", Some(&join));
    assert_eq!(status, 200, "B pairs with A's public address: {body}");
    for bx in [&a, &b] {
        let (status, body) = bx.call("POST", "/api/live", Some(r#"{"live": true}"#));
        assert_eq!(status, 202, "{body}");
    }
    (lab, a, b)
}

fn both_ways(a: &NsBox, b: &NsBox, within: Duration) -> bool {
    wait_for(within, || a.frames_decoded() > 50 && b.frames_decoded() > 50).is_some()
}

#[test]
fn behind_nat_the_boxes_use_a_port_mapping_a_forwarded_port_or_a_rendezvous() {
    let _guard = serial();

    // Port mapping: A's router passes the port at its public address; B calls that.
    let (lab, a, b) = pair_across(Way::Upnp, "upnp");
    let pa = a.json("/api/pairing");
    assert_eq!(pa["paired"]["via"], "port_mapping", "{pa}");
    let reach = pa["reach"].as_str().unwrap_or("");
    assert!(reach.starts_with("the router passes UDP 7700 at 198.20.0.1:7700 to this box"), "{reach}");
    let pb = b.json("/api/pairing");
    assert_eq!(
        (pb["paired"]["calls"].as_str(), pb["paired"]["via"].as_str()),
        (Some("198.20.0.1:7700"), Some("port_mapping")),
        "{pb}"
    );
    assert!(
        both_ways(&a, &b, Duration::from_secs(30)),
        "no video both ways through the mapping:\nA {}\nB {}",
        a.json("/api/status")["media"],
        b.json("/api/status")["media"]
    );
    let rules = Command::new("ip")
        .args(["netns", "exec", &lab.ns("nata"), "nft", "list", "chain", "inet", "nat", "prerouting_miniupnpd"])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout).to_string();
    assert!(rules.contains("dport 7700 dnat ip to 10.0.1.2:7700"), "{rules}");
    // Unpaired, the mapping goes.
    let (status, _) = a.call("DELETE", "/api/pairing", None);
    assert_eq!(status, 200);
    let gone = wait_for(Duration::from_secs(8), || {
        let r = Command::new("ip")
            .args(["netns", "exec", &lab.ns("nata"), "nft", "list", "chain", "inet", "nat", "prerouting_miniupnpd"])
            .output()
            .unwrap();
        !String::from_utf8_lossy(&r.stdout).contains("7700")
    });
    assert!(gone.is_some(), "the router still maps the port after unpairing");
    drop((a, b, lab));

    // Forwarded by hand: no UPnP; B calls the address it typed, which the router forwards.
    let (lab, a, b) = pair_across(Way::ByHand, "hand");
    let pa = a.json("/api/pairing");
    assert_eq!(pa["paired"]["via"], "direct", "{pa}");
    assert!(pa["reach"].as_str().unwrap_or("").contains("forward UDP 7700 to this box"), "{pa}");
    assert_eq!(b.json("/api/pairing")["paired"]["calls"], "198.20.0.1:7700");
    assert!(both_ways(&a, &b, Duration::from_secs(30)), "no video both ways through the forward");
    drop((a, b, lab));

    // No way in: A says what to do; B keeps calling and says it gets no answer.
    let (lab, a, b) = pair_across(Way::None, "none");
    let reach = a.json("/api/pairing")["reach"].as_str().unwrap_or("").to_string();
    assert!(reach.starts_with("no port mapping (no UPnP router answered"), "{reach}");
    assert!(reach.contains("forward UDP 7700 to this box in the router"), "{reach}");
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(a.frames_decoded() + b.frames_decoded(), 0, "video flowed with no way in");
    let status_b = b.json("/api/status");
    let peer = status_b["media"]["sending"]["outputs"]
        .as_array()
        .and_then(|o| o.iter().find(|x| x["name"] == "peer").cloned())
        .unwrap_or_default();
    assert!(peer["state"] != "live" && peer["reason"].is_string(), "B should say why it is not connected: {peer}");
    drop((a, b, lab));
}
