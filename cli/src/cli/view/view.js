// strata view: each change of stream, track or axis range asks one survey whose budget is
// 4 points a device pixel of a panel's width, per measured field, and draws its buckets: the
// min-max band and the M4 line through each bucket's four points in axis order. A bucket that
// is not next to the one before (no rows between them) is drawn as a gap.
'use strict';

const state = {
  streams: [], stream: null, track: '', from: null, to: null, full: null,
  survey: null, requests: [], errors: [], draws: 0, lastRepaintMs: null,
};
window.strataView = state;

const $ = (id) => document.getElementById(id);

function fail(message) {
  state.errors.push(message);
  $('error').textContent = message;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== '') query.set(k, String(v));
  }
  const url = `/api/${path}?${query}`;
  const response = await fetch(url);
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status}: ${text.trim()}`);
  return JSON.parse(text);
}

function decl() {
  return state.streams.find((s) => s.id === state.stream);
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  state.stream = params.get('stream') || state.stream;
  state.track = params.get('track') || '';
  state.from = params.has('from') ? BigInt(params.get('from')) : null;
  state.to = params.has('to') ? BigInt(params.get('to')) : null;
}

function writeHash() {
  const params = new URLSearchParams();
  params.set('stream', state.stream);
  if (state.track) params.set('track', state.track);
  if (state.from !== null) params.set('from', String(state.from));
  if (state.to !== null) params.set('to', String(state.to));
  history.replaceState(null, '', `#${params}`);
}

function panels() {
  const d = decl();
  const main = $('panels');
  main.textContent = '';
  for (const field of d ? d.measured : []) {
    const div = document.createElement('div');
    div.className = 'panel';
    div.innerHTML = `<h2>${field}</h2><canvas data-field="${field}"></canvas><div class="stats" data-stats="${field}"></div>`;
    main.appendChild(div);
    attach(div.querySelector('canvas'));
  }
}

function panelPixels() {
  const canvas = document.querySelector('canvas');
  if (!canvas) return 0;
  return Math.max(1, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)));
}

let pending = 0;
async function refresh() {
  const d = decl();
  if (!d || d.measured.length === 0) return;
  writeHash();
  const ticket = ++pending;
  const started = performance.now();
  const width = panelPixels();
  const budget = 4 * width * d.measured.length;
  const request = { stream: state.stream, track: state.track, from: state.from, to: state.to, budget };
  state.requests.push({ ...request, from: request.from === null ? null : String(request.from), to: request.to === null ? null : String(request.to), width });
  try {
    const survey = await api('survey', request);
    if (ticket !== pending) return;
    state.survey = survey;
    if (state.full === null && state.from === null && state.to === null && survey.span) {
      state.full = survey.span.map(BigInt);
    }
    draw();
    state.lastRepaintMs = performance.now() - started;
    $('status').textContent = survey.span
      ? `t ${survey.span[0]}..${survey.span[1]} · ${budget} points asked · level ${survey.level}`
      : 'no rows in this range';
    $('error').textContent = '';
    folds();
  } catch (e) {
    fail(String(e.message || e));
  }
}

async function folds() {
  const aggs = ['min', 'max', 'mean', 'count'];
  if ($('percentiles').checked) aggs.push('p50', 'p99');
  const range = state.survey && state.survey.span ? state.survey.span : null;
  const out = {};
  for (const agg of aggs) {
    try {
      const stats = await api('fold', { stream: state.stream, track: state.track, from: range ? range[0] : null, to: range ? range[1] : null, agg });
      for (const s of stats) (out[s.field] ||= []).push(`${agg} ${s.value === null ? '-' : s.value}`);
    } catch (e) {
      fail(String(e.message || e));
    }
  }
  state.folds = out;
  for (const [field, words] of Object.entries(out)) {
    const el = document.querySelector(`[data-stats="${field}"]`);
    if (el) el.textContent = words.join(' · ');
  }
}

function span() {
  const s = state.survey && state.survey.span;
  if (state.from !== null && state.to !== null) return [state.from, state.to];
  return s ? [BigInt(s[0]), BigInt(s[1])] : null;
}

function draw() {
  const survey = state.survey;
  const range = span();
  state.drawn = {};
  for (const canvas of document.querySelectorAll('canvas')) {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(canvas.clientWidth * ratio);
    canvas.height = Math.round(canvas.clientHeight * ratio);
    const g = canvas.getContext('2d');
    g.clearRect(0, 0, canvas.width, canvas.height);
    const field = survey && survey.fields.find((f) => f.field === canvas.dataset.field);
    if (!field || !range || field.buckets.length === 0) continue;
    const [lo, hi] = range;
    const width = Number(hi - lo) || 1;
    const x = (axis) => (Number(BigInt(axis) - lo) / width) * (canvas.width - 1);
    let min = Infinity, max = -Infinity;
    for (const b of field.buckets) { min = Math.min(min, b.min.value); max = Math.max(max, b.max.value); }
    if (min === max) { min -= 1; max += 1; }
    const pad = (max - min) * 0.05;
    const y = (v) => canvas.height - 1 - ((v - min + pad) / (max - min + 2 * pad)) * (canvas.height - 1);
    const bucketWidth = survey.bucket_width ? Number(survey.bucket_width) : 0;
    // The band: min to max over each bucket's cell.
    g.fillStyle = 'rgba(70, 110, 200, 0.25)';
    for (const b of field.buckets) {
      const x0 = x(b.first.axis), x1 = Math.max(x(b.last.axis), x0 + 1);
      g.fillRect(x0, y(b.max.value), x1 - x0, Math.max(1, y(b.min.value) - y(b.max.value)));
    }
    // The M4 line, broken where buckets are not adjacent.
    g.strokeStyle = '#2a4fa8';
    g.lineWidth = Math.max(1, ratio);
    g.beginPath();
    let previous = null;
    let gaps = 0;
    for (const b of field.buckets) {
      const points = [b.first, b.min, b.max, b.last].sort((p, q) => (BigInt(p.axis) < BigInt(q.axis) ? -1 : BigInt(p.axis) > BigInt(q.axis) ? 1 : 0));
      const adjacent = previous !== null && bucketWidth > 0 && Number(BigInt(b.first.axis) - BigInt(previous.last.axis)) <= 2 * bucketWidth;
      if (previous !== null && !adjacent) gaps += 1;
      points.forEach((p, i) => (i === 0 && !adjacent ? g.moveTo(x(p.axis), y(p.value)) : g.lineTo(x(p.axis), y(p.value))));
      previous = b;
    }
    g.stroke();
    state.drawn[field.field] = { buckets: field.buckets.length, max: Math.max(...field.buckets.map((b) => b.max.value)), min: Math.min(...field.buckets.map((b) => b.min.value)), gaps };
  }
  state.draws += 1;
}

// Zoom with the wheel around the pointer, pan by dragging, reset with a double-click.
function attach(canvas) {
  let dragging = null;
  const axisAt = (event) => {
    const range = span();
    const rect = canvas.getBoundingClientRect();
    const share = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
    return { range, share };
  };
  canvas.addEventListener('wheel', (event) => {
    event.preventDefault();
    const { range, share } = axisAt(event);
    if (!range) return;
    const [lo, hi] = range;
    const w = Number(hi - lo);
    const factor = event.deltaY < 0 ? 0.5 : 2;
    const center = Number(lo) + share * w;
    const nw = Math.max(1, w * factor);
    setRange(BigInt(Math.max(0, Math.round(center - share * nw))), BigInt(Math.round(center + (1 - share) * nw)));
  }, { passive: false });
  canvas.addEventListener('mousedown', (event) => { dragging = { x: event.clientX, range: span() }; });
  window.addEventListener('mouseup', (event) => {
    if (!dragging || !dragging.range) { dragging = null; return; }
    const dx = event.clientX - dragging.x;
    const [lo, hi] = dragging.range;
    dragging = null;
    if (Math.abs(dx) < 2) return;
    const w = Number(hi - lo);
    const shift = Math.round((-dx / canvas.getBoundingClientRect().width) * w);
    setRange(BigInt(Math.max(0, Number(lo) + shift)), BigInt(Math.max(0, Number(hi) + shift)));
  });
  canvas.addEventListener('dblclick', () => setRange(null, null));
}

function setRange(from, to) {
  state.from = from;
  state.to = to;
  refresh();
}

async function start() {
  window.addEventListener('error', (e) => fail(String(e.message)));
  try {
    state.streams = await api('streams');
  } catch (e) {
    fail(String(e.message || e));
    return;
  }
  const select = $('stream');
  for (const s of state.streams) {
    const option = document.createElement('option');
    option.value = option.textContent = s.id;
    select.appendChild(option);
  }
  state.stream = state.streams.length ? state.streams[0].id : null;
  readHash();
  select.value = state.stream;
  $('track').value = state.track;
  select.addEventListener('change', () => { state.stream = select.value; state.track = ''; $('track').value = ''; setRange(null, null); panels(); });
  $('track').addEventListener('change', () => { state.track = $('track').value; setRange(null, null); });
  $('reset').addEventListener('click', () => setRange(null, null));
  $('percentiles').addEventListener('change', folds);
  window.addEventListener('resize', () => refresh());
  panels();
  try {
    const tracks = await api('tracks', { stream: state.stream });
    for (const labels of tracks.tracks) {
      const option = document.createElement('option');
      option.value = labels.map((l) => l.replaceAll('\\', '\\\\').replaceAll(',', '\\,')).join(',');
      $('tracks').appendChild(option);
    }
  } catch (e) {
    fail(String(e.message || e));
  }
  await refresh();
}

start();
