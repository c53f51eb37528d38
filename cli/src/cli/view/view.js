// strata view: one chart a measured field, the selected tracks overlaid in it, a colour each.
// Each change of stream, tracks or range asks one survey a track whose budget is 4 points a
// device pixel of the chart's width, per measured field, and draws each bucket's four M4 points
// in axis order, broken where rows lie further apart than the buckets show (gapsOf). Where a
// window holds fewer rows than that budget it reads and draws the rows themselves. uPlot
// (vendored, uplot/VENDORED.md) draws the lines, the axes and the crosshair.
'use strict';

// The most tracks overlaid at once: each is a survey a change, and a colour.
const SERIES_MAX = 8;
const COLOURS = ['#1f6fc4', '#d62728', '#2ca02c', '#9467bd', '#e07b00', '#17a2b8', '#8c564b', '#d63fa6'];
// The most tracks the picker lists at once (the server lists at most 10,000).
const LISTED_MAX = 500;
// How often a view that follows the newest rows asks whether a writer sealed more.
const FOLLOW_MS = 1000;
// The page's records are kept to their last 1,000 entries, so a page left open stays small.
const KEPT = 1000;
const CHART_HEIGHT = 220;

const state = {
  streams: [], stream: null,
  tracks: [], moreTracks: false,
  selected: [], // tracks, spelt as `--track` spells them (`r1,p0`)
  merged: null, // a prefix ('' for every track) when the page draws tracks merged, by choice
  hidden: [], // series the legend hides
  from: null, to: null, // the view's axis range (BigInt), null for an open end
  end: null, // the newest axis value the last draw saw
  base: 0n, perSecond: null,
  drawn: {}, ticks: {}, hover: null,
  requests: [], repaints: [], fetches: [], errors: [], drags: [], draws: 0, surveys: 0, rowReads: 0, busy: 0,
  lastRepaintMs: null, lastServerMs: null, readAt: null, follows: 0,
};
window.strataView = state;

const $ = (id) => document.getElementById(id);
// The answers drawn, a track each: its survey, and its rows where the page reads them. Kept
// apart from `state`, which a test reads whole.
let answers = [];
const plots = new Map(); // field -> uPlot
window.strataPlots = plots;

function remember(list, entry) {
  list.push(entry);
  if (list.length > KEPT) list.splice(0, list.length - KEPT);
}

function fail(message) {
  remember(state.errors, message);
  $('error').textContent = message;
}

// JSON with its integers exact: an axis value past 2^53 is kept as a BigInt (the reviver's
// source text, where the browser gives it). A reviver costs a call a value, so only an answer
// holding a number that may be past 2^53 (a time in nanoseconds) is read with one.
function parseExact(text) {
  if (!/\d{17}|9\d{15}/.test(text)) return JSON.parse(text);
  return JSON.parse(text, (key, value, context) =>
    (typeof value === 'number' && !Number.isSafeInteger(value) && Number.isInteger(value) && context && /^-?\d+$/.test(context.source))
      ? BigInt(context.source) : value);
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) for (const one of v) query.append(k, String(one));
    else if (v !== null && v !== undefined) query.set(k, String(v));
  }
  state.busy += 1;
  let response, text, bytes = null;
  const sent = performance.now();
  try {
    response = await fetch(`/api/${path}?${query}`);
    if (response.ok && response.headers.get('content-type') === 'application/octet-stream') {
      bytes = await response.arrayBuffer();
    } else {
      text = await response.text();
    }
  } finally {
    state.busy -= 1;
  }
  const got = performance.now();
  if (!response.ok) throw new Error(text.trim());
  // The server's own time for the answer (its Server-Timing header), beside the round trip.
  const timing = /dur=([0-9.]+)/.exec(response.headers.get('server-timing') || '');
  state.lastServerMs = timing ? Number(timing[1]) : null;
  // Where in the manifest a read was answered: what the page shows is as new as that.
  const at = response.headers.get('strata-manifest');
  if (at && path !== 'watermark') state.readAt = at;
  const answer = bytes ? (path === 'surveys' ? unpackMany(bytes) : unpack(bytes, 0)) : parseExact(text);
  remember(state.fetches, { path, ms: got - sent, parseMs: performance.now() - got, serverMs: state.lastServerMs, bytes: bytes ? bytes.byteLength : text.length, binary: Boolean(bytes) });
  return answer;
}

// A survey's binary form (cli/src/cli/view/binary.rs): a length, a JSON header, then columns of
// little-endian f64s read in place, and the rows' missing masks.
const COLUMNS = ['first_at', 'first', 'last_at', 'last', 'min_at', 'min', 'max_at', 'max', 'count', 'sum'];
function unpack(buffer, start) {
  const length = new DataView(buffer, start).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, start + 4, length)));
  let offset = start + Math.ceil((4 + length) / 8) * 8;
  const f64 = (n) => { const a = new Float64Array(buffer, offset, n); offset += 8 * n; return a; };
  header.fields = header.fields.map(({ field, buckets }) => {
    const columns = { field };
    for (const name of COLUMNS) columns[name] = f64(buckets);
    return columns;
  });
  const rows = header.rows;
  if (rows && rows.fields) {
    rows.at = f64(rows.rows);
    const values = rows.fields.map(() => f64(rows.rows));
    rows.fields = rows.fields.map((field, i) => {
      const missing = new Uint8Array(buffer, offset, rows.rows);
      offset += rows.rows;
      return { field, values: values[i], missing };
    });
  }
  return header;
}

// Several surveys' binary forms (`/api/surveys`): a count, then each one's length and bytes,
// each from a multiple of 8.
function unpackMany(buffer) {
  const view = new DataView(buffer);
  const count = Number(view.getBigUint64(0, true));
  const answers = [];
  let offset = 8;
  for (let i = 0; i < count; i++) {
    const length = Number(view.getBigUint64(offset, true));
    answers.push(unpack(buffer, offset + 8));
    offset += 8 + Math.ceil(length / 8) * 8;
  }
  return answers;
}

function decl() {
  return state.streams.find((s) => s.id === state.stream);
}

// A track's labels as one word, as `--track` spells them (a comma within a label is `\,`).
function spell(labels) {
  return labels.map((l) => l.replaceAll('\\', '\\\\').replaceAll(',', '\\,')).join(',');
}

// The series drawn: the selected tracks, or the one merged prefix.
function seriesKeys() {
  return state.merged !== null ? [state.merged] : state.selected;
}

function seriesName(key) {
  if (state.merged !== null) return key === '' ? 'every track, merged' : `${key}: its tracks merged`;
  return key.replaceAll(',', ' · ');
}

function colourOf(i) {
  return COLOURS[i % COLOURS.length];
}

// ---- time and numbers in words -------------------------------------------------------------

const UNITS = { s: 1n, ms: 1000n, us: 1000000n, ns: 1000000000n };
const DAY = 86400n;

// x on the chart: seconds since `base` for a time axis, the axis value itself otherwise.
function toX(axis) {
  // A number is below 2^53, as is the base beneath it: their difference is exact.
  const d = typeof axis === 'number' ? axis - baseNumber : Number(BigInt(axis) - state.base);
  return d / perSecondNumber;
}
let baseNumber = 0, perSecondNumber = 1;

function toAxis(x) {
  const units = state.perSecond ? x * Number(state.perSecond) : x;
  const a = state.base + BigInt(Math.round(units));
  return a < 0n ? 0n : a;
}

const pad2 = (n) => String(n).padStart(2, '0');

// An axis value as a UTC time, to the unit's precision: `2025-12-01 00:00:01.250000`.
function timeText(axis, digits) {
  const a = BigInt(axis);
  const ps = state.perSecond;
  const seconds = a / ps;
  const fraction = a % ps;
  const date = new Date(Number(seconds) * 1000);
  const day = `${date.getUTCFullYear()}-${pad2(date.getUTCMonth() + 1)}-${pad2(date.getUTCDate())}`;
  const clock = `${pad2(date.getUTCHours())}:${pad2(date.getUTCMinutes())}:${pad2(date.getUTCSeconds())}`;
  const places = String(ps).length - 1;
  const shown = digits === undefined ? places : Math.min(digits, places);
  const frac = shown > 0 ? '.' + String(fraction).padStart(places, '0').slice(0, shown) : '';
  return { day, clock: clock + frac };
}

function axisText(axis) {
  if (!state.perSecond) return String(axis);
  const t = timeText(axis);
  return `${t.day} ${t.clock}`;
}

// A width of the axis in words: `64 ms`, `2 h 5 min`, or a count of axis units.
function widthText(units) {
  const w = Number(units);
  if (!state.perSecond) return `${w.toLocaleString('en')}`;
  const s = w / Number(state.perSecond);
  if (s >= 86400) return `${(s / 86400).toPrecision(3)} d`;
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s >= 1) return `${s.toPrecision(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toPrecision(3)} ms`;
  if (s >= 1e-6) return `${(s * 1e6).toPrecision(3)} µs`;
  return `${(s * 1e9).toPrecision(3)} ns`;
}

function number(value) {
  if (value === null || value === undefined) return 'missing';
  if (typeof value === 'string') return value; // nan, inf, -inf
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
}

// Tick steps for a time axis, in seconds: whole clock steps above a second, decimals below.
const TIME_INCRS = (() => {
  const out = [];
  for (let e = -9; e < 0; e++) for (const m of [1, 2, 5]) out.push(Number(`${m}e${e}`));
  return out.concat([1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
    43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 15552000, 31536000, 63072000,
    157680000, 315360000]);
})();

// The x tick labels: times of day (with the date on the first tick and where it changes), or
// integers; each chart's are kept in `state.ticks`.
function xLabels(field) {
  return (u, splits, axisIdx, space, incr) => {
    let labels;
    if (state.perSecond) {
      const digits = incr >= 1 ? 0 : Math.ceil(-Math.log10(incr) - 1e-9);
      let lastDay = null;
      labels = splits.map((x) => {
        const t = timeText(toAxis(x), digits);
        const clock = incr >= 60 && digits === 0 ? t.clock.slice(0, 5) : t.clock;
        const label = incr >= 86400 ? t.day : (t.day !== lastDay ? `${clock}\n${t.day}` : clock);
        lastDay = t.day;
        return label;
      });
    } else {
      labels = splits.map((x) => String(toAxis(x)));
    }
    (state.ticks[field] ||= {}).x = { axis: splits.map((x) => String(toAxis(x))), labels };
    return labels;
  };
}

// Room a tick label needs: a time with a fraction of a second is wider than a clock.
function xSpace(u, axisIdx, min, max, dim) {
  return state.perSecond && ((max - min) / dim) * 100 < 1 ? 130 : 95;
}

function yLabels(field) {
  return (u, splits) => {
    const labels = splits.map((v) => String(Number(v.toPrecision(6))));
    (state.ticks[field] ||= {}).y = { values: splits, labels };
    return labels;
  };
}

// ---- the URL -------------------------------------------------------------------------------

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has('stream')) state.stream = params.get('stream');
  state.selected = params.getAll('track');
  state.merged = params.has('merged') ? params.get('merged') : null;
  state.hidden = params.getAll('hide');
  state.from = params.has('from') ? BigInt(params.get('from')) : null;
  state.to = params.has('to') ? BigInt(params.get('to')) : null;
}

function writeHash() {
  const params = new URLSearchParams();
  params.set('stream', state.stream);
  if (state.merged !== null) params.set('merged', state.merged);
  else for (const t of state.selected) params.append('track', t);
  for (const h of state.hidden) params.append('hide', h);
  if (state.from !== null) params.set('from', String(state.from));
  if (state.to !== null) params.set('to', String(state.to));
  const hash = `#${params}`;
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

// ---- tracks: the picker and the legend ------------------------------------------------------

function listTracks() {
  const filter = $('filter').value.trim().toLowerCase();
  const list = $('track-list');
  list.textContent = '';
  let shown = 0, matching = 0;
  for (const labels of state.tracks) {
    const key = spell(labels);
    if (filter && !labels.join(' ').toLowerCase().includes(filter) && !key.toLowerCase().includes(filter)) continue;
    matching += 1;
    if (shown >= LISTED_MAX) continue;
    shown += 1;
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.dataset.track = key;
    box.checked = state.merged === null && state.selected.includes(key);
    box.disabled = state.merged !== null || (!box.checked && state.selected.length >= SERIES_MAX);
    box.addEventListener('change', () => pick(key, box.checked));
    label.append(box, ' ', labels.join(' · '));
    list.appendChild(label);
  }
  const notes = [];
  if (matching > shown) notes.push(`${matching - shown} more match: narrow the search`);
  if (state.moreTracks) notes.push('the stream has more tracks than the server lists (10,000)');
  if (state.selected.length >= SERIES_MAX) notes.push(`at most ${SERIES_MAX} tracks are drawn at once`);
  if (state.tracks.length === 0) notes.push('no tracks hold sealed rows yet');
  $('track-note').textContent = notes.join(' · ');
  $('picked').textContent = state.merged !== null
    ? `tracks: merged (${state.merged === '' ? 'every track' : state.merged})`
    : `tracks: ${state.selected.length} of ${state.tracks.length}${state.moreTracks ? '+' : ''}`;
  $('merge').checked = state.merged !== null;
  if (state.merged !== null) $('prefix').value = state.merged;
}

function pick(key, on) {
  const i = state.selected.indexOf(key);
  if (on && i < 0 && state.selected.length < SERIES_MAX) state.selected.push(key);
  if (!on && i >= 0) state.selected.splice(i, 1);
  state.hidden = state.hidden.filter((h) => seriesKeys().includes(h));
  listTracks();
  rebuild();
}

function legend() {
  const box = $('legend');
  box.textContent = '';
  seriesKeys().forEach((key, i) => {
    const entry = document.createElement('button');
    entry.dataset.series = key;
    entry.title = 'show or hide this track';
    if (state.hidden.includes(key)) entry.classList.add('hidden');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = colourOf(i);
    entry.append(swatch, seriesName(key));
    entry.addEventListener('click', () => {
      const at = state.hidden.indexOf(key);
      if (at >= 0) state.hidden.splice(at, 1); else state.hidden.push(key);
      entry.classList.toggle('hidden', at < 0);
      for (const u of plots.values()) u.setSeries(i + 1, { show: at >= 0 });
      writeHash();
      draw(performance.now());
    });
    box.appendChild(entry);
  });
}

// ---- charts --------------------------------------------------------------------------------

function chartWidth() {
  return Math.max(200, $('panels').clientWidth);
}

function panels() {
  for (const u of plots.values()) u.destroy();
  plots.clear();
  const main = $('panels');
  main.textContent = '';
  const d = decl();
  for (const field of d ? d.measured : []) {
    const div = document.createElement('div');
    div.className = 'panel';
    const title = document.createElement('h2');
    title.textContent = field;
    const readout = document.createElement('div');
    readout.className = 'readout';
    readout.dataset.readout = field;
    const chart = document.createElement('div');
    chart.className = 'chart';
    chart.dataset.field = field;
    div.append(title, readout, chart);
    main.appendChild(div);
    const series = [{}].concat(seriesKeys().map((key, i) => ({
      label: seriesName(key), stroke: colourOf(i), width: 1.25, spanGaps: false,
      show: !state.hidden.includes(key),
      points: { show: (u, si) => pointsShown(field, si), size: 5, fill: colourOf(i) },
    })));
    const u = new uPlot({
      width: chartWidth(), height: CHART_HEIGHT, legend: { show: false }, padding: [8, 48, null, null],
      scales: { x: { time: false, auto: false }, y: { auto: false } },
      axes: [
        { incrs: state.perSecond ? TIME_INCRS : undefined, space: xSpace, values: xLabels(field), size: 44 },
        { size: 72, values: yLabels(field) },
      ],
      series,
      cursor: { sync: { key: 'strata', setSeries: false }, drag: { x: false, y: false }, points: { show: false } },
      hooks: { setCursor: [(plot) => hover(field, plot)] },
    }, [[]].concat(seriesKeys().map(() => [])), chart);
    // Scales set before the first answer, so the plotting area (whose width is the budget's)
    // is laid out with both axes from the start.
    u.batch(() => { u.setScale('x', { min: 0, max: 1 }); u.setScale('y', { min: 0, max: 1 }); });
    plots.set(field, u);
    attach(u, chart);
  }
}

// Points are drawn on a track drawn from its rows, while they are few enough to see apart.
function pointsShown(field, seriesIdx) {
  const drawn = state.drawn[field];
  const one = drawn && drawn.series[seriesKeys()[seriesIdx - 1]];
  return Boolean(one && one.mode === 'rows' && one.points * 6 < chartWidth());
}

// Where the line breaks: between two buckets whose rows lie further apart than a bucket's width
// and three times the median distance between neighbouring buckets' rows (the rows' own spacing
// when buckets are finer than it), so a dropout is drawn as a gap at every zoom. Answers the
// indexes of the buckets after a break. `firstAt`, `lastAt`: offsets from one origin.
function gapsOf(firstAt, lastAt, bucketWidth) {
  const n = firstAt.length;
  const apart = new Float64Array(Math.max(0, n - 1));
  for (let i = 1; i < n; i++) apart[i - 1] = firstAt[i] - lastAt[i - 1];
  const sorted = Float64Array.from(apart).sort();
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
  const threshold = Math.max(bucketWidth, 3 * median);
  const after = [];
  for (let i = 0; i < apart.length; i++) if (apart[i] > threshold) after.push(i + 1);
  return after;
}

// An answer's axis value, exact, from its origin and an offset.
const exact = (origin, offset) => origin + BigInt(offset);

// One track's line in one field: [x, y] in axis order, y null where the line breaks.
function lineOf(answer, field) {
  const xs = [], ys = [];
  const ps = perSecondNumber;
  if (answer.rows) {
    const rows = answer.rows;
    const column = rows.fields[field];
    const o = Number(rows.origin - state.base);
    for (let i = 0; i < rows.at.length; i++) {
      const v = column ? column.values[i] : null;
      xs.push((o + rows.at[i]) / ps);
      // Missing, or not finite: a break.
      ys.push(column && !column.missing[i] && Number.isFinite(v) ? v : null);
    }
    return { xs, ys, gaps: [] };
  }
  const survey = answer.survey;
  const c = survey.fields[field];
  if (!c) return { xs, ys, gaps: [] };
  const o = Number(survey.origin - state.base);
  const breaks = gapsOf(c.first_at, c.last_at, survey.bucketWidth || 0);
  let next = 0;
  const push = (at, value) => {
    xs.push((o + at) / ps);
    ys.push(Number.isFinite(value) ? value : null);
  };
  for (let b = 0; b < c.count.length; b++) {
    if (next < breaks.length && breaks[next] === b) {
      next += 1;
      xs.push((o + (c.last_at[b - 1] + c.first_at[b]) / 2) / ps);
      ys.push(null);
    }
    // The four points in axis order: first, then min and max in the order they occurred, then
    // last (x is exact to well below a pixel); a point that is the first's or the last's row is
    // drawn once.
    const [f, l] = [c.first_at[b], c.last_at[b]];
    push(f, c.first[b]);
    let [a1, v1, a2, v2] = [c.min_at[b], c.min[b], c.max_at[b], c.max[b]];
    if (a2 < a1) [a1, v1, a2, v2] = [a2, v2, a1, v1];
    if (a1 !== f && a1 !== l) push(a1, v1);
    if (a2 !== f && a2 !== l && a2 !== a1) push(a2, v2);
    if (l !== f) push(l, c.last[b]);
  }
  const gaps = breaks.map((b) => [String(exact(survey.origin, c.last_at[b - 1])), String(exact(survey.origin, c.first_at[b]))]);
  return { xs, ys, gaps };
}

// The tracks' lines on one x: every x of any of them, each track's y there (undefined where it
// has none: joined over, not broken).
function joined(lines) {
  // Each line is in axis order already: merged, not sorted.
  const k = lines.length;
  const next = new Array(k).fill(0);
  const xs = [];
  const ys = lines.map(() => []);
  for (;;) {
    let x = Infinity;
    for (let s = 0; s < k; s++) {
      const l = lines[s];
      if (next[s] < l.xs.length && l.xs[next[s]] < x) x = l.xs[next[s]];
    }
    if (x === Infinity) break;
    for (let s = 0; s < k; s++) {
      const l = lines[s];
      let y; // undefined where this line has no point at x
      while (next[s] < l.xs.length && l.xs[next[s]] === x) y = l.ys[next[s]++];
      ys[s].push(y);
    }
    xs.push(x);
  }
  return [xs, ...ys];
}

function viewRange() {
  let lo = state.from, hi = state.to;
  for (const a of answers) {
    const span = a.survey.span;
    if (!span) continue;
    if (state.from === null && (lo === null || span[0] < lo)) lo = span[0];
    if (state.to === null && (hi === null || span[1] > hi)) hi = span[1];
  }
  if (lo === null || hi === null) return null;
  if (hi <= lo) hi = lo + 1n;
  return [lo, hi];
}

function draw(started) {
  const drawing = performance.now();
  const d = decl();
  const range = viewRange();
  state.drawn = {};
  if (!d || !range) {
    for (const u of plots.values()) u.setData([[]].concat(seriesKeys().map(() => [])), false);
    state.draws += 1;
    return;
  }
  const [lo, hi] = range;
  // A time axis is drawn in seconds from the UTC midnight at or before the view, so ticks fall
  // on whole clock steps and a nanosecond stays a nanosecond in a double.
  state.base = state.perSecond ? (lo / (DAY * state.perSecond)) * DAY * state.perSecond : 0n;
  baseNumber = Number(state.base);
  const [x0, x1] = [toX(lo), toX(hi)];
  const keys = seriesKeys();
  for (const [field, u] of plots) {
    const lines = answers.map((a) => lineOf(a, field));
    let min = Infinity, max = -Infinity;
    const series = {};
    lines.forEach((line, i) => {
      let smin = Infinity, smax = -Infinity, points = 0;
      for (let j = 0; j < line.xs.length; j++) {
        const y = line.ys[j];
        if (y === null || line.xs[j] < x0 || line.xs[j] > x1) continue;
        points += 1;
        smin = Math.min(smin, y);
        smax = Math.max(smax, y);
      }
      const answer = answers[i];
      series[keys[i]] = {
        mode: answer.rows ? 'rows' : 'buckets', points,
        min: smin === Infinity ? null : smin, max: smax === -Infinity ? null : smax,
        gaps: line.gaps.length, gapsAt: line.gaps,
        level: answer.survey.level, bucketWidth: answer.survey.bucketWidth === null ? null : String(answer.survey.bucketWidth),
        retiredBelow: answer.retiredBelow === undefined ? null : String(answer.retiredBelow),
      };
      if (answer.rows) {
        // The rows drawn, exact, for whoever reads the page's state (a test): written out when
        // read, not on every repaint.
        const column = answer.rows.fields[field];
        Object.defineProperty(series[keys[i]], 'rows', {
          enumerable: true,
          get: () => Array.from(answer.rows.at, (at, r) => [String(exact(answer.rows.origin, at)), column && !column.missing[r] ? column.values[r] : null]),
        });
      }
      if (!state.hidden.includes(keys[i])) { min = Math.min(min, smin); max = Math.max(max, smax); }
    });
    const drawnMin = min, drawnMax = max;
    if (min === Infinity) { min = 0; max = 1; }
    if (min === max) { min -= 1; max += 1; }
    const pad = (max - min) * 0.05;
    state.drawn[field] = {
      range: [String(lo), String(hi)], canvasWidth: Math.round(u.bbox.width),
      min: drawnMin === Infinity ? null : drawnMin, max: drawnMax === -Infinity ? null : drawnMax, series,
    };
    const data = joined(lines);
    u.batch(() => {
      u.setData(data, false);
      u.setScale('x', { min: x0, max: x1 });
      u.setScale('y', { min: min - pad, max: max + pad });
    });
  }
  state.draws += 1;
  state.lastRepaintMs = performance.now() - started;
  remember(state.repaints, { ms: state.lastRepaintMs, serverMs: state.lastServerMs, ...timing, drawMs: performance.now() - drawing, from: String(lo), to: String(hi) });
  timing = { waitMs: 0, readMs: 0 };
  status(range);
}

function status([lo, hi]) {
  const d = decl();
  const unit = state.perSecond ? ' UTC' : '';
  $('range').textContent = `${axisText(lo)} → ${axisText(hi)}${unit} (${widthText(hi - lo)}${d.axis ? ` of ${d.axis}` : ''})`;
  const modes = answers.map((a) => (a.rows ? 'rows' : 'buckets'));
  const widths = answers.filter((a) => !a.rows && a.survey.bucketWidth !== null).map((a) => a.survey.bucketWidth);
  const bucket = widths.length ? `buckets of ${widthText(Math.max(...widths))}` : 'buckets';
  $('mode').textContent = modes.every((m) => m === 'rows') && modes.length
    ? '· every row (fewer than the budget)'
    : modes.some((m) => m === 'rows') ? `· rows where few, ${bucket} elsewhere` : `· ${bucket}, each its first, last, min and max`;
  const notes = [];
  const retired = answers.filter((a) => a.retiredBelow !== undefined);
  if (retired.length) notes.push(`rows before ${axisText(retired[0].retiredBelow)} are retired: drawn from their cells`);
  if (answers.every((a) => !a.survey.span)) notes.push('no rows in this range');
  if (state.to === null) notes.push('following new rows');
  $('note').textContent = notes.length ? `· ${notes.join(' · ')}` : '';
}

// ---- reads ---------------------------------------------------------------------------------

// Every track's answer at once (one request: three fetches at once cost a page more than one):
// its survey and, where the window holds at most `perField` rows (fewer than the points a
// field's chart would spend), the rows themselves.
async function readAll(keys, request, perField) {
  const got = await api('surveys', { ...request, track: keys, rows: perField, format: 'binary' });
  state.surveys += keys.length;
  return got.map((one, i) => answerOf(keys[i], one));
}

// A track's answer as the page keeps it, from the binary form or (a number past 2^53) JSON.
function answerOf(key, got) {
  // A JSON answer (a number past 2^53: cli/src/cli/view/binary.rs) may hold an offset as a
  // BigInt: such a window, wider than 2^53 axis units, is drawn and read to a double's precision.
  const numbers = (column) => (column.some((v) => typeof v === 'bigint') ? column.map(Number) : column);
  const fields = {};
  for (const f of got.fields) {
    for (const name of ['first_at', 'last_at', 'min_at', 'max_at', 'count']) f[name] = numbers(f[name]);
    fields[f.field] = f;
  }
  if (got.rows && got.rows.at) got.rows.at = numbers(got.rows.at);
  const survey = {
    origin: BigInt(got.origin), span: got.span ? got.span.map(BigInt) : null,
    bucketWidth: got.bucket_width === null ? null : Number(got.bucket_width), level: got.level, fields,
  };
  const answer = { key, survey, rows: null };
  const rows = got.rows;
  if (rows) {
    state.rowReads += 1;
    if (rows.retired_below !== undefined) answer.retiredBelow = BigInt(rows.retired_below);
    else if (!rows.more) {
      // Binary rows carry a mask of the missing; JSON ones (a number past 2^53) say null.
      const values = {};
      for (const f of rows.fields) values[f.field] = { values: f.values, missing: f.missing || f.values.map((v) => (v === null ? 1 : 0)) };
      answer.rows = { origin: BigInt(rows.origin), at: rows.at, fields: values };
    }
  }
  return answer;
}

let inflight = false, again = false, since = null;
// Where the newest repaint's time went: waiting for the read before it, and its reads.
let timing = { waitMs: 0, readMs: 0 };

// Asks for the view as it is now; a change while a read is under way is read when it ends, so
// a drag or a run of wheel notches reads as fast as the server answers, the newest view each
// time. A repaint's time is from the oldest change it shows to the drawn chart.
function refresh() {
  if (since === null) since = performance.now();
  if (inflight) { again = true; return; }
  inflight = true;
  (async () => {
    do {
      again = false;
      const started = since;
      since = null;
      await once(started);
    } while (again);
    inflight = false;
  })();
}

async function once(started) {
  const d = decl();
  if (!d || d.measured.length === 0) return;
  writeHash();
  const first = plots.values().next().value;
  const width = first ? Math.max(1, Math.round(first.bbox.width)) : chartWidth();
  const perField = 4 * width;
  const budget = perField * d.measured.length;
  const request = { stream: state.stream, from: state.from, to: state.to, budget };
  const keys = seriesKeys();
  remember(state.requests, { ...request, tracks: [...keys], from: request.from === null ? null : String(request.from), to: request.to === null ? null : String(request.to), width });
  try {
    const asked = performance.now();
    answers = await readAll(keys, request, perField);
    timing = { waitMs: asked - started, readMs: performance.now() - asked };
    const ends = answers.filter((a) => a.survey.span).map((a) => a.survey.span[1]);
    if (ends.length && state.to === null) state.end = ends.reduce((a, b) => (a > b ? a : b));
    draw(started);
    $('error').textContent = '';
  } catch (e) {
    fail(String(e.message || e));
  }
}

// ---- hover ---------------------------------------------------------------------------------

// The bucket (or row) of each shown track nearest the pointer, in words under the chart.
function hover(field, u) {
  const left = u.cursor.left;
  const box = document.querySelector(`[data-readout="${CSS.escape(field)}"]`);
  if (left === undefined || left < 0 || !answers.length) {
    if (box) box.textContent = '';
    return;
  }
  const at = toAxis(u.posToVal(left, 'x'));
  const keys = seriesKeys();
  const found = {};
  const rows = [];
  answers.forEach((answer, i) => {
    const key = keys[i];
    if (state.hidden.includes(key)) return;
    const one = nearest(answer, field, at);
    if (!one) return;
    found[key] = one;
    rows.push([colourOf(i), seriesName(key), one]);
  });
  state.hover = { field, axis: String(at), series: found };
  if (!box) return;
  box.textContent = '';
  const table = document.createElement('table');
  for (const [colour, name, one] of rows) {
    const tr = table.insertRow();
    const words = one.row
      ? [short(one.row.axis), `value ${number(one.row.value)}`]
      : [`${short(one.span[0])} → ${short(one.span[1])}`, `${one.count} rows`, `mean ${number(one.mean)}`,
        `min ${number(one.min.value)} at ${short(one.min.axis)}`, `max ${number(one.max.value)} at ${short(one.max.axis)}`,
        `first ${number(one.first.value)}`, `last ${number(one.last.value)}`];
    const name_ = tr.insertCell();
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = colour;
    name_.append(swatch, name);
    for (const w of words) tr.insertCell().textContent = w;
  }
  box.appendChild(table);
}

function short(axis) {
  return state.perSecond ? timeText(axis).clock : String(axis);
}

function nearest(answer, field, at) {
  if (answer.rows) {
    const rows = answer.rows;
    if (!rows.at.length) return null;
    const rel = Number(at - rows.origin);
    const i = closest(rows.at.length, (k) => rows.at[k], rel);
    const column = rows.fields[field];
    return { row: { axis: String(exact(rows.origin, rows.at[i])), value: column && !column.missing[i] ? column.values[i] : null } };
  }
  const c = answer.survey.fields[field];
  if (!c || !c.count.length) return null;
  const rel = Number(at - answer.survey.origin);
  // The last bucket starting at or before the pointer, or the next if that is nearer.
  let i = closest(c.count.length, (k) => c.first_at[k], rel);
  if (c.first_at[i] > rel && i > 0 && rel - c.last_at[i - 1] < c.first_at[i] - rel) i -= 1;
  const o = answer.survey.origin;
  const point = (atCol, valueCol) => ({ axis: String(exact(o, atCol[i])), value: valueCol[i] });
  return {
    span: [String(exact(o, c.first_at[i])), String(exact(o, c.last_at[i]))], count: c.count[i],
    mean: typeof c.sum[i] === 'number' && c.count[i] ? c.sum[i] / c.count[i] : null,
    first: point(c.first_at, c.first), last: point(c.last_at, c.last), min: point(c.min_at, c.min), max: point(c.max_at, c.max),
  };
}

// The index among n ascending keys nearest `at` (ties to the lower).
function closest(n, keyAt, at) {
  let lo = 0, hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (keyAt(mid) <= at) lo = mid; else hi = mid - 1;
  }
  if (lo + 1 < n && keyAt(lo) < at && keyAt(lo + 1) - at < at - keyAt(lo)) return lo + 1;
  return lo;
}

// ---- gestures ------------------------------------------------------------------------------

// Wheel to zoom around the pointer, drag to pan (the charts follow the pointer at once, and
// reads follow as fast as they are answered), double-click for the whole range.
function attach(u, chart) {
  const over = u.over;
  const share = (event) => {
    const rect = over.getBoundingClientRect();
    return Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
  };
  over.addEventListener('wheel', (event) => {
    event.preventDefault();
    const range = viewRange();
    if (!range) return;
    const [lo, hi] = range;
    const w = Number(hi - lo);
    const s = share(event);
    const nw = Math.max(1, w * (event.deltaY < 0 ? 0.5 : 2));
    const center = Number(lo - state.base) + s * w;
    setRange(state.base + BigInt(Math.round(center - s * nw)), state.base + BigInt(Math.round(center + (1 - s) * nw)));
  }, { passive: false });
  let dragging = null;
  over.addEventListener('mousedown', (event) => {
    if (event.button !== 0) return;
    const range = viewRange();
    if (range) dragging = { x: event.clientX, range, width: over.getBoundingClientRect().width, surveys: state.surveys, draws: state.draws };
  });
  window.addEventListener('mousemove', (event) => {
    if (!dragging) return;
    const dx = event.clientX - dragging.x;
    if (Math.abs(dx) < 2 && !dragging.moved) return;
    dragging.moved = true;
    chart.classList.add('dragging');
    const [lo, hi] = dragging.range;
    const shift = BigInt(Math.round((-dx / dragging.width) * Number(hi - lo)));
    const from = lo + shift < 0n ? 0n : lo + shift;
    const to = from + (hi - lo);
    for (const p of plots.values()) p.setScale('x', { min: toX(from), max: toX(to) });
    setRange(from, to);
  });
  window.addEventListener('mouseup', () => {
    if (dragging && dragging.moved) {
      chart.classList.remove('dragging');
      // What the page drew while the pointer moved: a drag pans as it goes, not when it ends.
      remember(state.drags, { surveys: state.surveys - dragging.surveys, draws: state.draws - dragging.draws });
    }
    dragging = null;
  });
  over.addEventListener('dblclick', () => setRange(null, null));
}

function setRange(from, to) {
  if (from !== null && from < 0n) { to -= from; from = 0n; }
  // A view reaching the newest row follows new rows: its right end stays open.
  if (to !== null && state.end !== null && to >= state.end && state.to === null) to = null;
  state.from = from;
  state.to = to;
  refresh();
}

// A view whose right end is open follows a writer: when the manifest has moved past where the
// drawn answers were read, it reads again; zoomed in, it moves right by as much as the newest
// row did.
async function follow() {
  if (document.hidden || state.to !== null || !state.stream || inflight || state.readAt === null) return;
  try {
    const mark = await api('watermark', { stream: state.stream });
    if (mark.manifest !== state.readAt && !inflight) {
      state.follows += 1;
      const before = state.end;
      if (state.from !== null && before !== null) {
        const keys = seriesKeys();
        const peeks = await Promise.all(keys.map((key) => api('survey', { stream: state.stream, track: key, budget: 1, from: before, format: 'columns' })));
        const ends = peeks.filter((p) => p.span).map((p) => BigInt(p.span[1]));
        const end = ends.reduce((a, b) => (a > b ? a : b), before);
        state.from += end - before;
      }
      refresh();
    }
  } catch (e) {
    fail(String(e.message || e));
  }
}

// ---- start ---------------------------------------------------------------------------------

function useStream() {
  const d = decl();
  state.perSecond = d && d.time ? UNITS[d.time] : null;
  perSecondNumber = state.perSecond ? Number(state.perSecond) : 1;
}

async function loadTracks() {
  const answer = await api('tracks', { stream: state.stream });
  state.tracks = answer.tracks;
  state.moreTracks = answer.more;
  if (state.merged === null && state.selected.length === 0) {
    state.selected = state.tracks.slice(0, 3).map(spell);
  }
  state.selected = state.selected.slice(0, SERIES_MAX);
  listTracks();
}

function rebuild() {
  answers = [];
  legend();
  panels();
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
  if (!decl()) {
    fail(`no stream ${JSON.stringify(state.stream)} in this store`);
    state.stream = state.streams.length ? state.streams[0].id : null;
  }
  select.value = state.stream;
  useStream();
  select.addEventListener('change', async () => {
    Object.assign(state, { stream: select.value, selected: [], merged: null, hidden: [], from: null, to: null, end: null });
    useStream();
    await loadTracks().catch((e) => fail(String(e.message || e)));
    rebuild();
  });
  $('filter').addEventListener('input', listTracks);
  const merge = () => {
    state.merged = $('merge').checked ? $('prefix').value.trim() : null;
    state.hidden = [];
    listTracks();
    rebuild();
  };
  $('merge').addEventListener('change', merge);
  $('prefix').addEventListener('change', () => { if ($('merge').checked) merge(); });
  $('reset').addEventListener('click', () => setRange(null, null));
  window.addEventListener('hashchange', () => { readHash(); listTracks(); rebuild(); });
  window.addEventListener('resize', () => {
    for (const u of plots.values()) u.setSize({ width: chartWidth(), height: CHART_HEIGHT });
    refresh();
  });
  try {
    await loadTracks();
  } catch (e) {
    fail(String(e.message || e));
  }
  rebuild();
  setInterval(follow, FOLLOW_MS);
}

start();
