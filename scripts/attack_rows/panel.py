"""A box with its panel set up (`telebridge run --sim`), on loopback or in a network namespace,
for the rows of scripts/attack_rows."""

import http.client
import json
import os
import re
import signal
import subprocess
import time

PASSWORD = "attack test password"


def stop(proc):
    """Stops a process the rows started: SIGINT (a daemon says goodbye), then kill after 10 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


class PanelBox:
    """`telebridge run --sim --name NAME` with its panel on `ip:port` (inside namespace `ns` if
    given), set up with a password; `args`: more arguments (`--role bridge`, `--config FILE`)."""

    def __init__(self, binary, work, name, ip, ns, port, args=()):
        self.ip, self.ns, self.port, self.name = ip, ns, port, name
        self.log = os.path.join(work, f"{name}.log")
        listen = f"0.0.0.0:{port}" if ns else f"{ip}:{port}"
        cmd = [binary, "run", "--sim", "--name", name, "--http", listen, *args]
        if ns:
            cmd = ["ip", "netns", "exec", ns, *cmd]
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     env=dict(os.environ, RUST_LOG="info"))
        self.cookie = None
        for _ in range(100):
            if self.request("GET", "/healthz")[0] == 200:
                break
            time.sleep(0.1)
        code = None
        for _ in range(100):
            m = re.search(r"setup_code=(\d{4}-\d{4})", open(self.log).read())
            if m:
                code = m.group(1)
                break
            time.sleep(0.1)
        status, body, headers = self.request("POST", "/api/setup", {"code": code, "password": PASSWORD})
        assert status == 200, body
        self.cookie = headers.get("cookies", "")

    def request(self, method, path, body=None, timeout=30):
        h = {"Host": f"{self.ip}:{self.port}", "X-Telebridge-Csrf": "1", "Content-Type": "application/json"}
        if self.cookie:
            h["Cookie"] = self.cookie
        try:
            c = http.client.HTTPConnection(self.ip, self.port, timeout=timeout)
            c.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=h)
            r = c.getresponse()
            out = r.read().decode(errors="replace")
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            # The session's and the known device's cookies, as a browser sends them back.
            hdrs["cookies"] = "; ".join(v.split(";")[0] for k, v in r.getheaders() if k.lower() == "set-cookie")
            c.close()
            return r.status, out, hdrs
        except (OSError, http.client.HTTPException):
            return 0, "", {}

    def json(self, path):
        s, body, _ = self.request("GET", path)
        return json.loads(body) if s == 200 else {}

    def listed(self, name):
        return [b for b in self.json("/api/discovered").get("boxes", []) if b.get("name") == name]

    def rss_mb(self):
        pids = subprocess.run(["pgrep", "-f", "--", f"--name {self.name} "], capture_output=True, text=True).stdout.split()
        for p in pids:
            try:
                with open(f"/proc/{p}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            return int(line.split()[1]) / 1024
            except OSError:
                pass
        return 0.0

    def stop(self):
        stop(self.proc)
