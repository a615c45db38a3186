#!/usr/bin/env python3
"""A staged rollout from gooseBit to 50 simulated boxes (scripts/test-fleet runs this).

Each box is the real daemon (`telebridge run --sim`, its fleet client polling gooseBit) and the
real root helper (packaging/lib/helper on a scratch tree standing for /, TELEBRIDGE_HELPER_ROOT).
What stands in for the machine, here only:
  - `rauc install` (a script first in the helper's PATH): Debian's rauc checks the bundle's
    signature and compatible (`rauc info` with the box's keyring), then the slot image and the
    bundle's version are written to the other slot's folder (instead of a partition);
  - `systemctl reboot`: the box's daemon is stopped and started again on the slot it boots,
    reporting that slot's IMAGE_VERSION (its os-release, TELEBRIDGE_OS_RELEASE);
  - the boot loader and telebridge-boot-ok: a new slot is tried once; a slot whose daemon is not
    ready within READY_LIMIT s is marked bad and the box boots the slot it came from.
Everything the server sees comes from the daemon's DDI client.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

COMPATIBLE = "telebridge-arm64"
READY_LIMIT = 8
POLL = "00:00:02"

SIM_RAUC = r"""#!/bin/sh
# Simulated RAUC (tests/fleet/rollout.py): install BUNDLE into the other slot's folder.
top=$TELEBRIDGE_HELPER_ROOT
[ "$1" = install ] && [ -f "$2" ] || { echo "sim rauc: install BUNDLE"; exit 2; }
info=$(/usr/bin/rauc --conf="$top/etc/rauc/system.conf" info --output-format=shell "$2" 2>&1) ||
  { printf '%s\n' "$info" | grep -v '^rauc-Message' | tail -n 2; exit 1; }
eval "$(printf '%s\n' "$info" | grep '^RAUC_MF_\(COMPATIBLE\|VERSION\)=')"
[ "$RAUC_MF_COMPATIBLE" = telebridge-arm64 ] || { echo "Compatible mismatch: $RAUC_MF_COMPATIBLE"; exit 1; }
cur=$(cat "$top/slots/booted")
other=A; [ "$cur" = A ] && other=B
rm -rf "$top/slots/$other" "$top/slots/x"
mkdir -p "$top/slots/$other"
unsquashfs -q -n -d "$top/slots/x" "$2" root.img >/dev/null && mv "$top/slots/x/root.img" "$top/slots/$other/image"
printf 'IMAGE_ID=telebridge\nIMAGE_VERSION=%s\n' "$RAUC_MF_VERSION" > "$top/slots/$other/os-release"
echo "$other" > "$top/slots/next"
echo "Installing $2 succeeded (slot $other)"
"""

SIM_SYSTEMCTL = """#!/bin/sh
# Simulated systemctl (tests/fleet/rollout.py): a reboot is left for the box's simulator.
[ "$1" = reboot ] && touch "$TELEBRIDGE_HELPER_ROOT/reboot"
exit 0
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def make_keys(d):
    os.makedirs(d)
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj",
         "/O=Telebridge/CN=fleet test CA", "-keyout", f"{d}/ca.key.pem", "-out", f"{d}/ca.cert.pem"])
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=Telebridge/CN=fleet test signing",
         "-keyout", f"{d}/signing.key.pem", "-out", f"{d}/signing.csr.pem"])
    run(["openssl", "x509", "-req", "-in", f"{d}/signing.csr.pem", "-CA", f"{d}/ca.cert.pem", "-CAkey",
         f"{d}/ca.key.pem", "-CAcreateserial", "-days", "3650", "-out", f"{d}/signing.cert.pem"])


def make_bundle(work, keys, version, image_words):
    d = os.path.join(work, f"bundle-{version}")
    os.makedirs(d)
    with open(f"{d}/root.img", "wb") as f:
        f.write(image_words.encode() + b"\n" + os.urandom(65536 - len(image_words) - 1))
    with open(f"{d}/manifest.raucm", "w") as f:
        f.write(f"[update]\ncompatible={COMPATIBLE}\nversion={version}\n\n[bundle]\nformat=verity\n\n"
                "[image.rootfs]\nfilename=root.img\n")
    out = os.path.join(work, f"telebridge-{version}-arm64.raucb")
    run(["rauc", "bundle", f"--cert={keys}/signing.cert.pem", f"--key={keys}/signing.key.pem", d, out])
    return out


class GooseBit:
    """gooseBit on loopback, its database and artifacts in `d`, and its management API."""

    def __init__(self, venv, d):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        os.makedirs(d)
        env = dict(os.environ, GOOSEBIT_PORT=str(self.port), GOOSEBIT_POLL_TIME=POLL,
                   GOOSEBIT_DB_URI=f"sqlite:///{d}/db.sqlite3", GOOSEBIT_ARTIFACTS_DIR=f"{d}/artifacts",
                   GOOSEBIT_DEVICE_AUTH__ENABLE="true", GOOSEBIT_DEVICE_AUTH__MODE="setup",
                   GOOSEBIT_TRACK_DEVICE_IP="false")
        py = os.path.join(venv, "bin/python")
        # Its tables, as `aerich upgrade` would make them.
        subprocess.run([py, "-c", "import asyncio\nfrom tortoise import Tortoise\nfrom goosebit.db.config import TORTOISE_CONF\n"
                        "async def m():\n    await Tortoise.init(config=TORTOISE_CONF)\n    await Tortoise.generate_schemas()\n"
                        "    await Tortoise.close_connections()\nasyncio.run(m())"],
                       env=env, cwd=d, check=True, capture_output=True)
        self.log = open(f"{d}/goosebit.log", "w")
        self.proc = subprocess.Popen(
            [py, "-c", f"import uvicorn\nfrom goosebit import app\nuvicorn.run(app, host='127.0.0.1', port={self.port}, "
             "log_level='warning')"], env=env, cwd=d, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                urllib.request.urlopen(self.url + "/login", timeout=2)
                break
            except (urllib.error.URLError, OSError):
                if self.proc.poll() is not None:
                    sys.exit(f"gooseBit did not start: see {d}/goosebit.log")
                time.sleep(0.1)
        body = urllib.parse.urlencode({"username": "admin@fleet.test", "password": "a fleet test password"}).encode()
        answer = json.load(urllib.request.urlopen(urllib.request.Request(self.url + "/setup", data=body), timeout=10))
        self.token = answer["access_token"]

    def api(self, method, path, payload=None, raw=None, ctype=None):
        data = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", ctype or "application/json")
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
        return json.loads(text) if text else None

    def upload(self, path):
        boundary = "telebridge-fleet-test-boundary"
        name = os.path.basename(path)
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode() + open(path, "rb").read() + \
            f"\r\n--{boundary}--\r\n".encode()
        return self.api("PUT", "/api/v1/software", raw=body, ctype=f"multipart/form-data; boundary={boundary}")["id"]

    def devices(self):
        return {d["id"]: d for d in self.api("GET", "/api/v1/devices")["devices"]}

    def assign(self, ids, software):
        self.api("PATCH", "/api/v1/devices", {"devices": ids, "software": str(software)})

    def log_of(self, dev):
        return self.api("GET", f"/api/v1/devices/{dev}/log").get("log") or ""

    def cpu_s(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def cpu_seconds(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Box:
    """One simulated machine: its slots, its helper, its daemon."""

    def __init__(self, i, work, args, server, keys, simbin, on_air=False):
        self.name = f"box-{i:02d}"
        self.top = os.path.join(work, self.name)
        self.args, self.simbin = args, simbin
        for d in ["run/telebridge", "run/telebridge-helper", "var/lib/telebridge", "data", "etc/rauc", "slots/A"]:
            os.makedirs(os.path.join(self.top, d))
        shutil.copy(f"{keys}/ca.cert.pem", f"{self.top}/etc/rauc/keyring.pem")
        with open(f"{self.top}/etc/rauc/system.conf", "w") as f:
            f.write(f"[system]\ncompatible={COMPATIBLE}\nbootloader=noop\n\n[keyring]\npath={self.top}/etc/rauc/keyring.pem\n")
        with open(f"{self.top}/slots/A/os-release", "w") as f:
            f.write("IMAGE_ID=telebridge\nIMAGE_VERSION=0.1.0\n")
        with open(f"{self.top}/slots/A/image", "w") as f:
            f.write("telebridge 0.1.0: the daemon gets ready\n")
        with open(f"{self.top}/slots/booted", "w") as f:
            f.write("A\n")
        self.port = free_port()
        # A box on air: live from its start, sending to an SRT listener of its own.
        live = (f'start_live = true\n\n[video]\nwidth = 320\nheight = 180\nfps = 10\nbitrate_kbps = 300\nmin_bitrate_kbps = 100\n\n'
                f'[[outputs]]\nurl = "srt://127.0.0.1:{free_port()}?mode=listener"\n' if on_air else "")
        with open(f"{self.top}/telebridge.toml", "w") as f:
            f.write(f'name = "{self.name}"\n{live}\n[web]\nannounce = false\nsetup_code_file = "{self.top}/setup.txt"\n\n'
                    f'[fleet]\nserver = "{server}"\ntarget_token = "token-of-{self.name}-{os.urandom(6).hex()}"\n')
        self.proc = None
        self.broken_since = None
        self.boots = 0
        self.cpu_before = 0.0  # CPU seconds of this box's daemons that have stopped

    def slot(self):
        return open(f"{self.top}/slots/booted").read().strip()

    def boot(self):
        """Starts the booted slot's daemon, or nothing when its daemon never gets ready."""
        self.boots += 1
        slot = self.slot()
        if "never ready" in open(f"{self.top}/slots/{slot}/image", errors="replace").read():
            self.proc, self.broken_since = None, time.monotonic()
            return
        env = dict(os.environ, RUNTIME_DIRECTORY=f"{self.top}/run/telebridge",
                   STATE_DIRECTORY=f"{self.top}/var/lib/telebridge",
                   TELEBRIDGE_OS_RELEASE=f"{self.top}/slots/{slot}/os-release", RUST_LOG="info")
        log = open(f"{self.top}/daemon.log", "a")
        self.proc = subprocess.Popen([self.args.telebridge, "run", "--sim", "--config", f"{self.top}/telebridge.toml",
                                      "--http", f"127.0.0.1:{self.port}"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    def cpu_s(self):
        return self.cpu_before + (cpu_seconds(self.proc.pid) if self.proc else 0.0)

    def halt(self):
        if self.proc and self.proc.poll() is None:
            self.cpu_before += cpu_seconds(self.proc.pid)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def reboot(self, slot=None):
        self.halt()
        nxt = f"{self.top}/slots/next"
        if slot is None and os.path.exists(nxt):
            slot = open(nxt).read().strip()  # tried once, as GRUB's one-shot entry
            os.remove(nxt)
        if slot:
            with open(f"{self.top}/slots/booted", "w") as f:
                f.write(slot + "\n")
        self.broken_since = None
        self.boot()

    def panel(self, method, path, payload=None, cookie=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     data=json.dumps(payload).encode() if payload is not None else None)
        req.add_header("Content-Type", "application/json")
        req.add_header("X-Telebridge-Csrf", "1")
        if cookie:
            req.add_header("Cookie", cookie)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.headers.get("Set-Cookie", "").split(";")[0], json.loads(r.read() or b"null")

    def stop_programme(self):
        """Logs in with the setup code the box wrote and stops it going out, as its operator would."""
        code = open(f"{self.top}/setup.txt").read().split(": ", 1)[1].strip()
        cookie, _ = self.panel("POST", "/api/setup", {"code": code, "password": "a fleet test password"})
        self.panel("POST", "/api/live", {"live": False}, cookie)

    def turn(self):
        """What the machine does on its own: the helper's path unit, a reboot, boot-ok."""
        run_dir = f"{self.top}/run/telebridge"
        if any(os.path.exists(f"{run_dir}/{r}") for r in ("update-request", "reboot-request")):
            env = dict(os.environ, TELEBRIDGE_HELPER_ROOT=self.top, PATH=f"{self.simbin}:{os.environ['PATH']}")
            subprocess.run([self.args.helper], env=env, capture_output=True, timeout=120)
        if os.path.exists(f"{self.top}/reboot"):
            os.remove(f"{self.top}/reboot")
            self.reboot()
        if self.broken_since is not None and time.monotonic() - self.broken_since > READY_LIMIT:
            back = "A" if self.slot() == "B" else "B"
            self.reboot(back)


def wait_until(what, limit, boxes, check, every=1.0):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        for b in boxes:
            b.turn()
        done = check()
        if done:
            return time.monotonic() - start
        time.sleep(every)
    sys.exit(f"FAILED: {what} did not happen within {limit} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--telebridge", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--boxes", type=int, default=50)
    ap.add_argument("--first", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    args.telebridge = os.path.abspath(args.telebridge)
    args.venv = os.path.abspath(args.venv)
    args.helper = os.path.abspath("packaging/lib/helper")
    os.makedirs("target", exist_ok=True)
    work = tempfile.mkdtemp(prefix="fleet-", dir=os.path.abspath("target"))
    print(f"work folder: {work}")
    simbin = os.path.join(work, "simbin")
    os.makedirs(simbin)
    for name, text in (("rauc", SIM_RAUC), ("systemctl", SIM_SYSTEMCTL)):
        with open(os.path.join(simbin, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(simbin, name), 0o755)
    keys = os.path.join(work, "keys")
    make_keys(keys)
    good = make_bundle(work, keys, "0.1.1", "telebridge 0.1.1: the daemon gets ready")
    bad = make_bundle(work, keys, "0.1.2", "telebridge 0.1.2: the daemon is never ready")
    gb = GooseBit(args.venv, os.path.join(work, "goosebit"))
    boxes = []
    ok = False
    try:
        boxes = [Box(i, work, args, gb.url, keys, simbin, on_air=(i == args.boxes - 1)) for i in range(args.boxes)]
        live_box = boxes[-1]
        names = [b.name for b in boxes]
        # One box first: gooseBit 0.2.12 makes a board's record (Hardware) with get_or_create, and
        # two boxes of a new board registering in the same instant make it twice, after which
        # every request that reads it fails (MultipleObjectsReturned). Seen here with 50 at once.
        boxes[0].boot()
        wait_until("the first box registered", 60, boxes[:1], lambda: (gb.devices().get(names[0]) or {}).get("hardware"))
        for b in boxes[1:]:
            b.boot()
        t = wait_until("every box registered with its attributes", 120, boxes, lambda: all(
            (d := gb.devices().get(n)) and d.get("sw_version") == "0.1.0" and (d.get("hardware") or {}).get("model") == COMPATIBLE
            for n in names), every=2)
        print(f"{len(boxes)} boxes registered in {t:.0f} s, each with its target token, sw_version 0.1.0, hw_boardname {COMPATIBLE}")
        good_id, bad_id = gb.upload(good), gb.upload(bad)
        print(f"uploaded 0.1.1 (software {good_id}) and 0.1.2 (software {bad_id}) to gooseBit")
        quiet = boxes[args.first]  # a box of the second stage, not on air
        cpu0 = (gb.cpu_s(), quiet.cpu_s())

        def on(ids, version):
            devs = gb.devices()
            failed = [n for n in ids if str(devs[n]["last_state"]).lower() == "error"]
            if failed:
                sys.exit(f"FAILED: {failed} reported an error: {gb.log_of(failed[0])!r}")
            return all(devs[n]["sw_version"] == version and str(devs[n]["last_state"]).lower() == "finished" for n in ids)

        start = time.monotonic()
        first, rest = names[:args.first], names[args.first:]
        gb.assign(first, good_id)
        t1 = wait_until("0.1.1 on the first stage", 300, boxes, lambda: on(first, "0.1.1"))
        print(f"stage 1: 0.1.1 to {len(first)} boxes: all report success after {t1:.0f} s")
        gb.assign(rest, good_id)
        off_air = [n for n in rest if n != live_box.name]
        t2 = wait_until("0.1.1 on the rest", 400, boxes, lambda: on(off_air, "0.1.1"))
        print(f"stage 2: 0.1.1 to {len(rest)} boxes: the {len(off_air)} off air report success after {t2:.0f} s")
        # The box on air has the bundle and waits, and says so; it installs once its programme stops.
        held = gb.log_of(live_box.name)
        dev = gb.devices()[live_box.name]
        if "on air" not in held or dev["sw_version"] != "0.1.0":
            sys.exit(f"FAILED: {live_box.name}, on air, was not held: {dev['sw_version']}, {held!r}")
        print(f"{live_box.name} is on air: still 0.1.0; it told gooseBit: {held.strip().splitlines()[-1]!r}")
        live_box.stop_programme()
        t_live = wait_until("0.1.1 on the box taken off air", 200, boxes, lambda: on([live_box.name], "0.1.1"))
        print(f"{live_box.name} taken off air by its operator: 0.1.1 installed and confirmed {t_live:.0f} s later")
        full = time.monotonic() - start
        devs = gb.devices()
        done = sum(1 for n in names if devs[n]["sw_version"] == "0.1.1" and str(devs[n]["last_state"]).lower() == "finished")
        if done != len(names):
            sys.exit(f"FAILED: {done}/{len(names)} on 0.1.1")
        sample = gb.log_of(first[0])
        print(f"gooseBit's records: {done}/{len(names)} on 0.1.1, finished with success; {first[0]}'s log: {sample!r}")
        cpu1 = (gb.cpu_s(), quiet.cpu_s())

        # The bad bundle, to the first stage only: its failures stop the rollout there.
        trial = names[:args.first]
        gb.assign(trial, bad_id)

        def failed_back():
            devs = gb.devices()
            return all(str(devs[n]["last_state"]).lower() == "error" for n in trial)
        t3 = wait_until("the bad bundle's failures", 300, boxes, failed_back)
        devs = gb.devices()
        reasons = {n: gb.log_of(n) for n in trial}
        back = [n for n in trial if devs[n]["sw_version"] == "0.1.1"
                and "0.1.2 did not start" in reasons[n] and "fell back" in reasons[n]]
        print(f"0.1.2 to {len(trial)} boxes: {len(back)}/{len(trial)} failed and came back on 0.1.1 after {t3:.0f} s; "
              f"reason: {reasons[trial[0]]!r}")
        if len(back) != len(trial):
            sys.exit(f"FAILED: not every box reported the fallback: {reasons}")
        untouched = [n for n in names[args.first:] if devs[n]["sw_version"] == "0.1.1"
                     and str(devs[n]["last_state"]).lower() == "finished"]
        print(f"the rollout of 0.1.2 stops: the other {len(untouched)}/{len(names) - len(trial)} boxes stay on 0.1.1")
        if len(untouched) != len(names) - len(trial):
            sys.exit("FAILED: boxes outside the trial changed")
        print()
        print("| fleet rollout, gooseBit 0.2.12, poll 2 s | figure |")
        print("|---|---|")
        print(f"| boxes | {len(names)} (`telebridge run --sim`, each its own DDI client) |")
        print(f"| full rollout of 0.1.1 ({len(first)}, then {len(rest)}, one of them held on air until stopped; "
              f"each confirmed after 60 s healthy) | {full:.0f} s |")
        print(f"| stage 1 ({len(first)} boxes) / stage 2 (the {len(off_air)} off air) | {t1:.0f} s / {t2:.0f} s |")
        print(f"| the box on air: installed once its programme stopped | {t_live:.0f} s after the stop |")
        print(f"| bad bundle: assigned to {len(trial)}, all failed and back on 0.1.1 | {t3:.0f} s |")
        print(f"| gooseBit's CPU over the rollout | {cpu1[0] - cpu0[0]:.1f} s in {full:.0f} s ({100 * (cpu1[0] - cpu0[0]) / full:.1f} %) |")
        print(f"| one box's daemon CPU over the rollout ({quiet.name}: polls, download, install, reboot, confirm) | "
              f"{cpu1[1] - cpu0[1]:.1f} s in {full:.0f} s ({100 * (cpu1[1] - cpu0[1]) / full:.1f} %) |")
        ok = True
    finally:
        for b in boxes:
            b.halt()
        gb.stop()
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif not ok:
            print(f"logs kept in {work}")
    print("fleet test passed")


if __name__ == "__main__":
    main()
