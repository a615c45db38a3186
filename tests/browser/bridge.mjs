// The telebridge in a real browser (Debian's Chromium through playwright-core): two boxes in
// the bridge role, each set up through its own panel; box A shows a pairing code, box B's owner
// first types a wrong one (refused in words; A shows a new code and B must wait), then the right
// one; both panels say whom they are paired with; both go live and each shows what it receives
// from the other. Screenshots go to $ARTIFACTS (default target/browser-artifacts).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/bridge.mjs
import { chromium } from 'playwright-core';
import { check, waitFor, startBox, openPanel, harness } from './lib.mjs';

const { bin, artifacts, children, logs } = harness();
let failed = false;

// Talkback: each box's microphone is the test voice; the far voice is heard nowhere.
const extra = '[talkback]\nsource = "test"\noutput = "none"\n';
const a = await startBox(bin, 'studio-a', { children, logs, extra });
const b = await startBox(bin, 'studio-b', { children, logs, extra });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const pa = await openPanel(browser, a, artifacts, 'bridge');
  const pb = await openPanel(browser, b, artifacts, 'bridge');
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

  // Push to talk: A holds its talk button; B's panel says A is talking; A lets go.
  const talk = await pa.$('#talk-button');
  const box = await talk.boundingBox();
  await pa.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await pa.mouse.down();
  await pa.waitForSelector('#talk-state:text("Talking to the paired box")', { timeout: 5000 });
  await pb.waitForSelector('#talk-state:text("The paired box is talking")', { timeout: 5000 });
  check(true, 'A holds "Hold to talk": A says it talks, B says the paired box is talking');
  await pa.shot('5-talking');
  await pb.shot('5-listening');
  await pa.mouse.up();
  await waitFor('B hears A stop', async () => (await pb.textContent('#talk-state')) === '', 5000);
  check(true, 'A lets go: B hears nothing more');

  // B unpairs from its panel; A hears it and says who ended it.
  await pb.click('nav a[data-page=pair]');
  await pb.click('#unpair');
  await pb.waitForSelector('#pair-state:text("Not paired")');
  await pa.click('nav a[data-page=pair]');
  await pa.waitForSelector('#pair-last:text("studio-b unpaired this box")', { timeout: 10000 });
  check(true, 'unpaired on B, A says studio-b ended it');
  await pa.shot('6-unpaired');
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
