"""mDNS discovery and pairing (issue 57, findings 2 and 5), in network namespaces on one Linux
bridge: box A and box B (`run --sim`, bridge role) and a stranger in a third namespace."""

import json
import os
import signal
import subprocess
import time

from attack_rows.panel import PanelBox

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


class Lan:
    """A bridge (10.214.0.1/24) and a namespace per host at 10.214.0.K; names of its own each
    time (a namespace whose processes are still exiting keeps its links a moment)."""

    made = 0

    def __init__(self, hosts):
        Lan.made += 1
        tag = f"{os.getpid() % 1000}{Lan.made}"
        self.bridge = f"tbbr{tag}"
        self.spaces = {}
        self.clean_list = []
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", "10.214.0.1/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for name, k in hosts.items():
            ns = f"tba{name}{tag}"
            host_end = f"tbv{name}{tag}"[:15]
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", host_end, "master", self.bridge, "up")
            sh("ip", "-n", ns, "addr", "add", f"10.214.0.{k}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            self.spaces[name] = (ns, f"10.214.0.{k}")

    def close(self):
        for ns, _ in self.spaces.values():
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def wait(what, seconds, step=0.3):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(step)
    return what()


def forged_pairing(binary, work, row, quick):
    """Finding 2: on 3fa70d4 three packets with box A's id and name and a stranger's address
    replaced A in B's Pair list; B's owner picked "studio-a", typed A's real code, the pairing
    completed with A through the stranger's TCP relay, and B kept the stranger's address as
    A's: the bridge's SRT then flowed through the stranger (569 datagrams relayed). Here the
    same, the stranger in a third namespace relaying TCP to A's panel and UDP to A's bridge
    port; B's owner pairs at the stranger's address, as the list may show it, and both go live."""
    lan = Lan({"a": 2, "b": 3, "s": 9})
    boxes, stranger = [], None
    counts = os.path.join(work, "stranger-counts.json")
    try:
        a = PanelBox(binary, work, "studio-a", *reversed(lan.spaces["a"]), 8080, ["--role", "bridge"])
        b = PanelBox(binary, work, "studio-b", *reversed(lan.spaces["b"]), 8080, ["--role", "bridge"])
        boxes = [a, b]
        seen = wait(lambda: b.listed("studio-a"), 15)
        if not seen:
            row("a forged mDNS announcement in the middle of a pairing", 0, False, "B never listed A")
            return
        first = seen[0]
        s_ns, s_ip = lan.spaces["s"]
        stranger = subprocess.Popen(
            ["ip", "netns", "exec", s_ns, "python3", os.path.join(HERE, "stranger.py"), "forge", s_ip, first["name"],
             first["id"], first["role"], first["pairing"], str(a.port), "7700", a.ip, counts, "90"],
            stdout=open(os.path.join(work, "stranger.log"), "w"), stderr=subprocess.STDOUT)
        # The three packets a second apart, and B's responder taking them in.
        time.sleep(4)
        after = b.listed("studio-a")
        shown = ", ".join(f"{x['panel']}" + (f" (conflict: {', '.join(x['conflict'])})" if x.get("conflict") else "")
                          for x in after)
        status, body, _ = a.request("POST", "/api/pairing/open")
        code = json.loads(body).get("code") if status == 200 else None
        joined, jbody, _ = b.request("POST", "/api/pairing/join", {"address": f"{s_ip}:{a.port}", "code": code})
        for box in boxes:
            box.request("POST", "/api/live", {"live": True})
        linked = wait(lambda: all(x.json("/api/status").get("links") for x in boxes), 20)
        time.sleep(3 if quick else 8)
        relayed = json.load(open(counts)).get("relayed", 0) if os.path.exists(counts) else -1
        peer = b.json("/api/pairing").get("paired", {}) or {}
    finally:
        if stranger:
            stranger.kill()
        for box in boxes:
            box.stop()
        lan.close()
    listed_right = bool(after) and all(x["panel"].startswith(f"{a.ip}:") for x in after) and any(x.get("conflict") for x in after)
    where = peer.get("calls") or peer.get("rendezvous") or "?"
    row("a forged mDNS announcement in the middle of a pairing (namespaces)", 3,
        listed_right and relayed == 0,
        f"B listed studio-a at {shown or 'nothing'}; paired through the stranger's address: {joined} "
        f"({jbody[:80] if joined != 200 else 'paired'}), B calls {where}; SRT datagrams through the stranger: "
        f"{relayed}{'' if linked else ' (the link never came up)'}")


def flood(binary, work, row, quick):
    """Finding 5: on 3fa70d4, 100 forged instances pushed the real box out of the Pair list (64
    kept, newest first); tens of thousands more added memory that stayed (each record kept for
    its TTL, 75 minutes). Here a stranger announces 100 boxes from its one address, then
    thousands more, all with that TTL; B's list must keep A, and B's memory 15 s later is
    measured against before."""
    lan = Lan({"a": 2, "b": 3, "s": 9})
    boxes = []
    try:
        a = PanelBox(binary, work, "studio-a", *reversed(lan.spaces["a"]), 8080, ["--role", "bridge"])
        b = PanelBox(binary, work, "studio-b", *reversed(lan.spaces["b"]), 8080, ["--role", "bridge"])
        boxes = [a, b]
        wait(lambda: b.listed("studio-a"), 15)
        s_ns, s_ip = lan.spaces["s"]
        before = b.rss_mb()
        subprocess.run(["ip", "netns", "exec", s_ns, "python3", os.path.join(HERE, "stranger.py"), "flood", s_ip,
                        "100", "4500", "8080"], check=True)
        time.sleep(2)
        kept = bool(b.listed("studio-a"))
        many = 1000 if quick else 20000
        subprocess.run(["ip", "netns", "exec", s_ns, "python3", os.path.join(HERE, "stranger.py"), "flood", s_ip,
                        str(many), "4500", "8081"], check=True)
        time.sleep(3)
        peak = b.rss_mb()
        listed = len(b.json("/api/discovered").get("boxes", []))
        time.sleep(3 if quick else 12)
        after = b.rss_mb()
        kept_after = bool(b.listed("studio-a"))
    finally:
        for box in boxes:
            box.stop()
        lan.close()
    row("a flood of forged mDNS instances (namespaces)", 100 + many,
        kept and kept_after and listed <= 8 and after - before < 8,
        f"A kept in B's list: {kept} after 100, {kept_after} after {many} more; B listed {listed}; "
        f"B's memory {before:.0f} MB before, {peak:.0f} MB 3 s after them, {after:.0f} MB {6 if quick else 15} s after")


def all_rows(binary, work, row, quick):
    forged_pairing(binary, work, row, quick)
    flood(binary, work, row, quick)
