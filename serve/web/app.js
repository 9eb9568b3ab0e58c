// app.js -- tracy-serve's page: the sessions list, the comparison of two
// sessions and a program's trend, and the timeline of one session drawn on a
// canvas from the JSON API (serve/API.md). Plain JavaScript, no library and
// nothing fetched but the API of the server that sent the page. Every name
// from a trace is inserted as text (textContent / text nodes), never as HTML.
//
// A debug hook for the tests and the curious: window.__tracy (see `hook`).
(function () {
  'use strict';

  // ---- small helpers ---------------------------------------------------

  const $ = (id) => document.getElementById(id);

  // el('td', {class: 'num'}, 'text', child...): children are text or nodes.
  function el(tag, attrs) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'data') Object.assign(e.dataset, v);
      else e.setAttribute(k, v);
    }
    for (let i = 2; i < arguments.length; i++) {
      const kid = arguments[i];
      if (kid === undefined || kid === null) continue;
      e.append(typeof kid === 'object' ? kid : String(kid));
    }
    return e;
  }

  function fmtInt(n) {
    return n === null || n === undefined ? '' : Number(n).toLocaleString('en-US');
  }

  // 3 or 4 significant digits in the largest unit that keeps one before the point.
  function fmtDur(ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return '';
    const a = Math.abs(ns);
    const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs']];
    for (const [d, u] of units) {
      if (a >= d) {
        const v = ns / d;
        return (Math.abs(v) >= 100 ? v.toFixed(1) : Math.abs(v) >= 10 ? v.toFixed(2) : v.toFixed(3)) + ' ' + u;
      }
    }
    return (Number.isInteger(ns) ? ns : ns.toFixed(1)) + ' ns';
  }

  // wall clock of a string of nanoseconds since 1970
  function fmtWall(ns) {
    if (!ns) return '';
    const d = new Date(Number(BigInt(ns) / 1000000n));
    const p = (x) => String(x).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
      p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  // FNV-1a of the name: a stable hue per function.
  const colours = new Map();
  function colourOf(name) {
    let c = colours.get(name);
    if (c) return c;
    let h = 0x811c9dc5;
    for (let i = 0; i < name.length; i++) {
      h ^= name.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    c = 'hsl(' + (h % 360) + ',' + (45 + (h >>> 9) % 25) + '%,' + (58 + (h >>> 17) % 14) + '%)';
    colours.set(name, c);
    return c;
  }

  function setStatus(text) { $('status').textContent = text || ''; }

  function showError(msg) {
    const e = $('error');
    e.textContent = msg || '';
    e.hidden = !msg;
  }

  class ApiError extends Error {}

  // GET a JSON answer; a non-2xx status becomes an ApiError with the
  // server's one-line reason. Requests are never made outside this origin.
  async function api(path, signal, payload) {
    let r;
    const init = {cache: 'no-store', signal: signal, headers: {Accept: 'application/json'}};
    if (payload !== undefined) {
      init.method = 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(payload);
    }
    try {
      r = await fetch(path, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError('the server does not answer (' + path.split('?')[0] + ')');
    }
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok || body === null) {
      const err = new ApiError((body && body.error) || ('HTTP ' + r.status + ' from ' + path.split('?')[0]));
      err.status = r.status;
      err.code = body && body.code;
      throw err;
    }
    return body;
  }

  function q(params) {
    const s = new URLSearchParams();
    for (const k in params) if (params[k] !== undefined && params[k] !== null) s.set(k, params[k]);
    return s.toString();
  }

  function crumbs(parts) {
    const c = $('crumbs');
    c.replaceChildren();
    for (const p of parts) {
      c.append(el('span', null, '›'));
      c.append(p.href ? el('a', {href: p.href}, p.text) : el('span', null, p.text));
    }
  }

  function show(view) {
    for (const v of ['sessions-view', 'compare-view', 'timeline-view']) $(v).hidden = v !== view;
  }

  // ---- sessions ----------------------------------------------------------

  const S = {list: [], byId: new Map(), checked: [], timer: null, loaded: 0, note: ''};

  function sessionLabel(s) {
    return (s.programs && s.programs.length ? s.programs.join(', ') : '?') + ' · ' + (s.path || s.id);
  }

  async function loadSessions() {
    try {
      const d = await api('/api/sessions');
      const text = JSON.stringify(d.sessions || []);
      S.loaded++;
      if (text === S.text) { // nothing changed: keep the rows (and a click on them)
        $('sessions-count').textContent = S.list.length + ' session' + (S.list.length === 1 ? '' : 's') +
          ', refreshed ' + new Date().toLocaleTimeString();
        showError(S.note);
        return;
      }
      S.text = text;
      S.list = d.sessions || [];
      S.byId = new Map(S.list.map((s) => [s.id, s]));
      S.checked = S.checked.filter((id) => S.byId.has(id));
      renderSessions();
      showError(S.note);
      captureProgress();
    } catch (e) {
      showError('Sessions: ' + e.message);
    }
  }

  function stateBadge(state, capture) {
    if (capture === 'recording') return el('span', {class: 'state state-writing'}, 'recording');
    if (capture === 'failed') return el('span', {class: 'state state-error'}, 'capture failed');
    return el('span', {class: 'state state-' + state}, state === 'writing' ? 'being written' : state);
  }

  function renderSessions() {
    const body = $('sessions').tBodies[0];
    const rows = S.list.map((s) => {
      const box = el('input', {type: 'checkbox', 'aria-label': 'compare'});
      box.checked = S.checked.includes(s.id);
      box.addEventListener('click', (ev) => {
        ev.stopPropagation();
        S.checked = S.checked.filter((x) => x !== s.id);
        if (box.checked) S.checked.push(s.id);
        while (S.checked.length > 2) S.checked.shift();
        renderSessions();
      });
      const err = s.state === 'error';
      const mine = Cap.ids.includes(s.id);
      const tr = el('tr', {class: 'link' + (mine ? ' captured' : ''), data: {id: s.id, state: s.state},
        title: err ? s.error : mine ? 'captured from this page' : null},
        el('td', null, box),
        el('td', {class: 'program'}, (s.programs || []).join(', ') ||
          (s.capture ? el('span', {class: 'muted'}, 'from ' + s.address) : '')),
        el('td', {class: 'path'}, s.path, err ? el('span', {class: 'muted'}, ' — ' + s.error) : null),
        el('td', {class: 'start'}, fmtWall(s.wall_start_ns)),
        el('td', {class: 'num duration', data: {ns: s.duration_ns}}, fmtDur(s.duration_ns)),
        el('td', {class: 'num processes'}, fmtInt(s.processes)),
        el('td', {class: 'num threads'}, fmtInt(s.threads)),
        el('td', {class: 'num zones'}, fmtInt(s.zones)),
        el('td', {class: 'num lost'}, fmtInt(s.lost)),
        el('td', {class: 'state-cell'}, stateBadge(s.state, s.capture)));
      tr.addEventListener('click', () => { location.hash = '#/t/' + s.id; });
      return tr;
    });
    body.replaceChildren(...rows);
    $('compare').disabled = S.checked.length !== 2;
    $('sessions-count').textContent = S.list.length + ' session' + (S.list.length === 1 ? '' : 's') +
      ', refreshed ' + new Date().toLocaleTimeString();
    const sel = $('program');
    const progs = [...new Set(S.list.flatMap((s) => s.programs || []))].sort();
    const cur = sel.value;
    if ([...sel.options].map((o) => o.value).join('\0') !== progs.join('\0')) {
      sel.replaceChildren(...progs.map((p) => el('option', {value: p}, p)));
      if (progs.includes(cur)) sel.value = cur;
    }
    $('trend').disabled = progs.length === 0;
  }

  function openSessions() {
    show('sessions-view');
    crumbs([{text: 'sessions'}]);
    document.title = 'tracy-serve: sessions';
    loadSessions();
    S.timer = setInterval(loadSessions, 2000);
  }

  // ---- comparison and trend ---------------------------------------------

  function sortableTable(cols, rows, onRow, sortKey) {
    // cols: [{key, label, num, fmt, get}], rows: objects
    let key = sortKey;
    let desc = true;
    const table = el('table', {class: 'grid'});
    const head = el('tr');
    const body = el('tbody');
    const render = () => {
      const c = cols.find((x) => x.key === key);
      const val = c && (c.get || ((r) => r[c.key]));
      const sorted = c ? rows.slice().sort((a, b) => {
        const x = val(a);
        const y = val(b);
        const d = (typeof x === 'string' || typeof y === 'string') ? String(x).localeCompare(String(y)) : (x ?? -Infinity) - (y ?? -Infinity);
        return desc ? -d : d;
      }) : rows;
      body.replaceChildren(...sorted.map((r) => {
        const tr = el('tr', onRow ? {class: 'link'} : null);
        for (const cc of cols) {
          const v = cc.get ? cc.get(r) : r[cc.key];
          const td = el('td', {class: (cc.num ? 'num ' : '') + cc.key});
          const shown = cc.fmt ? cc.fmt(v, r) : v;
          if (shown instanceof Node) td.append(shown); else td.textContent = shown === null || shown === undefined ? '' : String(shown);
          if (cc.num && typeof v === 'number') td.dataset.value = v;
          tr.append(td);
        }
        if (onRow) tr.addEventListener('click', () => onRow(r));
        return tr;
      }));
    };
    for (const c of cols) {
      const th = el('th', {class: 'sortable' + (c.num ? ' num' : ''), data: {key: c.key}}, c.label);
      th.addEventListener('click', () => {
        if (key === c.key) desc = !desc; else { key = c.key; desc = !!c.num; }
        render();
      });
      head.append(th);
    }
    table.append(el('thead', null, head), body);
    render();
    return table;
  }

  async function openDiff(a, b) {
    show('compare-view');
    crumbs([{text: 'sessions', href: '#/'}, {text: 'compare'}]);
    document.title = 'tracy-serve: compare';
    const title = $('compare-title');
    const body = $('compare-body');
    body.replaceChildren(el('p', {class: 'muted'}, 'Comparing…'));
    if (!S.loaded) await loadSessions();
    const sa = S.byId.get(a);
    const sb = S.byId.get(b);
    title.replaceChildren('A: ', el('a', {href: '#/t/' + a}, sa ? sessionLabel(sa) : a),
      '   against   B: ', el('a', {href: '#/t/' + b}, sb ? sessionLabel(sb) : b));
    try {
      const d = await api('/api/diff?' + q({a: a, b: b}));
      const rows = d.functions || [];
      const loc = (r) => (r.file ? r.file + (r.line ? ':' + r.line : '') : '');
      const link = (id, name, label) => el('a', {href: '#/t/' + id + '?' + q({find: name}), title: 'find it in ' + label}, label);
      body.replaceChildren(el('p', {class: 'muted'},
        rows.length + ' functions in tracy-diff\'s order (regressions first); drift ' +
        (d.drift ? ((d.drift - 1) * 100).toFixed(1) + '%' : '?') + '. Click a row to find the function in B, or A / B to find it in either.'),
      sortableTable([
        {key: 'status', label: 'status', fmt: (v) => el('span', {class: 'diff-' + v}, v)},
        {key: 'name', label: 'function'},
        {key: 'loc', label: 'file:line', get: loc, fmt: locCell},
        {key: 'program', label: 'program'},
        {key: 'a_calls', label: 'A calls', num: true, get: (r) => r.a && r.a.calls, fmt: fmtInt},
        {key: 'b_calls', label: 'B calls', num: true, get: (r) => r.b && r.b.calls, fmt: fmtInt},
        {key: 'a_total', label: 'A total', num: true, get: (r) => r.a && r.a.total, fmt: fmtDur},
        {key: 'b_total', label: 'B total', num: true, get: (r) => r.b && r.b.total, fmt: fmtDur},
        {key: 'delta_total', label: 'B − A', num: true, fmt: (v) => el('span', {class: v > 0 ? 'up' : v < 0 ? 'down' : ''}, (v > 0 ? '+' : '') + fmtDur(v))},
        {key: 'rel', label: 'p50 change', num: true, fmt: (v) => (v === null || v === undefined ? '' : (v > 0 ? '+' : '') + (100 * v).toFixed(1) + '%')},
        {key: 'p', label: 'p-value', num: true, fmt: (v) => (v === null || v === undefined ? '' : Number(v).toPrecision(2))},
        {key: 'links', label: 'find in', get: () => '', fmt: (v, r) => el('span', null, link(a, r.name, 'A'), ' · ', link(b, r.name, 'B'))},
      ], rows, (r) => { location.hash = '#/t/' + b + '?' + q({find: r.name}); }, null));
    } catch (e) {
      body.replaceChildren(el('p', {class: 'state-error'}, 'Cannot compare: ' + e.message));
    }
  }

  // a long path keeps its end in view (the cell is right-to-left, the text
  // isolated left-to-right: the ellipsis falls on the folders) and is whole
  // in the tooltip
  function locCell(v) {
    return el('bdi', {title: v}, v);
  }

  function sparkline(values) {
    const c = el('canvas', {class: 'spark', width: 120, height: 20});
    const g = c.getContext('2d');
    const vs = values.filter((v) => v !== null && v !== undefined);
    if (vs.length) {
      const max = Math.max(...vs) || 1;
      g.strokeStyle = '#2f5bd3';
      g.beginPath();
      let first = true;
      values.forEach((v, i) => {
        if (v === null || v === undefined) { first = true; return; }
        const x = values.length === 1 ? 60 : 2 + i * 116 / (values.length - 1);
        const y = 18 - 16 * v / max;
        if (first) g.moveTo(x, y); else g.lineTo(x, y);
        first = false;
        g.fillStyle = '#2f5bd3';
        g.fillRect(x - 1, y - 1, 2, 2);
      });
      g.stroke();
    }
    return c;
  }

  async function openTrend(program) {
    show('compare-view');
    crumbs([{text: 'sessions', href: '#/'}, {text: 'trend'}]);
    document.title = 'tracy-serve: trend';
    $('compare-title').textContent = 'Trend of ' + program;
    const body = $('compare-body');
    body.replaceChildren(el('p', {class: 'muted'}, 'Loading…'));
    try {
      const d = await api('/api/trend?' + q({program: program}));
      const sessions = d.sessions || [];
      const cols = [{key: 'name', label: 'function'},
        {key: 'loc', label: 'file:line', get: (r) => (r.file ? r.file + (r.line ? ':' + r.line : '') : ''), fmt: locCell},
        {key: 'trend', label: 'trend', get: (r) => '', fmt: (v, r) => sparkline(r.total)}];
      const when = (s) => fmtWall(s.wall_start_ns || s.mtime_ns);
      sessions.forEach((s, i) => cols.push({key: 's' + i, label: '#' + (i + 1), num: true,
        get: (r) => r.total[i], fmt: fmtDur}));
      const last = sessions.length ? sessions[sessions.length - 1].id : null;
      const runs = el('ol', {class: 'runs'});
      sessions.forEach((s) => runs.append(el('li', null, el('a', {href: '#/t/' + s.id}, s.path || s.id),
        el('span', {class: 'muted'}, '  ' + when(s) + ', ' + fmtDur(s.duration_ns)))));
      body.replaceChildren(el('p', null, sessions.length + ' runs, oldest first; the time of the top functions in each:'),
        runs, sortableTable(cols, d.functions || [],
        last ? (r) => { location.hash = '#/t/' + last + '?' + q({find: r.name}); } : null));
    } catch (e) {
      body.replaceChildren(el('p', {class: 'state-error'}, 'No trend: ' + e.message));
    }
  }

  // ---- timeline: state ----------------------------------------------------

  const AXIS_H = 26;
  const FRAME_H = 12;
  const PROC_H = 22;
  const HEAD_H = 18;
  const ROW_H = 17;
  const PLOT_H = 44;
  const MIN_SPAN = 10; // ns across the whole width: single nanoseconds are 100+ px wide

  const T = {
    id: null, meta: null, funcs: [], funcsFor: -1,
    t0: 0, t1: 1, W: 800, H: 400, dpr: 1, scrollY: 0,
    rows: [], contentH: 0, collapsed: new Set(), collapsedProc: new Set(),
    data: null, want: null, fetching: null, debounce: null, dirty: true,
    drawn: [], drawnAt: 0, dataSeq: 0,
    hover: null, selected: null, find: null, range: null, rangeData: null,
    drag: null, mode: false, live: null, follow: false, error: null, paintedAt: null,
    asked: {views: 0, polls: 0},
  };

  function span() { return T.t1 - T.t0; }
  function xOf(t) { return (t - T.t0) / span() * T.W; }
  function tOf(x) { return T.t0 + x / T.W * span(); }

  function funcOf(f) { return T.funcs[f] || {name: '#' + f, file: null, line: 0, kind: ''}; }

  function procOf(n) { return (T.meta.processes || []).find((p) => p.process === n) || {process: n}; }

  // The rows of the canvas, top to bottom: per process a header, then per
  // thread a header and one row per depth, then the process's plots.
  function layout() {
    const m = T.meta;
    const rows = [];
    let y = AXIS_H + FRAME_H;
    const byProc = new Map();
    for (const t of m.tracks || []) {
      if (!byProc.has(t.process)) byProc.set(t.process, []);
      byProc.get(t.process).push(t);
    }
    for (const p of m.processes || []) if (!byProc.has(p.process)) byProc.set(p.process, []);
    for (const [proc, tracks] of [...byProc.entries()].sort((a, b) => a[0] - b[0])) {
      const pc = T.collapsedProc.has(proc);
      rows.push({kind: 'proc', process: proc, y: y, h: PROC_H, collapsed: pc});
      y += PROC_H;
      if (pc) continue;
      for (const t of tracks) {
        const c = T.collapsed.has(t.track);
        rows.push({kind: 'thread', track: t.track, info: t, y: y, h: HEAD_H, collapsed: c});
        y += HEAD_H;
        if (c) continue;
        const depths = Math.max(1, t.depths || 1);
        for (let d = 0; d < depths; d++) {
          rows.push({kind: 'depth', track: t.track, depth: d, y: y, h: ROW_H});
          y += ROW_H;
        }
      }
      for (const pl of m.plots || []) {
        if (pl.process !== proc) continue;
        rows.push({kind: 'plot', plot: pl.plot, info: pl, y: y, h: PLOT_H});
        y += PLOT_H;
      }
    }
    T.rows = rows;
    T.contentH = y + 8;
    $('tl-spacer').style.height = T.contentH + 'px';
  }

  function visibleTracks() {
    return T.rows.filter((r) => r.kind === 'thread' && !r.collapsed).map((r) => r.track);
  }

  // The expanded tracks with a row on screen or within a screen of it: what
  // a viewport fetch asks for (all of them when they fit).
  function neededTracks() {
    const lo = T.scrollY - T.H;
    const hi = T.scrollY + 2 * T.H;
    const set = new Set();
    for (const r of T.rows) {
      if ((r.kind === 'thread' && !r.collapsed) || r.kind === 'depth') {
        if (r.y + r.h >= lo && r.y <= hi) set.add(r.track);
      }
    }
    return [...set].sort((a, b) => a - b);
  }

  // ---- timeline: fetching what the viewport needs ---------------------------

  function endOfRun() { return Math.max(1, T.meta ? T.meta.duration_ns : 1); }

  function clampView() {
    const end = endOfRun();
    let s = Math.min(Math.max(span(), MIN_SPAN), end * 1.5 + MIN_SPAN);
    let t0 = T.t0;
    const c = (T.t0 + T.t1) / 2;
    if (s !== span()) t0 = c - s / 2;
    const slack = s * 0.25;
    t0 = Math.max(-slack, Math.min(t0, end + slack - s));
    T.t0 = t0;
    T.t1 = t0 + s;
  }

  function setView(t0, t1) {
    T.t0 = t0;
    T.t1 = t1;
    clampView();
    T.follow = T.meta && T.meta.state === 'writing' && T.t1 >= T.meta.duration_ns;
    need();
  }

  // Does the cached answer cover the view at (about) the view's resolution?
  function covered() {
    const d = T.data;
    if (!d || !T.meta || d.generation !== T.meta.generation) return false;
    for (const t of neededTracks()) if (!d.byTrack.has(t) && !d.asked.has(t)) return false;
    const end = endOfRun();
    const v0 = Math.max(0, T.t0);
    const v1 = Math.min(end, T.t1);
    if (v0 < d.t0 || v1 > d.t1) return false;
    const dataRes = (d.t1 - d.t0) / d.px;
    const viewRes = span() / T.W;
    return dataRes <= viewRes * 1.5 + 1e-9;
  }

  function need() {
    T.dirty = true;
    if (covered()) return;
    clearTimeout(T.debounce);
    T.debounce = setTimeout(fetchView, 60);
  }

  async function fetchView() {
    T.debounce = null;
    if (!T.meta || covered()) return;
    const end = endOfRun();
    const s = span();
    let f0 = Math.max(0, Math.floor(T.t0 - s));
    let f1 = Math.min(end, Math.ceil(T.t1 + s));
    if (f1 <= f0) f1 = f0 + 1;
    const px = Math.max(1, Math.min(8192, Math.round(T.W * (f1 - f0) / s)));
    const tracks = neededTracks();
    const key = tracks.join(',');
    if (T.fetching) T.fetching.abort();
    const ctl = new AbortController();
    T.fetching = ctl;
    const seq = ++T.dataSeq;
    T.asked.views++;
    try {
      const params = {t0: f0, t1: f1, px: px};
      if (tracks.length !== (T.meta.tracks || []).length) params.tracks = key;
      let d;
      if (tracks.length === 0) {
        d = {t0: f0, t1: f1, px: px, generation: T.meta.generation, tracks: [], markers: [], plots: [], frames: [], lost: []};
      } else {
        d = await api('/api/t/' + T.id + '/view?' + q(params), ctl.signal);
      }
      if (seq !== T.dataSeq) return;
      d.asked = new Set(tracks);
      d.px = px;
      d.byTrack = new Map((d.tracks || []).map((t) => [t.track, t.depths || []]));
      d.markersByTrack = new Map();
      for (const mk of d.markers || []) {
        if (!d.markersByTrack.has(mk[1])) d.markersByTrack.set(mk[1], []);
        d.markersByTrack.get(mk[1]).push(mk);
      }
      T.data = d;
      T.dirty = true;
      showError('');
      // a trace being written was indexed again after the last poll: the
      // answer is newer than the figures; a poll brings them level (and asks
      // again only if the view then needs it), where asking again at once
      // would get the newer answer over and over
      if (d.generation > T.meta.generation) { poll(); return; }
      if (!covered()) need();
    } catch (e) {
      if (e.name === 'AbortError') return;
      showError('Timeline: ' + e.message);
    } finally {
      if (T.fetching === ctl) T.fetching = null;
    }
  }

  async function loadFunctions() {
    if (T.funcsFor === T.meta.functions) return;
    const tid = T.id;
    const d = await api('/api/t/' + tid + '/functions');
    if (T.id !== tid || !T.meta) return; // another trace meanwhile
    T.funcs = [];
    for (const f of d.functions || []) T.funcs[f.func] = f;
    T.funcsFor = T.meta.functions;
  }

  // ---- timeline: drawing ----------------------------------------------------

  let stripes = null;
  function stripePattern(g) {
    if (stripes) return stripes;
    const c = document.createElement('canvas');
    c.width = c.height = 6;
    const p = c.getContext('2d');
    p.strokeStyle = 'rgba(255,255,255,0.75)';
    p.lineWidth = 1.5;
    p.beginPath();
    p.moveTo(0, 6); p.lineTo(6, 0);
    p.moveTo(-3, 3); p.lineTo(3, -3);
    p.moveTo(3, 9); p.lineTo(9, 3);
    p.stroke();
    stripes = g.createPattern(c, 'repeat');
    return stripes;
  }

  // a tick step of 1, 2 or 5 x 10^k ns, at least `minPx` apart
  function tickStep(minPx) {
    const raw = span() / T.W * minPx;
    let step = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
    for (const m of [1, 2, 5, 10]) if (step * m >= raw) return Math.max(1, step * m);
    return Math.max(1, step * 10);
  }

  // A tick's time in the largest unit not above it, with the decimals the
  // step needs: 8.3002 ms rather than 8300200 ns.
  function fmtTick(t, step) {
    const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
    const a = Math.abs(t) || step;
    for (const [d, u] of units) {
      if (a >= d || d === 1) {
        const dec = Math.max(0, Math.ceil(-Math.log10(step / d) - 1e-9));
        return (t / d).toFixed(Math.min(dec, 9)) + ' ' + u;
      }
    }
    return String(t);
  }

  function fitText(g, text, w) {
    if (w < 14) return null;
    if (g.measureText(text).width <= w - 6) return text;
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (g.measureText(text.slice(0, mid) + '…').width <= w - 6) lo = mid; else hi = mid - 1;
    }
    return lo ? text.slice(0, lo) + '…' : null;
  }

  function resize() {
    const wrap = $('tl-wrap');
    const sc = $('tl-scroll');
    const cv = $('tl');
    T.dpr = window.devicePixelRatio || 1;
    T.W = Math.max(100, sc.clientWidth);
    T.H = Math.max(50, wrap.clientHeight);
    cv.width = Math.round(T.W * T.dpr);
    cv.height = Math.round(T.H * T.dpr);
    cv.style.width = T.W + 'px';
    cv.style.height = T.H + 'px';
    T.dirty = true;
    if (T.meta) need();
  }

  function draw() {
    T.dirty = false;
    const cv = $('tl');
    const g = cv.getContext('2d');
    g.setTransform(T.dpr, 0, 0, T.dpr, 0, 0);
    g.clearRect(0, 0, T.W, T.H);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    const drawn = [];
    const d = T.data;
    const sy = T.scrollY;
    const findFuncs = T.find && T.find.count ? T.find.funcs : null;
    for (const r of T.rows) {
      const y = r.y - sy;
      if (y + r.h < AXIS_H + FRAME_H || y > T.H) continue;
      if (r.kind === 'proc') drawProc(g, r, y);
      else if (r.kind === 'thread') drawThreadHead(g, r, y, d, drawn);
      else if (r.kind === 'depth') drawDepth(g, r, y, d, drawn, findFuncs);
      else if (r.kind === 'plot') drawPlot(g, r, y, d);
    }
    if (d) drawLost(g, d);
    drawSelection(g);
    drawAxis(g, d);
    T.drawn = drawn;
    T.drawnAt = performance.now();
    if (T.paintedAt === null && d && covered()) T.paintedAt = T.drawnAt;
    // what is under a still mouse changes with zoom, pan and new data
    if (!T.drag && T.mouse !== null && T.mouse !== undefined) tip(T.mouse, T.mouseY, hoverText(T.mouse, T.mouseY));
    T.drawnSeq = d ? T.dataSeq : -1;
    $('viewport').textContent = fmtDur(Math.max(0, T.t0)) + ' – ' + fmtDur(T.t1) + ' (' + fmtDur(span()) + ' wide)';
  }

  function drawProc(g, r, y) {
    const p = procOf(r.process);
    g.fillStyle = '#dfe4ee';
    g.fillRect(0, y, T.W, r.h);
    g.fillStyle = '#1d2330';
    g.font = '600 12px system-ui, sans-serif';
    const text = (r.collapsed ? '▶ ' : '▼ ') + (p.program || 'process ' + r.process) + '  pid ' + (p.pid ?? '?') +
      (p.rank >= 0 ? '  rank ' + p.rank : '') + (p.hostname ? '  on ' + p.hostname : '') + '  · ' + (p.status || '') +
      (p.events_lost ? '  · ' + fmtInt(p.events_lost) + ' events lost' : '');
    g.fillText(text, 6, y + r.h / 2);
    g.font = '11px system-ui, sans-serif';
  }

  function drawThreadHead(g, r, y, d, drawn) {
    const t = r.info;
    g.fillStyle = '#f0f2f6';
    g.fillRect(0, y, T.W, r.h);
    g.fillStyle = '#344054';
    g.fillText((r.collapsed ? '▶ ' : '▼ ') + (t.name || 'thread') + '  tid ' + t.tid + '  · ' + fmtInt(t.zones) + ' zones', 18, y + r.h / 2);
    if (!d) return;
    const ms = d.markersByTrack.get(r.track) || [];
    for (const mk of ms) {
      const x = xOf(mk[0]);
      if (x < -4 || x > T.W + 4) continue;
      g.fillStyle = mk[2] === 1 ? '#e07b00' : '#5b6b8c';
      g.beginPath();
      if (mk[2] === 1) { g.moveTo(x - 4, y + 2); g.lineTo(x + 4, y + 2); g.lineTo(x, y + r.h - 3); }
      else { g.arc(x, y + r.h / 2, 3.5, 0, 2 * Math.PI); }
      g.fill();
    }
  }

  function drawDepth(g, r, y, d, drawn, findFuncs) {
    if (!d) return;
    const depths = d.byTrack.get(r.track);
    const items = depths && depths[r.depth];
    if (!items) return;
    const h = ROW_H - 1;
    // zones of one depth do not overlap: their ends grow with their starts
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid][0] + items[mid][1] < T.t0) lo = mid + 1; else hi = mid;
    }
    for (let i = lo; i < items.length; i++) {
      const it = items[i];
      const x0 = xOf(it[0]);
      const x1 = xOf(it[0] + it[1]);
      if (x0 > T.W) break;
      if (x1 < 0) continue;
      const a = Math.max(x0, -1);
      const w = Math.max(Math.min(x1, T.W + 1) - a, 1);
      const f = funcOf(it[2]);
      const hit = findFuncs && findFuncs.has(it[2]);
      g.globalAlpha = findFuncs && !hit ? 0.3 : 1;
      g.fillStyle = colourOf(f.name);
      g.fillRect(a, y, w, h);
      if (it[4] > 1) {
        // a merged run: striped when wide enough, always a dark base line
        if (w >= 4) {
          g.fillStyle = stripePattern(g);
          g.fillRect(a, y, w, h);
        }
        g.fillStyle = 'rgba(30,30,50,0.45)';
        g.fillRect(a, y + h - 3, w, 3);
      }
      if (hit) {
        g.strokeStyle = '#101828';
        g.lineWidth = 2;
        g.strokeRect(a + 1, y + 1, Math.max(w - 2, 1), h - 2);
      }
      if (T.selected && it[4] === 1 && it[3] === T.selected.id) {
        g.strokeStyle = '#d92d20';
        g.lineWidth = 2;
        g.strokeRect(a + 1, y + 1, Math.max(w - 2, 1), h - 2);
      }
      if (w >= 20) {
        const label = it[4] > 1 ? it[4] + ' zones' : f.name;
        const s = fitText(g, label, w);
        if (s) {
          g.fillStyle = '#101828';
          g.fillText(s, a + 3, y + h / 2);
        }
      }
      g.globalAlpha = 1;
      if (y >= AXIS_H + FRAME_H && y + h <= T.H) {
        drawn.push({id: it[3], count: it[4], track: r.track, depth: r.depth, start: it[0], dur: it[1],
          func: it[2], name: f.name, flags: it[5], x: a, w: w});
      }
    }
  }

  function drawPlot(g, r, y, d) {
    const pl = r.info;
    g.fillStyle = '#fbfcfe';
    g.fillRect(0, y, T.W, r.h);
    g.strokeStyle = '#e6e9ef';
    g.strokeRect(0.5, y + 0.5, T.W - 1, r.h - 1);
    const pts = d && (d.plots || []).find((p) => p.plot === pl.plot);
    const lo = pl.min;
    const hi = pl.max === pl.min ? pl.min + 1 : pl.max;
    const Y = (v) => y + r.h - 4 - (v - lo) / (hi - lo) * (r.h - 16);
    if (pts && pts.points.length) {
      g.fillStyle = 'rgba(47,91,211,0.25)';
      g.strokeStyle = '#2f5bd3';
      g.beginPath();
      let first = true;
      for (const p of pts.points) {
        const x = xOf(p[0]);
        g.fillRect(x, Y(p[2]), 1, Math.max(1, Y(p[1]) - Y(p[2])));
        if (first) g.moveTo(x, Y(p[3])); else g.lineTo(x, Y(p[3]));
        first = false;
      }
      g.stroke();
    }
    g.fillStyle = '#344054';
    g.fillText('▤ ' + pl.name + '  (' + pl.min + ' … ' + pl.max + ')', 6, y + 8);
  }

  function trackRows(track) {
    const rs = T.rows.filter((r) => r.track === track && (r.kind === 'thread' || r.kind === 'depth'));
    if (!rs.length) return null;
    return [rs[0].y, rs[rs.length - 1].y + rs[rs.length - 1].h];
  }

  function drawLost(g, d) {
    for (const l of d.lost || []) {
      const x = xOf(l[0]);
      if (x < -6 || x > T.W + 6) continue;
      const ys = trackRows(l[1]);
      if (!ys) continue;
      g.fillStyle = 'rgba(217,45,32,0.22)';
      g.fillRect(x - 3, ys[0] - T.scrollY, 6, ys[1] - ys[0]);
      g.fillStyle = '#d92d20';
      g.fillRect(x - 0.5, ys[0] - T.scrollY, 1, ys[1] - ys[0]);
    }
  }

  function drawSelection(g) {
    const sel = T.drag && T.drag.select ? {t0: Math.min(T.drag.t, T.drag.tNow), t1: Math.max(T.drag.t, T.drag.tNow)} : T.range;
    if (!sel) return;
    const x0 = xOf(sel.t0);
    const x1 = xOf(sel.t1);
    g.fillStyle = 'rgba(47,91,211,0.12)';
    g.fillRect(x0, AXIS_H, x1 - x0, T.H);
    g.strokeStyle = '#2f5bd3';
    g.lineWidth = 1;
    g.beginPath();
    g.moveTo(x0 + 0.5, AXIS_H); g.lineTo(x0 + 0.5, T.H);
    g.moveTo(x1 - 0.5, AXIS_H); g.lineTo(x1 - 0.5, T.H);
    g.stroke();
  }

  function drawAxis(g, d) {
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, T.W, AXIS_H + FRAME_H);
    const step = tickStep(90);
    const first = Math.ceil(T.t0 / step) * step;
    g.strokeStyle = '#c9cfdb';
    g.fillStyle = '#344054';
    g.lineWidth = 1;
    g.beginPath();
    for (let t = first; t <= T.t1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      g.moveTo(x, AXIS_H - 8);
      g.lineTo(x, AXIS_H);
      g.fillText(fmtTick(t, step), x + 3, 9);
    }
    g.moveTo(0, AXIS_H + 0.5);
    g.lineTo(T.W, AXIS_H + 0.5);
    g.stroke();
    // frame marks under the axis
    if (d) {
      g.fillStyle = '#7a5af8';
      for (const fr of d.frames || []) {
        for (const m of fr.marks) {
          const x = xOf(m[0]);
          if (x < 0 || x > T.W) continue;
          g.fillRect(x, AXIS_H + 2, m[1] > 1 ? 2 : 1, FRAME_H - 3);
        }
      }
    }
    g.strokeStyle = '#dde1e8';
    g.beginPath();
    g.moveTo(0, AXIS_H + FRAME_H + 0.5);
    g.lineTo(T.W, AXIS_H + FRAME_H + 0.5);
    g.stroke();
  }

  function frame() {
    if (T.meta && T.dirty && !$('timeline-view').hidden) draw();
    requestAnimationFrame(frame);
  }

  // ---- timeline: what is under the mouse -------------------------------------

  function rowAt(y) {
    const cy = y + T.scrollY;
    if (y < AXIS_H + FRAME_H) return null;
    for (const r of T.rows) if (cy >= r.y && cy < r.y + r.h) return r;
    return null;
  }

  function itemAt(x, y) {
    const r = rowAt(y);
    if (!r || r.kind !== 'depth' || !T.data) return {row: r};
    const items = (T.data.byTrack.get(r.track) || [])[r.depth] || [];
    let best = null;
    for (const it of items) {
      const x0 = xOf(it[0]);
      const x1 = Math.max(xOf(it[0] + it[1]), x0 + 1);
      if (x >= x0 - 0.5 && x <= x1 + 0.5) {
        best = it;
        if (x >= x0 && x <= x1) break;
      }
      if (x0 > x + 1) break;
    }
    return {row: r, item: best};
  }

  function markerAt(x, y) {
    const r = rowAt(y);
    if (!r || !T.data) return null;
    if (r.kind === 'thread') {
      for (const mk of T.data.markersByTrack.get(r.track) || []) if (Math.abs(xOf(mk[0]) - x) <= 4) return mk;
    }
    return null;
  }

  function lostAt(x, y) {
    const r = rowAt(y);
    if (!r || !T.data || r.track === undefined) return null;
    return (T.data.lost || []).find((l) => l[1] === r.track && Math.abs(xOf(l[0]) - x) <= 3) || null;
  }

  function tip(x, y, text) {
    const t = $('tip');
    if (!text) { t.hidden = true; return; }
    t.textContent = text;
    t.hidden = false;
    const w = t.offsetWidth;
    t.style.left = Math.min(x + 14, T.W - w - 4) + 'px';
    t.style.top = (y + 16) + 'px';
  }

  function hoverText(x, y) {
    const mk = markerAt(x, y);
    if (mk) return (mk[2] === 1 ? 'signpost' : 'message') + (mk[3] > 1 ? ' ×' + mk[3] : '') + ' at ' + fmtDur(mk[0]) + '\n' + mk[4];
    const lost = lostAt(x, y);
    if (lost) return fmtInt(lost[2]) + ' events lost at ' + fmtDur(lost[0]);
    const {item} = itemAt(x, y);
    if (!item) return null;
    const f = funcOf(item[2]);
    if (item[4] > 1) return item[4] + ' zones merged (each under a pixel), ' + fmtDur(item[1]) + ' in all\nfirst: ' + f.name + '\nclick to zoom in';
    return f.name + '  ' + fmtDur(item[1]) + (f.file ? '\n' + f.file + ':' + f.line : '') + '\nat ' + fmtDur(item[0]);
  }

  // ---- timeline: input ----------------------------------------------------

  function zoomAt(x, factor) {
    const tc = tOf(x);
    const s = Math.max(MIN_SPAN, Math.min(span() * factor, endOfRun() * 1.5 + MIN_SPAN));
    const frac = x / T.W;
    setView(tc - frac * s, tc - frac * s + s);
  }

  function pan(fraction) {
    const s = span();
    setView(T.t0 + s * fraction, T.t1 + s * fraction);
  }

  function local(ev) {
    const rc = $('tl-scroll').getBoundingClientRect();
    return [ev.clientX - rc.left, ev.clientY - rc.top];
  }

  function wireTimeline() {
    const sc = $('tl-scroll');
    sc.addEventListener('wheel', (ev) => {
      if (!T.meta) return;
      ev.preventDefault();
      if (ev.shiftKey) { // shift+wheel scrolls the tracks
        sc.scrollTop += ev.deltaY || ev.deltaX;
        return;
      }
      const [x] = local(ev);
      const dy = ev.deltaMode === 1 ? ev.deltaY * 30 : ev.deltaY;
      zoomAt(x, Math.exp(Math.max(-4, Math.min(4, dy * 0.0025))));
    }, {passive: false});
    sc.addEventListener('scroll', () => { T.scrollY = sc.scrollTop; need(); });
    sc.addEventListener('mousedown', (ev) => {
      if (ev.button !== 0 || !T.meta) return;
      const [x, y] = local(ev);
      if (x > T.W) return; // the scroll bar
      ev.preventDefault();
      T.drag = {x: x, y: y, t: tOf(x), t0: T.t0, t1: T.t1, scroll: sc.scrollTop,
        select: ev.shiftKey || T.mode, moved: false, tNow: tOf(x)};
    });
    window.addEventListener('mousemove', (ev) => {
      if ($('timeline-view').hidden || !T.meta) return;
      const [x, y] = local(ev);
      const dr = T.drag;
      if (dr) {
        if (Math.abs(x - dr.x) + Math.abs(y - dr.y) > 3) dr.moved = true;
        if (dr.select) {
          dr.tNow = tOf(x);
          T.dirty = true;
        } else if (dr.moved) {
          const dt = (x - dr.x) / T.W * (dr.t1 - dr.t0);
          setView(dr.t0 - dt, dr.t1 - dt);
          sc.scrollTop = dr.scroll - (y - dr.y);
        }
        tip(0, 0, null);
        return;
      }
      const inside = x >= 0 && y >= 0 && x < T.W && y < T.H;
      T.mouse = inside ? x : null;
      T.mouseY = inside ? y : null;
      tip(x, y, inside ? hoverText(x, y) : null);
    });
    window.addEventListener('mouseup', (ev) => {
      const dr = T.drag;
      if (!dr) return;
      T.drag = null;
      const [x, y] = local(ev);
      if (dr.select && dr.moved) {
        const a = Math.max(0, Math.min(dr.t, tOf(x)));
        const b = Math.min(endOfRun(), Math.max(dr.t, tOf(x)));
        if (b > a) selectRange(Math.floor(a), Math.ceil(b));
        T.dirty = true;
      } else if (!dr.moved) {
        clickAt(x, y);
      }
    });
    window.addEventListener('keydown', (ev) => {
      if ($('timeline-view').hidden || !T.meta) return;
      const tag = (ev.target && ev.target.tagName) || '';
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const k = ev.key.toLowerCase();
      const cx = T.mouse !== null && T.mouse !== undefined ? T.mouse : T.W / 2;
      if (k === 'w') zoomAt(cx, 0.8);
      else if (k === 's') zoomAt(cx, 1.25);
      else if (k === 'a') pan(-0.15);
      else if (k === 'd') pan(0.15);
      else if (ev.key === 'Home') setView(0, endOfRun());
      else if (ev.key === 'Escape') { T.range = null; T.dirty = true; }
      else return;
      ev.preventDefault();
    });
    $('whole').addEventListener('click', () => setView(0, endOfRun()));
    $('mode').addEventListener('click', () => {
      T.mode = !T.mode;
      $('mode').setAttribute('aria-pressed', String(T.mode));
      sc.classList.toggle('selecting', T.mode);
    });
    let findTimer = null;
    $('find').addEventListener('input', () => {
      clearTimeout(findTimer);
      findTimer = setTimeout(() => startFind({q: $('find').value}), 250);
    });
    $('find').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { clearTimeout(findTimer); findStep(ev.shiftKey ? -1 : 1); }
    });
    $('find-next').addEventListener('click', () => findStep(1));
    $('find-prev').addEventListener('click', () => findStep(-1));
    $('flame-reset').addEventListener('click', () => { Flame.root = null; drawFlame(); });
    window.addEventListener('resize', () => { resize(); if (T.rangeData) drawFlame(); });
  }

  function clickAt(x, y) {
    const r = rowAt(y);
    if (r && (r.kind === 'thread' || r.kind === 'proc') && x < 300) {
      const set = r.kind === 'thread' ? T.collapsed : T.collapsedProc;
      const key = r.kind === 'thread' ? r.track : r.process;
      if (set.has(key)) set.delete(key); else set.add(key);
      layout();
      need();
      return;
    }
    const {item} = itemAt(x, y);
    if (!item) return;
    if (item[4] > 1) {
      // a merged run: zoom until its zones are apart
      const pad = Math.max(item[1] * 0.05, MIN_SPAN / 2);
      setView(item[0] - pad, item[0] + item[1] + pad);
      return;
    }
    selectZone(item[3]);
  }

  // ---- details of one zone ------------------------------------------------

  function kv(dl, key, value, raw) {
    dl.append(el('dt', null, key));
    const dd = el('dd', {data: {field: key}});
    if (value instanceof Node) dd.append(value); else dd.textContent = value === null || value === undefined ? '' : String(value);
    if (raw !== undefined && raw !== null) dd.dataset.value = raw;
    dl.append(dd);
  }

  async function selectZone(id, center) {
    const body = $('details-body');
    const tid = T.id;
    if (!tid) return; // the timeline was left meanwhile
    try {
      const z = await api('/api/t/' + tid + '/zone?' + q({id: id}));
      if (T.id !== tid) return;
      T.selected = z;
      T.dirty = true;
      if (center) centerOn(z);
      const track = (T.meta.tracks || []).find((t) => t.track === z.track) || {};
      const p = procOf(z.process);
      const dl = el('dl', {class: 'kv'});
      kv(dl, 'name', z.name);
      kv(dl, 'file', z.file ? z.file + (z.line ? ':' + z.line : '') : '—', z.file ? z.file + ':' + z.line : '');
      kv(dl, 'kind', funcOf(z.func).kind || '');
      kv(dl, 'start', fmtDur(z.start), z.start);
      kv(dl, 'duration', fmtDur(z.dur), z.dur);
      kv(dl, 'self', fmtDur(z.self), z.self);
      kv(dl, 'depth', z.depth, z.depth);
      kv(dl, 'thread', (track.name || '') + ' (tid ' + track.tid + ') of ' + (p.program || '') + ' pid ' + p.pid, z.process + '.' + z.thread);
      const fl = [];
      if (z.flags & 1) fl.push('open');
      if (z.flags & 2) fl.push('aborted');
      if (z.flags & 4) fl.push('cut');
      kv(dl, 'flags', fl.join(', ') || '—', z.flags);
      kv(dl, 'text', z.text === null || z.text === undefined ? '—' : z.text, z.text);
      const ol = el('ol', {class: 'callers'});
      for (const c of z.callers || []) {
        const a = el('a', {data: {id: c.id}}, c.name);
        a.addEventListener('click', () => selectZone(c.id, true));
        ol.append(el('li', null, a, el('span', {class: 'muted'}, '  ' + fmtDur(c.dur) + ' at ' + fmtDur(c.start) + ', depth ' + c.depth)));
      }
      kv(dl, 'callers', z.callers && z.callers.length ? ol : '— (top level)');
      const zoom = el('button', null, 'Zoom to zone');
      zoom.addEventListener('click', () => centerOn(z, true));
      body.classList.remove('muted');
      const lines = el('div', {id: 'lines-view'});
      $('details').classList.remove('has-lines');
      body.replaceChildren(el('div', {class: 'details-cols'},
        el('div', null, dl, el('div', {class: 'bar'}, zoom, el('span', {class: 'muted'}, 'zone #' + z.id))), lines));
      body.dataset.id = z.id;
      showLines(z, lines);
    } catch (e) {
      body.replaceChildren(el('p', {class: 'state-error'}, 'Zone ' + id + ': ' + e.message));
    }
  }

  // ---- line heat of the selected zone's function -----------------------------

  // python -m tracy -l records each executed line as a zone of kind "line"
  // named "QUAL:LINE" with the file of its code object; a function's zones
  // are named QUAL (with " [FILE:LINE]" under --label). The figures are
  // tracy-export -f lines' (line_profiler's): per line, hits (its zones)
  // and time (their durations summed, nested ones too), over the whole run
  // and every thread, from the whole run's /range (calls, mean).
  const L = {rows: null, whole: null, wholeFor: null};

  function qualOf(f) {
    if (f.kind === 'line') {
      const i = f.name.lastIndexOf(':');
      return i > 0 ? f.name.slice(0, i) : f.name;
    }
    const n = f.name;
    const open = n.indexOf(' [');
    return n.endsWith(']') && open > 0 ? n.slice(0, open) : n;
  }

  function lineFuncs(f) {
    if (f.kind !== 'python' && f.kind !== 'line') return [];
    const qual = qualOf(f);
    const out = [];
    for (const g of T.funcs) {
      if (g && g.kind === 'line' && g.file === f.file && qualOf(g) === qual) out.push(g);
    }
    return out;
  }

  async function wholeRun() {
    const key = T.id + '/' + T.meta.generation;
    if (L.wholeFor !== key) {
      L.whole = api('/api/t/' + T.id + '/range?' + q({t0: 0, t1: endOfRun()}));
      L.wholeFor = key;
    }
    try {
      return await L.whole;
    } catch (e) {
      L.wholeFor = null;
      throw e;
    }
  }

  function heat(share) { // 0..1: white to orange, as the HTML report's line view
    return 'hsl(30,90%,' + (100 - 45 * Math.max(0, Math.min(1, share))) + '%)';
  }

  // The function's lines from /lines (with the source), or, from a server
  // without it, from the whole run's /range (figures only).
  async function lineRows(z, f, lf) {
    try {
      const d = await api('/api/t/' + T.id + '/lines?' + q({func: z.func}));
      return {rows: d.rows.map(([line, hits, ns, text]) => ({line: line, hits: hits, ns: ns, text: text})),
        total: d.total, note: d.note, source: true};
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404 || e.message !== 'no such route') throw e;
    }
    const d = await wholeRun();
    const byFunc = new Map((d.functions || []).map((r) => [r.func, r]));
    const rows = lf.map((g) => {
      const r = byFunc.get(g.func);
      // mean is the exact quotient (printed with 17 digits): the sum is whole
      return {line: g.line, hits: r ? r.calls : 0, ns: r ? Math.round(r.mean * r.calls) : 0, text: null};
    }).filter((r) => r.hits > 0).sort((a, b) => a.line - b.line);
    return {rows: rows, total: rows.reduce((a, r) => a + r.ns, 0), note: 'the source is not shown by this server', source: false};
  }

  async function showLines(z, box) {
    L.rows = null;
    const f = funcOf(z.func);
    const lf = lineFuncs(f);
    if (!lf.length) return;
    const qual = qualOf(f);
    $('details').classList.add('has-lines');
    box.replaceChildren(el('p', {class: 'muted'}, 'Lines of ' + qual + '…'));
    let d;
    try {
      d = await lineRows(z, f, lf);
    } catch (e) {
      box.replaceChildren(el('p', {class: 'state-error'}, 'Lines of ' + qual + ': ' + e.message));
      return;
    }
    if (!T.selected || T.selected.id !== z.id) return;
    L.rows = d.rows.filter((r) => r.hits > 0);
    const total = d.total;
    const us = (ns) => (ns / 1e3).toFixed(1);
    const table = el('table', {class: 'grid lines'});
    const th = (text, num) => el('th', {class: num ? 'num' : null}, text);
    table.append(el('thead', null, el('tr', null, th('line', 1), th('hits', 1), th('time µs', 1),
      th('per hit µs', 1), th('% time', 1), d.source ? th('source') : null)));
    const tb = el('tbody');
    for (const r of d.rows) {
      const share = total ? r.ns / total : 0;
      const tr = el('tr', {class: f.kind === 'line' && r.line === f.line ? 'this-line' : null,
        data: {line: r.line, hits: r.hits, ns: r.ns}},
      el('td', {class: 'num'}, r.line), el('td', {class: 'num'}, r.hits ? fmtInt(r.hits) : ''),
      el('td', {class: 'num'}, r.hits ? us(r.ns) : ''), el('td', {class: 'num'}, r.hits ? us(r.ns / r.hits) : ''),
      el('td', {class: 'num'}, r.hits && total ? (100 * share).toFixed(1) : ''),
      d.source ? el('td', {class: 'src'}, r.text === null ? '' : r.text) : null);
      if (r.hits) tr.style.background = heat(share);
      tb.append(tr);
    }
    table.append(tb);
    box.replaceChildren(el('h4', {id: 'lines-title'}, 'Lines of ' + qual),
      el('p', {class: 'muted'}, (f.file || '') + ': ' + fmtDur(total) + ' in its lines over the whole run, every thread' +
        (d.note ? ' (' + d.note + ')' : '')), table);
  }

  function centerOn(z, fit) {
    const minW = span() / T.W * 8;
    if (fit || z.dur < minW || z.dur > span()) {
      const s = Math.max(z.dur * 3, MIN_SPAN);
      setView(z.start + z.dur / 2 - s / 2, z.start + z.dur / 2 + s / 2);
    } else if (z.start < T.t0 || z.start + z.dur > T.t1) {
      const s = span();
      setView(z.start + z.dur / 2 - s / 2, z.start + z.dur / 2 + s / 2);
    }
    // scroll its row into view
    const row = T.rows.find((r) => r.kind === 'depth' && r.track === z.track && r.depth === z.depth);
    if (row) {
      const sc = $('tl-scroll');
      if (row.y - sc.scrollTop < AXIS_H + FRAME_H || row.y + row.h - sc.scrollTop > T.H) {
        sc.scrollTop = Math.max(0, row.y - T.H / 2);
      }
    } else if (T.collapsed.has(z.track)) {
      T.collapsed.delete(z.track);
      layout();
      need();
    }
  }

  // ---- find a function ------------------------------------------------------

  async function startFind(what) {
    const text = what.q !== undefined ? what.q.trim() : null;
    if (text === '' && what.func === undefined) {
      T.find = null;
      $('find-count').textContent = '';
      T.dirty = true;
      return;
    }
    try {
      const params = what.func !== undefined ? {func: what.func} : {q: text};
      const d = await api('/api/t/' + T.id + '/find?' + q(params));
      T.find = {params: params, count: d.count, funcs: new Set(d.funcs || []), zone: null};
      $('find-count').textContent = fmtInt(d.count) + ' occurrence' + (d.count === 1 ? '' : 's') +
        (d.funcs && d.funcs.length > 1 ? ' in ' + d.funcs.length + ' functions' : '');
      $('find-count').dataset.count = d.count;
      T.dirty = true;
    } catch (e) {
      $('find-count').textContent = e.message;
      delete $('find-count').dataset.count;
      T.find = null;
    }
  }

  async function findStep(dir) {
    if (!T.find || $('find').value.trim() !== (T.find.params.q ?? $('find').value.trim())) {
      await startFind({q: $('find').value});
    }
    if (!T.find || !T.find.count) return;
    const cur = T.find.zone;
    const params = Object.assign({}, T.find.params);
    if (dir > 0) params.after = cur ? cur.start : Math.max(0, Math.floor(T.t0)) - 1;
    else params.before = cur ? cur.start : Math.ceil(T.t1) + 1;
    if (params.after < 0) delete params.after;
    try {
      const d = await api('/api/t/' + T.id + '/find?' + q(params));
      if (!d.zone) {
        $('find-count').textContent = fmtInt(T.find.count) + ' occurrences; no more ' + (dir > 0 ? 'after' : 'before') + ' this one';
        return;
      }
      T.find.zone = d.zone;
      T.find.index = typeof d.index === 'number' ? d.index : null;
      $('find-count').textContent = (T.find.index !== null ? fmtInt(T.find.index) + ' of ' + fmtInt(T.find.count)
        : fmtInt(T.find.count) + ' occurrence' + (T.find.count === 1 ? '' : 's')) + '; at ' + fmtDur(d.zone.start);
      if (T.find.index !== null) $('find-count').dataset.index = T.find.index; else delete $('find-count').dataset.index;
      selectZone(d.zone.id, true);
    } catch (e) {
      $('find-count').textContent = e.message;
    }
  }

  // ---- a time range: function table and flame graph --------------------------

  const Flame = {root: null, boxes: []};

  async function selectRange(t0, t1) {
    T.range = {t0: t0, t1: t1};
    T.dirty = true;
    $('range-title').textContent = fmtDur(t0) + ' – ' + fmtDur(t1) + ' (' + fmtDur(t1 - t0) + ')';
    const body = $('range-body');
    body.replaceChildren(el('p', {class: 'muted'}, 'Aggregating…'));
    try {
      const params = {t0: t0, t1: t1};
      const tracks = visibleTracks();
      if (tracks.length !== (T.meta.tracks || []).length) params.tracks = tracks.join(',');
      const d = await api('/api/t/' + T.id + '/range?' + q(params));
      if (!T.range || T.range.t0 !== t0 || T.range.t1 !== t1) return;
      d.tree = nestTree(d.tree);
      T.rangeData = d;
      body.classList.remove('muted');
      body.dataset.t0 = t0;
      body.dataset.t1 = t1;
      const all = (T.meta.tracks || []).length;
      const over = params.tracks ? ' of the ' + tracks.length + ' unfolded threads (of ' + all + ')' : '';
      body.replaceChildren(el('p', {class: 'muted'}, fmtInt(d.zones) + ' zones in the range' + over + '; click a row to find the function.'),
        sortableTable([
          {key: 'name', label: 'function'},
          {key: 'calls', label: 'calls', num: true, fmt: fmtInt},
          {key: 'total', label: 'total', num: true, fmt: fmtDur},
          {key: 'self', label: 'self', num: true, fmt: fmtDur},
          {key: 'mean', label: 'mean', num: true, fmt: fmtDur},
          {key: 'p50', label: 'p50', num: true, fmt: fmtDur},
          {key: 'p95', label: 'p95', num: true, fmt: fmtDur},
        ], d.functions || [], (r) => {
          $('find').value = r.name;
          startFind({func: r.func});
        }, 'total'));
      Flame.root = null;
      $('flame-wrap').hidden = false;
      drawFlame();
    } catch (e) {
      body.replaceChildren(el('p', {class: 'state-error'}, 'Range: ' + e.message));
    }
  }

  // The range's call tree arrives flat, [node, parent, func, calls, total,
  // self] with parents first; the flame graph walks it nested.
  function nestTree(flat) {
    if (!Array.isArray(flat)) return flat || null;
    const nodes = [];
    let root = null;
    for (const [node, parent, func, calls, total, self] of flat) {
      const n = {func: func, name: func < 0 ? 'all' : funcOf(func).name, calls: calls, total: total, self: self, children: []};
      nodes[node] = n;
      if (parent < 0 || !nodes[parent]) root = root || n; else nodes[parent].children.push(n);
    }
    if (root && !root.total) root.total = root.children.reduce((a, c) => a + c.total, 0);
    for (const n of nodes) if (n) n.children.sort((x, y) => y.total - x.total);
    return root;
  }

  // An icicle of the range's call tree: the root on top, callees below,
  // widths by total time. A click makes a frame the root; Reset undoes it.
  function drawFlame() {
    const d = T.rangeData;
    const cv = $('flame');
    if (!d || !d.tree) return;
    const root = Flame.root || d.tree;
    const FH = 17;
    let depth = 0;
    const walk = (n, k) => { depth = Math.max(depth, k); for (const c of n.children || []) walk(c, k + 1); };
    walk(root, 1);
    const W = cv.parentElement.clientWidth || 600;
    const H = depth * FH + 2;
    const dpr = window.devicePixelRatio || 1;
    cv.width = Math.round(W * dpr);
    cv.height = Math.round(H * dpr);
    cv.style.height = H + 'px';
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    Flame.boxes = [];
    const total = root.total || (root.children || []).reduce((s, c) => s + (c.total || 0), 0) || 1;
    const place = (n, x, k, w) => {
      if (w < 0.5) return;
      const y = k * FH;
      g.fillStyle = n.func === -1 ? '#c9cfdb' : colourOf(n.name);
      g.fillRect(x, y, Math.max(w - 0.5, 0.5), FH - 1);
      const s = fitText(g, n.name, w);
      if (s) { g.fillStyle = '#101828'; g.fillText(s, x + 3, y + FH / 2); }
      Flame.boxes.push({x: x, y: y, w: w, h: FH - 1, node: n});
      let cx = x;
      for (const c of n.children || []) {
        const cw = w * (c.total || 0) / (n === root ? total : (n.total || 1));
        place(c, cx, k + 1, cw);
        cx += cw;
      }
    };
    place(root, 0, 0, W);
    $('flame-title').textContent = 'Flame graph of the range' + (Flame.root ? ' — from ' + root.name : '') + ' (' + fmtDur(total) + ')';
  }

  function wireFlame() {
    const cv = $('flame');
    const at = (ev) => {
      const rc = cv.getBoundingClientRect();
      const x = ev.clientX - rc.left;
      const y = ev.clientY - rc.top;
      return Flame.boxes.find((b) => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + b.h);
    };
    cv.addEventListener('click', (ev) => {
      const b = at(ev);
      if (b) { Flame.root = b.node.func === -1 ? null : b.node; drawFlame(); }
    });
    cv.addEventListener('mousemove', (ev) => {
      const b = at(ev);
      cv.title = b ? b.node.name + ': total ' + fmtDur(b.node.total) + ', self ' + fmtDur(b.node.self) +
        ', ' + fmtInt(b.node.calls) + ' calls' : '';
    });
  }

  // ---- live sessions --------------------------------------------------------

  function liveBadge() {
    const m = T.meta;
    const b = $('live');
    if (!m || (m.state !== 'writing' && !T.live)) { b.hidden = true; return; }
    // the daemon's counters: clients and whatever was lost or refused so far;
    // every counter in the tooltip
    const all = m.stats || [];
    const shown = all.filter((s) => /^clients_connected$|^events(_received)?$/.test(s.name) ||
      (s.value && /lost|reject|refused|dropped|aborted/.test(s.name)));
    const stats = shown.map((s) => s.name.replace(/_/g, ' ') + ' ' + fmtInt(s.value)).join(' · ');
    b.title = all.map((s) => s.name + ' = ' + s.value).join('\n');
    b.hidden = false;
    b.classList.toggle('done', m.state !== 'writing');
    b.textContent = (m.state === 'writing' ? '● live' : '■ ' + m.state) + ' · ' + fmtInt(m.zones) + ' zones · ' +
      fmtDur(m.duration_ns) + (stats ? ' · ' + stats : '');
  }

  // the session's name in the header, its figures on the right
  function summary() {
    const m = T.meta;
    const label = (m.processes || []).map((p) => p.program).filter(Boolean).join(', ') + ' · ' + (m.path || m.id);
    crumbs([{text: 'sessions', href: '#/'}, {text: label}]);
    document.title = 'tracy-serve: ' + label;
    setStatus(fmtInt(m.zones) + ' zones · ' + (m.tracks || []).length + ' thread' + ((m.tracks || []).length === 1 ? '' : 's') + ' · ' + fmtDur(m.duration_ns) +
      (m.lost_events ? ' · ' + fmtInt(m.lost_events) + ' events lost' : ''));
  }

  async function poll() {
    if (!T.id || T.polling) return;
    T.polling = true;
    T.asked.polls++;
    try {
      const m = await api('/api/t/' + T.id + '/meta');
      const old = T.meta;
      if (!old || m.id !== old.id) return;
      const grew = m.generation !== old.generation || m.duration_ns !== old.duration_ns ||
        (m.tracks || []).length !== (old.tracks || []).length || m.state !== old.state;
      const follow = T.follow || T.t1 >= old.duration_ns;
      T.meta = m;
      if (grew) {
        summary();
        await loadFunctions();
        layout();
        if (follow) {
          const s = Math.max(span(), 0);
          if (T.t0 <= 0) setView(0, endOfRun()); else setView(endOfRun() - s, endOfRun());
          T.follow = true;
        }
        need();
      }
      liveBadge();
      if (m.state !== 'writing') stopLive();
    } catch (e) {
      showError('Live: ' + e.message);
    } finally {
      T.polling = false;
    }
  }

  // Polls a second after the last poll's answer is on screen, not on a fixed
  // beat: on a slow server a poll never starts before the last one is drawn,
  // so the view holds still between polls (ten seconds at most are waited).
  function startLive() {
    stopLive();
    const live = {timer: null, waited: 0};
    T.live = live;
    const step = async () => {
      if (T.live !== live) return;
      await poll();
      live.waited = 0;
      drawn();
    };
    const drawn = () => {
      if (T.live !== live) return;
      const busy = T.debounce || T.fetching || T.dirty;
      if (busy && live.waited < 100) { live.waited++; live.timer = setTimeout(drawn, 100); }
      else live.timer = setTimeout(step, 1000);
    };
    live.timer = setTimeout(step, 1000);
  }

  function stopLive() {
    if (T.live) clearTimeout(T.live.timer);
    T.live = null;
  }

  // ---- opening a session --------------------------------------------------

  async function openTimeline(id, opts) {
    show('timeline-view');
    const same = T.id === id && T.meta;
    if (!same) {
      T.id = id;
      T.meta = null;
      T.data = null;
      T.funcs = [];
      T.funcsFor = -1;
      T.selected = null;
      T.range = null;
      T.rangeData = null;
      T.find = null;
      T.collapsed.clear();
      T.collapsedProc.clear();
      $('find').value = '';
      $('find-count').textContent = '';
      $('details-body').replaceChildren('Click a zone.');
      $('range-body').replaceChildren('Shift+drag on the timeline to select a time range.');
      $('range-title').textContent = '';
      $('flame-wrap').hidden = true;
    }
    crumbs([{text: 'sessions', href: '#/'}, {text: id}]);
    resize();
    // the page may move on (another route) while an answer is awaited
    const current = () => T.id === id;
    try {
      if (!same) {
        setStatus('opening…');
        const meta = await api('/api/t/' + id + '/meta');
        if (!current()) return;
        T.meta = meta;
        await loadFunctions();
        if (!current()) return;
        layout();
        resize();
        setView(0, endOfRun());
        const m = T.meta;
        summary();
        if (m.state === 'writing') { T.follow = true; startLive(); }
        liveBadge();
      }
      if (opts.t0 !== undefined && opts.t1 !== undefined) setView(+opts.t0, +opts.t1);
      if (opts.find) {
        $('find').value = opts.find;
        await startFind({q: opts.find});
        if (!current()) return;
        findStep(1);
      }
      if (opts.zone !== undefined) selectZone(+opts.zone, true);
      showError('');
    } catch (e) {
      if (!current()) return;
      setStatus('');
      showError('Cannot open this session: ' + e.message);
      T.meta = null;
      nameUnopened(id, current);
    }
  }

  // A session that cannot be opened is named in the header by its file, as
  // in the list (which a direct link has not loaded), not by its id.
  async function nameUnopened(id, current) {
    let s = S.byId.get(id);
    if (!s) {
      try {
        s = ((await api('/api/sessions')).sessions || []).find((x) => x.id === id);
      } catch (e) {
        return; // the id stays
      }
    }
    if (s && current()) crumbs([{text: 'sessions', href: '#/'}, {text: sessionLabel(s)}]);
  }

  // ---- routes -----------------------------------------------------------

  function route() {
    clearInterval(S.timer);
    S.timer = null;
    S.note = '';
    const h = location.hash.replace(/^#/, '') || '/';
    if (h.startsWith('t=')) { openByPath(new URLSearchParams(h)); return; }
    const [path, query] = h.split('?');
    const opts = Object.fromEntries(new URLSearchParams(query || ''));
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 't') {
      // the timeline's figures and live badge belong to it alone
      stopLive();
      setStatus('');
      $('live').hidden = true;
      T.id = null;
      T.meta = null;
    }
    if (parts[0] === 't' && parts[1]) openTimeline(parts[1], opts);
    else if (parts[0] === 'diff' && parts[2]) openDiff(parts[1], parts[2]);
    else if (parts[0] === 'trend' && parts[1]) openTrend(parts[1]);
    else openSessions();
  }

  // #t=PATH[&find=NAME][&t0=&t1=]: the link tracy-export -f html writes
  // beside its sections. PATH is the trace's absolute path (or its path
  // under a served folder); it is looked up in the sessions list.
  async function openByPath(params) {
    const want = params.get('t') || '';
    const join = (root, rel) => (root.endsWith('/') ? root : root + '/') + rel;
    await loadSessions();
    const s = S.list.find((x) => x.root && (join(x.root, x.path) === want || x.root === want)) ||
      S.list.find((x) => x.path === want);
    if (!s) {
      const dir = want.includes('/') ? want.slice(0, want.lastIndexOf('/')) || '/' : '.';
      S.note = 'tracy-serve serves no trace ' + want + ' (start it with: tracy-serve ' + dir + ')';
      openSessions();
      return;
    }
    const opts = {};
    for (const k of ['find', 't0', 't1', 'zone']) if (params.get(k) !== null) opts[k] = params.get(k);
    location.replace('#/t/' + s.id + (Object.keys(opts).length ? '?' + q(opts) : ''));
  }

  function wireSessions() {
    $('compare').addEventListener('click', () => {
      if (S.checked.length !== 2) return;
      // A is the older run, B the newer one
      const [x, y] = S.checked.map((id) => S.byId.get(id));
      const older = BigInt(x.wall_start_ns || '0') <= BigInt(y.wall_start_ns || '0');
      location.hash = '#/diff/' + (older ? x.id + '/' + y.id : y.id + '/' + x.id);
    });
    $('trend').addEventListener('click', () => {
      const p = $('program').value;
      if (p) location.hash = '#/trend/' + encodeURIComponent(p);
    });
  }

  // ---- capture a running program (POST /api/capture) --------------------------

  // pending: the capture asked for (its session id once answered); ids: the
  // sessions captured from this page, marked in the list
  const Cap = {pending: null, ids: [], busy: false};

  function capStatus(text, error) {
    const p = $('cap-status');
    p.textContent = text || '';
    p.classList.toggle('error', !!error);
  }

  // "HOST:PORT" or "[V6]:PORT", PORT 1..65535; null when malformed
  function captureAddress(text) {
    const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(text.trim());
    return m && +m[2] >= 1 && +m[2] <= 65535 ? m[0] : null;
  }

  async function startCapture() {
    if (Cap.busy) return;
    const address = captureAddress($('cap-addr').value);
    const seconds = Number($('cap-dur').value);
    if (!address) { capStatus('The address is HOST:PORT (the port the program listens on).', true); return; }
    if (!(seconds > 0)) { capStatus('The duration is a number of seconds above 0.', true); return; }
    const body = {address: address, duration_ms: Math.max(1, Math.round(seconds * 1000))};
    const token = $('cap-token').value;
    if (token) body.token = token;
    Cap.busy = true;
    $('cap-go').disabled = true;
    $('cap-open-now').disabled = true;
    capStatus('Recording ' + address + ' for ' + fmtDur(body.duration_ms * 1e6) + '…');
    try {
      const d = await api('/api/capture', undefined, body);
      Cap.pending = {id: d.id, path: d.path || d.id, address: address, opened: false};
      if (!Cap.ids.includes(d.id)) Cap.ids.push(d.id);
      capStatus('Recording ' + address + ' into ' + Cap.pending.path + '…');
      await loadSessions();
      captureProgress();
    } catch (e) {
      Cap.pending = null;
      capStatus('Capture failed: ' + e.message, true);
    } finally {
      Cap.busy = false;
      $('cap-go').disabled = false;
    }
  }

  // Follows the pending capture in the sessions list: being written, then
  // complete (opened then when asked), or an error.
  function captureProgress() {
    const c = Cap.pending;
    if (!c) return;
    const s = S.byId.get(c.id);
    if (!s) return;
    $('cap-open-now').disabled = s.capture === 'recording';
    if (s.capture === 'recording') {
      capStatus('Recording ' + c.address + ' into ' + s.path + '…');
    } else if (s.state === 'error') {
      capStatus((s.capture === 'failed' ? 'Capture failed: ' : 'The capture\'s trace ' + s.path + ' is unreadable: ') +
        s.error, true);
      Cap.pending = null;
      $('cap-open-now').disabled = true;
    } else if (s.state === 'writing') {
      capStatus('Being written: ' + s.path + ', ' + fmtInt(s.zones) + ' zones so far. Open now to follow it live.');
    } else {
      capStatus('Written: ' + s.path + ', ' + fmtInt(s.zones) + ' zones, ' + fmtDur(s.duration_ns) +
        (s.state === 'truncated' ? ' (truncated)' : '') + '.');
      Cap.pending = null;
      if ($('cap-follow').checked && !c.opened) openCaptured(c);
    }
  }

  function openCaptured(c) {
    c.opened = true;
    const dlg = $('capture-dlg');
    if (dlg.open) dlg.close();
    location.hash = '#/t/' + c.id;
  }

  function wireCapture() {
    const dlg = $('capture-dlg');
    $('capture-open').addEventListener('click', () => {
      if (!Cap.busy && !Cap.pending) capStatus('');
      dlg.showModal();
      $('cap-addr').focus();
    });
    $('cap-form').addEventListener('submit', (ev) => { ev.preventDefault(); startCapture(); });
    $('cap-close').addEventListener('click', () => dlg.close());
    $('cap-open-now').addEventListener('click', () => {
      const id = Cap.pending ? Cap.pending.id : Cap.ids[Cap.ids.length - 1];
      if (id) openCaptured(Cap.pending || {id: id});
    });
  }

  // ---- the debug hook --------------------------------------------------------

  const hook = {
    // zones drawn by the last frame: {id, count, track, depth, start, dur, func, name, flags, x, w}
    get drawn() { return T.drawn; },
    get view() { return {t0: T.t0, t1: T.t1, width: T.W}; },
    get meta() { return T.meta; },
    get selected() { return T.selected; },
    get find() { return T.find && {count: T.find.count, funcs: [...T.find.funcs], zone: T.find.zone, index: T.find.index ?? null}; },
    get range() { return T.rangeData; },
    get sessions() { return S.list; },
    get sessionsLoaded() { return S.loaded; },
    // the capture asked from the page: {id, path, address} until written
    get capture() { return Cap.pending && {id: Cap.pending.id, path: Cap.pending.path}; },
    get captured() { return Cap.ids.slice(); },
    // the line view of the selected zone's function: [{line, hits, ns}]
    get lines() { return L.rows && L.rows.map((r) => ({line: r.line, hits: r.hits, ns: r.ns})); },
    // true once the frame on screen was drawn from an answer covering the view
    settled() {
      return !!T.meta && !T.debounce && !T.fetching && covered() && !T.dirty && T.drawnSeq === T.dataSeq;
    },
    get flameBoxes() { return Flame.boxes.length; },
    // ms from the page's navigation to the first frame drawn from an answer
    // covering the view (make bench: first paint)
    get paintedAt() { return T.paintedAt; },
    // how many times the page asked for a view and polled a session's figures
    get asked() { return Object.assign({}, T.asked); },
    // the flame graph's frames: name, calls, total and place (CSS px in the canvas)
    get flame() { return Flame.boxes.map((b) => ({name: b.node.name, calls: b.node.calls, total: b.node.total, x: b.x, y: b.y, w: b.w})); },
    get flameRoot() { return Flame.root ? Flame.root.name : null; },
    // what the cached viewport answer holds besides zones, summed
    get extras() {
      const d = T.data;
      if (!d) return null;
      const sum = (xs, k) => xs.reduce((a, x) => a + x[k], 0);
      return {markers: sum(d.markers || [], 3), lost: sum(d.lost || [], 2),
        frames: (d.frames || []).reduce((a, f) => a + sum(f.marks, 1), 0),
        plots: (d.plots || []).filter((p) => p.points.length).length};
    },
    setView: (t0, t1) => setView(t0, t1),
    // the middle of a thread's header row (a click there folds the thread)
    headY(track) {
      const row = T.rows.find((r) => r.kind === 'thread' && r.track === track);
      return row ? row.y - T.scrollY + HEAD_H / 2 : null;
    },
    // the middle of a depth row, in CSS px from the top of the timeline
    rowY(track, depth) {
      const row = T.rows.find((r) => r.kind === 'depth' && r.track === track && r.depth === depth);
      return row ? row.y - T.scrollY + ROW_H / 2 : null;
    },
    // canvas coordinates (CSS px, relative to the page) of a drawn zone's middle
    pointOf(id) {
      const d = T.drawn.find((z) => z.id === id && z.count === 1);
      if (!d) return null;
      const row = T.rows.find((r) => r.kind === 'depth' && r.track === d.track && r.depth === d.depth);
      const rc = $('tl-scroll').getBoundingClientRect();
      return [rc.left + d.x + d.w / 2, rc.top + row.y - T.scrollY + ROW_H / 2];
    },
  };
  window.__tracy = hook;

  function start() {
    wireSessions();
    wireCapture();
    wireTimeline();
    wireFlame();
    window.addEventListener('hashchange', route);
    route();
    requestAnimationFrame(frame);
  }

  start();
})();
