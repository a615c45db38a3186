"""Talkback between two bridge boxes (issue 57, finding 10): its messages ride the pair's SRT
connection, encrypted with AES-CTR, which does not authenticate."""

import os
import random
import selectors
import socket
import threading
import time

from attack_rows.panel import PanelBox


def free(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def config(work, name, link, source, output):
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write(f'role = "bridge"\n[video]\nwidth = 320\nheight = 180\nfps = 15\nbitrate_kbps = 400\n'
                f'[bridge]\nlink = "{link}"\nport_mapping = false\n[talkback]\nsource = "{source}"\noutput = "{output}"\n'
                f'[web]\nsetup_code_file = "{work}/{name}-setup.txt"\n[gpio]\nbackend = "sim"\n')
    os.chmod(path, 0o600)
    return path


def relay(listen, to, stop, counts):
    """Forwards between B (who calls `listen`) and A at `to`, flipping one bit in the last byte
    of every other small SRT data packet from B (a talkback message: the stream's packets carry
    1316 bytes), as someone on the path can do to AES-CTR."""
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", listen))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    sel = selectors.DefaultSelector()
    sel.register(front, selectors.EVENT_READ, "front")
    sel.register(back, selectors.EVENT_READ, "back")
    caller = None
    small = 0
    while not stop.is_set():
        for key, _ in sel.select(0.1):
            d, addr = key.fileobj.recvfrom(65536)
            if key.data == "front":
                caller = addr
                if len(d) > 16 and d[0] & 0x80 == 0 and 40 < len(d) - 16 < 400:
                    small += 1
                    if small % 2 == 0:
                        d = d[:-1] + bytes([d[-1] ^ 0x01])
                        counts["flipped"] += 1
                back.sendto(d, to)
            elif caller:
                front.sendto(d, caller)


def altered_voice(binary, work, row, quick=False):
    """On 3fa70d4 the voice's messages had no tag: someone on the path flipping bits in the
    encrypted packets (AES-CTR: the same bits flip in what is decrypted) had the paired box play
    what they chose. Here B talks (the test voice) to A through a relay that flips one bit in
    every other voice message; A's count of messages refused against those played."""
    passphrase = "".join(random.choice("abcdef0123456789") for _ in range(32))
    pa, pr = free(socket.SOCK_DGRAM), free(socket.SOCK_DGRAM)
    a_conf = config(work, "talk-a", f"srt://:{pa}?mode=listener&passphrase={passphrase}", "none",
                    f"file:{work}/talk-a.wav")
    b_conf = config(work, "talk-b", f"srt://127.0.0.1:{pr}?mode=caller&passphrase={passphrase}", "test", "none")
    stop = threading.Event()
    counts = {"flipped": 0}
    t = threading.Thread(target=relay, args=(pr, ("127.0.0.1", pa), stop, counts), daemon=True)
    t.start()
    boxes = []
    try:
        a = PanelBox(binary, work, "talk-a", "127.0.0.1", None, free(), ["--config", a_conf])
        b = PanelBox(binary, work, "talk-b", "127.0.0.1", None, free(), ["--config", b_conf])
        boxes = [a, b]
        for box in boxes:
            box.request("POST", "/api/live", {"live": True})
        end = time.monotonic() + 25
        while time.monotonic() < end and not (a.json("/api/status").get("links") and b.json("/api/status").get("links")):
            time.sleep(0.5)
        end = time.monotonic() + (4 if quick else 8)
        while time.monotonic() < end:
            b.request("POST", "/api/talk", {"talking": True})
            time.sleep(0.25)
        b.request("POST", "/api/talk", {"talking": False})
        time.sleep(1)
        heard = a.json("/api/status").get("talk") or {}
        sent = (b.json("/api/status").get("talk") or {}).get("packets_sent", 0)
    finally:
        stop.set()
        for box in boxes:
            box.stop()
    refused = heard.get("packets_refused", 0)
    played = heard.get("packets_heard", 0)
    row("voice messages altered on the way (bits flipped in AES-CTR)", counts["flipped"],
        # About one voice message in two was altered: none of those may be played.
        sent > 100 and refused >= sent * 0.4 and played <= sent * 0.6,
        f"B sent {sent} voice messages; the relay flipped a bit in every other small packet ({counts['flipped']}); "
        f"A played {played} and refused {refused}")
