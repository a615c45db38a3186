"""The meeting point (`telebridge relay --meet`): issue 36's squatting, issue 57's findings 3
(strangers evict a real pair) and 6 (a hello seen once takes the box's place later)."""

import os
import random
import socket
import struct
import subprocess
import threading
import time

from attack_rows.panel import stop

SLOT_MS = 40_000


def slot_now():
    return (int(time.time() * 1000) + SLOT_MS // 2) // SLOT_MS


class Relay:
    """`telebridge relay --meet FIRST-LAST` on loopback, two ports."""

    def __init__(self, binary, work):
        while True:
            first = random.randrange(20000, 60000, 2)
            try:
                for p in (first, first + 1):
                    t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    t.bind(("0.0.0.0", p))
                    t.close()
                break
            except OSError:
                continue
        self.ports = (first, first + 1)
        self.proc = subprocess.Popen([binary, "relay", "--meet", f"{first}-{first + 1}"], stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(work, f"relay-{first}.log"), "w"), text=True)
        self.proc.stdout.readline()  # "meeting point on UDP FIRST-LAST" once it listens
        self.v2 = self._speaks_v2()

    def _speaks_v2(self):
        """Whether the relay answers a hello with a cookie (issue 57); the first version never
        answered."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.3)
        s.sendto(hello_v2(os.urandom(16)), ("127.0.0.1", self.ports[0]))
        try:
            d, _ = s.recvfrom(64)
            return d.startswith(b"TBCOOK")
        except socket.timeout:
            return False
        finally:
            s.close()

    def stop(self):
        stop(self.proc)


def hello_v1(token):
    return b"TBMEET\x01\x00" + token


def hello_v2(token, slot=None):
    return b"TBMEET\x02\x00" + struct.pack(">Q", slot_now() if slot is None else slot) + token


class Box:
    """One box of a pair as the relay sees it: a UDP socket that says the pair's token (the
    version the relay speaks) and then sends to, and counts, the other box's datagrams."""

    def __init__(self, relay, side, key, addr="127.0.0.1", slot=None):
        self.relay, self.side, self.key, self.slot = relay, side, key, slot_now() if slot is None else slot
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, 0))
        self.sock.settimeout(0.05)
        self.got = 0

    def token(self):
        # The pair's token for the slot (a stand-in for HMAC(pair key, slot): any 16 bytes both
        # boxes derive alike).
        return bytes(a ^ b for a, b in zip(self.key, struct.pack(">QQ", self.slot, self.slot)))

    def hello(self):
        return hello_v2(self.token(), self.slot) if self.relay.v2 else hello_v1(self.key)

    def join(self):
        port = self.relay.ports[self.side]
        h = self.hello()
        if not self.relay.v2:
            self.sock.sendto(h, ("127.0.0.1", port))
            return True
        for _ in range(5):
            self.sock.sendto(h, ("127.0.0.1", port))
            try:
                d, _ = self.sock.recvfrom(64)
            except socket.timeout:
                continue
            if d.startswith(b"TBCOOK") and len(d) == 24:
                self.sock.sendto(b"TBMEET\x02\x01" + h[8:] + d[8:], ("127.0.0.1", port))
                return True
        return False

    def send(self, text):
        self.sock.sendto(text.encode(), ("127.0.0.1", self.relay.ports[self.side]))

    def drain(self, prefix):
        try:
            while True:
                d, _ = self.sock.recvfrom(2048)
                self.got += d.startswith(prefix)
        except (socket.timeout, BlockingIOError):
            pass


def exchange(a, b, n, tag):
    """`n` datagrams each way; how many each got of the other's."""
    a.got = b.got = 0
    for i in range(n):
        a.send(f"{tag} a {i}")
        b.send(f"{tag} b {i}")
        a.drain(f"{tag} b".encode())
        b.drain(f"{tag} a".encode())
    time.sleep(0.05)
    a.drain(f"{tag} b".encode())
    b.drain(f"{tag} a".encode())
    return a.got, b.got


def squatting(binary, work, row):
    """Issue 36, finding 8: the meeting point's ports could be squatted. On c0d83c1 the first two
    addresses to send to a port pair held it for as long as they kept sending. Here a stranger
    sends to both ports first and all along, and floods hellos of tokens of its own; then two
    boxes of one pair say their token and send to each other."""
    relay = Relay(binary, work)
    try:
        stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stranger.bind(("127.0.0.3", 0))
        stranger.settimeout(0.01)
        stop = threading.Event()

        def squat():
            while not stop.is_set():
                for p in relay.ports:
                    stranger.sendto(b"squatting", ("127.0.0.1", p))
                time.sleep(0.05)

        flood = [(hello_v2 if relay.v2 else lambda t: hello_v1(t))(os.urandom(16)) for _ in range(200)]
        for h in flood:
            for p in relay.ports:
                stranger.sendto(h, ("127.0.0.1", p))
        squatter = threading.Thread(target=squat, daemon=True)
        squatter.start()
        time.sleep(0.2)
        key = os.urandom(16)
        a, b = Box(relay, 0, key), Box(relay, 1, key)
        a.join(), b.join()
        time.sleep(0.1)
        got = exchange(a, b, 20, "box")
        stop.set()
        squatter.join(1)
        leaked = 0
        try:
            while True:
                d, _ = stranger.recvfrom(2048)
                leaked += d.startswith(b"box ")
        except (socket.timeout, BlockingIOError):
            pass
    finally:
        relay.stop()
    row("a stranger holding the meeting point's ports, and a flood of its hellos", 2 + len(flood) * 2,
        min(got) >= 18 and leaked == 0,
        f"box A got {got[0]} of box B's 20 datagrams, B got {got[1]} of A's; the stranger got {leaked} of theirs")


def evictions(binary, work, row, quick):
    """Issue 57, finding 3: on 3fa70d4, 1000 addresses each sending one hello with a random
    token evicted a real pair (each held one place, the pair's address two, so "the heaviest
    source gives way" took the pair's), and 4100 addresses x 6 hellos kept a new pair from
    meeting until their counts expired; the relay never answered, so spoofed sources would do.
    Here the 1000 (600 in the quick form) answer the relay's cookies where it has them (real
    hosts, one per /24) while the pair exchanges datagrams; then 4100 addresses send six hellos
    each and read nothing (as spoofed ones), and a second pair meets."""
    relay = Relay(binary, work)
    try:
        key = os.urandom(16)
        a, b = Box(relay, 0, key), Box(relay, 1, key)
        a.join(), b.join()
        before = exchange(a, b, 5, "warm")
        strangers = []
        hosts = 600 if quick else 1000
        for i in range(hosts):
            s = Box(relay, i % 2, os.urandom(16), addr=f"127.{10 + i // 250}.{i % 250}.1")
            s.join()
            strangers.append(s)
            if i % 100 == 99:
                exchange(a, b, 1, f"during{i}")
        for s in strangers:
            s.sock.close()
        after = exchange(a, b, 20, "after")
        count = 4100
        for i in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((f"127.{30 + i // 4096}.{(i // 16) % 256}.{i % 16 + 1}", 0))
            h = hello_v2(os.urandom(16)) if relay.v2 else hello_v1(os.urandom(16))
            for _ in range(6):
                s.sendto(h, ("127.0.0.1", relay.ports[i % 2]))
            s.close()
        key2 = os.urandom(16)
        c, d = Box(relay, 0, key2, addr="127.0.0.5"), Box(relay, 1, key2, addr="127.0.0.6")
        c.join(), d.join()
        second = exchange(c, d, 20, "second")
    finally:
        relay.stop()
    row(f"{hosts} hosts taking meeting-point places, then 4100 sending hellos", hosts + count * 6,
        min(before) >= 4 and min(after) >= 18 and min(second) >= 18,
        f"the pair got {after[0]}/{after[1]} of 20 each way after the {hosts} took places; a second pair "
        f"{second[0]}/{second[1]} of 20 after the 4100 ({'cookies' if relay.v2 else 'no cookies'})")


def replayed_hello(binary, work, row):
    """Issue 57, finding 6: on 3fa70d4 a hello had no time in it; a copy taken from the wire
    took box A's place later, from anywhere, once A went quiet. Here the copy is A's hello of
    two slots ago (80 s: what a listener on the path kept), sent from a stranger's address while
    A is quiet, and a copy of this slot's while the pair flows; B then sends to A."""
    relay = Relay(binary, work)
    try:
        key = os.urandom(16)
        a, b = Box(relay, 0, key), Box(relay, 1, key)
        a.join(), b.join()
        exchange(a, b, 5, "warm")
        # A copy of this slot's hello while the pair flows.
        thief = Box(relay, 0, key, addr="127.0.0.9")
        thief.join()
        b.send("while flowing")
        thief.drain(b"while")
        stole_flowing = thief.got
        # A quiet (not gone: within the relay's 10 s), then the old copy.
        time.sleep(2.5)
        old = Box(relay, 0, key, addr="127.0.0.10", slot=slot_now() - 2)
        old.join()
        for i in range(10):
            b.send(f"to a {i}")
        time.sleep(0.1)
        old.drain(b"to a")
        a.drain(b"to a")
        stole_old = old.got
    finally:
        relay.stop()
    row("a meeting-point hello replayed (this slot's while the pair flows, one of 80 s ago)", 2,
        stole_flowing == 0 and stole_old == 0,
        f"the copy of this slot's hello got {stole_flowing} of B's datagrams; the 80 s old copy got "
        f"{stole_old} of 10 (A got {a.got})")


def all_rows(binary, work, row, quick):
    squatting(binary, work, row)
    evictions(binary, work, row, quick)
    replayed_hello(binary, work, row)
