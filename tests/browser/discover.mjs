// Pairing without typing an address (issue 39), in a real browser: two bridge boxes in two
// network namespaces on one Linux bridge find each other by mDNS. B's Pair page lists A; A shows
// a code and B's list says so; B's owner picks A from the list (the address is filled in), types
// the code, and both panels say whom they are paired with. Chromium runs outside the namespaces
// and reaches the panels through the bridge's address (10.213.0.1). Needs root (ip netns).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/discover.mjs
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { check, waitFor, startBox, openPanel, harness } from './lib.mjs';

const { bin, artifacts, children, logs } = harness();
let failed = false;

// The LAN: a bridge with this test's address, a namespace per box with one veth on it.
const id = process.pid % 100000;
const bridge = `tbdbr${id}`;
const spaces = ['a', 'b'].map((k) => `tbd${k}-${id}`);
const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
function clean() {
  for (const ns of spaces) { try { ip('netns', 'del', ns); } catch (_) { /* not there */ } }
  try { ip('link', 'del', bridge); } catch (_) { /* not there */ }
}
clean();
ip('link', 'add', bridge, 'type', 'bridge');
ip('addr', 'add', '10.213.0.1/24', 'dev', bridge);
ip('link', 'set', bridge, 'up');
spaces.forEach((ns, k) => {
  ip('netns', 'add', ns);
  ip('link', 'add', `tbd${k}h${id}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
  ip('link', 'set', `tbd${k}h${id}`, 'master', bridge, 'up');
  ip('-n', ns, 'addr', 'add', `10.213.0.${k + 2}/24`, 'dev', 'eth0');
  ip('-n', ns, 'link', 'set', 'eth0', 'up');
  ip('-n', ns, 'link', 'set', 'lo', 'up');
});

let browser = null;
try {
  const boxes = [];
  for (const [k, name] of [[0, 'studio-a'], [1, 'studio-b']]) {
    boxes.push(await startBox(bin, name, {
      children, logs, wrap: ['ip', 'netns', 'exec', spaces[k]], listen: '0.0.0.0', host: `10.213.0.${k + 2}`,
    }));
  }
  const [a, b] = boxes;
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const pa = await openPanel(browser, a, artifacts, 'discover');
  const pb = await openPanel(browser, b, artifacts, 'discover');
  check(true, 'both panels set up, on their Pair pages, not paired');

  const pick = '#nearby button:text("Pair with studio-a")';
  await pb.waitForSelector(pick, { timeout: 5000 });
  await pa.waitForSelector('#nearby button:text("Pair with studio-b")', { timeout: 5000 });
  check(true, 'each Pair page lists the other box found on the network, not itself');
  check(!(await pb.$('#nearby button:text("Pair with studio-b")')), 'B does not list itself');

  await pa.click('#pair-open');
  await pa.waitForSelector('#pair-code:not([hidden])');
  const code = (await pa.textContent('#pair-code')).trim();
  await waitFor('B sees A showing a code', async () => (await pb.textContent('#nearby li:has-text("studio-a")')).includes('showing a code'), 5000);
  check(true, `A shows a code (${code}) and B's list says A is showing one`);
  await pb.shot('1-found');

  await pb.click(pick);
  const address = await pb.inputValue('#pair-form [name=address]');
  check(address === `10.213.0.2:${a.http}`, `picking A fills in its panel's address (${address})`);
  await pb.fill('#pair-form [name=code]', code);
  await pb.click('#pair-form button[type=submit]');
  await pb.waitForSelector('#pair-state:text("Paired with studio-a")', { timeout: 20000 });
  await pa.waitForSelector('#pair-state:text("Paired with studio-b")', { timeout: 10000 });
  check(true, 'paired from the list and the code, no address typed: both panels say whom they are paired with');
  await waitFor('B sees A paired', async () => (await pb.textContent('#nearby li:has-text("studio-a")')).includes(', paired,'), 5000);
  await pb.shot('2-paired');
  await pa.shot('2-paired');
} catch (e) {
  failed = true;
  console.error(e.message);
  for (const [n, l] of Object.entries(logs)) console.error(`${n} log:\n${l.slice(-2500)}`);
} finally {
  if (browser) await browser.close();
  for (const c of children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  clean();
}
console.log(`screenshots: ${artifacts}`);
process.exit(failed ? 1 : 0);
