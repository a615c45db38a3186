//! The telebridge through NAT: each box in its own LAN namespace behind a router namespace
//! that masquerades it (nftables), the two routers joined by an "internet". Box B's owner pairs
//! with box A's panel at A's router's public address (its panel port forwarded, as an owner who
//! pairs across the internet has it); how the bridge's UDP port reaches A is what each case
//! varies, and each checks what the boxes chose, what A's panel says, and that video flows:
//!
//! - port mapping: A's router runs miniupnpd; A asks it for the port (UPnP) and tells B the
//!   public address; unpairing removes the mapping.
//! - forwarded by hand: no UPnP, the owner forwarded UDP 7700; B calls the address it typed.
//! - rendezvous: no UPnP, nothing forwarded, the routers joined through the link emulator
//!   (metro-17ms); listening and calling get nowhere, and the boxes meet by SRT rendezvous at
//!   each other's public address (A saw B's while pairing; B typed A's) at the same clock slot.
//! - meeting point: as above, and B's router gives each flow a random public port, so no
//!   rendezvous can meet; both go through `telebridge relay --meet` on the internet.
//!
//! The public side uses 198.20.0.0/24 (miniupnpd refuses the documentation ranges as
//! "private") or the link emulator's 198.18.0.0/15; the namespaces route nowhere else. Needs
//! root, nft and miniupnpd.

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
    /// Neither, the routers joined through the link emulator (metro-17ms): a rendezvous needs
    /// some delay between the routers, as the internet has (see `telebridge_srt::ways`).
    None,
    /// Neither, and B's router picks a random public port for each flow (so a rendezvous at
    /// the addresses the boxes saw cannot meet); a meeting point runs on the internet.
    Relay,
}

/// Two LANs behind two NAT routers, joined by an "internet"; deleted when dropped.
struct NatLab {
    prefix: String,
    dir: std::path::PathBuf,
    /// The routers' namespaces.
    nat: [String; 2],
    /// A's router's public address.
    public_a: String,
    _upnpd: Option<Proc>,
    _relay: Option<Proc>,
    /// The link emulator joining the routers (and the runtime it runs on), in the `None` case.
    _link: Option<(linkemu::ip_mode::NetnsLink, tokio::runtime::Runtime)>,
}

impl NatLab {
    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    fn new(prefix: &str, way: Way, dir: &Path) -> NatLab {
        let p = prefix;
        let mut lab = NatLab {
            prefix: p.to_string(),
            dir: dir.to_path_buf(),
            nat: [format!("{p}-nata"), format!("{p}-natb")],
            public_a: "198.20.0.1".into(),
            _upnpd: None,
            _relay: None,
            _link: None,
        };
        let over_link = way == Way::None;
        let names: &[&str] = if over_link { &["lana", "lanb"] } else { &["wan", "nata", "lana", "natb", "lanb"] };
        for n in names {
            let _ = Command::new("ip").args(["netns", "del", &lab.ns(n)]).output();
            ip(&["netns", "add", &lab.ns(n)]);
            ip(&["-n", &lab.ns(n), "link", "set", "lo", "up"]);
        }
        let wan = lab.ns("wan");
        if over_link {
            let profiles = linkemu::Profiles::parse(include_str!("../bench/links.toml")).unwrap();
            let params = profiles.get("metro-17ms").unwrap().params();
            let rt = tokio::runtime::Runtime::new().unwrap();
            let link = rt
                .block_on(linkemu::ip_mode::start(
                    &format!("{p}l"),
                    linkemu::Impairment::new(params.clone(), vec![], 1),
                    linkemu::Impairment::new(params, vec![], 2),
                ))
                .unwrap();
            lab.nat = [link.ns_a.clone(), link.ns_b.clone()];
            lab.public_a = linkemu::ip_mode::ADDR_A.into();
            lab._link = Some((link, rt));
        } else {
            ip(&["-n", &wan, "link", "add", "br0", "type", "bridge"]);
            ip(&["-n", &wan, "link", "set", "br0", "up"]);
            ip(&["-n", &wan, "addr", "add", "198.20.0.100/24", "dev", "br0"]);
        }
        for (i, (side, k)) in [("a", 1), ("b", 2)].into_iter().enumerate() {
            let (nat, lan) = (lab.nat[i].clone(), lab.ns(&format!("lan{side}")));
            let inner = format!("{p}{side}i");
            // The router's public side: the link emulator's TUN device, or a veth to the bridge.
            let outer_dev = if over_link { format!("{p}l{side}") } else { format!("{p}{side}o0") };
            let outer = format!("{p}{side}o");
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
            if !over_link {
                ip(&["link", "add", &format!("{outer}0"), "type", "veth", "peer", "name", &format!("{outer}1")]);
                ip(&["link", "set", &format!("{outer}0"), "netns", &nat]);
                ip(&["link", "set", &format!("{outer}1"), "netns", &wan]);
                ip(&["-n", &nat, "addr", "add", &format!("198.20.0.{k}/24"), "dev", &format!("{outer}0")]);
                ip(&["-n", &nat, "link", "set", &format!("{outer}0"), "up"]);
                ip(&["-n", &wan, "link", "set", &format!("{outer}1"), "master", "br0"]);
                ip(&["-n", &wan, "link", "set", &format!("{outer}1"), "up"]);
            }
            let out = Command::new("ip")
                .args(["netns", "exec", &nat, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
                .output()
                .unwrap();
            assert!(out.status.success());
            // Only A's router lets anything in: its panel (so that B can pair), and the bridge's
            // port when the case says so.
            let masquerade = if side == "b" && way == Way::Relay { "masquerade random" } else { "masquerade" };
            let forwards = if side == "a" {
                let mut f = format!("iifname \"{outer_dev}\" tcp dport 8080 dnat ip to 10.0.1.2:8080\n");
                if way == Way::ByHand {
                    f.push_str(&format!("iifname \"{outer_dev}\" udp dport 7700 dnat ip to 10.0.1.2:7700\n"));
                }
                f
            } else {
                String::new()
            };
            nft(
                &nat,
                &format!(
                    "table inet filter {{\n chain forward {{\n  type filter hook forward priority 0; policy drop;\n  ct state established,related accept\n  iifname \"{inner}1\" accept\n  ct status dnat accept\n  jump miniupnpd\n }}\n chain miniupnpd {{\n }}\n}}\n\
                     table inet nat {{\n chain prerouting {{\n  type nat hook prerouting priority -100; policy accept;\n  {forwards}  jump prerouting_miniupnpd\n }}\n chain postrouting {{\n  type nat hook postrouting priority 100; policy accept;\n  oifname \"{outer_dev}\" {masquerade}\n  jump postrouting_miniupnpd\n }}\n chain prerouting_miniupnpd {{\n }}\n chain postrouting_miniupnpd {{\n }}\n}}\n"
                ),
            );
        }
        if way == Way::Relay {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &wan, env!("CARGO_BIN_EXE_telebridge"), "relay", "--meet", "7800-7803"]);
            lab._relay = Some(Proc::spawn(cmd, dir, "relay"));
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
            cmd.args(["netns", "exec", &lab.nat[0], "miniupnpd", "-d", "-P"])
                .arg(dir.join("miniupnpd.pid"))
                .arg("-f")
                .arg(&conf);
            let upnpd = Proc::spawn(cmd, dir, "miniupnpd");
            // `ip netns exec` becomes miniupnpd: its sockets are in the router's namespace.
            wait_tcp_listening(5000, Some(upnpd.child.id()), "miniupnpd's HTTP");
            wait_udp_bound_in(upnpd.child.id(), 1900, "miniupnpd's SSDP");
            lab._upnpd = Some(upnpd);
            // SSDP from the LAN reaches the router by multicast.
            ip(&["-n", &lab.ns("lana"), "route", "add", "239.0.0.0/8", "dev", &format!("{p}ai0")]);
        }
        lab
    }
}

impl Drop for NatLab {
    fn drop(&mut self) {
        drop(self._upnpd.take());
        drop(self._relay.take());
        for n in ["lana", "lanb", "nata", "natb", "wan"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(n)]).output();
        }
        // The link emulator deletes its namespaces when dropped.
        drop(self._link.take());
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
    let extra =
        format!("port_mapping = true\n{}", if way == Way::Relay { "relay = \"198.20.0.100:7800-7803\"\n" } else { "" });
    let config_a = bridge_config_with(&dir_a, "studio-a", 7700, &extra);
    let config_b = bridge_config_with(&dir_b, "studio-b", 7700, &extra);
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
    let join = format!(r#"{{"address": "{}:8080", "code": "{code}"}}"#, lab.public_a);
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
fn behind_nat_the_boxes_use_a_port_mapping_a_forwarded_port_a_rendezvous_or_the_meeting_point() {
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
        .args(["netns", "exec", &lab.nat[0], "nft", "list", "chain", "inet", "nat", "prerouting_miniupnpd"])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout).to_string();
    assert!(rules.contains("dport 7700 dnat ip to 10.0.1.2:7700"), "{rules}");
    // Unpaired, the mapping goes.
    let (status, _) = a.call("DELETE", "/api/pairing", None);
    assert_eq!(status, 200);
    let gone = wait_for(Duration::from_secs(8), || {
        let r = Command::new("ip")
            .args(["netns", "exec", &lab.nat[0], "nft", "list", "chain", "inet", "nat", "prerouting_miniupnpd"])
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

    // No way in: A says what to do; listen/call gets nowhere, and both meet by rendezvous at
    // each other's public address (the routers keep the port).
    let (lab, a, b) = pair_across(Way::None, "none");
    let pa = a.json("/api/pairing");
    let reach = pa["reach"].as_str().unwrap_or("").to_string();
    assert!(reach.starts_with("no port mapping (no UPnP router answered"), "{reach}");
    assert!(reach.contains("forward UDP 7700 to this box in the router"), "{reach}");
    assert_eq!(pa["paired"]["rendezvous"], "198.18.0.2:7700", "A meets B where it saw B: {pa}");
    assert_eq!(b.json("/api/pairing")["paired"]["rendezvous"], "198.18.0.1:7700");
    // Rendezvous attempts start on 40 s slots of the Unix clock (`telebridge_srt::ways::SLOT`);
    // one that a box misses (it was
    // still starting, a router's entry was in the way) is made again at the next slot: two
    // slots and the time to connect and decode. (75 s failed once in a full run: A and B were
    // still between slots at 73 s.)
    let within = Duration::from_secs(2 * 40 + 15);
    assert!(
        both_ways(&a, &b, within),
        "no video both ways by rendezvous:\nA {}\nB {}",
        a.json("/api/status")["media"],
        b.json("/api/status")["media"]
    );
    for bx in [&a, &b] {
        let p = peer(bx);
        assert!(p["url"].as_str().unwrap_or("").starts_with("srt://198.18.0."), "{p}");
        assert!(p["url"].as_str().unwrap_or("").contains("mode=rendezvous"), "not by rendezvous: {p}");
    }
    drop((a, b, lab));

    // Ports not kept either: the rendezvous cannot meet; both go through the meeting point,
    // which forwards what it cannot read.
    let (lab, a, b) = pair_across(Way::Relay, "relay");
    assert!(
        both_ways(&a, &b, Duration::from_secs(90)),
        "no video both ways through the meeting point:\nA {}\nB {}",
        a.json("/api/status")["media"],
        b.json("/api/status")["media"]
    );
    for bx in [&a, &b] {
        let p = peer(bx);
        assert!(p["url"].as_str().unwrap_or("").starts_with("srt://198.20.0.100:78"), "not through the relay: {p}");
    }
    let relay_log = std::fs::read_to_string(lab.dir.join("relay.stderr")).unwrap_or_default();
    assert!(relay_log.contains("two boxes met"), "{relay_log}");
    drop((a, b, lab));
}

/// The bridge's connection to the other box, as a box's status lists it.
fn peer(bx: &NsBox) -> serde_json::Value {
    bx.json("/api/status")["media"]["sending"]["outputs"]
        .as_array()
        .and_then(|o| o.iter().find(|x| x["name"] == "peer").cloned())
        .unwrap_or_default()
}
