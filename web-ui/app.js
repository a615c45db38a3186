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
  const r = await fetch(path, opts);
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

function enter(status) {
  $('#nav').hidden = false;
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

$('#preview').addEventListener('load', (e) => { e.target.hidden = false; });
$('#preview').addEventListener('error', (e) => { e.target.hidden = true; });
$('#received').addEventListener('load', (e) => { e.target.hidden = false; });
$('#received').addEventListener('error', (e) => { e.target.hidden = true; });

// ---------- status ----------
const WORDS = { booting: 'Starting', ready: 'Ready', going_live: 'Going live', live: 'Live', degraded: 'Live, degraded', error: 'Needs attention' };
const LED_NAMES = ['power', 'link', 'live', 'error', 'tally'];
const LED_COLOURS = ['#2563eb', '#16a34a', '#dc2626', '#f59e0b', '#b91c1c'];
let lastStatus = null;

function renderTally(t) {
  const why = [t && t.cue && 'the control room', t && t.wired && "the mixer's tally input", t && t.far_live && 'the paired box is live'].filter(Boolean);
  $('#tally').hidden = !(t && t.on_air);
  $('#tally').textContent = `On air: ${why.join(', ')}`;
}

const TALK_WORDS = {
  idle: '', talking: 'Talking to the paired box', listening: 'The paired box is talking', waiting: 'Waiting: the paired box is talking',
};
function renderTalk(s) {
  $('#talk-card').hidden = s.role !== 'bridge';
  const t = s.talk || {};
  $('#talk-state').textContent = t.error || TALK_WORDS[t.state] || '';
  $('#talk-button').classList.toggle('held', t.state === 'talking');
}
// Push to talk: pressed while the pointer (or the space bar on the button) holds it, renewed
// every 500 ms (the box lets go by itself 1.5 s after the last renewal). The pointer is captured:
// the page moving under a held finger (a badge appearing) does not let go; leaving the window
// does.
let talkTimer = null;
function talkDown() {
  if (talkTimer) return;
  const renew = () => api('POST', '/api/talk', { talking: true });
  renew();
  talkTimer = setInterval(renew, 500);
}
function talkUp() {
  if (!talkTimer) return;
  clearInterval(talkTimer);
  talkTimer = null;
  api('POST', '/api/talk', { talking: false });
}
const talkButton = $('#talk-button');
talkButton.addEventListener('pointerdown', (e) => {
  e.preventDefault();
  talkButton.setPointerCapture(e.pointerId);
  talkDown();
});
for (const ev of ['pointerup', 'pointercancel', 'lostpointercapture', 'blur']) talkButton.addEventListener(ev, talkUp);
window.addEventListener('blur', talkUp);
talkButton.addEventListener('keydown', (e) => { if (e.key === ' ' && !e.repeat) { e.preventDefault(); talkDown(); } });
talkButton.addEventListener('keyup', (e) => { if (e.key === ' ') talkUp(); });

function renderStatus(s) {
  lastStatus = s;
  $('#box-name').textContent = s.name;
  const state = s.machine.state;
  $('#state-card').className = `card s-${state}`;
  $('#state-word').textContent = WORDS[state] || state;
  $('#state-reason').textContent = s.machine.reason || '';
  const alerts = $('#alerts');
  alerts.textContent = '';
  for (const a of s.alerts || []) {
    const li = document.createElement('li');
    li.textContent = a;
    alerts.append(li);
  }
  const running = s.running;
  const b = $('#live-button');
  b.textContent = running ? 'Stop' : 'Go live';
  b.className = `big ${running ? 'stop' : 'go'}`;
  renderLeds(s.led_patterns);
  renderTally(s.tally);
  renderTalk(s);
  const m = s.media || {};
  const list = $('#outputs-list');
  list.textContent = '';
  const links = s.links || [];
  if (!links.length) list.innerHTML = '<li>Not running.</li>';
  for (const o of links) {
    const li = document.createElement('li');
    const badge = document.createElement('span');
    badge.className = `badge b-${o.state}`;
    badge.textContent = o.state;
    li.append(badge, ` ${o.name}`);
    if (o.reason) li.append(` — ${o.reason}`);
    if (o.latency) {
      const why = document.createElement('div');
      why.className = 'hint latency-why';
      why.textContent = o.latency;
      li.append(why);
    }
    for (const u of o.uplinks || []) {
      const row = document.createElement('div');
      row.className = 'hint uplink';
      row.textContent = u;
      li.append(row);
    }
    list.append(li);
  }
  const img = $('#preview');
  const sending = m.sending || (m.encoder ? m : null);
  if (sending && running && !(s.input && !s.input.signal)) {
    const now = Date.now();
    if (!img.dataset.at || now - img.dataset.at > 2000) {
      img.dataset.at = now;
      img.src = `/api/preview.jpg?t=${now}`;
    }
  } else {
    img.hidden = true;
  }
  // The bridge: the paired box's picture beside this one's.
  const rec = $('#received');
  $('#received-box').hidden = !m.sending;
  if (m.sending && running) {
    const now = Date.now();
    if (!rec.dataset.at || now - rec.dataset.at > 2000) {
      rec.dataset.at = now;
      rec.src = `/api/preview-received.jpg?t=${now}`;
    }
  } else {
    rec.hidden = true;
  }
  if (m.sending) {
    const e = m.sending.encoder;
    const r = m.receiving && m.receiving.decoder;
    const from = r && r.frames_decoded ? `receiving ${r.width}x${r.height}, ${r.fps.toFixed(1)} fps` : 'nothing received yet';
    $('#input-format').textContent = `Sending ${e.element}: ${e.fps.toFixed(1)} fps, ${Math.round(e.bitrate_kbps)} kbit/s; ${from}`;
  } else if (m.encoder) {
    $('#input-format').textContent = `${m.encoder.element}: ${m.encoder.fps.toFixed(1)} fps, ${Math.round(m.encoder.bitrate_kbps)} kbit/s`;
  } else if (m.decoder) {
    $('#input-format').textContent = `${m.decoder.width}x${m.decoder.height}, ${m.decoder.fps.toFixed(1)} fps (${m.decoder.element})`;
  } else {
    $('#input-format').textContent = s.input ? `${s.input.format} (not running)` : `${s.role}, not running`;
  }
  if (s.input && !s.input.signal) $('#input-format').textContent = `No signal — ${$('#input-format').textContent}`;
  // The adaptive bitrate: what the box chose and why ("link carries 2.1 Mbit/s: holding").
  const rate = (m.sending && m.sending.rate) || m.rate;
  $('#rate').hidden = !rate;
  if (rate) {
    $('#rate').textContent = `Bitrate ${(rate.video_kbps / 1000).toFixed(1)} Mbit/s of ${(rate.max_video_kbps / 1000).toFixed(1)} — ${rate.reason}`;
  }
  // What the decoder measures from the sender's marks: latency and lip sync.
  const rx = m.receiving || (m.decoder ? m : null);
  const parts = [];
  if (rx && rx.latency) parts.push(`Glass to glass ${Math.round(rx.latency.p50_ms)} ms`);
  if (rx && rx.av_offset) {
    const a = rx.av_offset;
    const ms = Math.round(Math.abs(a.p50_ms));
    const where = ms === 0 ? 'with the picture' : `${ms} ms ${a.p50_ms < 0 ? 'behind' : 'ahead of'} the picture`;
    parts.push(`sound ${where}${a.within_tolerance ? '' : ' (outside EBU R37: 60 ms behind to 40 ms ahead)'}`);
  }
  $('#sync').hidden = !parts.length;
  $('#sync').textContent = parts.join('; ');
  // Why this encoder (or decoder): the board, its kernel, what is installed and works.
  const codec = (m.sending && m.sending.encoder) || m.encoder || m.decoder;
  $('#codec-reason').textContent = codec && codec.reason ? `Why ${codec.element}: ${codec.reason}` : '';
}

function renderLeds(patterns) {
  const box = $('#leds');
  box.textContent = '';
  patterns.forEach((p, i) => {
    const d = document.createElement('span');
    d.className = `led ${p}`;
    d.style.setProperty('--c', LED_COLOURS[i]);
    d.title = p.replace('_', ' ');
    d.innerHTML = '<i></i>';
    d.append(LED_NAMES[i]);
    box.append(d);
  });
}

$('#live-button').addEventListener('click', async () => {
  const running = lastStatus && lastStatus.running;
  const r = await api('POST', '/api/live', { live: !running });
  // Refused (an encoder with no output): say why beside the button.
  const refused = $('#live-refused');
  refused.hidden = r.status < 400;
  refused.textContent = r.status < 400 ? '' : ((r.data && r.data.error) || `refused (${r.status})`);
  const st = await api('GET', '/api/status');
  if (st.status === 200) renderStatus(st.data);
});

// ---------- pairing ----------
let pairTimer = null;
function renderPairing(p) {
  const paired = p.paired;
  if (paired) {
    const how = paired.reach === 'listen' ? 'it calls this box' : `this box calls it at ${paired.calls}`;
    $('#pair-state').textContent = `Paired with ${paired.peer}: ${how}; round trip ${paired.rtt_ms} ms when paired.`;
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
  const r = await api('DELETE', '/api/pairing');
  if (r.status === 200) renderPairing(r.data);
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
  if (r.status === 200) { f.code.value = ''; renderPairing(r.data); return; }
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
      renderStatus(lastStatus);
    }
    appendSample(d);
  });
}

// ---------- settings ----------
const FIELDS = [
  ['name', 'Box name', 'Shown on the slate and in this panel. Letters, digits, - and _.'],
  ['role', 'Role', 'Encoder sends a picture; decoder receives one and shows it on HDMI; bridge does both with the paired box (see Pair).', ['encoder', 'decoder', 'bridge']],
  ['start_live', 'Go live at power-on', 'Start sending as soon as the box has booted.', 'bool'],
  ['video.source', 'Video source', 'test, v4l2:/dev/video0 (HDMI bridge or USB capture) or libcamera.'],
  ['video.width', 'Width', 'Pixels, even, 160-1920.', 'number'],
  ['video.height', 'Height', 'Pixels, even, 120-1080.', 'number'],
  ['video.fps', 'Frames per second', '9-60.', 'number'],
  ['video.bitrate_kbps', 'Video bitrate (kbit/s)', '100-50000. Keep it under what the link carries; 4000 suits 720p30.', 'number'],
  ['video.bitrate_mode', 'Bitrate mode', 'adaptive follows what the SRT links carry, between the least bitrate and the video bitrate; fixed sends the video bitrate whatever the link does.', ['adaptive', 'fixed']],
  ['video.min_bitrate_kbps', 'Least bitrate (kbit/s)', '100 up to the video bitrate: the least adaptive goes to.', 'number'],
  ['video.keyframe_ms', 'Keyframe interval (ms)', '100-10000. Shorter recovers faster after loss, costs bitrate.', 'number'],
  ['video.encoder', 'Encoder', 'auto picks the hardware encoder where the Pi has one.', ['auto', 'v4l2h264enc', 'x264enc', 'openh264enc']],
  ['video.x264_preset', 'x264 preset', 'Faster presets use less CPU; slower look better.', ['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium']],
  ['audio.source', 'Audio source', 'test (a beep once a second, with a flash in the test picture) or alsa:DEVICE.'],
  ['audio.codec', 'Audio codec', 'auto: opus in the bridge role, aac otherwise. aac plays everywhere; opus has the least delay (another Telebridge box, ffmpeg or VLC at the other end); none for no sound.', ['auto', 'aac', 'opus', 'none']],
  ['audio.bitrate_kbps', 'Audio bitrate (kbit/s)', '32-320.', 'number'],
  ['audio.delay_ms', 'Audio delay (ms)', '-500 to 500. Plays the sound later (or, negative, earlier) for a source known to be off; the decoder\'s A/V offset shows what arrives.', 'number'],
  ['bridge.latency', 'Bridge SRT latency', 'auto: chosen before each connection from the round trip and loss measured on the last (3 x RTT up to 1 % loss, 4 x up to 3 %, 5 x up to 7 %, 6 x beyond); or ms (20-8000) to pin it.'],
  ['bridge.min_latency_ms', 'Least bridge latency (ms)', '20-8000: the least auto chooses.', 'number'],
  ['talkback.source', 'Talkback microphone', 'Bridge role: none, alsa:DEVICE (a USB headset, e.g. alsa:hw:CARD=Headset) or test (a 440 Hz beep at each second). Heard by the paired box while Hold to talk is held.'],
  ['talkback.output', 'Talkback headphones', 'Where the paired box\'s voice is heard: alsa:DEVICE (e.g. alsa:default), file:PATH (a WAV file) or none. Never mixed into the programme.'],
  ['decoder.input', 'Decoder input', 'srt://:9000?mode=listener&latency=200 to wait for a caller.'],
  ['decoder.sink', 'Decoder output', 'auto, kms (HDMI), window, fake or file:PATH.'],
  ['web.announce', 'Announce on the network', 'Other Telebridge boxes on this network list this box on their Pair page (mDNS: its name, role, whether it is paired, its panel port; nothing secret).', 'bool'],
  ['web.metrics_token', 'Metrics token', 'A bearer token for /metrics, 16+ characters; empty for none. Shown as **** once set.'],
];
let loadedConfig = null;

const get = (obj, path) => path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
function set(obj, path, v) {
  const ks = path.split('.');
  const last = ks.pop();
  ks.reduce((o, k) => o[k], obj)[last] = v;
}

function field(path, label, hint, kind, value) {
  const l = document.createElement('label');
  l.textContent = label;
  let input;
  if (Array.isArray(kind)) {
    input = document.createElement('select');
    for (const o of kind) input.append(new Option(o, o));
  } else {
    input = document.createElement('input');
    input.type = kind === 'number' ? 'number' : kind === 'bool' ? 'checkbox' : 'text';
  }
  input.dataset.path = path;
  input.name = path;
  if (kind === 'bool') input.checked = !!value; else input.value = value == null ? '' : value;
  const h = document.createElement('small');
  h.className = 'hint';
  h.textContent = hint;
  const err = document.createElement('p');
  err.className = 'error';
  err.dataset.field = path;
  l.append(input, h, err);
  return l;
}

async function loadSettings() {
  const r = await api('GET', '/api/config');
  if (r.status !== 200) return;
  loadedConfig = r.data;
  const box = $('#settings-fields');
  box.textContent = '';
  let group = null;
  for (const [path, label, hint, kind] of FIELDS) {
    const section = path.includes('.') ? path.split('.')[0] : 'box';
    if (!group || group.dataset.section !== section) {
      group = document.createElement('fieldset');
      group.dataset.section = section;
      const lg = document.createElement('legend');
      lg.textContent = { box: 'Box', video: 'Video', audio: 'Audio', decoder: 'Decoder', web: 'Panel' }[section];
      group.append(lg);
      box.append(group);
    }
    group.append(field(path, label, hint, kind, get(loadedConfig, path)));
  }
  renderOutputs(loadedConfig.outputs);
  $('#settings-saved').hidden = true;
}

function renderOutputs(outputs) {
  const box = $('#outputs-edit');
  box.textContent = '';
  outputs.forEach((o, i) => {
    const row = document.createElement('div');
    row.className = 'output-row';
    row.append(
      field(`outputs[${i}].url`, `Output ${i + 1} URL`, 'srt://HOST:PORT (add ?bond=eth0,wwan0 to spread it over several uplinks to a bonding receiver), srt://:PORT?mode=listener, rtmp(s)://HOST/APP/KEY or file:/DIR/NAME.ts. Secrets show as ****; leave them to keep them.', 'text', o.url),
      field(`outputs[${i}].name`, 'Name (optional)', 'Shown in the status and the logs.', 'text', o.name || ''),
    );
    const rm = document.createElement('button');
    rm.type = 'button';
    rm.textContent = 'Remove';
    rm.addEventListener('click', () => { collectOutputs(); loadedConfig.outputs.splice(i, 1); renderOutputs(loadedConfig.outputs); });
    row.append(rm);
    box.append(row);
  });
}

function collectOutputs() {
  loadedConfig.outputs = loadedConfig.outputs.map((o, i) => {
    const url = $(`[data-path="outputs[${i}].url"]`).value.trim();
    const name = $(`[data-path="outputs[${i}].name"]`).value.trim();
    return name ? { url, name } : { url };
  });
}

$('#add-output').addEventListener('click', () => {
  collectOutputs();
  loadedConfig.outputs.push({ url: 'srt://:9000?mode=listener' });
  renderOutputs(loadedConfig.outputs);
});

$('#settings-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const c = JSON.parse(JSON.stringify(loadedConfig));
  for (const [path, , , kind] of FIELDS) {
    const input = $(`[data-path="${path}"]`);
    set(c, path, kind === 'number' ? Number(input.value) : kind === 'bool' ? input.checked : input.value);
  }
  collectOutputs();
  c.outputs = loadedConfig.outputs;
  $$('#page-settings .error').forEach((p) => { p.textContent = ''; });
  $$('#page-settings input.bad').forEach((i) => i.classList.remove('bad'));
  const r = await api('PUT', '/api/config', c);
  if (r.status === 200) {
    loadedConfig = r.data.config;
    $('#settings-saved').hidden = false;
    return;
  }
  $('#settings-saved').hidden = true;
  for (const err of (r.data && r.data.errors) || [{ field: '', message: (r.data && r.data.error) || `not saved (${r.status})` }]) {
    const p = $(`#page-settings .error[data-field="${err.field}"]`) || $('#page-settings .error[data-field=""]');
    p.textContent = err.message;
    const input = $(`[data-path="${err.field}"]`);
    if (input) { input.classList.add('bad'); input.scrollIntoView({ block: 'center' }); }
  }
});

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

boot();
