// Telebridge panel: Settings. Sections for what the box's role uses; sources, outputs and
// interfaces picked from what the box has (GET /api/devices); outputs and the decoder's input as
// forms whose URL is shown for copying; every error under its field. The box validates (one
// validation with `telebridge config check`); the panel only lays out and reports.
'use strict';

const ALL = ['encoder', 'decoder', 'bridge'];
const SENDS = ['encoder', 'bridge'];
const SHOWS = ['decoder', 'bridge'];
// [path, label, hint, kind, roles]. kind: 'text', 'number', 'bool', an array of values, or
// 'menu:KEY' (a list from /api/devices).
const SECTIONS = [
  ['box', 'Box', [
    ['name', 'Box name', 'Shown on the slate, in this panel and to other boxes. 1-63 letters, digits, - and _.', 'text', ALL],
    ['role', 'Role', 'Encoder sends a picture; decoder receives one and shows it on HDMI; bridge does both with the paired box (see Pair). Save to see the role\'s settings.', ['encoder', 'decoder', 'bridge'], ALL],
    ['start_live', 'Start at power-on', 'Go live (or start receiving) as soon as the box has booted.', 'bool', ALL],
  ]],
  ['video', 'Picture', [
    ['video.source', 'Video source', 'What this box has: the test pattern, its capture devices by name, the Pi camera.', 'menu:video_sources', SENDS],
    ['video.width', 'Width (pixels)', 'Even, 160-1920.', 'number', SENDS],
    ['video.height', 'Height (pixels)', 'Even, 120-1080.', 'number', SENDS],
    ['video.fps', 'Frames per second', '9-60.', 'number', SENDS],
    ['video.bitrate_kbps', 'Video bitrate (kbit/s)', '100-50000. The most the adaptive bitrate goes to; 4000 suits 720p30.', 'number', SENDS],
    ['video.bitrate_mode', 'Bitrate mode', 'adaptive follows what the SRT links carry, between the least bitrate and the video bitrate; fixed sends the video bitrate whatever the link does.', ['adaptive', 'fixed'], SENDS],
    ['video.min_bitrate_kbps', 'Least bitrate (kbit/s)', '100 up to the video bitrate: the least adaptive goes to.', 'number', SENDS],
    ['video.frame_rate_step_down', 'Halve the frame rate below the least bitrate', 'Rather than a blurred picture on a very poor link, send every other frame.', 'bool', SENDS],
    ['video.keyframe_ms', 'Keyframe interval (ms)', '100-10000. Shorter recovers faster after loss, costs bitrate.', 'number', SENDS],
    ['video.encoder', 'Encoder', 'auto picks the hardware encoder where the Pi has one (Pi 0-4), x264 elsewhere.', ['auto', 'v4l2h264enc', 'x264enc', 'openh264enc'], SENDS],
    ['video.x264_preset', 'x264 preset', 'Faster presets use less CPU; slower look better.', ['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium'], SENDS],
  ]],
  ['audio', 'Sound', [
    ['audio.source', 'Audio source', 'The test tone or one of this box\'s sound cards.', 'menu:audio_sources', SENDS],
    ['audio.codec', 'Audio codec', 'auto: opus in the bridge role, aac otherwise. aac plays everywhere; opus has the least delay; none for no sound.', ['auto', 'aac', 'opus', 'none'], SENDS],
    ['audio.bitrate_kbps', 'Audio bitrate (kbit/s)', '32-320.', 'number', SENDS],
    ['audio.delay_ms', 'Audio delay (ms)', '-500 to 500. Plays the sound later (or, negative, earlier) for a source known to be off.', 'number', SENDS],
  ]],
  ['decoder', 'Receiving', [
    ['decoder.input', 'Input', 'Where the stream comes from.', 'srt-input', ['decoder']],
    ['decoder.sink', 'Picture out', 'HDMI on a Pi; a window or nowhere elsewhere.', 'menu:video_sinks', SHOWS],
    ['decoder.audio_out', 'Sound out', 'discard, or a sound card (alsa:DEVICE).', 'menu:audio_outs', SHOWS],
  ]],
  ['bridge', 'Bridge', [
    ['bridge.port', 'Bridge port (UDP)', '1-65535: the box that listens listens here; the paired box calls it.', 'number', ['bridge']],
    ['bridge.latency', 'Bridge SRT latency', 'auto: chosen before each connection from the round trip and loss measured on the last; or ms (20-8000) to pin it.', 'text', ['bridge']],
    ['bridge.min_latency_ms', 'Least bridge latency (ms)', '20-8000: the least auto chooses.', 'number', ['bridge']],
    ['bridge.port_mapping', 'Ask the router to pass the port (UPnP)', 'When this box listens behind a home router.', 'bool', ['bridge']],
    ['bridge.relay', 'Meeting point', 'HOST:FIRST-LAST of a telebridge relay --meet both boxes reach, tried last; the same on both boxes; empty for none.', 'text', ['bridge']],
    ['bridge.record', 'Record what arrives', 'file:/DIR/NAME-%Y%m%d-%H%M%S.ts?segment=10m, or empty for none.', 'text', ['bridge']],
  ]],
  ['talkback', 'Talkback', [
    ['talkback.source', 'Talkback microphone', 'Heard by the paired box while Hold to talk is held.', 'menu:talk_sources', ['bridge']],
    ['talkback.output', 'Talkback headphones', 'Where the paired box\'s voice is heard; never mixed into the programme.', 'menu:talk_outputs', ['bridge']],
  ]],
  ['gpio', 'Buttons and lights', [
    ['gpio.led_tally', 'Tally LED pin', 'BCM GPIO number, -1 for none.', 'number', ALL],
    ['gpio.tally_in', 'Tally input pin', 'From a vision mixer\'s tally output (a contact to ground); BCM GPIO number, -1 for none.', 'number', ALL],
    ['gpio.talk_button', 'Talk button pin', 'Push to talk; BCM GPIO number, -1 for none.', 'number', ['bridge']],
    ['gpio.button', 'Go-live button pin', 'BCM GPIO number.', 'number', ALL],
  ]],
  ['web', 'Panel', [
    ['web.announce', 'Announce on the network', 'Other Telebridge boxes on this network list this box on their Pair page (mDNS: its name, role, whether it is paired, its panel port; nothing secret).', 'bool', ALL],
    ['web.metrics_token', 'Read-only token', 'A bearer token for /metrics and the live monitor (a monitor wall), 16+ characters; empty for none. Shown as **** once set.', 'text', ALL],
    ['web.monitor_viewers', 'Live monitor viewers', '0-16 browsers watching at once (each its own stream from the box); 0 switches the monitor off.', 'number', ALL],
  ]],
  ['fleet', 'Fleet updates', [
    ['fleet.server', 'Update server', 'https://HOST[:PORT][/PATH] of a hawkBit or gooseBit server; empty: off. The box asks it for updates and installs the signed bundles it assigns; System shows how it stands.', 'text', ALL],
    ['fleet.tenant', 'Tenant', 'The server\'s tenant (hawkBit\'s and gooseBit\'s default: DEFAULT).', 'text', ALL],
    ['fleet.controller_id', 'Box id on the server', '1-64 letters, digits and -_.; empty: the box name.', 'text', ALL],
    ['fleet.target_token', 'Target token', 'The token the server made for this box; empty for none. Shown as **** once set.', 'text', ALL],
    ['fleet.gateway_token', 'Gateway token', 'Instead of a target token: the tenant\'s gateway token. Shown as **** once set.', 'text', ALL],
    ['fleet.update_on_air', 'Install while on air', 'Otherwise an update waits until the box stops, and says so here and to the server.', 'bool', ALL],
    ['fleet.tls_verify', 'Check the server\'s certificate', 'Against the system\'s certificate authorities; off only for a test server.', 'bool', ALL],
  ]],
];
let loadedConfig = null;
let devices = null;

const get = (obj, path) => path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
function set(obj, path, v) {
  const ks = path.split('.');
  const last = ks.pop();
  ks.reduce((o, k) => o[k], obj)[last] = v;
}

// ---------- SRT and output URLs as forms ----------
// "srt://host:port?mode=listener&latency=200&passphrase=****" to its parts, unknown parameters kept.
function parseUrl(url) {
  const m = /^([a-z]+):\/\/(\[[^\]]*\]|[^:/?]*)?(?::(\d+))?([^?]*)(?:\?(.*))?$/.exec(url || '');
  if (!m) return null;
  const params = new URLSearchParams(m[5] || '');
  return { scheme: m[1], host: (m[2] || '').replace(/^\[|\]$/g, ''), port: m[3] || '', path: m[4] || '', params };
}
const OUT_KINDS = [
  ['srt-caller', 'SRT, calling a receiver'], ['srt-listener', 'SRT, waiting for callers'], ['srt-rendezvous', 'SRT rendezvous'],
  ['srt-bond', 'SRT bonded over several uplinks'], ['rtmp', 'RTMP or RTMPS (a platform)'],
  ['whip', 'WHIP (WebRTC)'], ['file', 'Recording to a file'],
];
const isWhip = (url) => /^(https?|whip):\/\//.test(url || '');
// A WHIP URL's endpoint (without token=) and whether it had a token.
function whipParts(url) {
  const [head, query = ''] = url.split('?');
  const q = query.split('&').filter(Boolean);
  const token = q.find((p) => p.startsWith('token='));
  const rest = q.filter((p) => !p.startsWith('token='));
  return { endpoint: rest.length ? `${head}?${rest.join('&')}` : head, token: token ? token.slice(6) : '' };
}
function kindOf(url) {
  if (url.startsWith('rtmp')) return 'rtmp';
  if (isWhip(url)) return 'whip';
  if (url.startsWith('file:')) return 'file';
  const u = parseUrl(url);
  if (!u) return 'srt-caller';
  if (u.params.get('bond')) return 'srt-bond';
  const mode = u.params.get('mode') || (u.host ? 'caller' : 'listener');
  return `srt-${mode}`;
}
const SRT_OWN = ['mode', 'latency', 'passphrase', 'streamid', 'bond', 'pbkeylen'];

// One output's (or the input's) form. `io` is 'output' or 'input'.
function urlForm(prefix, url, io) {
  const box = el('div', { class: 'url-form' });
  const kinds = io === 'input' ? OUT_KINDS.filter(([k]) => ['srt-listener', 'srt-caller', 'srt-rendezvous'].includes(k)) : OUT_KINDS;
  const u = parseUrl(url) || { host: '', port: '', path: '', params: new URLSearchParams() };
  const kind = kindOf(url || 'srt://:9000?mode=listener');
  const input = (name, label, hint, attrs = {}) => {
    const id = `${prefix}-${name}`;
    const i = el('input', { id, 'data-part': name, ...attrs });
    const l = el('label', { for: id, 'data-part-label': name }, label, i, hint ? el('small', { class: 'hint' }, hint) : null);
    return [l, i];
  };
  const kindSel = el('select', { 'data-part': 'kind', id: `${prefix}-kind` });
  for (const [k, label] of kinds) kindSel.append(new Option(label, k));
  kindSel.value = kind;
  const [hostL, host] = input('host', 'Host', 'The receiver\'s address or name.');
  const [portL, port] = input('port', 'Port', '1-65535.', { inputmode: 'numeric' });
  const [latL, lat] = input('latency', 'SRT latency (ms)', '20-8000; empty for the box\'s choice (at least 2.5 x the RTT).', { inputmode: 'numeric' });
  const [ppL, pp] = input('passphrase', 'Passphrase', 'AES encryption, 10-79 characters; empty for none.', { type: 'password', autocomplete: 'new-password' });
  const [sidL, sid] = input('streamid', 'Stream id', 'Optional: what the receiver expects (streamid=).');
  const [serverL, server] = input('server', 'Server', 'rtmp://HOST/APP or rtmps://HOST/APP.');
  const [keyL, key] = input('key', 'Stream key', 'From the platform; kept secret.', { type: 'password', autocomplete: 'off' });
  const [endL, endpoint] = input('endpoint', 'WHIP endpoint', 'https://HOST/PATH, as the service gives it (whip:// or http:// for a server without TLS).', { inputmode: 'url' });
  const [tokL, token] = input('token', 'Bearer token', 'From the service, if it gives one; kept secret.', { type: 'password', autocomplete: 'off' });
  const [pathL, path] = input('path', 'File', '/DIR/NAME.ts; %Y%m%d-%H%M%S in the name stamps each recording.');
  const upl = el('fieldset', { class: 'uplinks', 'data-part': 'uplinks' }, el('legend', {}, 'Uplinks'));
  const bond = (u.params.get('bond') || '').split(',').filter(Boolean);
  const names = new Set([...(devices ? devices.interfaces.map((c) => c.value) : []), ...bond]);
  for (const n of names) {
    const known = devices && devices.interfaces.find((c) => c.value === n);
    const cb = el('input', { type: 'checkbox', value: n, id: `${prefix}-up-${n}` });
    cb.checked = bond.includes(n);
    upl.append(el('label', { class: 'check', for: cb.id }, cb, ` ${known ? known.label : `${n} (not on this box)`}`));
  }
  upl.append(el('small', { class: 'hint' }, 'The network interfaces to spread the stream over (srtla, to a bonding receiver).'));
  host.value = u.host;
  port.value = u.port;
  lat.value = u.params.get('latency') || '';
  const hadSecret = u.params.get('passphrase') === '****';
  pp.placeholder = hadSecret ? 'unchanged (set)' : '';
  sid.value = u.params.get('streamid') || '';
  if (url && url.startsWith('rtmp')) {
    const i = url.lastIndexOf('/');
    server.value = url.slice(0, i);
    key.placeholder = url.slice(i + 1) === '****' ? 'unchanged (set)' : '';
    if (url.slice(i + 1) !== '****') key.value = url.slice(i + 1);
  }
  if (url && url.startsWith('file:')) path.value = url.slice(5);
  if (isWhip(url)) {
    const w = whipParts(url);
    endpoint.value = w.endpoint;
    token.placeholder = w.token === '****' ? 'unchanged (set)' : '';
    if (w.token !== '****') token.value = w.token;
  }
  const shown = el('input', { readonly: '', 'data-part': 'url', id: `${prefix}-url`, 'aria-label': 'The URL' });
  const urlL = el('label', { for: shown.id, class: 'url-shown' }, 'URL (to copy)', shown);
  const extra = [...u.params].filter(([k]) => !SRT_OWN.includes(k));
  // The URL from the form; secrets typed are sent, secrets left empty stay the box's (****).
  box.url = () => {
    const k = kindSel.value;
    if (k === 'rtmp') return `${server.value.trim().replace(/\/$/, '')}/${key.value.trim() || (key.placeholder ? '****' : '')}`;
    if (k === 'file') return `file:${path.value.trim()}`;
    if (k === 'whip') {
      const t = token.value.trim() || (token.placeholder ? '****' : '');
      const e = endpoint.value.trim();
      return t ? `${e}${e.includes('?') ? '&' : '?'}token=${t}` : e;
    }
    const q = new URLSearchParams();
    const mode = k === 'srt-bond' ? 'caller' : k.slice(4);
    if (mode !== 'caller') q.set('mode', mode);
    if (lat.value.trim()) q.set('latency', lat.value.trim());
    if (pp.value) q.set('passphrase', pp.value);
    else if (hadSecret) q.set('passphrase', '****');
    if (pp.value || hadSecret) q.set('pbkeylen', u.params.get('pbkeylen') || '32');
    if (sid.value.trim()) q.set('streamid', sid.value.trim());
    if (k === 'srt-bond') q.set('bond', $$('input:checked', upl).map((c) => c.value).join(','));
    for (const [a, b] of extra) q.set(a, b);
    const h = mode === 'listener' ? '' : (host.value.includes(':') ? `[${host.value.trim()}]` : host.value.trim());
    const qs = q.toString().replace(/%2C/g, ',').replace(/%2A/g, '*');
    return `srt://${h}:${port.value.trim()}${qs ? `?${qs}` : ''}`;
  };
  const layout = () => {
    const k = kindSel.value;
    const srt = k.startsWith('srt');
    hostL.hidden = !srt || k === 'srt-listener';
    for (const l of [portL, latL, ppL, sidL]) l.hidden = !srt;
    upl.hidden = k !== 'srt-bond';
    serverL.hidden = keyL.hidden = k !== 'rtmp';
    endL.hidden = tokL.hidden = k !== 'whip';
    pathL.hidden = k !== 'file';
    // The URL shown never carries a secret typed here.
    shown.value = box.url().replace(/(passphrase=|token=)[^&]*/, '$1****').replace(/^(rtmps?:\/\/.*\/)[^/]+$/, '$1****');
  };
  box.addEventListener('input', layout);
  box.addEventListener('change', layout);
  const kindL = el('label', { for: kindSel.id }, 'Kind', kindSel);
  box.append(kindL, hostL, portL, latL, ppL, sidL, upl, serverL, keyL, endL, tokL, pathL, urlL,
    el('p', { class: 'error', 'data-field': io === 'input' ? prefix : `${prefix}.url`, id: `err-${prefix}-url` }));
  layout();
  return box;
}

// ---------- fields ----------
function choicesFor(kind, value) {
  if (Array.isArray(kind)) return kind.map((v) => [v, v]);
  const key = kind.slice(5);
  let list = devices ? devices[key] || [] : [];
  if (key === 'audio_outs') {
    list = [{ value: 'discard', label: 'Nowhere (discard)' }, ...(devices ? devices.talk_outputs.filter((c) => c.value !== 'none') : [])];
  }
  const out = list.map((c) => [c.value, c.label]);
  if (value != null && value !== '' && !out.some(([v]) => v === value)) out.push([value, `${value} (not on this box now)`]);
  return out;
}

function field(path, label, hint, kind, value) {
  const id = `f-${path}`;
  const errId = `err-${path}`;
  let input;
  if (kind === 'srt-input') {
    const wrap = el('div', { class: 'field' }, el('h3', {}, label), urlForm(path, value, 'input'));
    wrap.dataset.path = path;
    return wrap;
  }
  if (Array.isArray(kind) || String(kind).startsWith('menu:')) {
    input = el('select', { id });
    for (const [v, l] of choicesFor(kind, value)) input.append(new Option(l, v));
  } else {
    input = el('input', { id, type: kind === 'number' ? 'number' : kind === 'bool' ? 'checkbox' : 'text' });
    if (kind === 'text') input.maxLength = 256;
  }
  input.dataset.path = path;
  input.dataset.kind = Array.isArray(kind) ? 'choice' : kind;
  input.name = path;
  input.setAttribute('aria-describedby', `${id}-hint ${errId}`);
  if (kind === 'bool') input.checked = !!value; else input.value = value == null ? '' : value;
  const h = el('small', { class: 'hint', id: `${id}-hint` }, hint);
  const err = el('p', { class: 'error', id: errId, 'data-field': path });
  const l = el('label', { for: id, class: kind === 'bool' ? 'check' : '' }, label);
  return el('div', { class: 'field' }, ...(kind === 'bool' ? [el('label', { for: id, class: 'check' }, input, ` ${label}`)] : [l, input]), h, err);
}

async function loadSettings() {
  const [r, d] = await Promise.all([api('GET', '/api/config'), api('GET', '/api/devices')]);
  if (r.status !== 200) return;
  devices = d.status === 200 ? d.data : null;
  loadedConfig = r.data;
  renderSettings();
  $('#settings-saved').hidden = true;
}

function renderSettings() {
  const role = loadedConfig.role;
  const box = $('#settings-fields');
  box.textContent = '';
  const article = role === 'encoder' ? 'an' : 'a';
  $('#settings-role-note').textContent = `Showing what ${article} ${role} uses. Change Role and save to see another role's settings; the others are kept.`;
  for (const [key, title, fields] of SECTIONS) {
    const shown = fields.filter((f) => f[4].includes(role));
    if (!shown.length) continue;
    const group = el('fieldset', { 'data-section': key }, el('legend', {}, title));
    for (const [path, label, hint, kind] of shown) group.append(field(path, label, hint, kind, get(loadedConfig, path)));
    box.append(group);
  }
  $('#outputs-section').hidden = !SENDS.includes(role);
  renderOutputs(loadedConfig.outputs);
}

function renderOutputs(outputs) {
  const box = $('#outputs-edit');
  box.textContent = '';
  if (!outputs.length) box.append(el('p', { class: 'hint' }, loadedConfig.role === 'encoder' ? 'No output yet: an encoder needs at least one to go live.' : 'None besides the paired box.'));
  outputs.forEach((o, i) => {
    const row = el('div', { class: 'output-row', 'data-output': i }, el('h3', {}, `Output ${i + 1}`));
    row.append(field(`outputs[${i}].name`, 'Name', 'Shown in the status, the logs and the metrics; up to 64 characters.', 'text', o.name || ''));
    row.append(urlForm(`outputs[${i}]`, o.url, 'output'));
    const rm = el('button', { type: 'button', class: 'remove' }, `Remove output ${i + 1}`);
    rm.addEventListener('click', () => { collectOutputs(); loadedConfig.outputs.splice(i, 1); renderOutputs(loadedConfig.outputs); });
    row.append(rm);
    box.append(row);
  });
}

function collectOutputs() {
  loadedConfig.outputs = $$('#outputs-edit .output-row').map((row, i) => {
    const url = $('.url-form', row).url();
    const name = $(`[data-path="outputs[${i}].name"]`, row).value.trim();
    return name ? { url, name } : { url };
  });
}

$('#add-output').addEventListener('click', () => {
  collectOutputs();
  loadedConfig.outputs.push({ url: 'srt://:9000?mode=listener' });
  renderOutputs(loadedConfig.outputs);
});

function clearErrors() {
  $$('#page-settings .error').forEach((p) => { p.textContent = ''; });
  $$('#page-settings [aria-invalid]').forEach((i) => { i.removeAttribute('aria-invalid'); i.classList.remove('bad'); });
}

$('#settings-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const c = JSON.parse(JSON.stringify(loadedConfig));
  for (const input of $$('#settings-fields [data-path]')) {
    const path = input.dataset.path;
    if (input.classList.contains('field')) { set(c, path, $('.url-form', input).url()); continue; }
    const kind = input.dataset.kind;
    // An empty number is sent as nothing: the box says "empty: a number is needed" under it.
    const v = kind === 'number' ? (input.value.trim() === '' ? null : Number(input.value)) : kind === 'bool' ? input.checked : input.value;
    set(c, path, v);
  }
  collectOutputs();
  c.outputs = loadedConfig.outputs;
  clearErrors();
  const r = await api('PUT', '/api/config', c);
  if (r.status === 200) {
    const roleChanged = loadedConfig.role !== r.data.config.role;
    loadedConfig = r.data.config;
    if (roleChanged) renderSettings();
    $('#settings-saved').hidden = false;
    return;
  }
  $('#settings-saved').hidden = true;
  let first = null;
  for (const err of (r.data && r.data.errors) || [{ field: '', message: (r.data && r.data.error) || `not saved (${r.status})` }]) {
    const p = $(`#page-settings .error[data-field="${CSS.escape(err.field)}"]`) || $('#page-settings .error[data-field=""]');
    p.textContent = p.dataset.field === err.field ? err.message : `${err.field}: ${err.message}`;
    const input = $(`#page-settings [data-path="${CSS.escape(err.field)}"]`) || p.closest('.url-form');
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      input.classList.add('bad');
      first = first || input;
    }
  }
  (first || $('#page-settings .error:not(:empty)')).scrollIntoView({ block: 'center' });
});
