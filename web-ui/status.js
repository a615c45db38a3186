// Telebridge panel: the Status page, for each role what an operator of that role reads.
'use strict';

// ---------- words ----------
// The state machine's states, in each role's words: a decoder receives, it does not go live.
const WORDS = {
  encoder: { booting: 'Starting', ready: 'Ready', going_live: 'Going live', live: 'Live', degraded: 'Live, degraded', error: 'Needs attention' },
  decoder: { booting: 'Starting', ready: 'Stopped', going_live: 'Waiting for a sender', live: 'Receiving', degraded: 'Receiving, degraded', error: 'Needs attention' },
  bridge: { booting: 'Starting', ready: 'Ready', going_live: 'Connecting to the paired box', live: 'Live both ways', degraded: 'Live, degraded', error: 'Needs attention' },
};
const BUTTON = {
  encoder: ['Go live', 'Stop'], decoder: ['Start receiving', 'Stop receiving'], bridge: ['Go live', 'Stop'],
};
const LED_NAMES = ['Power', 'Link', 'Live', 'Error', 'Tally'];
const LED_COLOURS = ['#2563eb', '#16a34a', '#dc2626', '#f59e0b', '#b91c1c'];
const PATTERN_WORDS = { off: 'off', on: 'on', slow_blink: 'blinking slowly', fast_blink: 'blinking fast', double_blink: 'blinking twice a second' };
const OUTPUT_WORDS = {
  live: 'Live', connecting: 'Connecting', listening: 'Waiting for a caller', retrying: 'Retrying', failed: 'Failed', stopped: 'Stopped',
  receiving: 'Receiving',
};
let lastStatus = null;
let peerName = null;

// 24-hour clock on the box's time as the browser's zone shows it: "14:03:07".
const two = (n) => String(n).padStart(2, '0');
function hms(ms) {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
const mbps = (x) => `${x.toFixed(1)} Mbit/s`;
const pct = (lost, total) => (total > 0 ? `${((100 * lost) / total).toFixed(2)} %` : '0 %');

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else e.setAttribute(k, v);
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

// ---------- the paired box's name ----------
async function loadPeerName() {
  const r = await api('GET', '/api/pairing');
  peerName = r.status === 200 && r.data.paired ? r.data.paired.peer : null;
}

// ---------- lights ----------
function renderLeds(patterns) {
  const box = $('#leds');
  box.textContent = '';
  patterns.forEach((p, i) => {
    const li = el('li', { class: `led ${p}` }, el('i', { 'aria-hidden': 'true' }), `${LED_NAMES[i]}: ${PATTERN_WORDS[p] || p}`);
    li.style.setProperty('--c', LED_COLOURS[i]);
    box.append(li);
  });
}

// ---------- tally ----------
function renderTally(s) {
  const t = s.tally || {};
  const peer = peerName || 'the paired box';
  let words = '';
  if (s.role === 'bridge') {
    if (t.taken_by_far) words = `On air: ${peer} has this box's picture on air`;
  } else if (t.on_air) {
    words = `On air: ${[t.cue && 'cued from this panel', t.wired && "the vision mixer's tally contact"].filter(Boolean).join(' and ')}`;
  }
  $('#tally').hidden = !words;
  $('#tally').textContent = words;
  $('#tally-control').hidden = false;
  const b = $('#tally-button');
  if (s.role === 'bridge') {
    b.textContent = t.cue ? `Take ${peer} off air` : `Put ${peer} on air`;
    $('#tally-hint').textContent = `Tells ${peer} that its picture is on air here: its tally light comes on. ${t.wired ? 'The vision mixer\'s tally contact says so now too.' : ''}`;
  } else {
    b.textContent = t.cue ? 'Clear the tally' : 'Light the tally';
    $('#tally-hint').textContent = 'The tally light tells the people in front of this box that its picture is on air; the vision mixer\'s tally contact lights it too.';
  }
  b.setAttribute('aria-pressed', t.cue ? 'true' : 'false');
  b.classList.toggle('held', !!t.cue);
}
$('#tally-button').addEventListener('click', async () => {
  const cue = !(lastStatus && lastStatus.tally && lastStatus.tally.cue);
  await api('POST', '/api/tally', { on_air: cue });
  const st = await api('GET', '/api/status');
  if (st.status === 200) renderStatus(st.data);
});

// ---------- talkback ----------
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
// the page moving under a held finger does not let go; leaving the window does.
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

// ---------- pictures ----------
// A picture refreshed every 2 s while it moves; marked when it does not.
function refresh(img, url, on) {
  if (!on) { img.hidden = true; return; }
  const now = Date.now();
  if (!img.dataset.at || now - img.dataset.at > 2000) {
    img.dataset.at = now;
    img.src = `${url}?t=${now}`;
  }
}
for (const id of ['#preview', '#received']) {
  $(id).addEventListener('load', (e) => { e.target.hidden = false; });
  $(id).addEventListener('error', (e) => { e.target.hidden = true; });
}
function mark(id, words) {
  $(id).hidden = !words;
  $(id).textContent = words || '';
  $(id).closest('figure').classList.toggle('stale', !!words);
}
// Whether frames stopped: none decoded for 2 s on the box's clock.
function stoppedAt(decoder, now) {
  if (!decoder) return null;
  const last = decoder.last_frame_unix_ms;
  if (last && now - last > 2000) return last;
  return null;
}

// ---------- the live monitor (WebRTC, asked for with WHEP) ----------
// A feed that runs plays in its <video>, muted until the operator unmutes (browsers play
// nothing aloud unasked); the still picture stays for a browser without WebRTC, or when the
// box refuses (its viewers full) or the connection fails.
const monitors = {};
function monitorNote(feed, words) {
  $(`#note-${feed}`).hidden = !words;
  $(`#note-${feed}`).textContent = words || '';
}
function stopWatching(feed) {
  const m = monitors[feed];
  if (!m) return;
  delete monitors[feed];
  m.pc.close();
  if (m.url) fetch(m.url, { method: 'DELETE', headers: { 'x-telebridge-csrf': '1' }, credentials: 'same-origin', keepalive: true }).catch(() => {});
  m.video.hidden = true;
  m.video.srcObject = null;
  $(`.unmute[data-feed=${feed}]`).hidden = true;
}
async function startWatching(feed) {
  const video = $(`#video-${feed}`);
  const pc = new RTCPeerConnection();
  const m = { pc, video, url: null };
  monitors[feed] = m;
  pc.addTransceiver('video', { direction: 'recvonly' });
  pc.addTransceiver('audio', { direction: 'recvonly' });
  const stream = new MediaStream();
  pc.ontrack = (e) => {
    // The least delay the browser allows: play each frame as it comes.
    if ('jitterBufferTarget' in e.receiver) e.receiver.jitterBufferTarget = 0;
    else e.receiver.playoutDelayHint = 0;
    stream.addTrack(e.track);
    video.srcObject = stream;
    video.play().catch(() => {});
  };
  pc.onconnectionstatechange = () => {
    if (monitors[feed] === m && ['failed', 'closed'].includes(pc.connectionState)) {
      stopWatching(feed);
      monitorNote(feed, 'The live picture was lost: showing a still each 2 s.');
    }
  };
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  const r = await fetch(`/api/whep/${feed}`, {
    method: 'POST', headers: { 'content-type': 'application/sdp', 'x-telebridge-csrf': '1' }, credentials: 'same-origin', body: offer.sdp,
  }).catch(() => null);
  if (monitors[feed] !== m) return;
  if (!r || r.status !== 201) {
    let why = 'the box does not answer';
    if (r) { try { why = (await r.json()).error || `failed (${r.status})`; } catch (_) { why = `failed (${r.status})`; } }
    stopWatching(feed);
    monitors[feed] = { refused: true, pc: { close() {} }, video };
    monitorNote(feed, `No live picture (${why}): showing a still each 2 s.`);
    return;
  }
  m.url = r.headers.get('location');
  await pc.setRemoteDescription({ type: 'answer', sdp: await r.text() });
}
// Whether `feed` should play live now; a refused feed is not asked again until it stops.
function watch(feed, on) {
  const m = monitors[feed];
  if (!on || current !== 'status') {
    if (m) { stopWatching(feed); monitorNote(feed, null); }
    return;
  }
  if (m || !window.RTCPeerConnection) return;
  monitorNote(feed, null);
  startWatching(feed).catch((e) => monitorNote(feed, `No live picture (${e.message}).`));
}
for (const feed of ['programme', 'received']) {
  const video = $(`#video-${feed}`);
  video.addEventListener('playing', () => {
    video.hidden = false;
    $(`.unmute[data-feed=${feed}]`).hidden = !video.muted;
    video.closest('.frame').querySelector('img').hidden = true;
  });
  $(`.unmute[data-feed=${feed}]`).addEventListener('click', (e) => {
    video.muted = false;
    e.target.hidden = true;
  });
}
window.addEventListener('pagehide', () => Object.keys(monitors).forEach(stopWatching));

// ---------- the sound's meters ----------
// Ten readings a second while a stream with sound runs (the `levels` event); a meter that hears
// nothing new for 0.6 s is hidden (its stream stopped).
const METER_FLOOR_DB = -60;
const SILENT_AFTER_S = 5;
const PEAK_HOLD_MS = 1500;
let levelsAt = 0;
const peakHold = {};
const meterWidth = (db) => `${Math.max(0, Math.min(100, ((db - METER_FLOOR_DB) / -METER_FLOOR_DB) * 100))}%`;
function renderLevels(levels) {
  levelsAt = Date.now();
  for (const stream of ['programme', 'received']) {
    const box = $(`#meter-${stream}`);
    const l = (levels || []).find((x) => x.stream === stream);
    box.hidden = !l;
    if (!l) continue;
    const bars = box.querySelector('.bars');
    while (bars.children.length < l.channels.length) {
      const b = document.createElement('div');
      b.className = 'bar';
      b.setAttribute('role', 'meter');
      b.setAttribute('aria-valuemin', '-100');
      b.setAttribute('aria-valuemax', '0');
      b.innerHTML = '<i class="rms"></i><i class="peak"></i>';
      bars.appendChild(b);
    }
    while (bars.children.length > l.channels.length) bars.lastChild.remove();
    l.channels.forEach((c, i) => {
      const b = bars.children[i];
      b.querySelector('.rms').style.width = meterWidth(c.rms_db);
      b.querySelector('.peak').style.left = meterWidth(c.peak_db);
      b.setAttribute('aria-valuenow', c.peak_db.toFixed(1));
      b.setAttribute('aria-label', `${l.channels.length === 2 ? ['Left', 'Right'][i] : `Channel ${i + 1}`}: peak ${c.peak_db.toFixed(0)} dBFS`);
      b.classList.toggle('hot', c.rms_db > -12);
      b.classList.toggle('clip', c.peak_db > -1);
    });
    // The words hold the loudest peak of the last 1.5 s, so a beat or a word can be read.
    const held = (peakHold[stream] || []).filter(([t]) => levelsAt - t < PEAK_HOLD_MS);
    held.push([levelsAt, Math.max(...l.channels.map((c) => c.peak_db))]);
    peakHold[stream] = held;
    const loudest = Math.max(...held.map(([, db]) => db));
    const silent = l.silent_s >= SILENT_AFTER_S;
    box.classList.toggle('silent', silent);
    box.querySelector('.db').textContent = silent ? `Silent for ${Math.round(l.silent_s)} s`
      : loudest <= METER_FLOOR_DB ? 'Quiet' : `Peak ${loudest.toFixed(0)} dBFS`;
  }
}
setInterval(() => {
  if (levelsAt && Date.now() - levelsAt > 600) { levelsAt = 0; renderLevels([]); }
}, 300);

// ---------- figures ----------
function figures(rows) {
  const dl = $('#figures');
  dl.textContent = '';
  for (const [term, value, hint] of rows) {
    const dd = el('dd', {}, value);
    if (hint) dd.append(el('small', { class: 'hint' }, hint));
    dl.append(el('dt', {}, term), dd);
  }
  $('#figures-card').hidden = !rows.length;
}

// ---------- outputs ----------
function outputCard(view, out, now, s) {
  const state = view.state;
  const name = view.name === 'peer' ? `Connection to ${peerName || 'the paired box'}` : view.name;
  const li = el('li', { class: `out o-${state}`, 'data-name': view.name });
  const since = view.since_unix_ms ? ` since ${hms(view.since_unix_ms)} (${ago(now - view.since_unix_ms)})` : '';
  li.append(el('div', { class: 'out-head' }, el('strong', {}, name), ' ',
    el('span', { class: `badge b-${state}` }, OUTPUT_WORDS[state] || state), el('span', { class: 'hint' }, since)));
  if (view.reason) li.append(el('div', { class: 'warn' }, view.reason));
  if (out) {
    const parts = [];
    // A connection's figures while it is up; a link that is down shows none of its last ones.
    if (state !== 'live') {
      // Nothing but the reconnects, below.
    } else if (out.kind === 'srt') {
      const st = out.srt;
      parts.push(`${mbps(st.send_rate_mbps)} sent`);
      if (st.acks_received > 0) parts.push(`RTT ${Math.round(st.rtt_ms)} ms`);
      parts.push(`loss ${pct(st.packets_lost, st.packets_sent)}`);
      parts.push(`${st.packets_retransmitted} retransmitted`);
      if (st.negotiated_latency_ms) parts.push(`SRT latency ${st.negotiated_latency_ms} ms`);
      if (out.callers > 1) parts.push(`${out.callers} callers`);
    } else {
      parts.push(`${(out.bytes_written / 1e6).toFixed(1)} MB ${out.kind === 'whip' ? 'sent' : 'written'}`);
    }
    if (out.reconnects) parts.push(`${out.reconnects} reconnects`);
    if (parts.length) li.append(el('div', { class: 'nums' }, parts.join(' · ')));
  }
  if (view.latency) li.append(el('div', { class: 'hint latency-why' }, view.latency));
  for (const u of view.uplinks || []) li.append(el('div', { class: 'hint uplink' }, u));
  return li;
}

function renderOutputCards(s, now) {
  const list = $('#outputs-list');
  list.textContent = '';
  const outs = (s.media && ((s.media.sending && s.media.sending.outputs) || s.media.outputs)) || [];
  const views = (s.links || []).filter((v) => s.role !== 'decoder');
  $('#outputs-card').hidden = s.role === 'decoder';
  $('#outputs-title').textContent = s.role === 'bridge' ? 'Connections and outputs' : 'Outputs';
  if (!views.length) {
    list.append(el('li', {}, s.running ? 'No output is running.' : 'Not running: press Go live.'));
  }
  for (const v of views) list.append(outputCard(v, outs.find((o) => o.name === v.name), now, s));
}

// ---------- the whole page ----------
function renderStatus(s) {
  lastStatus = s;
  const role = s.role in WORDS ? s.role : 'encoder';
  const now = s.now_unix_ms || Date.now();
  $('#box-name').textContent = s.name;
  const state = s.machine.state;
  $('#state-card').className = `card s-${state}`;
  $('#state-word').textContent = WORDS[role][state] || state;
  $('#state-reason').textContent = s.machine.reason || '';
  const alerts = $('#alerts');
  alerts.textContent = '';
  // The connection to the paired box is the output "peer" inside: named for the person.
  const peerWords = `Connection to ${peerName || 'the paired box'}: `;
  for (const a of s.alerts || []) alerts.append(el('li', {}, a.startsWith('peer: ') ? peerWords + a.slice(6) : a));
  const running = s.running;
  const b = $('#live-button');
  b.textContent = BUTTON[role][running ? 1 : 0];
  b.className = `big ${running ? 'stop' : 'go'}`;
  renderLeds(s.led_patterns);
  renderTally(s);
  renderTalk(s);
  renderOutputCards(s, now);
  const m = s.media || {};
  const sending = m.sending || (m.encoder ? m : null);
  const rx = m.receiving || (m.decoder ? m : null);
  const noSignal = s.input && !s.input.signal;
  // Pictures.
  $('#fig-sent').hidden = role === 'decoder';
  $('#fig-received').hidden = role === 'encoder';
  $('#sent-caption').textContent = role === 'bridge' ? `This box (${s.name})` : 'The input';
  const programmeRuns = !!sending && running && !noSignal;
  watch('programme', programmeRuns && role !== 'decoder');
  refresh($('#preview'), '/api/preview.jpg', programmeRuns && !(monitors.programme && !monitors.programme.refused && !$('#video-programme').hidden));
  mark('#sent-mark', noSignal ? 'No signal' : running ? null : 'Not sending');
  const from = role === 'bridge' ? (peerName || 'the paired box') : (rx && rx.input && rx.input.sender) || 'the sender';
  $('#received-caption').textContent = `From ${from}`;
  const receivedRuns = running && !!rx && rx.decoder.frames_decoded > 0;
  watch('received', receivedRuns && role !== 'encoder');
  refresh($('#received'), '/api/preview-received.jpg', receivedRuns && !(monitors.received && !monitors.received.refused && !$('#video-received').hidden));
  const stopped = stoppedAt(rx && rx.decoder, now);
  const receiving = rx && rx.input && rx.input.state === 'receiving';
  mark('#received-mark', stopped ? `Stopped moving at ${hms(stopped)}` : running && !(rx && rx.decoder.frames_decoded) ? 'Nothing received yet' : running ? null : 'Not receiving');
  // The picture's line.
  const received = (d) => (d.frames_decoded ? `Received ${d.width}x${d.height}, ${d.fps.toFixed(1)} fps (${d.element}).` : 'Nothing decoded yet.');
  if (sending) {
    const e = sending.encoder;
    const back = rx ? ` ${received(rx.decoder)}` : '';
    $('#input-format').textContent = `${noSignal ? 'No signal — ' : ''}Sending ${e.element}: ${e.fps.toFixed(1)} fps, ${mbps(e.bitrate_kbps / 1000)}.${back}`;
  } else if (rx) {
    $('#input-format').textContent = received(rx.decoder);
  } else {
    $('#input-format').textContent = s.input ? `${noSignal ? 'No signal — ' : ''}${s.input.format} (not running)` : `${role}, not running`;
  }
  const rate = sending && sending.rate;
  $('#rate').hidden = !rate;
  if (rate) $('#rate').textContent = `Bitrate ${mbps(rate.video_kbps / 1000)} of ${mbps(rate.max_video_kbps / 1000)} — ${rate.reason}`;
  const sync = [];
  if (rx && rx.av_offset && receiving) {
    const a = rx.av_offset;
    const ms = Math.round(Math.abs(a.p50_ms));
    const where = ms === 0 ? 'with the picture' : `${ms} ms ${a.p50_ms < 0 ? 'behind' : 'ahead of'} the picture`;
    sync.push(`Sound ${where}${a.within_tolerance ? '' : ' (outside EBU R37: 60 ms behind to 40 ms ahead)'}`);
  }
  $('#sync').hidden = !sync.length;
  $('#sync').textContent = sync.join('; ');
  const codec = (sending && sending.encoder) || (rx && rx.decoder);
  $('#codec-reason').textContent = codec && codec.reason ? `Why ${codec.element}: ${codec.reason}` : '';
  // The link's figures, each with its own name.
  $('#no-stream').hidden = true;
  if (role === 'decoder') renderDecoderFigures(s, rx, now);
  else if (role === 'bridge') renderBridgeFigures(s, m, now);
  else figures([]);
}

function renderDecoderFigures(s, rx, now) {
  $('#figures-title').textContent = 'Input';
  if (!rx || !s.running) { figures([['Input', s.input ? s.input.format : '', 'Not receiving: press Start receiving.']]); return; }
  const i = rx.input;
  const st = i.srt;
  const receiving = i.state === 'receiving';
  if (!receiving) {
    const last = rx.decoder.last_frame_unix_ms;
    const since = last ? `No stream since ${hms(last)}` : 'No stream yet';
    $('#no-stream').hidden = false;
    $('#no-stream').textContent = `${since}${i.reason ? `: ${i.reason}` : ''}`;
    figures([['Last sender', i.sender || 'none yet'], ['Input', i.url]]);
    return;
  }
  const rows = [
    ['Sender', i.sender || 'unknown', i.stream_id ? `stream id ${i.stream_id}` : null],
    ['Received', mbps(st.receive_rate_mbps)],
    ['Network RTT', `${Math.round(st.rtt_ms)} ms`],
    ['Loss', `${pct(st.packets_received_lost, st.packets_received + st.packets_received_lost)} lost in the network, ${st.packets_received_dropped} packets too late to play`],
    ['SRT latency', `${st.negotiated_latency_ms} ms`, 'The receive buffer both ends agreed on.'],
  ];
  if (rx.latency) rows.push(['Glass to glass', `${Math.round(rx.latency.p50_ms)} ms`, 'From the sender\'s camera to this screen, read from the timecode in the picture.']);
  rows.push(['Input', i.url]);
  figures(rows);
}

function renderBridgeFigures(s, m, now) {
  $('#figures-title').textContent = `The link with ${peerName || 'the paired box'}`;
  if (!s.running) { figures([]); return; }
  const rx = m.receiving;
  const peer = m.sending && m.sending.outputs.find((o) => o.name === 'peer');
  if (!peer || peer.state !== 'live') {
    figures([['Connection', peer && peer.reason ? peer.reason : 'not connected']]);
    return;
  }
  const rows = [];
  if (rx && rx.round_trip) rows.push(['Round trip, glass to glass', `${Math.round(rx.round_trip.p50_ms)} ms`, `This box's picture to ${peerName || 'the paired box'}'s screen and back to this one (median of 5 s).`]);
  else rows.push(['Round trip, glass to glass', 'measuring…', 'Needs this box\'s picture to come back from the paired box.']);
  if (rx && rx.latency) rows.push(['One way, glass to glass', `${Math.round(rx.latency.p50_ms)} ms`, `${peerName || 'The paired box'}'s camera to this screen.`]);
  if (peer) {
    rows.push(['SRT latency chosen', `${peer.srt.negotiated_latency_ms} ms`, peer.latency ? peer.latency.reason : null]);
    rows.push(['Network RTT', `${Math.round(peer.srt.rtt_ms)} ms`, 'The network alone, from SRT\'s acknowledgements.']);
  }
  figures(rows);
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
