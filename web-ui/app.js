// Telebridge panel: no framework, no network beyond this box. uPlot draws the graphs.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

async function api(method, path, body) {
  const opts = { method, headers: { 'x-telebridge-csrf': '1' }, credentials: 'same-origin' };
  if (body !== undefined) {
    opts.headers['content-type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  // A box that does not answer (rebooting, unplugged) is said so, not thrown.
  const r = await fetch(path, opts).catch(() => null);
  if (!r) return { status: 0, data: { error: 'the box does not answer: is it on and on the network?' } };
  let data = null;
  try { data = await r.json(); } catch (_) { /* empty body */ }
  return { status: r.status, data };
}

// ---------- pages ----------
let current = null;
function show(page) {
  $$('.page').forEach((p) => { p.hidden = p.id !== `page-${page}`; });
  $$('#nav a').forEach((a) => a.classList.toggle('on', a.dataset.page === page));
  current = page;
  if (page === 'settings') loadSettings();
  if (page === 'link') loadHistory();
  if (page === 'pair') loadPairing();
  if (page === 'system') loadFleet();
}

window.addEventListener('hashchange', () => {
  const page = location.hash.slice(1) || 'status';
  if (!$('#nav').hidden) show(page);
});

async function boot() {
  const setup = await api('GET', '/api/setup');
  if (setup.data && setup.data.needed) { show('setup'); return; }
  const st = await api('GET', '/api/status');
  if (st.status === 401) { show('login'); return; }
  enter(st.data);
}

async function enter(status) {
  $('#nav').hidden = false;
  await loadPeerName();
  if (status) renderStatus(status);
  show(location.hash.slice(1) || 'status');
  startEvents();
  initSim();
}

// ---------- simulated hardware (only under --sim) ----------
async function initSim() {
  const r = await api('GET', '/api/sim/gpio');
  if (r.status !== 200) return;
  $('#sim-card').hidden = false;
  $('#sim-cable').checked = r.data.hdmi_cable !== false;
}
$('#sim-press').addEventListener('click', () => api('POST', '/api/sim/button', { hold_ms: 200 }));
$('#sim-hold').addEventListener('click', () => api('POST', '/api/sim/button', { hold_ms: 3200 }));
$('#sim-cable').addEventListener('change', (e) => api('POST', '/api/sim/signal', { present: e.target.checked }));

$('#setup-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const r = await api('POST', '/api/setup', { code: f.get('code'), password: f.get('password') });
  if (r.status === 200) { enter(); return; }
  $('[data-field=setup]').textContent = (r.data && r.data.error) || `setup failed (${r.status})`;
});

$('#login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const r = await api('POST', '/api/session', { password: f.get('password') });
  if (r.status === 200) { enter(); return; }
  $('[data-field=login]').textContent = (r.data && r.data.error) || `login failed (${r.status})`;
});

$('#logout').addEventListener('click', async () => {
  await api('DELETE', '/api/session');
  location.hash = '';
  location.reload();
});

// ---------- system ----------
// Where the box stands with its fleet server (GET /api/fleet), followed while the page shows.
const FLEET_WORDS = {
  off: 'Off: no update server (Settings, Fleet updates).', idle: 'Up to date: nothing assigned.',
  downloading: 'Downloading an update.', waiting: 'An update is downloaded and waits.',
  installing: 'Installing an update.', confirming: 'Running the new version; confirming it.',
  unreachable: 'The update server cannot be used.',
};
let fleetTimer = null;
async function loadFleet() {
  clearTimeout(fleetTimer);
  const r = await api('GET', '/api/fleet');
  if (r.status !== 200 || !r.data) return;
  const f = r.data;
  const version = f.action ? ` ${f.action[1]}` : '';
  $('#fleet-state').textContent = (FLEET_WORDS[f.state] || f.state).replace('an update', `update${version}`).replace('An update', `Update${version}`);
  const parts = [];
  if (f.message) parts.push(f.message);
  if (f.downloaded) parts.push(`${Math.round(f.downloaded[0] / 1048576)} of ${f.downloaded[1] ? Math.round(f.downloaded[1] / 1048576) : '?'} MB`);
  if (f.server) parts.push(`server ${f.server}, this box's id there ${f.controller_id}, running ${f.version}`);
  if (f.last_answer_unix) parts.push(`last answer ${new Date(f.last_answer_unix * 1000).toLocaleTimeString()}`);
  $('#fleet-detail').textContent = parts.join(' · ');
  $('#fleet-detail').hidden = parts.length === 0;
  if (current === 'system') fleetTimer = setTimeout(loadFleet, 3000);
}

$('#password-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const r = await api('POST', '/api/password', { current: f.get('current'), new: f.get('new') });
  $('#password-ok').hidden = r.status !== 200;
  $('[data-field=password]').textContent = r.status === 200 ? '' : (r.data && r.data.error) || `not changed (${r.status})`;
  if (r.status === 200) e.target.reset();
});

$('#backup-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const pw = new FormData(e.target).get('password');
  const r = await fetch('/api/config/backup?secrets=1', { headers: { 'x-backup-password': pw }, credentials: 'same-origin' });
  if (r.status !== 200) {
    const d = await r.json().catch(() => ({}));
    $('[data-field=backup]').textContent = d.error || `no backup (${r.status})`;
    return;
  }
  $('[data-field=backup]').textContent = '';
  const a = document.createElement('a');
  a.href = URL.createObjectURL(await r.blob());
  a.download = 'telebridge-backup.tbk';
  a.click();
});

$('#restore-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const headers = { 'x-telebridge-csrf': '1' };
  if (f.get('password')) headers['x-backup-password'] = f.get('password');
  const r = await fetch('/api/config/restore', { method: 'POST', headers, body: await f.get('file').text(), credentials: 'same-origin' });
  const d = await r.json().catch(() => ({}));
  $('#restore-ok').hidden = r.status !== 200;
  const errs = d.errors ? d.errors.map((x) => `${x.field}: ${x.message}`).join('; ') : d.error;
  $('[data-field=restore]').textContent = r.status === 200 ? '' : errs || `not restored (${r.status})`;
});

$('#update-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const file = new FormData(e.target).get('file');
  if (!confirm(`Install ${file.name}? The box restarts when it is written.`)) return;
  const state = $('#update-state');
  $('[data-field=update]').textContent = '';
  state.hidden = false;
  state.textContent = `Sending ${Math.round(file.size / 1048576)} MB…`;
  const r = await fetch('/api/update', {
    method: 'POST', body: file, credentials: 'same-origin',
    headers: { 'x-telebridge-csrf': '1', 'content-type': 'application/octet-stream' },
  }).catch(() => null);
  const d = r ? await r.json().catch(() => ({})) : {};
  if (!r || r.status !== 202) {
    state.hidden = true;
    $('[data-field=update]').textContent = d.error || `not sent (${r ? r.status : 'no answer'})`;
    return;
  }
  // Follow the helper until it has written the other system (the box then restarts).
  for (;;) {
    await new Promise((ok) => setTimeout(ok, 2000));
    const s = await api('GET', '/api/update').catch(() => null);
    if (!s || !s.data) { state.textContent = 'Restarting into the new system…'; return; }
    state.textContent = `${s.data.state}: ${s.data.message}`;
    if (s.data.state === 'failed') {
      state.hidden = true;
      $('[data-field=update]').textContent = `Not installed: ${s.data.message}`;
      return;
    }
  }
});

$('#logs-refresh').addEventListener('click', async () => {
  const r = await api('GET', '/api/logs?lines=100');
  $('#logs').textContent = r.data ? r.data.lines.join('\n') : '';
});

$('#reboot').addEventListener('click', async () => {
  if (!confirm('Reboot the box? The picture stops for about a minute.')) return;
  const r = await api('POST', '/api/reboot');
  $('[data-field=reboot]').textContent = r.status === 202 ? 'Rebooting…' : (r.data && r.data.error) || `${r.status}`;
});


// ---------- pairing ----------
let pairTimer = null;
function renderPairing(p) {
  const paired = p.paired;
  peerName = paired ? paired.peer : null;
  if (paired) {
    const how = paired.reach === 'listen' ? 'it calls this box' : `this box calls it at ${paired.calls}`;
    $('#pair-state').textContent = `Paired with ${paired.peer}: ${how}. Network RTT ${paired.rtt_ms} ms when they paired.`;
  } else {
    $('#pair-state').textContent = 'Not paired.';
  }
  $('#unpair').hidden = !paired;
  $('#pair-last').textContent = p.last || '';
  $('#pair-code').hidden = !p.code;
  $('#pair-code').textContent = p.code || '';
  $('#pair-open').textContent = p.code ? 'Show a new code' : 'Show a pairing code';
  clearTimeout(pairTimer);
  if (current === 'pair') pairTimer = setTimeout(loadPairing, 2000);
}
const PAIRING_WORDS = { open: 'showing a code', paired: 'paired', unpaired: 'not paired' };
function renderNearby(d) {
  const list = $('#nearby');
  list.replaceChildren();
  for (const b of d.boxes) {
    const li = document.createElement('li');
    const pick = document.createElement('button');
    pick.type = 'button';
    pick.textContent = `Pair with ${b.name}`;
    pick.dataset.address = b.panel;
    pick.addEventListener('click', () => {
      const f = $('#pair-form');
      f.address.value = b.panel;
      f.code.focus();
    });
    const what = document.createElement('span');
    what.className = 'what';
    what.textContent = ` ${b.role}, ${PAIRING_WORDS[b.pairing] || b.pairing}, at ${b.panel}`;
    li.append(pick, what);
    if (b.conflict && b.conflict.length) {
      // Someone else announces this box (its id, or its name at other addresses).
      const warn = document.createElement('p');
      warn.className = 'conflict';
      warn.setAttribute('role', 'alert');
      warn.textContent = `Conflict: ${b.name} is also announced from ${b.conflict.join(', ')}. ` +
        'Another machine may be posing as it; pairing still needs the code it shows, and this box calls only an address the paired box says it owns.';
      li.append(warn);
    }
    list.append(li);
  }
  const none = d.boxes.length ? '' : 'No other box found on this network yet.';
  $('#nearby-note').textContent = [none, d.note || ''].filter(Boolean).join(' ');
}
async function loadPairing() {
  const [r, n] = await Promise.all([api('GET', '/api/pairing'), api('GET', '/api/discovered')]);
  if (n.status === 200) renderNearby(n.data);
  if (r.status === 200) renderPairing(r.data);
}
$('#pair-open').addEventListener('click', async () => {
  const r = await api('POST', '/api/pairing/open');
  if (r.status === 200) renderPairing(r.data);
});
$('#unpair').addEventListener('click', async () => {
  $('[data-field=unpair]').textContent = '';
  const peer = peerName || 'the paired box';
  const onAir = lastStatus && lastStatus.running;
  const ask = onAir
    ? `This box is live with ${peer}: unpairing stops the pictures both ways now, and pairing again needs a new code. Unpair?`
    : `Unpair from ${peer}? Pairing again needs a new code shown on one of the boxes.`;
  if (!confirm(ask)) return;
  const r = await api('DELETE', '/api/pairing');
  if (r.status === 200) { renderPairing(r.data); peerName = null; }
  else $('[data-field=unpair]').textContent = (r.data && r.data.error) || `failed (${r.status})`;
});
$('#pair-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = e.target;
  const err = $('[data-field=pair]');
  err.textContent = '';
  f.querySelector('button').disabled = true;
  const r = await api('POST', '/api/pairing/join', { address: f.address.value, code: f.code.value });
  f.querySelector('button').disabled = false;
  if (r.status === 200) { f.code.value = ''; renderPairing(r.data); loadPeerName(); return; }
  const retry = r.status === 429 ? ' (wait, then try again)' : '';
  err.textContent = ((r.data && r.data.error) || `failed (${r.status})`) + retry;
});

// ---------- live events ----------
let events = null;
function startEvents() {
  if (events) return;
  events = new EventSource('/api/events');
  events.addEventListener('state', async () => {
    const st = await api('GET', '/api/status');
    if (st.status === 200) renderStatus(st.data);
  });
  events.addEventListener('levels', (e) => renderLevels(JSON.parse(e.data)));
  events.addEventListener('sample', (e) => {
    const d = JSON.parse(e.data);
    if (lastStatus) {
      lastStatus.media = d.media;
      lastStatus.links = d.links;
      lastStatus.running = d.running;
      lastStatus.led_patterns = d.leds;
      lastStatus.alerts = d.alerts;
      lastStatus.input = d.input;
      lastStatus.tally = d.tally;
      lastStatus.talk = d.talk;
      lastStatus.now_unix_ms = d.now_unix_ms;
      renderStatus(lastStatus);
    }
    appendSample(d);
  });
}

// ---------- link graphs ----------
const CHARTS = [
  ['Round-trip time', 'ms', [['RTT', '#2563eb', 'rtt_ms']]],
  ['Rate', 'Mbit/s', [['send', '#16a34a', 'send_mbps'], ['receive', '#9333ea', 'receive_mbps']]],
  ['Packets per second', 'packets', [['lost', '#f59e0b', 'lost'], ['retransmitted', '#2563eb', 'retransmitted'], ['dropped', '#dc2626', 'dropped']]],
  ['SRT buffer', 'ms', [['latency', '#6b7280', 'buffer_ms']]],
];
let minutes = 5;
let series = null; // { t: [], [key]: [] }
let plots = [];

function chartWidth() { return Math.max(280, $('#page-link').clientWidth - 16); }

function draw() {
  const box = $('#charts');
  box.textContent = '';
  plots = CHARTS.map(([title, unit, lines]) => {
    const div = document.createElement('div');
    div.className = 'chart';
    box.append(div);
    const opts = {
      title, width: chartWidth(), height: 180,
      series: [{}, ...lines.map(([label, stroke]) => ({ label, stroke, width: 2 }))],
      axes: [{}, { label: unit }],
    };
    return new uPlot(opts, [series.t, ...lines.map((l) => series[l[2]])], div);
  });
}

function redraw() {
  plots.forEach((p, i) => p.setData([series.t, ...CHARTS[i][2].map((l) => series[l[2]])]));
}

function pushRow(c) {
  series.t.push(+c[0]); series.rtt_ms.push(+c[2]); series.send_mbps.push(+c[3]); series.receive_mbps.push(+c[4]);
  series.lost.push(+c[5]); series.retransmitted.push(+c[6]); series.dropped.push(+c[7]); series.buffer_ms.push(+c[8]);
}

async function loadHistory() {
  const r = await fetch(`/api/stats.csv?minutes=${minutes}`, { credentials: 'same-origin' });
  if (r.status !== 200) return;
  const rows = (await r.text()).trim().split('\n').slice(1).map((l) => l.split(','));
  series = { t: [], rtt_ms: [], send_mbps: [], receive_mbps: [], lost: [], retransmitted: [], dropped: [], buffer_ms: [] };
  for (const c of rows) pushRow(c);
  draw();
  $('#charts').dataset.points = series.t.length;
}

function appendSample(d) {
  if (!series || current !== 'link' || !d.row) return;
  // The box's own history row for this second, as the CSV has it (per-second deltas included).
  pushRow(d.row.split(','));
  const keep = minutes * 60;
  if (series.t.length > keep) for (const k of Object.keys(series)) series[k].splice(0, series[k].length - keep);
  redraw();
  $('#charts').dataset.points = series.t.length;
}

$$('.range button').forEach((b) => b.addEventListener('click', () => {
  minutes = +b.dataset.minutes;
  $$('.range button').forEach((x) => x.classList.toggle('on', x === b));
  $('#csv-link').href = `/api/stats.csv?minutes=${minutes}`;
  loadHistory();
}));
window.addEventListener('resize', () => plots.forEach((p) => p.setSize({ width: chartWidth(), height: 180 })));

window.addEventListener('DOMContentLoaded', boot);
