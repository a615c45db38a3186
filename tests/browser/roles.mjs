// Each role's journeys in a real browser (Debian's Chromium through playwright-core), at a
// desktop's width (1280x800) and a phone's (390x844), asserting what a person reads (issue 58):
//
// - an encoder with an SRT output to a decoder box, an RTMP output to nginx-rtmp and a bonded
//   output over `lo` and a missing interface: its menus list only what the box has; a choice it
//   does not have, a negative bitrate and an empty width are refused under their fields and the
//   file is unchanged; live, each output has its card and the missing uplink is named on its own;
// - the decoder box shows the picture it receives and the sender's address; the encoder stops:
//   "No stream since HH:MM:SS";
// - the decoder box goes away: the SRT output is down, and the RTMP output keeps the full bitrate
//   (an output that is down has no say in it);
// - every output removed: going live is refused in words;
// - every configuration the panel saved passes `telebridge config check`, and `telebridge run`
//   (not simulated) starts on it with its panel answering.
//
// Screenshots of every page go to $ARTIFACTS (default target/browser-artifacts).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/roles.mjs
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { check, freePort, harness, picture, startBox, waitFor } from './lib.mjs';

const { bin, artifacts, children, logs } = harness();
const work = mkdtempSync(join(tmpdir(), 'tb-roles-'));
let failed = false;
// Every configuration file a save left, to check with `telebridge config check` at the end.
const saved = [];
// Script errors in the panel: none is allowed.
const pageErrors = [];

// nginx with the RTMP module, unprivileged, in a folder of its own.
async function nginxRtmp() {
  const port = await freePort();
  const root = join(work, 'nginx');
  mkdirSync(join(root, 'logs'), { recursive: true });
  const conf = readFileSync(new URL('../fixtures/nginx-rtmp.conf', import.meta.url), 'utf8').replaceAll('PORT', String(port));
  writeFileSync(join(root, 'nginx.conf'), conf);
  children.push(spawn('nginx', ['-p', root, '-c', join(root, 'nginx.conf')], { stdio: 'ignore' }));
  await waitFor('nginx-rtmp listens', () => new Promise((ok) => {
    import('node:net').then(({ connect }) => {
      const s = connect(port, '127.0.0.1', () => { s.end(); ok(true); });
      s.on('error', () => ok(false));
    });
  }));
  return port;
}

// The box's panel at `viewport`, set up with its code (or logged in); `page.shot(what)` saves
// `roles-${label}-${box}-${what}.png`.
async function panel(browser, box, label, viewport, fresh) {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  page.shot = (what) => page.screenshot({ path: join(artifacts, `roles-${label}-${box.name}-${what}.png`), fullPage: true });
  page.on('pageerror', (e) => { pageErrors.push(`${label} ${box.name}: ${e.message}`); console.error(`page error: ${e.message}`); });
  page.on('response', (r) => {
    if (r.url().endsWith('/api/config') && r.request().method() === 'PUT' && r.status() === 200) {
      const copy = join(work, `saved-${saved.length}.toml`);
      copyFileSync(box.config, copy);
      saved.push(copy);
    }
  });
  await page.goto(box.base);
  if (fresh) {
    await page.waitForSelector('#page-setup:not([hidden])');
    check(await page.$eval('#nav', (n) => getComputedStyle(n).display === 'none'), `${label}: no menu on ${box.name}'s setup page`);
    await page.shot('0-setup');
    await page.fill('#setup-form [name=code]', box.code.replace('-', ''));
    await page.fill('#setup-form [name=password]', 'panel password');
    await page.click('#setup-form button');
    await page.waitForSelector('#page-status:not([hidden])');
    // Another browser now meets the login page, with no menu either.
    const other = await browser.newContext({ viewport });
    const login = await other.newPage();
    await login.goto(box.base);
    await login.waitForSelector('#page-login:not([hidden])');
    check(await login.$eval('#nav', (n) => getComputedStyle(n).display === 'none'), `${label}: no menu on the login page`);
    await login.screenshot({ path: join(artifacts, `roles-${label}-${box.name}-0-login.png`), fullPage: true });
    await other.close();
  } else {
    await page.waitForSelector('#page-login:not([hidden])');
    check(await page.$eval('#nav', (n) => getComputedStyle(n).display === 'none'), `${label}: no menu on the login page`);
    await page.shot('0-login');
    await page.fill('#login-form [name=password]', 'panel password');
    await page.click('#login-form button');
  }
  await page.waitForSelector('#page-status:not([hidden])');
  return page;
}

const errorUnder = (page, field) => page.$eval(`.error[data-field="${field}"]`, (e) => e.textContent);
const invalid = (page, field) => page.$eval(`[data-path="${field}"]`, (e) => e.getAttribute('aria-invalid'));
const WHIP_TOKEN = 'whip-token-7c1e55d0a9b3';
const cardOf = (page, name) => page.locator(`#outputs-list li[data-name="${name}"]`);

async function journey(browser, label, viewport) {
  const rtmp = await nginxRtmp();
  const srtPort = await freePort();
  const bondPort = await freePort();
  const whipPort = await freePort(); // nothing listens: the WHIP output retries, in words
  const dec = await startBox(bin, 'studio', { children, logs, role: 'decoder', extra: `[decoder]\ninput = "srt://:${srtPort}?mode=listener&latency=200"\n` });
  const enc = await startBox(bin, 'field', {
    children,
    logs,
    role: 'encoder',
    extra: `[[outputs]]\nurl = "srt://127.0.0.1:${srtPort}"\nname = "studio"\n`
      + `[[outputs]]\nurl = "rtmp://127.0.0.1:${rtmp}/live/stream"\nname = "platform"\n`
      + `[[outputs]]\nurl = "srt://127.0.0.1:${bondPort}?bond=lo,nosuch9"\nname = "bonded"\n`
      + `[[outputs]]\nurl = "https://127.0.0.1:${whipPort}/whip/live?room=7&token=${WHIP_TOKEN}"\nname = "cloud"\n`,
  });
  const pe = await panel(browser, enc, label, viewport, true);
  const pd = await panel(browser, dec, label, viewport, true);

  // Settings: menus of what the box has; what it does not have is refused, the file unchanged.
  await pe.click('nav a[data-page=settings]');
  await pe.waitForSelector('[data-path="video.source"]');
  const sources = await pe.$$eval('[data-path="video.source"] option', (o) => o.map((x) => x.value));
  check(sources[0] === 'test' && sources.every((s) => s === 'test' || s === 'libcamera' || s.startsWith('v4l2:/dev/video')),
    `${label}: the video source is a menu of what the box has: ${sources.join(', ')}`);
  const sections = await pe.$$eval('#settings-fields > fieldset > legend', (l) => l.map((x) => x.textContent));
  check(!sections.includes('Receiving') && !sections.includes('Bridge') && sections.includes('Picture'),
    `${label}: an encoder's settings show its sections only: ${sections.join(', ')}`);
  await pe.shot('3-settings');
  const before = readFileSync(enc.config);
  await pe.fill('[data-path="video.bitrate_kbps"]', '-5');
  await pe.click('#settings-form button[type=submit]');
  await pe.waitForSelector('.error[data-field="video.bitrate_kbps"]:not(:empty)');
  const bitrateError = await errorUnder(pe, 'video.bitrate_kbps');
  check(bitrateError === '-5 is not allowed: a whole number of 0 or more is needed' && (await invalid(pe, 'video.bitrate_kbps')) === 'true',
    `${label}: a negative bitrate is refused under its field, in words: "${bitrateError}"`);
  check(Buffer.compare(readFileSync(enc.config), before) === 0, `${label}: nothing was saved (the file is unchanged)`);
  await pe.shot('3b-number-refused');
  await pe.fill('[data-path="video.bitrate_kbps"]', '800');
  await pe.fill('[data-path="video.width"]', '');
  await pe.click('#settings-form button[type=submit]');
  await pe.waitForSelector('.error[data-field="video.width"]:not(:empty)');
  check((await errorUnder(pe, 'video.width')) === 'empty: a number is needed', `${label}: an empty width: "${await errorUnder(pe, 'video.width')}"`);
  await pe.fill('[data-path="video.width"]', '640');
  // A choice the menu does not offer (as a hand-edited request would send it).
  await pe.evaluate(() => { const s = document.querySelector('[data-path="video.source"]'); s.append(new Option('hdmi', 'hdmi')); s.value = 'hdmi'; });
  await pe.click('#settings-form button[type=submit]');
  await pe.waitForSelector('.error[data-field="video.source"]:not(:empty)');
  const sourceError = await errorUnder(pe, 'video.source');
  check(sourceError.includes('"hdmi" is not one of') && (await invalid(pe, 'video.source')) === 'true',
    `${label}: a source the box does not have is refused under its field: "${sourceError}"`);
  check(Buffer.compare(readFileSync(enc.config), before) === 0, `${label}: still nothing saved`);
  await pe.shot('3c-choice-refused');
  await pe.selectOption('[data-path="video.source"]', 'test');
  // The outputs as forms: the SRT output's kind, host and port; the bonded one's uplinks.
  check(await pe.$eval('#outputs\\[0\\]-kind', (s) => s.value) === 'srt-caller'
    && await pe.$eval('#outputs\\[0\\]-host', (i) => i.value) === '127.0.0.1'
    && await pe.$eval('#outputs\\[1\\]-kind', (s) => s.value) === 'rtmp'
    && await pe.$eval('#outputs\\[2\\]-kind', (s) => s.value) === 'srt-bond',
  `${label}: each output is a form: SRT caller to 127.0.0.1, RTMP, bonded SRT`);
  // The WHIP output: its endpoint as a field, its token never sent to the page.
  const whipForm = await pe.evaluate(() => ({
    kind: document.querySelector('#outputs\\[3\\]-kind').value,
    endpoint: document.querySelector('#outputs\\[3\\]-endpoint').value,
    token: document.querySelector('#outputs\\[3\\]-token').placeholder,
    url: document.querySelector('#outputs\\[3\\]-url').value,
  }));
  check(whipForm.kind === 'whip' && /^https:\/\/127\.0\.0\.1:\d+\/whip\/live\?room=7$/.test(whipForm.endpoint)
    && whipForm.token === 'unchanged (set)' && whipForm.url.endsWith('?room=7&token=****')
    && !(await pe.content()).includes(WHIP_TOKEN),
  `${label}: the WHIP output is a form: its endpoint ${whipForm.endpoint}, its token "${whipForm.token}", nowhere in the page`);
  const uplinks = await pe.$$eval('[data-output="2"] .uplinks input', (i) => i.map((x) => `${x.value}${x.checked ? '+' : ''}`));
  check(uplinks.includes('lo+') && uplinks.includes('nosuch9+'), `${label}: the bonded output's uplinks, picked from the box's interfaces: ${uplinks.join(', ')}`);
  await pe.click('#settings-form button[type=submit]');
  await pe.waitForSelector('#settings-saved:not([hidden])');
  check(readFileSync(enc.config, 'utf8').includes(`room=7&token=${WHIP_TOKEN}"`), `${label}: the corrected settings are saved, the WHIP token kept`);
  await pe.shot('3d-saved');

  // Live: a card for each output; the missing uplink named on its output.
  await pe.click('nav a[data-page=status]');
  await pe.click('#live-button');
  await pd.click('#live-button');
  await cardOf(pe, 'platform').locator('.badge:text("Live")').waitFor({ timeout: 20000 });
  await cardOf(pe, 'studio').locator('.badge:text("Live")').waitFor({ timeout: 20000 });
  await cardOf(pe, 'bonded').locator('text=uplink nosuch9: no such network interface').first().waitFor({ timeout: 10000 });
  await cardOf(pe, 'cloud').locator(`text=cannot reach 127.0.0.1:${whipPort}`).first().waitFor({ timeout: 10000 });
  check(true, `${label}: the encoder lists each output; "bonded" says "uplink nosuch9: no such network interface", "cloud" (WHIP) "cannot reach 127.0.0.1:${whipPort}"`);
  const studio = await cardOf(pe, 'studio').textContent();
  check(/Mbit\/s sent · RTT \d+ ms · loss [\d.]+ % · \d+ retransmitted/.test(studio) && / since \d\d:\d\d:\d\d/.test(studio),
    `${label}: the SRT output's card: ${studio.replace(/\s+/g, ' ').trim()}`);
  await pe.shot('5-live');
  // Dark mode follows the device; the state is announced to a screen reader as it changes.
  await pe.emulateMedia({ colorScheme: 'dark' });
  const dark = await pe.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check(dark === 'rgb(11, 15, 23)' && (await pe.getAttribute('#state-word', 'aria-live')) === 'polite',
    `${label}: dark mode follows the device (${dark}); the state word is aria-live`);
  await pe.shot('5-live-dark');
  await pe.emulateMedia({ colorScheme: 'light' });

  // The decoder: the picture it receives, who sends it, the link's figures.
  await pd.waitForSelector('#state-word:text-is("Receiving")', { timeout: 20000 });
  const fig = (p, term) => p.evaluate((t) => {
    const dt = [...document.querySelectorAll('#figures dt')].find((d) => d.textContent === t);
    return dt ? dt.nextElementSibling.firstChild.textContent : null;
  }, term);
  await waitFor('the sender on the decoder', async () => /^127\.0\.0\.1:\d+$/.test(await fig(pd, 'Sender')), 10000);
  await waitFor('the received picture', async () => (await picture(pd, 'received')) !== null, 10000);
  const terms = await pd.$$eval('#figures dt', (d) => d.map((x) => x.textContent));
  check(['Sender', 'Received', 'Network RTT', 'Loss', 'SRT latency'].every((t) => terms.includes(t)),
    `${label}: the decoder shows the sender ${await fig(pd, 'Sender')}, ${await fig(pd, 'Received')} received, RTT ${await fig(pd, 'Network RTT')}, SRT latency ${await fig(pd, 'SRT latency')}`);
  check(await pd.textContent('#live-button') === 'Stop receiving' && await pd.$eval('#outputs-card', (c) => c.hidden),
    `${label}: the decoder's words are a decoder's ("Stop receiving"), its input not listed as an output`);
  // The received sound's meter: the encoder's test beep, decoded, held in its words.
  await waitFor('the received sound on its meter', async () => /^Peak -1\d dBFS$/.test(await pd.textContent('#meter-received .db')), 10000);
  check(await pd.$eval('#meter-programme', (m) => m.hidden) && (await pd.$$('#meter-received .bar')).length === 2,
    `${label}: the decoder meters the sound it receives, two channels ("${await pd.textContent('#meter-received .db')}"), and sends none`);
  await pd.shot('5-receiving');
  // The decoder's settings: its sections, its input as a form, saved as it was.
  await pd.click('nav a[data-page=settings]');
  await pd.waitForSelector('[data-path="decoder.input"]');
  const decSections = await pd.$$eval('#settings-fields > fieldset > legend', (l) => l.map((x) => x.textContent));
  const kind = await pd.$eval('#decoder\\.input-kind', (k) => k.value);
  const port = await pd.$eval('#decoder\\.input-port', (k) => k.value);
  const url = await pd.$eval('#decoder\\.input-url', (k) => k.value);
  check(!decSections.includes('Picture') && decSections.includes('Receiving') && kind === 'srt-listener' && port === String(srtPort)
    && await pd.$eval('#outputs-section', (o) => o.hidden),
  `${label}: a decoder's settings: ${decSections.join(', ')}; its input a form (waiting for callers on ${port}: ${url}), no outputs`);
  await pd.shot('3-settings');
  await pd.click('#settings-form button[type=submit]');
  await pd.waitForSelector('#settings-saved:not([hidden])');
  await pd.click('nav a[data-page=status]');

  // The encoder stops: the decoder says since when nothing came.
  await pe.click('#live-button');
  await pd.waitForSelector('#no-stream:text("No stream since")', { timeout: 15000 });
  const since = await pd.textContent('#no-stream');
  check(/^No stream since \d\d:\d\d:\d\d/.test(since), `${label}: the decoder says "${since}"`);
  await pd.shot('6-no-stream');

  // The decoder box goes away: the SRT output is down; the RTMP output keeps the full bitrate.
  await pe.click('#live-button');
  await cardOf(pe, 'studio').locator('.badge:text("Live")').waitFor({ timeout: 20000 });
  dec.process.kill('SIGKILL');
  await cardOf(pe, 'studio').locator('.badge:not(:text("Live"))').waitFor({ timeout: 20000 });
  await waitFor('the full bitrate', async () => /^Bitrate 0\.8 Mbit\/s of 0\.8 Mbit\/s — no SRT connection up/.test(await pe.textContent('#rate')), 20000);
  await cardOf(pe, 'platform').locator('.badge:text("Live")').waitFor();
  check(true, `${label}: the SRT output down, the RTMP output live at "${await pe.textContent('#rate')}"`);
  await pe.shot('7-srt-down');
  await pe.click('#live-button');
  await pe.waitForSelector('#live-button:text("Go live")', { timeout: 15000 });
  for (const [page, name] of [['link', 'Link'], ['pair', 'Pair'], ['system', 'System']]) {
    await pe.click(`nav a[data-page=${page}]`);
    await pe.waitForSelector(`#page-${page}:not([hidden])`);
    await pe.shot(`8-${name.toLowerCase()}`);
  }

  // Every output removed: going live is refused in words.
  await pe.click('nav a[data-page=settings]');
  await pe.waitForSelector('#outputs-edit .remove');
  while (await pe.$('#outputs-edit .remove')) await pe.click('#outputs-edit .remove');
  await pe.click('#settings-form button[type=submit]');
  await pe.waitForSelector('#settings-saved:not([hidden])');
  await pe.click('nav a[data-page=status]');
  await pe.click('#live-button');
  await pe.waitForSelector('#live-refused:not([hidden])');
  const refused = await pe.textContent('#live-refused');
  check(refused.startsWith('outputs: none'), `${label}: with no output, going live is refused: "${refused}"`);
  await pe.shot('9-no-outputs');
  const overflow = await pe.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `${label}: nothing wider than the screen (${overflow} px over)`);
  enc.process.kill('SIGTERM');
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  await journey(browser, 'desktop', { width: 1280, height: 800 });
  await journey(browser, 'phone', { width: 390, height: 844 });
  for (const file of saved) {
    execFileSync(bin, ['config', 'check', file], { stdio: 'pipe' });
  }
  check(pageErrors.length === 0, `no script error in the panel${pageErrors.length ? `: ${pageErrors.join('; ')}` : ''}`);
  check(saved.length >= 4, `telebridge config check passes on each of the ${saved.length} configurations the panel saved`);
  // And a box starts on each (telebridge run, not simulated: the real backends' checks at
  // start), its panel answering.
  for (const file of saved) {
    const port = await freePort();
    const box = spawn(bin, ['run', '--config', file, '--http', `127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    box.stderr.on('data', (d) => { err += d; });
    try {
      await waitFor(`telebridge run on ${file}`, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 20000);
    } catch (e) {
      throw new Error(`${e.message}: ${err.slice(-1500)}`);
    } finally {
      box.kill('SIGTERM');
    }
  }
  check(true, 'telebridge run starts on each of them, its panel answering');
} catch (e) {
  failed = true;
  console.error(e.message);
  if (e.stderr) console.error(String(e.stderr));
  for (const [n, l] of Object.entries(logs)) console.error(`${n} log:\n${l.slice(-2000)}`);
} finally {
  await browser.close();
  for (const c of children) c.kill('SIGTERM');
}
console.log(`screenshots: ${artifacts}`);
process.exit(failed ? 1 : 0);
