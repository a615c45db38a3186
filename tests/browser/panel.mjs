// The panel in a real browser (Debian's Chromium through playwright-core): first-run setup with
// the setup code, log in, change the bitrate and save, see a validation message next to its
// field, go live, watch the link graph gain points, send an update bundle and read the helper's
// answer; on a desktop (1280x800) and on a phone (390x844).
// Screenshots go to $ARTIFACTS (default target/browser-artifacts).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/panel.mjs
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { picture } from './lib.mjs';

const bin = resolve(process.env.TELEBRIDGE || 'target/debug/telebridge');
const artifacts = resolve(process.env.ARTIFACTS || 'target/browser-artifacts');
mkdirSync(artifacts, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'tb-panel-'));
const children = [];
let failed = false;

function check(cond, what) {
  if (!cond) throw new Error(`failed: ${what}`);
  console.log(`ok: ${what}`);
}

const freePort = () => new Promise((res) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
});

function run(cmd, args, name, env = {}) {
  const out = join(dir, `${name}.log`);
  const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  c.stdout.on('data', (d) => { log += d; });
  c.stderr.on('data', (d) => { log += d; writeFileSync(out, log); });
  children.push(c);
  return { child: c, log: () => log };
}

async function waitFor(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    try { if (await fn()) return; } catch (_) { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const httpPort = await freePort();
const srtPort = await freePort();
const config = join(dir, 'telebridge.toml');
writeFileSync(config, `[video]\nwidth = 640\nheight = 360\nbitrate_kbps = 1500\n[web]\nsetup_code_file = "${join(dir, 'setup.txt')}"\n[[outputs]]\nurl = "srt://127.0.0.1:${srtPort}"\nname = "studio"\n`);
// The studio: srt-live-transmit listening, the stream thrown away.
children.push(spawn('srt-live-transmit', ['-q', `srt://:${srtPort}?mode=listener`, 'file://con'], { stdio: 'ignore' }));
// systemd's directories for the root helper's requests and the uploaded bundle, and the
// helper's own folder for its answers beside the daemon's.
const runDir = join(dir, 'run', 'telebridge');
const answersDir = join(dir, 'run', 'telebridge-helper');
const stateDir = join(dir, 'state');
mkdirSync(runDir, { recursive: true });
mkdirSync(answersDir, { recursive: true });
mkdirSync(stateDir);
const box = run(bin, ['run', '--sim', '--http', `127.0.0.1:${httpPort}`, '--config', config], 'box',
  { RUNTIME_DIRECTORY: runDir, STATE_DIRECTORY: stateDir });
const base = `http://127.0.0.1:${httpPort}`;
await waitFor('the box answers', async () => (await fetch(`${base}/healthz`)).ok);
await waitFor('the setup code file', () => existsSync(join(dir, 'setup.txt')));
const code = readFileSync(join(dir, 'setup.txt'), 'utf8').trim().split(' ').pop();

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  for (const [label, viewport] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]]) {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    const shot = (name) => page.screenshot({ path: join(artifacts, `${label}-${name}.png`), fullPage: true });
    await page.goto(base);
    if (label === 'desktop') {
      await page.waitForSelector('#page-setup:not([hidden])');
      await shot('1-setup');
      await page.fill('#setup-form [name=code]', '0000-0000');
      await page.fill('#setup-form [name=password]', 'panel password');
      await page.click('#setup-form button');
      await page.waitForSelector('[data-field=setup]:text("wrong setup code")');
      check(true, `${label}: a wrong setup code is refused in words`);
      await page.fill('#setup-form [name=code]', code);
      await page.click('#setup-form button');
    } else {
      await page.waitForSelector('#page-login:not([hidden])');
      await shot('1-login');
      await page.fill('#login-form [name=password]', 'wrong password');
      await page.click('#login-form button');
      await page.waitForSelector('[data-field=login]:text("wrong password")');
      await page.fill('#login-form [name=password]', 'panel password');
      await page.click('#login-form button');
    }
    await page.waitForSelector('#page-status:not([hidden])');
    check(true, `${label}: ${label === 'desktop' ? 'setup with the code' : 'login'} opens the status page`);
    await shot('2-status');

    // Settings: a bad value gets its message next to its field; a good one saves.
    await page.click('nav a[data-page=settings]');
    await page.waitForSelector('[data-path="video.bitrate_kbps"]');
    await page.fill('[data-path="video.fps"]', '500');
    await page.click('#settings-form button[type=submit]');
    const fpsError = page.locator('.error[data-field="video.fps"]');
    await fpsError.waitFor();
    check((await fpsError.textContent()).includes('500 is out of range 9-60'), `${label}: the fps message sits next to the fps field`);
    await shot('3-validation');
    await page.fill('[data-path="video.fps"]', '30');
    const bitrate = label === 'desktop' ? '2500' : '2000';
    await page.fill('[data-path="video.bitrate_kbps"]', bitrate);
    await page.click('#settings-form button[type=submit]');
    await page.waitForSelector('#settings-saved:not([hidden])');
    check(readFileSync(config, 'utf8').includes(`bitrate_kbps = ${bitrate}`), `${label}: the bitrate is saved to the file`);
    await shot('4-saved');

    // Go live (desktop) or see it live (phone), then stop and start again on the phone.
    await page.click('nav a[data-page=status]');
    if (label === 'desktop') await page.click('#live-button');
    await page.waitForSelector('#state-word:text-is("Live")', { timeout: 20000 });
    check(true, `${label}: the box is live`);
    // Polled with evaluate (waitForFunction would need 'unsafe-eval', which the panel's CSP forbids).
    let shown = null;
    await waitFor('the picture', async () => (shown = await picture(page, 'programme')) !== null, 10000);
    check(true, `${label}: the picture shows (${shown.kind === 'live' ? 'live, WebRTC' : 'a still'}, ${shown.size.join('x')})`);
    // Which encoder, and why (this machine is no Pi: software).
    await page.waitForSelector('#codec-reason:text("encoding in software")', { timeout: 10000 });
    const codec = await page.textContent('#codec-reason');
    check(/^Why (x264enc|openh264enc): /.test(codec), `${label}: the panel says which encoder and why: ${codec}`);
    // The programme's sound meter moves with the test tone: a 1 kHz beep for a tenth of a
    // second each second at 0.3 of full scale (-10.5 dBFS peak), silence between.
    const peaks = [];
    for (let i = 0; i < 60; i++) {
      peaks.push(await page.evaluate(() => {
        const m = document.querySelector('#meter-programme');
        const bar = m && !m.hidden && m.querySelector('.bar');
        return bar ? Number(bar.getAttribute('aria-valuenow')) : null;
      }));
      await new Promise((r) => setTimeout(r, 50));
    }
    const read = peaks.filter((p) => p !== null);
    const [loud, quiet] = [Math.max(...read), Math.min(...read)];
    check(read.length >= 50 && loud > -12 && loud < -9 && quiet <= -60,
      `${label}: the sound meter rises with the beep and falls between (${read.length} readings, peak ${loud}, lowest ${quiet} dBFS)`);
    const words = await page.textContent('#meter-programme .db');
    check(/^Peak -1[01] dBFS$/.test(words), `${label}: the meter's words hold the beep's peak: "${words}"`);
    await shot('5-live');
    if (label === 'desktop') {
      // The simulated cable, from the panel: pulled, the status says there is no signal.
      await page.waitForSelector('#sim-card:not([hidden])');
      await page.uncheck('#sim-cable');
      await page.waitForSelector('#input-format:text("No signal")', { timeout: 10000 });
      await page.waitForSelector('#alerts li:text("no input signal")');
      check(true, `${label}: pulling the simulated HDMI cable shows "No signal" and an alert`);
      await shot('5b-no-signal');
      await page.check('#sim-cable');
      await page.waitForSelector('#state-word:text-is("Live")', { timeout: 10000 });
      check(true, `${label}: plugged back, the box is live again`);
    }

    // The link graph gains points.
    await page.click('nav a[data-page=link]');
    await page.waitForSelector('#charts .uplot');
    const points = async () => Number(await page.getAttribute('#charts', 'data-points'));
    const before = await points();
    await waitFor('new points on the graph', async () => (await points()) >= before + 2, 10000);
    check(true, `${label}: the link graph gained points (${before} -> ${await points()})`);
    await shot('6-link');
    // System: the log shows the box's own lines, and nothing secret.
    await page.click('nav a[data-page=system]');
    await page.click('#logs-refresh');
    await page.waitForSelector('#logs:text("state")');
    const logText = await page.textContent('#logs');
    check(logText.includes('to=Live') && !logText.includes('panel password'), `${label}: the log tail shows state changes and no password`);
    await shot('7-system');
    if (label === 'desktop') {
      // Update: the file goes to the state directory, the helper is asked, its answer is shown.
      const bundle = Buffer.from(Array.from({ length: 200000 }, (_, i) => (i * 7919) % 251));
      page.once('dialog', (d) => d.accept());
      await page.setInputFiles('#update-form input[name=file]', { name: 'telebridge-0.2.0-arm64.raucb', mimeType: 'application/octet-stream', buffer: bundle });
      await page.click('#update-form button[type=submit]');
      await page.waitForSelector('#update-state:text("installing")');
      check(Buffer.compare(readFileSync(join(stateDir, 'update.raucb')), bundle) === 0
        && readFileSync(join(runDir, 'update-request'), 'utf8').trim() === join(stateDir, 'update.raucb'),
        `${label}: the update bundle arrives whole and the helper is asked to install it`);
      // The helper takes the request and answers in its own folder.
      unlinkSync(join(runDir, 'update-request'));
      writeFileSync(join(answersDir, 'update-status'), 'failed\nrauc: signature verification failed: certificate not trusted\n');
      await page.waitForSelector('[data-field=update]:text("certificate not trusted")', { timeout: 10000 });
      check(true, `${label}: the helper's refusal is shown in its words`);
      await shot('8-update');
      // Fleet updates: off until a server is named; an address that cannot work is refused under
      // its field; a server the box cannot reach is said on the System page, the token never shown.
      check((await page.textContent('#fleet-state')).startsWith('Off'), `${label}: fleet updates are off until a server is named`);
      await page.click('nav a[data-page=settings]');
      await page.waitForSelector('[data-path="fleet.server"]');
      await page.fill('[data-path="fleet.server"]', 'ftp://updates.example');
      await page.click('#settings-form button[type=submit]');
      await page.waitForSelector('.error[data-field="fleet.server"]:not(:empty)');
      const fleetError = await page.textContent('.error[data-field="fleet.server"]');
      check(fleetError.includes('https://HOST'), `${label}: a fleet server address that cannot work is refused under its field: "${fleetError}"`);
      const closed = await freePort();
      await page.fill('[data-path="fleet.server"]', `http://127.0.0.1:${closed}`);
      await page.fill('[data-path="fleet.target_token"]', 'a-target-token-0123');
      await page.click('#settings-form button[type=submit]');
      await page.waitForSelector('#settings-saved:not([hidden])');
      await page.click('nav a[data-page=system]');
      await page.waitForSelector('#fleet-state:text("cannot be used")', { timeout: 10000 });
      const fleetDetail = await page.textContent('#fleet-detail');
      check(fleetDetail.includes(`cannot reach 127.0.0.1:${closed}`) && !fleetDetail.includes('a-target-token')
        && !box.log().includes('a-target-token'),
      `${label}: a fleet server the box cannot reach is said in words, the token neither shown nor logged: "${fleetDetail}"`);
      await shot('9-fleet');
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `${label}: nothing wider than the screen (${overflow} px over)`);
    await ctx.close();
  }
} catch (e) {
  failed = true;
  console.error(e.message);
  console.error(`box log:\n${box.log().slice(-3000)}`);
} finally {
  await browser.close();
  for (const c of children) c.kill('SIGTERM');
}
console.log(`screenshots: ${artifacts}`);
process.exit(failed ? 1 : 0);
