// The live monitor in a real browser (Debian's Chromium through playwright-core): an encoder
// box live on its test pattern; its Status page plays the programme over WebRTC (WHEP) in a
// <video>, and the page reads the burnt-in timecode from each frame as the browser presents it:
// the capture time against the presentation time, on the same machine's clock, is glass to
// browser. The page hears the test tone through WebAudio, beep by beep. Then the refusals: no
// session (401), another site (403), the viewer past the limit (503, in words); and a viewer
// that goes away without a word is dropped from the status.
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/monitor.mjs
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { check, freePort, harness, startBox, waitFor } from './lib.mjs';

const { bin, artifacts, children, logs } = harness();
let failed = false;

// Reads the timecode of the frame on the <video> `selector` (ours: 2 rows of 40 cells at the
// top; sync, frame, capture time in µs, CRC-8) each time the browser presents one, for `ms`: the
// age of each frame when shown, in ms.
const readAges = ([selector, ms]) => new Promise((resolve) => {
  const v = document.querySelector(selector);
  const c = document.createElement('canvas');
  const g = c.getContext('2d', { willReadFrequently: true });
  const mask = (1n << 40n) - 1n;
  const SYNC = 0b10100101;
  const read = () => {
    const w = c.width;
    const cell = Math.floor(w / 40);
    const d = g.getImageData(0, 0, w, cell * 2).data;
    const means = [];
    for (let i = 0; i < 80; i++) {
      const [col, row] = [i % 40, Math.floor(i / 40)];
      let [sum, n] = [0, 0];
      for (let y = row * cell + (cell >> 2); y < (row + 1) * cell - (cell >> 2); y++) {
        for (let x = col * cell + (cell >> 2); x < (col + 1) * cell - (cell >> 2); x++) {
          const k = (y * w + x) * 4;
          sum += (d[k] + d[k + 1] + d[k + 2]) / 3;
          n++;
        }
      }
      means.push(sum / n);
    }
    let [ones, zeros] = [0, 0];
    for (let b = 0; b < 8; b++) { if ((SYNC >> (7 - b)) & 1) ones += means[b] / 4; else zeros += means[b] / 4; }
    if (ones < zeros + 64) return null;
    const bits = means.map((m) => m > (ones + zeros) / 2);
    const take = (from, n) => bits.slice(from, from + n).reduce((a, b) => (a << 1n) | (b ? 1n : 0n), 0n);
    if (Number(take(0, 8)) !== SYNC) return null;
    const payload = take(8, 64);
    let crc = 0;
    for (let i = 6; i >= 0; i--) {
      crc ^= Number((payload >> BigInt(i * 8)) & 0xffn);
      for (let k = 0; k < 8; k++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
    }
    return crc === Number(take(72, 8)) ? payload & mask : null;
  };
  const ages = [];
  let unread = 0;
  const end = performance.now() + ms;
  const frame = (_, meta) => {
    c.width = v.videoWidth;
    c.height = v.videoHeight;
    g.drawImage(v, 0, 0);
    const captured = read();
    if (captured === null) unread++;
    else {
      const shown = BigInt(Math.round((performance.timeOrigin + meta.expectedDisplayTime) * 1000));
      ages.push(Number(((shown & mask) - captured) & mask) / 1000);
    }
    if (performance.now() < end) v.requestVideoFrameCallback(frame);
    else resolve({ ages, unread, width: v.videoWidth, height: v.videoHeight });
  };
  v.requestVideoFrameCallback(frame);
});

// Listens to the <video>'s sound through WebAudio for `ms`: the peak of each 50 ms.
const listen = (ms) => new Promise((resolve) => {
  const v = document.querySelector('#video-programme');
  const ctx = new AudioContext();
  const src = ctx.createMediaStreamSource(v.srcObject);
  const an = ctx.createAnalyser();
  an.fftSize = 2048;
  src.connect(an);
  const buf = new Float32Array(an.fftSize);
  const peaks = [];
  const t = setInterval(() => {
    an.getFloatTimeDomainData(buf);
    peaks.push(buf.reduce((m, x) => Math.max(m, Math.abs(x)), 0));
  }, 50);
  setTimeout(() => { clearInterval(t); ctx.close(); resolve(peaks); }, ms);
});

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  // Loopback: the box's candidates are 127.0.0.1 (where the page reached it), and Chromium
  // gathers none there unless told; the tone is heard without a click.
  args: ['--no-sandbox', '--allow-loopback-in-peer-connection', '--autoplay-policy=no-user-gesture-required'],
});
const recording = join(mkdtempSync(join(tmpdir(), 'tb-monitor-')), 'programme.ts');
try {
  // A decoder box listening for the encoder (SRT, 200 ms), for the received feed.
  const srtPort = await freePort();
  const dec = await startBox(bin, 'control-room', {
    children, logs, role: 'decoder', extra: `[decoder]\ninput = "srt://:${srtPort}?mode=listener&latency=200"\n`,
  });
  const enc = await startBox(bin, 'studio', {
    children, logs, role: 'encoder',
    video: 'width = 1280\nheight = 720\nfps = 30\nbitrate_kbps = 3000',
    // A recording, and the decoder box.
    extra: `metrics_token = "monitor-wall-token-0123"\nmonitor_viewers = 4\n[[outputs]]\nurl = "file:${recording}"\nname = "recording"\n`
      + `[[outputs]]\nurl = "srt://127.0.0.1:${srtPort}?latency=200"\nname = "control room"\n`,
  });
  // The decoder box set up and receiving (waiting for the encoder) first.
  const dctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const dp = await dctx.newPage();
  await dp.goto(dec.base);
  await dp.waitForSelector('#page-setup:not([hidden])');
  await dp.fill('#setup-form [name=code]', dec.code);
  await dp.fill('#setup-form [name=password]', 'panel password');
  await dp.click('#setup-form button');
  await dp.waitForSelector('#page-status:not([hidden])');
  await dp.click('#live-button');
  await dp.waitForSelector('#state-word:text-is("Waiting for a sender")', { timeout: 20000 });

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  const shot = (what) => page.screenshot({ path: join(artifacts, `monitor-${what}.png`), fullPage: true });
  await page.goto(enc.base);
  await page.waitForSelector('#page-setup:not([hidden])');
  await page.fill('#setup-form [name=code]', enc.code);
  await page.fill('#setup-form [name=password]', 'panel password');
  await page.click('#setup-form button');
  await page.waitForSelector('#page-status:not([hidden])');

  // Before going live there is nothing to watch: said so.
  const early = await page.evaluate(async () => (await fetch('/api/whep/programme', {
    method: 'POST', headers: { 'content-type': 'application/sdp', 'x-telebridge-csrf': '1' }, body: 'v=0\r\n',
  })).status);
  check(early === 409, `before going live, a viewer is told there is nothing to watch (${early})`);

  await page.click('#live-button');
  await page.waitForSelector('#state-word:text-is("Live")', { timeout: 20000 });
  await waitFor('the live picture', () => page.evaluate(() => {
    const v = document.querySelector('#video-programme');
    return !v.hidden && v.videoWidth > 0 && !v.paused;
  }), 20000);
  check(await page.$eval('#preview', (i) => i.hidden), 'the programme plays in the <video> and the still is put away');
  await shot('1-playing');

  // Glass to browser: the frames' own capture times against when the browser shows them.
  await page.waitForTimeout(2000); // a window: the first frames after a join are not the steady state
  const seen = await page.evaluate(readAges, ['#video-programme', 10000]);
  const ages = seen.ages;
  const [p50, p95] = [pct(ages, 0.5), pct(ages, 0.95)];
  writeFileSync(join(artifacts, 'monitor-glass-to-browser.json'), JSON.stringify({ ...seen, p50, p95 }));
  check(seen.width === 1280 && seen.height === 720 && ages.length >= 100,
    `the page read the timecode of ${ages.length} frames at ${seen.width}x${seen.height} (${seen.unread} unread)`);
  check(p50 < 150, `glass to browser at 720p30 on loopback: p50 ${p50.toFixed(0)} ms, p95 ${p95.toFixed(0)} ms (under 150 ms at p50)`);

  // The sound: the beep each second (0.3 of full scale), silence between.
  const peaks = await page.evaluate(listen, 3000);
  const loud = peaks.filter((p) => p > 0.15).length;
  const quiet = peaks.filter((p) => p < 0.01).length;
  check(loud >= 3 && quiet >= 20 && Math.max(...peaks) < 0.5,
    `the page hears the test tone through WebAudio: ${loud} of ${peaks.length} slices loud (peak ${Math.max(...peaks).toFixed(2)}), ${quiet} silent`);
  await page.click('.unmute[data-feed=programme]');
  check(await page.$eval('#video-programme', (v) => !v.muted), 'Unmute lets the sound play');

  // The decoder box's Status plays what it receives; glass to browser there against the
  // decoder's own display path (glass to glass at its display, the SRT latency in both),
  // measured before the wall of viewers below loads both cores (a browser's jitter buffer
  // grows under that load and shrinks slowly: 75 ms over the display path once, measured after it).
  await dp.waitForSelector('#state-word:text-is("Receiving")', { timeout: 20000 });
  await waitFor('the received picture, live', () => dp.evaluate(() => {
    const v = document.querySelector('#video-received');
    return !v.hidden && v.videoWidth > 0 && !v.paused;
  }), 20000);
  await dp.waitForTimeout(2000); // a window: past the join
  const received = await dp.evaluate(readAges, ['#video-received', 10000]);
  const display = (await (await dp.request.get(`${dec.base}/api/status`)).json()).media.latency;
  const rp50 = pct(received.ages, 0.5);
  writeFileSync(join(artifacts, 'monitor-received.json'), JSON.stringify({ ...received, p50: rp50, display }));
  check(received.ages.length >= 100 && display && rp50 - display.p50_ms <= 50,
    `the decoder's received feed: glass to browser p50 ${rp50.toFixed(0)} ms (${received.ages.length} frames) against its display's ${display && display.p50_ms.toFixed(0)} ms: ${display && (rp50 - display.p50_ms).toFixed(0)} ms more (at most 50)`);
  await dp.screenshot({ path: join(artifacts, 'monitor-3-received.png'), fullPage: true });
  await dctx.close();

  // The status lists the viewer, watching, from the page's address.
  const status = await (await page.request.get(`${enc.base}/api/status`)).json();
  check(status.viewers.length === 1 && status.viewers[0].state === 'watching' && status.viewers[0].address.startsWith('127.0.0.1:'),
    `the status lists the viewer: ${JSON.stringify(status.viewers)}`);

  // Refusals. No session: 401. Another site's page: 403.
  const anon = await fetch(`${enc.base}/api/whep/programme`, { method: 'POST', headers: { 'content-type': 'application/sdp', 'x-telebridge-csrf': '1' }, body: 'v=0\r\n' });
  check(anon.status === 401, `without a session, WHEP answers ${anon.status}`);
  const foreign = await fetch(`${enc.base}/api/whep/programme`, {
    method: 'POST', headers: { 'content-type': 'application/sdp', origin: 'http://evil.example', cookie: (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ') }, body: 'v=0\r\n',
  });
  check(foreign.status === 403, `from another site, WHEP answers ${foreign.status}`);

  // Three more viewers (a monitor wall, by the read-only token): four in all; the fifth is told.
  const wall = await browser.newContext();
  const wallPage = await wall.newPage();
  await wallPage.goto(`${enc.base}/healthz`);
  const offers = await wallPage.evaluate(async (n) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const pc = new RTCPeerConnection();
      pc.addTransceiver('video', { direction: 'recvonly' });
      pc.addTransceiver('audio', { direction: 'recvonly' });
      const offer = await pc.createOffer();
      await pc.setLocalDescription(offer);
      const r = await fetch('/api/whep/programme', {
        method: 'POST', headers: { 'content-type': 'application/sdp', authorization: 'Bearer monitor-wall-token-0123' }, body: offer.sdp,
      });
      const text = await r.text();
      if (r.status === 201) await pc.setRemoteDescription({ type: 'answer', sdp: text });
      (window.pcs = window.pcs || []).push(pc);
      out.push({ status: r.status, text: r.status === 201 ? r.headers.get('location') : text });
    }
    return out;
  }, 4);
  check(offers.slice(0, 3).every((o) => o.status === 201 && /^\/api\/whep\/programme\/\d+$/.test(o.text)),
    `three viewers more by the read-only token: ${offers.slice(0, 3).map((o) => o.text).join(', ')}`);
  check(offers[3].status === 503 && offers[3].text.includes('4 viewers watch already'),
    `the fifth viewer is refused in words: ${offers[3].status} ${offers[3].text}`);

  const viewers = async () => (await (await page.request.get(`${enc.base}/api/status`)).json()).viewers;
  await waitFor('the wall\'s viewers watching', async () => (await viewers()).filter((v) => v.state === 'watching').length === 4, 10000)
    .catch(async () => { throw new Error(`the wall's viewers: ${JSON.stringify(await viewers())}`); });
  check(true, 'the wall\'s three viewers watch (their browser\'s reports reach the box)');
  // A window: the wall watches for a while, and the box learns how often it reports (a browser
  // every second; an RTP stack on RFC 3550's 5 s is given 2.5 of its own intervals).
  await page.waitForTimeout(5000);

  // The wall's browser goes away without a word (its page closed, no DELETE): its viewers are
  // dropped within 5 s, the panel's own plays on.
  await wall.close();
  const closedAt = Date.now();
  await waitFor('the gone viewers dropped', async () => (await (await page.request.get(`${enc.base}/api/status`)).json()).viewers.length === 1, 10000);
  const dropped = (Date.now() - closedAt) / 1000;
  check(dropped <= 6, `viewers that stopped answering were dropped in ${dropped.toFixed(1)} s`);
  check(await page.$eval('#video-programme', (v) => !v.hidden && !v.paused), 'the panel\'s own viewer plays on');


  // Stopping: the viewer ends with the feed, and the panel says not sending.
  await page.click('#live-button');
  await page.waitForSelector('#state-word:text-is("Ready")', { timeout: 20000 });
  await waitFor('the viewer ended', async () => (await (await page.request.get(`${enc.base}/api/status`)).json()).viewers.length === 0, 10000);
  check(await page.$eval('#video-programme', (v) => v.hidden), 'stopped, the live picture is put away and the viewer ended');
  await shot('2-stopped');
} catch (e) {
  failed = true;
  console.error(e.message);
  for (const [name, log] of Object.entries(logs)) console.error(`${name} log:\n${log.slice(-3000)}`);
} finally {
  await browser.close();
  for (const c of children) c.kill('SIGTERM');
}
process.exit(failed ? 1 : 0);
