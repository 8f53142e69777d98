// gpuwarden's page: polls gpuwardend's JSON API (api/status, api/queue,
// api/history; docs/json.md) at the daemon's sampling rate and renders it.
// Every address is relative, so the page works under a reverse proxy's prefix.
// Every text that comes from the server goes in through textContent, never
// as markup: a process named "<script>" stays text. Control and bidi
// characters are shown as \uXXXX so that a name cannot reorder the page.
'use strict';

(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const W = 600;  // The chart's viewBox: width x height, stretched to the card.
  const H = 100;
  const HOLDER_CODES = new Set(['IDLE_HOLDER', 'ORPHAN_HOLDER', 'ZOMBIE_HOLDER']);
  const MAX_SINCE_S = 90 * 86400;

  const view = {
    sampling: 1000,
    span: 3600,       // The chart's window, seconds.
    until: 0,         // Its end, seconds before now (0: live).
    history: null,    // The last /api/history reply.
    historyAt: 0,     // When it was fetched (ms).
    historyBusy: false,
    cards: new Map(), // GPU index -> its card's elements.
    updates: 0,
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  // A string from the server, safe to read: controls and bidi overrides shown
  // as escapes; bytes that were not UTF-8 (the queue's {"base64": ...}) named.
  function shown(s) {
    if (s === null || s === undefined) return '—';
    if (typeof s === 'object' && typeof s.base64 === 'string') return '(bytes) ' + s.base64;
    return String(s).replace(
      /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]/g,
      (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }

  function bytes(b) {
    if (b === null || b === undefined || !isFinite(b)) return '—';
    if (b >= 2 ** 30) return (b / 2 ** 30).toFixed(1) + ' GiB';
    return Math.round(b / 2 ** 20) + ' MiB';
  }

  function duration(s) {
    if (s === null || s === undefined || !isFinite(s)) return '—';
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }

  function clock(ms) {
    const d = new Date(ms);
    return view.span > 86400 ? d.toLocaleString() : d.toLocaleTimeString();
  }

  function stateWord(s) { return (s || 'unknown').replace('_', ' '); }

  async function getJson(path) {
    const r = await fetch(path, { cache: 'no-store', credentials: 'same-origin' });
    if (r.status === 401) throw new Error('a token is needed: open ?token=TOKEN (docs/web.md)');
    if (!r.ok && r.status !== 400) throw new Error(path + ': HTTP ' + r.status);
    return r.json();
  }

  function setConn(ok, text) {
    const c = $('conn');
    c.textContent = text;
    c.classList.toggle('lost', !ok);
    document.body.dataset.state = ok ? 'ready' : 'error';
  }

  // ---- The verdict, the GPUs, the holders ------------------------------

  function renderTop(status, why, facts) {
    const host = status.host && status.host.hostname;
    $('host').textContent = shown(host) + (status.source === 'simulated' ? ' (simulated)' : '');
    document.title = 'gpuwarden ' + why.verdict + ' ' + shown(host);
    const v = $('verdict');
    v.className = 'verdict v-' + why.verdict.toLowerCase().replace('never_fits', 'busy');
    $('verdict-word').textContent = why.verdict;
    // The summary starts with the verdict, shown apart already.
    let summary = why.summary || '';
    if (summary.startsWith(why.verdict)) summary = summary.slice(why.verdict.length).replace(/^ — /, '');
    $('summary').textContent = shown(summary);
    const driver = status.driver || {};
    const parts = [
      'as of ' + (status.time_unix_ms ? new Date(status.time_unix_ms).toLocaleTimeString() : '—'),
      status.gpus.length + ' GPUs',
      'driver ' + shown(driver.version),
      'judged over ' + why.window.samples + ' looks',
    ];
    if (status.errors.length) parts.push(status.errors.length + ' probe errors');
    $('meta').textContent = parts.join(' · ');
    $('version').textContent = shown(facts.version);
  }

  function holderFacts(why) {
    // pid -> what the diagnosis says of it (idle, orphaned, zombie).
    const out = new Map();
    const visit = (f) => {
      if (!HOLDER_CODES.has(f.code)) return;
      const idle = (f.evidence || []).find((e) => e.name === 'idle_for');
      for (const pid of f.pids) {
        out.set(pid, { code: f.code, idleFor: idle ? idle.number : null });
      }
    };
    for (const g of why.gpus) g.findings.forEach(visit);
    why.findings.forEach(visit);
    return out;
  }

  function makeCard(index) {
    const c = { root: el('article', 'card') };
    c.root.dataset.gpuIndex = index;
    const head = el('div', 'card-head');
    c.title = el('span', 'gpu-title');
    c.badge = el('span', 'badge');
    head.append(c.title, c.badge);
    c.line = el('div', 'gpu-line');
    const bar = (label, cls) => {
      const row = el('div', 'bar-row');
      const b = el('div', 'bar ' + cls);
      const fill = el('span');
      b.append(fill);
      const text = el('span', cls + '-text');
      row.append(el('span', null, label), b, text);
      return { row, fill, text };
    };
    c.mem = bar('Memory', 'mem');
    c.util = bar('Util', 'util');
    c.facts = el('div', 'facts');
    c.chart = el('div', 'chart');
    c.svg = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none',
                         role: 'img' });
    c.axis = el('div', 'chart-axis');
    c.read = el('div', 'chart-read');
    c.chart.append(c.svg, c.axis, c.read);
    c.svg.addEventListener('mousemove', (e) => readOut(c, e));
    c.svg.addEventListener('mouseleave', () => legend(c));
    c.holders = el('div', 'holders-box');
    c.root.append(head, c.line, c.mem.row, c.util.row, c.facts, c.chart, c.holders);
    legend(c);
    return c;
  }

  function legend(c) {
    c.read.replaceChildren(el('span', 'legend-util', '— utilisation %'),
                           el('span', 'legend-mem', '▇ memory used %'));
    const cur = c.svg.querySelector('.cursor');
    if (cur) cur.remove();
  }

  function renderGpus(status, why) {
    const box = $('gpus');
    const whyByIndex = new Map(why.gpus.map((g) => [g.index, g]));
    const idle = holderFacts(why);
    const seen = new Set();
    for (const g of status.gpus) {
      seen.add(g.index);
      let c = view.cards.get(g.index);
      if (!c) {
        c = makeCard(g.index);
        view.cards.set(g.index, c);
        box.append(c.root);
      }
      const w = whyByIndex.get(g.index) || { state: 'unknown', line: '' };
      c.root.className = 'card s-' + w.state;
      c.root.dataset.state = w.state;
      c.root.dataset.uuid = g.uuid || '';
      c.title.textContent = 'GPU ' + g.index + ' · ' + shown(g.name);
      c.title.dataset.name = g.name || '';
      c.badge.className = 'badge gpu-state s-' + w.state;
      c.badge.textContent = stateWord(w.state);
      c.line.textContent = shown(w.line);
      const m = g.memory || {};
      const used = m.used_bytes;
      const total = m.total_bytes;
      c.mem.fill.style.width = total ? Math.min(100, (100 * used) / total) + '%' : '0';
      c.mem.text.textContent = bytes(used) + ' / ' + bytes(total);
      c.mem.text.dataset.usedBytes = used === null || used === undefined ? '' : used;
      c.mem.text.dataset.totalBytes = total === null || total === undefined ? '' : total;
      const u = g.utilization_pct;
      c.util.fill.style.width = (u || 0) + '%';
      c.util.text.textContent = u === null || u === undefined ? '—' : u + ' %';
      c.util.text.dataset.util = u === null || u === undefined ? '' : u;
      const facts = [];
      if (g.temperature_c !== null && g.temperature_c !== undefined) facts.push(g.temperature_c + ' °C');
      if (g.power_draw_w !== null && g.power_draw_w !== undefined) {
        facts.push(Math.round(g.power_draw_w) + ' W' +
                   (g.power_limit_w ? ' of ' + Math.round(g.power_limit_w) + ' W' : ''));
      }
      if (w.reclaimable_bytes) facts.push(bytes(w.reclaimable_bytes) + ' reclaimable');
      // How long the history says it has been so (why's trends, docs/json.md).
      const trend = ((why.trends && why.trends.gpus) || []).find((t) => t.index === g.index);
      const run = (r) => duration(r.for_s) + (r.open_start ? ' or more' : '');
      if (trend && trend.idle_held) facts.push('held and idle for ' + run(trend.idle_held));
      if (trend && trend.memory_full) facts.push('memory full for ' + run(trend.memory_full));
      if (g.unreachable) facts.push('unreachable: ' + shown(g.unreachable.message));
      c.facts.textContent = facts.join(' · ');
      renderHolders(c, g, status, idle);
    }
    for (const [index, c] of view.cards) {
      if (!seen.has(index)) {
        c.root.remove();
        view.cards.delete(index);
      }
    }
  }

  function renderHolders(c, g, status, idle) {
    const rows = [];
    for (const p of g.processes || []) rows.push({ p, listed: true });
    for (const h of status.device_holders_not_listed || []) {
      if ((h.gpu_indices || []).includes(g.index)) rows.push({ p: h, listed: false });
    }
    if (!rows.length) {
      c.holders.replaceChildren(el('p', 'none', g.processes_known === false
        ? 'The driver did not say which processes use this GPU.'
        : 'No processes.'));
      return;
    }
    rows.sort((a, b) => (b.p.used_memory_bytes || 0) - (a.p.used_memory_bytes || 0));
    const t = el('table', 'holders');
    const head = el('tr');
    head.append(el('th', 'pid', 'PID'), el('th', 'user', 'User'), el('th', 'cmd', 'Command'),
                el('th', 'num', 'Memory'), el('th', 'num', 'Age'));
    t.append(head);
    for (const { p, listed } of rows) {
      const tr = el('tr', 'holder');
      tr.dataset.pid = p.pid;
      const cmd = el('td', 'cmd', shown(p.command || p.comm || p.name));
      cmd.title = shown(p.command || p.comm || p.name);
      const age = el('td', 'num', duration(p.age_s));
      const said = idle.get(p.pid);
      if (said) {
        const word = said.code === 'IDLE_HOLDER' ? 'idle' : said.code === 'ORPHAN_HOLDER'
          ? 'orphaned' : 'zombie';
        const tag = el('div', 'idle', word + (said.idleFor ? ' ' + duration(said.idleFor) : ''));
        age.append(tag);
      }
      if (!listed) cmd.append(el('div', 'idle', 'holds the device, not listed by the driver'));
      tr.append(el('td', 'pid', p.pid), el('td', 'user', shown(p.user)), cmd,
                el('td', 'num', listed ? bytes(p.used_memory_bytes) : '?'), age);
      t.append(tr);
    }
    c.holders.replaceChildren(t);
  }

  // ---- Findings, users, queue -------------------------------------------

  function renderFindings(why) {
    const all = [];
    const seen = new Set();
    const add = (f) => {
      const key = f.code + '\u0000' + f.message;
      if (!seen.has(key)) {
        seen.add(key);
        all.push(f);
      }
    };
    why.findings.forEach(add);
    for (const g of why.gpus) g.findings.forEach(add);
    const rank = new Map(why.all_findings_ranked.map((code, i) => [code, i]));
    all.sort((a, b) => (rank.get(a.code) ?? 1e9) - (rank.get(b.code) ?? 1e9));
    const list = $('findings');
    if (!all.length) {
      list.replaceChildren(el('li', 'none', 'Nothing is wrong.'));
      return;
    }
    list.replaceChildren(...all.map((f) => {
      const li = el('li', 'finding');
      li.dataset.code = f.code;
      const head = el('div');
      head.append(el('span', 'sev sev-' + f.severity, f.severity), el('span', 'code', f.code));
      if (f.gpus.length) head.append(el('span', 'code', ' · GPU ' + f.gpus.join(', ')));
      li.append(head, el('div', 'message', shown(f.message)));
      if (f.next_steps.length) {
        const steps = el('ul', 'steps');
        for (const s of f.next_steps) {
          const item = el('li');
          item.append(el('code', null, shown(s)));
          steps.append(item);
        }
        li.append(steps);
      }
      return li;
    }));
  }

  function renderUsers(why) {
    const body = $('users').tBodies[0];
    if (!why.users.length) {
      const tr = el('tr');
      const td = el('td', 'none', 'Nobody holds a GPU.');
      td.colSpan = 5;
      tr.append(td);
      body.replaceChildren(tr);
      return;
    }
    body.replaceChildren(...why.users.map((u) => {
      const tr = el('tr', 'user-row');
      tr.append(el('td', null, shown(u.user)), el('td', null, u.gpus.join(', ')),
                el('td', null, u.pids.length + (u.pids.length === 1 ? ' process' : ' processes')),
                el('td', 'num', bytes(u.vram_bytes)),
                el('td', 'num' + (u.idle_vram_bytes ? ' idle' : ''),
                   u.idle_vram_bytes ? bytes(u.idle_vram_bytes) : '—'));
      return tr;
    }));
  }

  function renderQueue(q) {
    const body = $('queue').tBodies[0];
    const note = $('queue-note');
    if (!q.ok) {
      note.textContent = q.error && q.error.code === 'no_queue'
        ? 'This gpuwardend runs without its queue.' : shown(q.error && q.error.message);
      body.replaceChildren();
      return;
    }
    const running = q.jobs.filter((j) => j.state === 'running' || j.state === 'starting').length;
    let text = running + ' running, ' + (q.jobs.length - running) + ' waiting.';
    if (q.degraded && q.degraded.length) text += ' The queue is degraded: its store refuses writes.';
    note.textContent = text;
    body.replaceChildren(...q.jobs.map((j) => {
      const tr = el('tr', 'job');
      tr.dataset.state = j.state;
      const since = j.start_unix_ms || j.submit_unix_ms;
      const gpus = j.gpu_indices.length ? j.gpu_indices.join(', ') : j.gpus + ' wanted';
      const reason = j.wait_reason ? shown(j.wait_reason.message) : '';
      tr.append(el('td', 'num', j.id), el('td', 'job-name', shown(j.name)),
                el('td', null, shown(j.user)), el('td', null, j.state), el('td', null, gpus),
                el('td', 'num', duration((q.now_unix_ms - since) / 1000)),
                el('td', 'reason', reason));
      return tr;
    }));
  }

  // ---- The history chart ------------------------------------------------

  function pathsFor(points, index, from, to, step) {
    let util = '';
    let mem = '';
    let run = [];
    const x = (t) => ((t - from) / (to - from)) * W;
    const flush = () => {
      if (run.length) {
        mem += 'M' + run[0][0].toFixed(1) + ',' + H;
        for (const [px, , m] of run) mem += 'L' + px.toFixed(1) + ',' + m.toFixed(1);
        mem += 'L' + run[run.length - 1][0].toFixed(1) + ',' + H + 'Z';
      }
      run = [];
    };
    let last = null;
    let drawn = 0;
    for (const p of points) {
      const g = p.gpus.find((q) => q.index === index);
      const t = p.time_unix_s + p.step_s / 2;
      if (!g || g.util_pct === null || (last !== null && t - last > 2.5 * Math.max(step, p.step_s))) {
        flush();
        if (!g || g.util_pct === null) {
          last = null;
          continue;
        }
      }
      const px = x(t);
      const uy = H - (H * Math.min(100, g.util_pct)) / 100;
      const memPct = g.mem_total_bytes ? (100 * g.mem_used_bytes) / g.mem_total_bytes : 0;
      const my = H - (H * Math.min(100, memPct)) / 100;
      util += (run.length ? 'L' : 'M') + px.toFixed(1) + ',' + uy.toFixed(1);
      run.push([px, uy, my]);
      last = t;
      ++drawn;
    }
    flush();
    return { util, mem, drawn };
  }

  function renderCharts() {
    const h = view.history;
    if (!h || !Array.isArray(h.points)) return;
    const from = h.from_unix_s;
    const to = h.to_unix_s;
    for (const [index, c] of view.cards) {
      const p = pathsFor(h.points, index, from, to, h.step_s);
      const kids = [];
      for (const pct of [25, 50, 75]) {
        kids.push(svg('line', { class: 'grid', x1: 0, x2: W, y1: H - pct, y2: H - pct,
                                'vector-effect': 'non-scaling-stroke' }));
      }
      kids.push(svg('path', { class: 'mem', d: p.mem || 'M0,0', 'vector-effect': 'non-scaling-stroke' }));
      kids.push(svg('path', { class: 'util', d: p.util || 'M0,0',
                              'vector-effect': 'non-scaling-stroke' }));
      c.svg.replaceChildren(...kids);
      c.svg.dataset.points = p.drawn;
      c.svg.setAttribute('aria-label', 'GPU ' + index + ': utilisation and memory, ' +
                         p.drawn + ' points');
      c.axis.replaceChildren(el('span', null, clock(from * 1000)),
                             el('span', null, view.until ? clock(to * 1000) : 'now'));
    }
    if (performance.getEntriesByName('gw-first-chart').length === 0) {
      performance.mark('gw-first-chart');
    }
    const label = view.until === 0 ? 'The last ' + duration(view.span)
      : duration(view.span) + ' ending ' + duration(view.until) + ' ago';
    $('range-label').textContent = label + ' (a point every ' + duration(h.step_s) + ')';
  }

  function readOut(c, e) {
    const h = view.history;
    if (!h || !h.points.length) return;
    const box = c.svg.getBoundingClientRect();
    const t = h.from_unix_s + ((e.clientX - box.left) / box.width) * (h.to_unix_s - h.from_unix_s);
    let best = null;
    for (const p of h.points) {
      if (!best || Math.abs(p.time_unix_s - t) < Math.abs(best.time_unix_s - t)) best = p;
    }
    const g = best && best.gpus.find((q) => q.index === Number(c.root.dataset.gpuIndex));
    if (!g) return;
    let cur = c.svg.querySelector('.cursor');
    if (!cur) {
      cur = svg('line', { class: 'cursor', y1: 0, y2: H, 'vector-effect': 'non-scaling-stroke' });
      c.svg.append(cur);
    }
    const x = ((best.time_unix_s - h.from_unix_s) / (h.to_unix_s - h.from_unix_s)) * W;
    cur.setAttribute('x1', x);
    cur.setAttribute('x2', x);
    const util = g.util_pct === null ? '—' : Math.round(g.util_pct) + ' %';
    c.read.replaceChildren(el('span', null, clock(best.time_unix_s * 1000)),
                           el('span', 'legend-util', 'util ' + util),
                           el('span', 'legend-mem', 'mem ' + bytes(g.mem_used_bytes)));
  }

  async function loadHistory() {
    if (view.historyBusy) return;
    view.historyBusy = true;
    const span = view.span;
    const until = view.until;
    // Live, with the window already drawn: only its steps from the newest
    // one on (that one is still filling), appended to what is held.
    const held = view.history;
    const last = held && until === 0 && held.points.length ? held.points[held.points.length - 1] : null;
    let path = 'api/history?since_s=' + (until + span) + '&until_s=' + until + '&points=360';
    if (last) path += '&after_unix_s=' + last.time_unix_s;
    try {
      const h = await getJson(path);
      if (h.schema === 'gpuwarden.web.history' && span === view.span && until === view.until) {
        if (last && view.history === held && h.step_s === held.step_s) {
          const kept = held.points.filter(
            (p) => p.time_unix_s >= h.from_unix_s && p.time_unix_s < last.time_unix_s);
          h.points = kept.concat(h.points);
        }
        view.history = h;
        view.historyAt = Date.now();
        renderCharts();
      }
    } catch (err) {
      // The cards say the connection is lost; the chart keeps what it had.
    } finally {
      view.historyBusy = false;
    }
  }

  function historyDue() {
    if (!view.history) return true;
    if (view.until !== 0) return false;  // A window of the past does not change.
    // A fresh history is thin: redrawn at the sampling rate until it has
    // a few points, then once a step.
    const thin = view.history.points.length < 30;
    const every = thin ? view.sampling : Math.max(view.sampling, view.history.step_s * 1000);
    return Date.now() - view.historyAt >= every;
  }

  function setupRange() {
    const buttons = document.querySelectorAll('.range button[data-span]');
    const sync = () => {
      for (const b of buttons) b.classList.toggle('on', Number(b.dataset.span) === view.span);
      $('pan-fwd').disabled = view.until === 0;
      $('pan-now').disabled = view.until === 0;
      $('pan-back').disabled = view.until + 2 * view.span > MAX_SINCE_S;
    };
    const go = () => {
      sync();
      view.history = null;
      loadHistory();
    };
    for (const b of buttons) {
      b.addEventListener('click', () => {
        view.span = Number(b.dataset.span);
        view.until = 0;
        go();
      });
    }
    $('pan-back').addEventListener('click', () => {
      view.until = Math.min(view.until + view.span, MAX_SINCE_S - view.span);
      go();
    });
    $('pan-fwd').addEventListener('click', () => {
      view.until = Math.max(0, view.until - view.span);
      go();
    });
    $('pan-now').addEventListener('click', () => {
      view.until = 0;
      go();
    });
    sync();
  }

  // ---- The loop -----------------------------------------------------------

  async function tick() {
    try {
      const [s, q] = await Promise.all([getJson('api/status'), getJson('api/queue')]);
      view.sampling = Math.max(250, s.sampling_ms || 1000);
      if (s.status && s.why) {
        renderTop(s.status, s.why, s);
        renderGpus(s.status, s.why);
        renderFindings(s.why);
        renderUsers(s.why);
        renderQueue(q);
        if (view.updates === 0) performance.mark('gw-first-render');
        ++view.updates;
        document.body.dataset.updates = view.updates;
        setConn(true, 'live · every ' + view.sampling / 1000 + ' s');
      } else {
        setConn(true, 'waiting for the first look…');
      }
      if (historyDue()) {
        loadHistory();
      } else if (view.history && [...view.cards.values()].some((c) => !c.svg.dataset.points)) {
        renderCharts();  // A card new since the history came.
      }
    } catch (err) {
      setConn(false, 'connection lost: ' + err.message + ' (retrying)');
    }
    setTimeout(tick, view.sampling);
  }

  setupRange();
  tick();
})();
