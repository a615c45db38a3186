"""The bonding receiver (`telebridge relay --bond-listen`) and sender (`bond=`): issue 57's
findings 1 (one host fills the receiver's group table), 4 (one datagram stalls the sender) and
7 (the receiver reads a loss report before it checks who sent it)."""

import os
import random
import selectors
import socket
import struct
import subprocess
import threading
import time

from attack_rows.panel import stop

REG1, REG2, REG3, KEEPALIVE = 0x9200, 0x9201, 0x9202, 0x9000


def free_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def spawn(cmd, work, name):
    log = open(os.path.join(work, f"{name}.log"), "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG="info"))


def relay_to_file(binary, work, name):
    """Our bonding receiver handing what it takes to a relay that records it."""
    bond, srt_in = free_udp(), free_udp()
    out = os.path.join(work, f"{name}.ts")
    p = spawn([binary, "relay", "--bond-listen", f"127.0.0.1:{bond}", "--input",
               f"srt://:{srt_in}?mode=listener&latency=600", "--output", f"file:{out}"], work, name)
    time.sleep(1.0)
    return p, bond, out


def encoder(binary, work, name, url, seconds, kbps=1500):
    return spawn([binary, "encode", "--source", "test", "--size", "640x360", "--fps", "25", "--bitrate-kbps",
                  str(kbps), "--bitrate-mode", "fixed", "--output", url, "--duration", f"{seconds}s"], work, name)


def register(sock, to, half):
    """srtla's registration from one socket: REG1, the receiver's REG2, our REG2, REG3.
    `True` when the receiver answered REG3."""
    sock.sendto(struct.pack(">H", REG1) + half + bytes(128), to)
    try:
        d, _ = sock.recvfrom(300)
    except socket.timeout:
        return False
    if len(d) != 258 or struct.unpack(">H", d[:2])[0] != REG2:
        return False
    sock.sendto(d, to)
    try:
        d, _ = sock.recvfrom(300)
    except socket.timeout:
        return False
    return struct.unpack(">H", d[:2])[0] == REG3


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def group_table(binary, work, row, quick):
    """Finding 1: on 3fa70d4, 200 registrations from 200 ports of one host, each kept by a
    10-byte keepalive every 3 s, filled the receiver's table and a real bonded sender got
    REG_ERR and delivered nothing; bare REG1s whose answers are never read (spoofed sources)
    filled it for 10 s. Here both at once: the 200 groups made and kept alive, and REG1s from
    500 addresses a second for the whole run; meanwhile our encoder's `bond=` output over two
    uplinks registers and sends 8 s of video, recorded at the far end."""
    relay, bond, out = relay_to_file(binary, work, "bond-table")
    to = ("127.0.0.1", bond)
    done = threading.Event()
    fakes, made = [], 0
    try:
        for i in range(200):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.7", 0))
            s.settimeout(0.5)
            made += register(s, to, os.urandom(128))
            fakes.append(s)

        def keep():
            while not done.wait(1.0):
                for s in fakes:
                    s.sendto(struct.pack(">H", KEEPALIVE) + bytes(8), to)

        def spoof():
            socks = []
            for k in range(500):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((f"127.8.{k // 250}.{k % 250 + 1}", 0))
                socks.append(s)
            sent = 0
            while not done.is_set():
                for s in socks:
                    s.sendto(struct.pack(">H", REG1) + os.urandom(128) + bytes(128), to)
                    sent += 1
                time.sleep(1.0)
            for s in socks:
                s.close()

        threads = [threading.Thread(target=keep, daemon=True), threading.Thread(target=spoof, daemon=True)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        seconds = 4 if quick else 8
        enc = encoder(binary, work, "bond-table-encoder", f"srt://127.0.0.1:{bond}?bond=127.0.0.1,127.0.0.2&latency=600",
                      seconds)
        enc.wait(40)
        time.sleep(1.0)
        got = size(out)
    finally:
        done.set()
        for s in fakes:
            s.close()
        stop(relay)
    row("200 bonded groups from one host and a spoofed REG1 flood, then a real bonded sender", 200 + 500 * (seconds + 2),
        got > seconds * 60_000,
        f"the host's 200 registrations: {made} answered REG3; the real sender's {seconds} s of 1.5 Mbit/s recorded "
        f"at the far end: {got // 1000} kB")


def nak_cost(binary, work, row, quick):
    """Finding 7: on 3fa70d4 the receiver expanded a loss-report-shaped datagram (each range to
    4097 numbers) before it checked who sent it: about 22 times the cost of other junk from an
    address no group has. Here 20000 of each from such an address; the receiver's CPU time for
    each, from /proc."""
    relay, bond, _ = relay_to_file(binary, work, "bond-junk")
    to = ("127.0.0.1", bond)

    def cpu():
        with open(f"/proc/{relay.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    nak = struct.pack(">HH", 0x8003, 0) + bytes(12)
    while len(nak) + 8 <= 1496:
        nak += struct.pack(">II", 0x80000000 | random.randrange(1 << 30), 0x7fffffff)
    junk = struct.pack(">HH", 0x8000, 0) + os.urandom(len(nak) - 4)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.9", 0))
    costs = {}
    count = 10000 if quick else 20000
    try:
        for name, d in (("junk", junk), ("loss report", nak)):
            before = cpu()
            for k in range(count):
                s.sendto(d, to)
                if k % 200 == 0:
                    time.sleep(0.01)
            time.sleep(1.0)
            costs[name] = cpu() - before
    finally:
        s.close()
        stop(relay)
    ratio = costs["loss report"] / max(costs["junk"], 0.01)
    row("loss-report-shaped junk from an unregistered address (bonding receiver)", 2 * count,
        costs["loss report"] < max(3 * costs["junk"], 0.3),
        f"CPU for {count} of them {costs['loss report']:.2f} s, for {count} other junk {costs['junk']:.2f} s ({ratio:.1f}x)")


def sender_stall(binary, work, row, quick):
    """Finding 4: on 3fa70d4 one 1496-byte loss report from the receiver's address cost the
    sender 140-220 ms of CPU with the bond's lock held: a 504 ms gap in its sending and the
    uplink declared dead. Here the receiver's address is a proxy in front of our receiver,
    which holds the receiver's answers 150 ms (a mobile uplink's round trip: packets stay in
    flight) and sends one such datagram to each uplink 4 s in; the largest gap in what
    reaches it from the sender around that moment, and whether the sender declared an uplink
    dead."""
    relay, bond, out = relay_to_file(binary, work, "bond-stall")
    proxy = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    proxy.bind(("127.0.0.1", 0))
    port = proxy.getsockname()[1]
    sel = selectors.DefaultSelector()
    sel.register(proxy, selectors.EVENT_READ, None)
    ups, arrivals = {}, []
    seconds, inject_at = (6, 3) if quick else (9, 4)
    enc = encoder(binary, work, "bond-stall-encoder", f"srt://127.0.0.1:{port}?bond=127.0.0.1,127.0.0.2&latency=1000",
                  seconds, kbps=4000)
    held = []  # (when, data, to): the receiver's answers on their way back
    nak = struct.pack(">HH", 0x8003, 0) + bytes(12)
    while len(nak) + 8 <= 1496:
        nak += struct.pack(">II", 0x80000000, 0x7fffffff)
    started = time.monotonic()
    injected = None
    try:
        while time.monotonic() - started < seconds - 1 and enc.poll() is None:
            if injected is None and time.monotonic() - started > inject_at and len(ups) >= 2:
                injected = time.monotonic()
                for addr in ups:
                    proxy.sendto(nak, addr)
            now = time.monotonic()
            while held and held[0][0] <= now:
                _, d, addr = held.pop(0)
                proxy.sendto(d, addr)
            for key, _ in sel.select(0.005):
                sock = key.fileobj
                d, addr = sock.recvfrom(2048)
                if key.data is None:
                    arrivals.append(time.monotonic())
                    up = ups.get(addr)
                    if up is None:
                        up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.bind(("127.0.0.1", 0))
                        ups[addr] = up
                        sel.register(up, selectors.EVENT_READ, addr)
                    up.sendto(d, ("127.0.0.1", bond))
                else:
                    held.append((time.monotonic() + 0.15, d, key.data))
    finally:
        stop(enc)
        stop(relay)
        for up in ups.values():
            up.close()
        proxy.close()
    if injected is None:
        row("one loss report stalling the bonding sender", 0, False, "the sender never registered two uplinks")
        return
    around = [t for t in arrivals if injected - 0.2 <= t <= injected + 1.5]
    gap = max((b - a for a, b in zip(around, around[1:])), default=9.9) * 1000
    log = open(os.path.join(work, "bond-stall-encoder.log")).read()
    dead = log.count("uplink dead")
    row("one loss report stalling the bonding sender", len(ups), gap < 150 and dead == 0,
        f"largest gap in its sending around it {gap:.0f} ms; uplinks declared dead: {dead}")


def all_rows(binary, work, row, quick):
    group_table(binary, work, row, quick)
    nak_cost(binary, work, row, quick)
    sender_stall(binary, work, row, quick)
