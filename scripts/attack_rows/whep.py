"""The live monitor's WHEP endpoint (issue 59): each offer the box answers builds a WebRTC
pipeline, so it is bounded by the viewer limit and must refuse what is not an offer cheaply."""

import http.client
import json
import os
import random
import threading
import time

# A browser's receive-only offer (Chromium's form, trimmed): ICE credentials, a fingerprint,
# H.264 Main in packetization mode 1 and Opus. Never connected: each viewer it makes is dropped
# when no connection comes (15 s).
OFFER = (
    "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n"
    "a=msid-semantic: WMS\r\n"
    "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 " + ":".join(["AB"] * 32) + "\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\n"
    "a=rtcp-mux\r\na=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack pli\r\n"
    "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r\n"
    "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 " + ":".join(["AB"] * 32) + "\r\na=setup:actpass\r\na=mid:1\r\na=recvonly\r\n"
    "a=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n"
)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def viewers(box):
    status, body, _ = box.request("GET", "/api/status")
    return len(json.loads(body).get("viewers", [])) if status == 200 else -1


# The monitor wall: another host than the owner's browser (the rows before this one left the
# owner's address locked out of password and token checks).
WALL = "127.0.0.9"


def post(box, token, body, ctype="application/sdp"):
    """An offer: with the token from the wall's address, else with the owner's session."""
    if token is None:
        return box.request("POST", "/api/whep/programme", raw=body, headers={"Content-Type": ctype})
    try:
        c = http.client.HTTPConnection("127.0.0.1", box.port, timeout=30, source_address=(WALL, 0))
        c.request("POST", "/api/whep/programme", body=body,
                  headers={"Host": f"127.0.0.1:{box.port}", "Content-Type": ctype, "Authorization": f"Bearer {token}"})
        r = c.getresponse()
        out = r.read().decode(errors="replace")
        c.close()
        return r.status, out, {}
    except (OSError, http.client.HTTPException):
        return 0, "", {}


def mangled(rng):
    """Offers that are not: noise, cut or doubled SDP, lines out of order, huge or hostile values."""
    lines = OFFER.split("\r\n")
    kind = rng.randrange(8)
    if kind == 0:
        return os.urandom(rng.randrange(1, 4096))
    if kind == 1:
        return OFFER[:rng.randrange(len(OFFER))].encode()
    if kind == 2:
        rng.shuffle(lines)
        return "\r\n".join(lines).encode()
    if kind == 3:
        return (OFFER.replace("4d001f", "zz" * rng.randrange(1, 400))).encode()
    if kind == 4:
        return (OFFER.split("m=audio")[0] * rng.randrange(2, 200)).encode()
    if kind == 5:
        return OFFER.replace("H264/90000", "VP8/90000").encode()
    if kind == 6:
        return ("v=0\r\n" + "a=rtpmap:102 H264/90000\r\n" * rng.randrange(1, 3000)).encode()
    return OFFER.replace("102", str(rng.choice([-1, 128, 65536, 99999999999]))).encode()


def all_rows(box, row, token, quick):
    """Two rows against a box that is live: offers at once past the limit, from the read-only
    token's holder (what a monitor wall has); then offers that are not offers."""
    import json
    status, body, _ = box.request("GET", "/api/config")
    config = json.loads(body)
    config["outputs"] = [{"url": f"file:{box.dir}/whep-attack-%H%M%S.ts"}]
    saved = box.request("PUT", "/api/config", config)[0]
    live = box.request("POST", "/api/live", {"live": True})[0]
    assert saved == 200 and live in (200, 202), f"the box did not go live: config {saved}, live {live}"
    for _ in range(100):
        if post(box, token, b"v=0\r\n")[0] != 409:  # 409: no programme yet
            break
        time.sleep(0.2)
    before = rss_mb(box.proc.pid)
    n = 40
    barrier = threading.Barrier(n)
    answers = []

    def one():
        barrier.wait()
        answers.append(post(box, token, OFFER.encode())[0])

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {s: answers.count(s) for s in sorted(set(answers))}
    time.sleep(1.5)  # the status is built once a second
    listed = viewers(box)
    peak = rss_mb(box.proc.pid)
    # Never connected, they are dropped; a real viewer is then taken again.
    gone = None
    started = time.monotonic()
    while time.monotonic() - started < 25:
        if viewers(box) == 0:
            gone = time.monotonic() - started
            break
        time.sleep(0.5)
    time.sleep(1.5)
    again = post(box, token, OFFER.encode())[0]
    row("WHEP offers at once past the viewer limit (read-only token)", n,
        counts.get(201, 0) == 4 and set(counts) <= {201, 503} and listed == 4 and gone is not None and again == 201,
        f"answered {counts} (4 viewers allowed); {listed} listed; RSS {before} -> {peak} MB; "
        f"unconnected viewers gone after {gone if gone is None else round(gone, 1)} s; a new offer then {again}")
    started = time.monotonic()
    while time.monotonic() - started < 25 and viewers(box) != 0:
        time.sleep(0.5)
    time.sleep(1.5)

    rng = random.Random(59)
    tries = 150 if quick else 600
    got = {}
    for _ in range(tries):
        status = post(box, None, mangled(rng))[0]
        got[status] = got.get(status, 0) + 1
    big = post(box, None, b"v=0\r\n" + b"a=x:" + b"y" * (2 * 1024 * 1024))[0]
    wrong_type = post(box, None, OFFER.encode(), ctype="text/plain")[0]
    alive = box.request("GET", "/healthz")[0]
    left = viewers(box)
    row("WHEP bodies that are not offers (noise, cut, shuffled, huge)", tries + 2,
        set(got) <= {400, 413, 201, 503} and got.get(201, 0) <= 4 and big == 413 and wrong_type == 415 and alive == 200,
        f"answered {got} (503: the viewers' slots taken by mangled offers still good enough); 2 MB {big}; text/plain {wrong_type}; the box then {alive}, {left} viewers listed "
        f"(a shuffled offer can still be one); RSS {rss_mb(box.proc.pid)} MB")
    box.request("POST", "/api/live", {"live": False})
