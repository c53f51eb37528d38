// strata view: each change of stream, track or axis range asks one survey whose budget is
// 4 points a device pixel of a panel's width, per measured field, and draws its buckets: the
// min-max band and the M4 line through each bucket's four points in axis order, broken where
// rows lie further apart than the buckets show (gapsOf): a dropout is drawn as a gap.
'use strict';

const state = {
  streams: [], stream: null, track: '', from: null, to: null, full: null,
  survey: null, requests: [], errors: [], draws: 0, lastRepaintMs: null, repaints: [],
  busy: 0, // API requests under way
};
window.strataView = state;

const $ = (id) => document.getElementById(id);

// The page's records are kept to their last 1,000 entries, so a page left open stays small.
const KEPT = 1000;
function remember(list, entry) {
  list.push(entry);
  if (list.length > KEPT) list.splice(0, list.length - KEPT);
}

function fail(message) {
  remember(state.errors, message);
  $('error').textContent = message;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== '') query.set(k, String(v));
  }
  const url = `/api/${path}?${query}`;
  state.busy += 1;
  let response, text;
  try {
    response = await fetch(url);
    text = await response.text();
  } finally {
    state.busy -= 1;
  }
  if (!response.ok) throw new Error(`${response.status}: ${text.trim()}`);
  // The server's own time for the answer (its Server-Timing header), beside the round trip.
  const timing = /dur=([0-9.]+)/.exec(response.headers.get('server-timing') || '');
  state.lastServerMs = timing ? Number(timing[1]) : null;
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
  remember(state.requests, { ...request, from: request.from === null ? null : String(request.from), to: request.to === null ? null : String(request.to), width });
  try {
    const survey = await api('survey', request);
    if (ticket !== pending) return;
    state.survey = survey;
    if (state.full === null && state.from === null && state.to === null && survey.span) {
      state.full = survey.span.map(BigInt);
    }
    draw();
    // From the gesture (or the change) to the drawn canvas, the survey's round trip included.
    state.lastRepaintMs = performance.now() - started;
    remember(state.repaints, { ms: state.lastRepaintMs, serverMs: state.lastServerMs, from: request.from === null ? null : String(request.from), to: request.to === null ? null : String(request.to) });
    $('status').textContent = survey.span
      ? `t ${survey.span[0]}..${survey.span[1]} · ${budget} points asked · level ${survey.level}`
      : 'no rows in this range';
    $('error').textContent = '';
    folds();
  } catch (e) {
    fail(String(e.message || e));
  }
}

// A statistic as printed under a panel: six significant digits, counts whole.
function shown(value) {
  if (value === null) return '-';
  return Number.isInteger(value) ? String(value) : String(Number(Number(value).toPrecision(6)));
}

async function folds() {
  const aggs = ['min', 'max', 'mean', 'count'];
  if ($('percentiles').checked) aggs.push('p50', 'p99');
  const range = state.survey && state.survey.span ? state.survey.span : null;
  const out = {};
  for (const agg of aggs) {
    try {
      const stats = await api('fold', { stream: state.stream, track: state.track, from: range ? range[0] : null, to: range ? range[1] : null, agg });
      for (const s of stats) (out[s.field] ||= []).push(`${agg} ${shown(s.value)}`);
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

// Where the line breaks: between two buckets whose rows lie further apart than a bucket's
// width and three times the median distance between neighbouring buckets' rows (the rows'
// own spacing when buckets are finer than it), so a dropout is drawn as a gap at every zoom.
function gapsOf(buckets, bucketWidth) {
  const apart = [];
  for (let i = 1; i < buckets.length; i++) {
    apart.push(Number(BigInt(buckets[i].first.axis) - BigInt(buckets[i - 1].last.axis)));
  }
  const sorted = [...apart].sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
  const threshold = Math.max(bucketWidth, 3 * median);
  const gaps = [];
  apart.forEach((d, i) => {
    if (d > threshold) gaps.push([buckets[i].last.axis, buckets[i + 1].first.axis]);
  });
  return gaps;
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
    const inView = (axis) => BigInt(axis) >= lo && BigInt(axis) <= hi;
    // The vertical scale and the drawn extremes: the M4 points inside the view (a boundary
    // bucket is a whole cell and may reach past it; what lies outside is clipped).
    let min = Infinity, max = -Infinity;
    for (const b of field.buckets) {
      for (const p of [b.first, b.min, b.max, b.last]) {
        if (inView(p.axis)) { min = Math.min(min, p.value); max = Math.max(max, p.value); }
      }
    }
    const drawnMin = min, drawnMax = max;
    if (min === Infinity) { min = 0; max = 1; }
    if (min === max) { min -= 1; max += 1; }
    const pad = (max - min) * 0.05;
    const y = (v) => canvas.height - 1 - ((v - min + pad) / (max - min + 2 * pad)) * (canvas.height - 1);
    const bucketWidth = survey.bucket_width ? Number(survey.bucket_width) : 0;
    const gaps = gapsOf(field.buckets, bucketWidth);
    const breaks = new Set(gaps.map(([, after]) => after));
    // The band: min to max over each bucket's cell.
    g.fillStyle = 'rgba(70, 110, 200, 0.25)';
    for (const b of field.buckets) {
      const x0 = x(b.first.axis), x1 = Math.max(x(b.last.axis), x0 + 1);
      g.fillRect(x0, y(b.max.value), x1 - x0, Math.max(1, y(b.min.value) - y(b.max.value)));
    }
    // The M4 line through each bucket's four points in axis order, broken at the gaps.
    g.strokeStyle = '#2a4fa8';
    g.lineWidth = Math.max(1, ratio);
    g.beginPath();
    field.buckets.forEach((b, i) => {
      const points = [b.first, b.min, b.max, b.last].sort((p, q) => (BigInt(p.axis) < BigInt(q.axis) ? -1 : BigInt(p.axis) > BigInt(q.axis) ? 1 : 0));
      const joined = i > 0 && !breaks.has(b.first.axis);
      points.forEach((p, k) => (k === 0 && !joined ? g.moveTo(x(p.axis), y(p.value)) : g.lineTo(x(p.axis), y(p.value))));
    });
    g.stroke();
    state.drawn[field.field] = {
      buckets: field.buckets.length,
      max: drawnMax === -Infinity ? null : drawnMax,
      min: drawnMin === Infinity ? null : drawnMin,
      gaps: gaps.length,
      gapsAt: gaps,
      range: [String(lo), String(hi)],
      canvasWidth: canvas.width,
    };
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
  window.addEventListener('unhandledrejection', (e) => fail(String(e.reason)));
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
