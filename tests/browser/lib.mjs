// What the browser tests share: checks that print, waits for conditions, a box started with its
// own directory and configuration, and its panel opened and set up in a fresh context.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The binary under test ($TELEBRIDGE), where screenshots go ($ARTIFACTS), and the boxes'
// processes and output, filled by startBox.
export function harness() {
  const artifacts = resolve(process.env.ARTIFACTS || 'target/browser-artifacts');
  mkdirSync(artifacts, { recursive: true });
  return { bin: resolve(process.env.TELEBRIDGE || 'target/debug/telebridge'), artifacts, children: [], logs: {} };
}

export function check(cond, what) {
  if (!cond) throw new Error(`failed: ${what}`);
  console.log(`ok: ${what}`);
}

export const freePort = () => new Promise((res) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
});

export async function waitFor(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    try { if (await fn()) return; } catch (_) { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// A box named `name` (a bridge unless `role` says): its own directory and configuration (`video`
// its picture, `extra` appended to its [web] table), started with `bin` (under `wrap`, e.g. `ip netns exec NS`), its panel on `listen` and
// reached at `host`. Returns its panel's URL, port, setup code, configuration file and process;
// its process goes into `children`, its output into `logs`.
export async function startBox(bin, name, { children, logs, wrap = [], listen = '127.0.0.1', host = '127.0.0.1', extra = '', role = 'bridge', video = 'width = 640\nheight = 360\nfps = 25\nbitrate_kbps = 800' }) {
  const dir = mkdtempSync(join(tmpdir(), `tb-${name}-`));
  const http = await freePort();
  const srt = await freePort();
  const config = join(dir, 'telebridge.toml');
  writeFileSync(config, `name = "${name}"\nrole = "${role}"\n[video]\n${video}\n[bridge]\nport = ${srt}\nport_mapping = false\n[web]\nsetup_code_file = "${join(dir, 'setup.txt')}"\n${extra}`);
  const argv = [...wrap, bin, 'run', '--sim', '--http', `${listen}:${http}`, '--config', config];
  const c = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  logs[name] = '';
  c.stdout.on('data', (d) => { logs[name] += d; });
  c.stderr.on('data', (d) => { logs[name] += d; });
  children.push(c);
  const base = `http://${host}:${http}`;
  await waitFor(`${name} answers`, async () => (await fetch(`${base}/healthz`)).ok);
  await waitFor(`${name}'s setup code file`, () => existsSync(join(dir, 'setup.txt')));
  const code = readFileSync(join(dir, 'setup.txt'), 'utf8').trim().split(' ').pop();
  return { name, base, http, code, config, process: c };
}

// The box's panel in a fresh context, its password set with the setup code, on its Pair page;
// `page.shot(what)` saves a screenshot as `${prefix}-${box}-${what}.png` in `artifacts`.
export async function openPanel(browser, box, artifacts, prefix) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.shot = (what) => page.screenshot({ path: join(artifacts, `${prefix}-${box.name}-${what}.png`), fullPage: true });
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

// What a picture on Status shows of `feed` (programme: #preview, received: #received): the live
// monitor's <video> playing, or the still refreshed every 2 s (a browser or a box without
// WebRTC, a refused viewer); with its box on the page and the picture's own size. `null`: neither.
export const picture = (page, feed) => page.evaluate((feed) => {
  const still = document.querySelector(feed === 'programme' ? '#preview' : '#received');
  const video = document.querySelector(`#video-${feed}`);
  const box = (e) => { const b = e.getBoundingClientRect(); return [b.width, b.height]; };
  if (video && !video.hidden && video.videoWidth > 0 && !video.paused) {
    return { kind: 'live', box: box(video), size: [video.videoWidth, video.videoHeight] };
  }
  if (!still.hidden && still.naturalWidth === 320) return { kind: 'still', box: box(still), size: [still.naturalWidth, still.naturalHeight] };
  return null;
}, feed);
