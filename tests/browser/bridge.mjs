// The telebridge in a real browser (Debian's Chromium through playwright-core): two boxes in
// the bridge role, each set up through its own panel; box A shows a pairing code, box B's owner
// first types a wrong one (refused in words; A shows a new code and B must wait), then the right
// one; both panels say whom they are paired with; both go live and each shows what it receives
// from the other. Screenshots go to $ARTIFACTS (default target/browser-artifacts).
//
//   TELEBRIDGE=target/debug/telebridge node tests/browser/bridge.mjs
import { chromium } from 'playwright-core';
import { check, waitFor, startBox, openPanel, harness, picture } from './lib.mjs';

const { bin, artifacts, children, logs } = harness();
let failed = false;

// Talkback: each box's microphone is the test voice; the far voice is heard nowhere.
const extra = '[talkback]\nsource = "test"\noutput = "none"\n';
const a = await startBox(bin, 'studio-a', { children, logs, extra });
const b = await startBox(bin, 'studio-b', { children, logs, extra });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
let pa = null;
let pb = null;
try {
  pa = await openPanel(browser, a, artifacts, 'bridge');
  pb = await openPanel(browser, b, artifacts, 'bridge');
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
  for (const [p, far] of [[pa, 'studio-b'], [pb, 'studio-a']]) {
    await p.waitForSelector('#input-format:text("Received 640x360")', { timeout: 30000 });
    await p.waitForSelector(`#outputs-list li:has-text("Connection to ${far}")`);
    await p.waitForSelector(`#received-caption:text("From ${far}")`);
  }
  check(true, 'each box receives the other\'s picture (640x360), its connection to the paired box listed by its name');
  await waitFor('the picture on A', async () => (await picture(pa, 'programme')) !== null, 10000);
  await waitFor('the paired box\'s picture on A', async () => (await picture(pa, 'received')) !== null, 10000);
  check(true, 'A\'s status page shows both pictures: what it sends and what arrives from B');
  // Each box reads the lip sync of the picture and sound it receives from the other's marks.
  for (const [p, name] of [[pa, 'A'], [pb, 'B']]) {
    await waitFor(`lip sync on ${name}`, () => p.evaluate(() => /^Sound (\d+ ms (behind|ahead of)|with) the picture$/.test(document.querySelector('#sync').textContent)), 15000);
  }
  check(true, `each box shows the sound's offset from the picture it receives: "${await pa.textContent('#sync')}"`);
  // The bridge's figures, each with its own name: the round trip glass to glass, one way, the
  // SRT latency chosen and the network RTT (issue 58: the round trip was not on Status).
  const figure = (p, term) => p.evaluate((t) => {
    const dt = [...document.querySelectorAll('#figures dt')].find((d) => d.textContent === t);
    return dt ? dt.nextElementSibling.firstChild.textContent : null;
  }, term);
  await waitFor('the round trip on A', async () => /^\d+ ms$/.test(await figure(pa, 'Round trip, glass to glass')), 20000);
  const terms = await pa.$$eval('#figures dt', (d) => d.map((x) => x.textContent));
  check(new Set(terms).size === terms.length && ['One way, glass to glass', 'SRT latency chosen', 'Network RTT'].every((t) => terms.includes(t)),
    `A's figures each named once: ${terms.map((t) => `${t}`).join(', ')}; round trip ${await figure(pa, 'Round trip, glass to glass')}, one way ${await figure(pa, 'One way, glass to glass')}, SRT latency ${await figure(pa, 'SRT latency chosen')}, network RTT ${await figure(pa, 'Network RTT')}`);
  // Both pictures at 16:9, the picture inside its true shape.
  for (const feed of ['programme', 'received']) {
    const p = await picture(pa, feed);
    const [b, n] = [p.box, p.size];
    check(Math.abs(b[0] / b[1] - 16 / 9) < 0.02 && Math.abs(n[0] / n[1] - 16 / 9) < 0.02, `the ${feed} on A is 16:9: ${b[0].toFixed(0)}x${b[1].toFixed(0)} showing ${n[0]}x${n[1]} (${p.kind})`);
  }
  await pa.shot('4-live');
  await pb.shot('4-live');
  // The same page on a phone (390x844): both pictures and the figures, nothing wider than it.
  {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await ctx.newPage();
    await phone.goto(a.base);
    await phone.fill('#login-form [name=password]', 'panel password');
    await phone.click('#login-form button');
    await phone.waitForSelector('#figures dt:text("Round trip, glass to glass")', { timeout: 10000 });
    await waitFor('both pictures on the phone', async () => (await picture(phone, 'programme')) !== null && (await picture(phone, 'received')) !== null, 10000);
    const over = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `A's status on a phone: both pictures and the round trip, nothing wider than the screen (${over} px over)`);
    await phone.screenshot({ path: `${artifacts}/bridge-phone-studio-a-4-live.png`, fullPage: true });
    await ctx.close();
  }

  // Tally: B's operator puts A on air from B's panel; A's panel says B has its picture on air.
  await pb.click('#tally-button');
  await pa.waitForSelector('#tally:text("On air: studio-b has this box\'s picture on air")', { timeout: 5000 });
  await pb.waitForSelector('#tally-button:text("Take studio-a off air")');
  check(true, 'B puts A on air: A says "On air: studio-b has this box\'s picture on air"; B offers to take it off');
  await pa.shot('5-on-air');
  await pb.click('#tally-button');
  await waitFor('A off air', () => pa.$eval('#tally', (t) => t.hidden), 5000);
  check(true, 'B takes A off air: A\'s on-air line goes');

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

  // B stops: A's picture from B is marked as stopped, not left frozen without a word.
  await pb.click('#live-button');
  await pa.waitForSelector('#received-mark:text("Stopped moving at")', { timeout: 15000 });
  const stale = await pa.textContent('#received-mark');
  check(/^Stopped moving at \d\d:\d\d:\d\d$/.test(stale), `B stops: A marks B's picture "${stale}" (24-hour clock)`);
  await pa.shot('6-far-stopped');
  // B live again: the mark goes when B's picture moves again.
  await pb.click('#live-button');
  await pa.waitForSelector('#received-mark', { state: 'hidden', timeout: 30000 });
  check(true, 'B live again: the mark is gone');

  // B unpairs from its panel, after saying yes to the question; A hears it and says who ended it.
  await pb.click('nav a[data-page=pair]');
  let asked = '';
  pb.once('dialog', (d) => { asked = d.message(); d.accept(); });
  await pb.click('#unpair');
  await waitFor('the question', () => asked !== '', 5000);
  check(asked.startsWith('This box is live with studio-a: unpairing stops the pictures both ways now'), `unpairing on air asks first: "${asked}"`);
  await pb.waitForSelector('#pair-state:text("Not paired")');
  await pa.click('nav a[data-page=pair]');
  await pa.waitForSelector('#pair-last:text("studio-b unpaired this box")', { timeout: 10000 });
  check(true, 'unpaired on B, A says studio-b ended it');
  await pa.shot('7-unpaired');
} catch (e) {
  failed = true;
  console.error(e.message);
  for (const p of [pa, pb]) if (p) await p.shot('failed').catch(() => {});
  for (const [n, l] of Object.entries(logs)) console.error(`${n} log:\n${l.slice(-2500)}`);
} finally {
  await browser.close();
  for (const c of children) c.kill('SIGTERM');
}
console.log(`screenshots: ${artifacts}`);
process.exit(failed ? 1 : 0);
