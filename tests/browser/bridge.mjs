// The telebridge in a real browser (Debian's Chromium through playwright-core): two boxes in
// the bridge role, each set up through its own panel; box A shows a pairing code, box B's owner
// first types a wrong one (refused in words; A shows a new code and B must wait), then the right
// one; both panels say whom they are paired with; both go live and each shows what it receives
// from the other. Screenshots go to $ARTIFACTS (default target/browser-artifacts).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/bridge.mjs
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const bin = resolve(process.env.TELEBRIDGE || 'target/debug/telebridge');
const artifacts = resolve(process.env.ARTIFACTS || 'target/browser-artifacts');
mkdirSync(artifacts, { recursive: true });
const children = [];
const logs = {};
let failed = false;

function check(cond, what) {
  if (!cond) throw new Error(`failed: ${what}`);
  console.log(`ok: ${what}`);
}

const freePort = (udp) => new Promise((res) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
});

async function waitFor(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    try { if (await fn()) return; } catch (_) { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// A box: its own directory and configuration, its panel's URL and its setup code.
async function startBox(name) {
  const dir = mkdtempSync(join(tmpdir(), `tb-${name}-`));
  const http = await freePort();
  const srt = await freePort();
  const config = join(dir, 'telebridge.toml');
  writeFileSync(config, `name = "${name}"\nrole = "bridge"\n[video]\nwidth = 640\nheight = 360\nfps = 25\nbitrate_kbps = 800\n[bridge]\nport = ${srt}\nport_mapping = false\n[web]\nsetup_code_file = "${join(dir, 'setup.txt')}"\n`);
  const c = spawn(bin, ['run', '--sim', '--http', `127.0.0.1:${http}`, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  logs[name] = '';
  c.stdout.on('data', (d) => { logs[name] += d; });
  c.stderr.on('data', (d) => { logs[name] += d; });
  children.push(c);
  const base = `http://127.0.0.1:${http}`;
  await waitFor(`${name} answers`, async () => (await fetch(`${base}/healthz`)).ok);
  await waitFor(`${name}'s setup code file`, () => existsSync(join(dir, 'setup.txt')));
  const code = readFileSync(join(dir, 'setup.txt'), 'utf8').trim().split(' ').pop();
  return { name, base, http, code };
}

async function openPanel(browser, box) {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await ctx.newPage();
  page.shot = (what) => page.screenshot({ path: join(artifacts, `bridge-${box.name}-${what}.png`), fullPage: true });
  await page.goto(box.base);
  await page.waitForSelector('#page-setup:not([hidden])');
  await page.fill('#setup-form [name=code]', box.code);
  await page.fill('#setup-form [name=password]', 'panel password');
  await page.click('#setup-form button');
  await page.waitForSelector('#page-status:not([hidden])');
  await page.click('nav a[data-page=pair]');
  await page.waitForSelector('#pair-state:text("Not paired")');
  return page;
}

const a = await startBox('studio-a');
const b = await startBox('studio-b');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const pa = await openPanel(browser, a);
  const pb = await openPanel(browser, b);
  check(true, 'both panels set up, on their Pair pages, not paired');

  // A shows a code.
  await pa.click('#pair-open');
  await pa.waitForSelector('#pair-code:not([hidden])');
  const first = (await pa.textContent('#pair-code')).trim();
  check(/^[0-9A-Z]{3}-[0-9A-Z]{3}$/.test(first), `A shows a code (${first})`);
  await pa.shot('1-code');

  // B's owner mistypes it: refused in words; A keeps its code, and B's address waits.
  const wrong = (first[0] === 'A' ? 'B' : 'A') + first.slice(1);
  await pb.fill('#pair-form [name=address]', `127.0.0.1:${a.http}`);
  await pb.fill('#pair-form [name=code]', wrong);
  await pb.click('#pair-form button');
  await pb.waitForSelector('[data-field=pair]:text("wrong code")');
  check(true, 'a wrong code is refused in words on B');
  await pb.shot('2-wrong-code');
  await waitFor('A says a wrong code was tried', async () => (await pa.textContent('#pair-last')).includes('wrong code'), 10000);
  const second = (await pa.textContent('#pair-code')).trim();
  check(second === first, `A still shows its code (${second}): one wrong try does not void it`);

  // At once with the right code: A asks B to wait; after the wait it pairs.
  await pb.fill('#pair-form [name=code]', second.toLowerCase());
  await pb.click('#pair-form button');
  await pb.waitForSelector('[data-field=pair]:text("try again in")');
  check(true, 'the next try at once is refused until the wait is over');
  await new Promise((r) => setTimeout(r, 5500));
  await pb.click('#pair-form button');
  await pb.waitForSelector('#pair-state:text("Paired with studio-a")', { timeout: 20000 });
  await pa.waitForSelector('#pair-state:text("Paired with studio-b")', { timeout: 10000 });
  check(true, 'both panels say whom they are paired with');
  await pb.shot('3-paired');
  await pa.shot('3-paired');

  // Both go live; each shows what it receives from the other.
  for (const p of [pa, pb]) {
    await p.click('nav a[data-page=status]');
    await p.click('#live-button');
  }
  for (const p of [pa, pb]) {
    await p.waitForSelector('#input-format:text("receiving 640x360")', { timeout: 30000 });
    await p.waitForSelector('#outputs-list li:text("peer")');
  }
  check(true, 'each box receives the other\'s picture (640x360), its connection to the peer listed');
  await waitFor('the preview on A', () => pa.evaluate(() => { const i = document.querySelector('#preview'); return !i.hidden && i.naturalWidth === 320; }), 10000);
  await waitFor('the paired box\'s picture on A', () => pa.evaluate(() => { const i = document.querySelector('#received'); return !i.hidden && i.naturalWidth === 320; }), 10000);
  check(true, 'A\'s status page shows both pictures: what it sends and what arrives from B');
  // Each box reads the lip sync of the picture and sound it receives from the other's marks.
  for (const [p, name] of [[pa, 'A'], [pb, 'B']]) {
    await waitFor(`lip sync on ${name}`, () => p.evaluate(() => /^Glass to glass \d+ ms; sound (\d+ ms (behind|ahead of)|with) the picture$/.test(document.querySelector('#sync').textContent)), 15000);
  }
  check(true, `each box shows the sound's offset from the picture it receives: "${await pa.textContent('#sync')}"`);
  await pa.shot('4-live');
  await pb.shot('4-live');

  // B unpairs from its panel; A hears it and says who ended it.
  await pb.click('nav a[data-page=pair]');
  await pb.click('#unpair');
  await pb.waitForSelector('#pair-state:text("Not paired")');
  await pa.click('nav a[data-page=pair]');
  await pa.waitForSelector('#pair-last:text("studio-b unpaired this box")', { timeout: 10000 });
  check(true, 'unpaired on B, A says studio-b ended it');
  await pa.shot('5-unpaired');
} catch (e) {
  failed = true;
  console.error(e.message);
  for (const [n, l] of Object.entries(logs)) console.error(`${n} log:\n${l.slice(-2500)}`);
} finally {
  await browser.close();
  for (const c of children) c.kill('SIGTERM');
}
console.log(`screenshots: ${artifacts}`);
process.exit(failed ? 1 : 0);
