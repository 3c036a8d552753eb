// How long the answer in view stays on screen, for study mode's dwell time. It lives on the window,
// which outlives the remounts a rerun causes, so one continuous view of an answer is one stretch;
// time the tab is hidden or another page is open is not counted.
const DWELL = window.__aevDwell || (window.__aevDwell = { answer: null, ms: 0, since: null, report: null, beacon: null });
const dwellPause = () => {
  if (DWELL.since !== null) { DWELL.ms += performance.now() - DWELL.since; DWELL.since = null; }
};
const dwellResume = () => {
  if (DWELL.answer !== null && DWELL.since === null && !document.hidden) { DWELL.since = performance.now(); }
};
const MIN_DWELL_MS = 500;  // shorter stretches are re-renders, not reading
// One study event as a beacon to dashboard/study_beacon.py, the message a browser sends without a
// script run and even while the page is going away (closed tab, another site); false when it could
// not be sent (no route, so no token).
const studyBeacon = (fields) => {
  if (!DWELL.beacon || !navigator.sendBeacon) { return false; }
  const base = (window.__streamlit && window.__streamlit.BACKEND_BASE_URL) || (location.origin + '/');
  const body = JSON.stringify({ ...fields, token: DWELL.beacon,
    id: Math.random().toString(36).slice(2) + Date.now().toString(36) });
  return navigator.sendBeacon(new URL('_aee/dwell', base).href, new Blob([body], { type: 'text/plain' }));
};
// The stretch so far of the answer in view.
const dwellBeacon = () => {
  dwellPause();
  if (DWELL.answer === null || DWELL.ms < MIN_DWELL_MS) { return false; }
  const sent = studyBeacon({ answer: DWELL.answer, ms: Math.round(DWELL.ms) });
  if (sent) { DWELL.ms = 0; }
  return sent;
};
// A hover over or click on a marker of `answer`.
const markerBeacon = (answer, type, stmt, src) => Boolean(answer) && typeof src === 'number'
  && studyBeacon({ answer: answer, event: type, source: src, statement: typeof stmt === 'number' ? stmt : null });
if (!window.__aevDwellListener) {
  window.__aevDwellListener = true;
  // a hidden tab may never come back (closed, or the class moved on): report the stretch now
  const away = () => { dwellPause(); if (!dwellBeacon() && DWELL.report) { DWELL.report(); } };
  document.addEventListener('visibilitychange', () => { if (document.hidden) { away(); } else { dwellResume(); } });
  window.addEventListener('pagehide', away);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const host = parentElement;
  const prev = host.__aev;
  // moving to another answer: the previous mount reports the finished stretch with its own unsent
  // events, in one state value (two values set in a row could hide the first from Python)
  const leaving = DWELL.answer !== null && !(data && data.report_events && DWELL.answer === data.answer_id);
  if (prev && leaving && prev.reportDwell) { prev.reportDwell(); }
  if (prev && prev.flush) { prev.flush(); }
  if (prev && prev.onDocClick) { document.removeEventListener('click', prev.onDocClick); }
  const old = host.querySelector('.aev');
  if (old) { old.remove(); }
  if (!data || !Array.isArray(data.blocks)) { return; }

  const el = (tag, cls, text) => {
    const n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  };
  const mount = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const state = { mount: mount, seq: 0, events: [], timer: null, lastHover: {} };
  const send = () => {
    if (state.timer) { clearTimeout(state.timer); state.timer = null; }
    if (!data.report_events || state.events.length === 0) { return; }
    // cumulative (last 500) with sequence numbers: Python keeps what it has not seen yet
    setStateValue('events', { mount: mount, events: state.events.slice(-500) });
  };
  state.flush = send;
  host.__aev = state;
  const record = (type, stmt, src) => {
    if (!data.report_events) { return; }
    const key = String(stmt) + ':' + String(src);
    const now = Date.now();
    if (type === 'hover') {
      if (state.lastHover[key] && now - state.lastHover[key] < 1000) { return; }
      state.lastHover[key] = now;
    }
    // by beacon where the dashboard receives them (dashboard/study_beacon.py): a state value costs a
    // script run, whose redraw swallowed the participant's next click (the Query box, at 390 px)
    if (markerBeacon(data.answer_id, type, stmt, src)) { return; }
    state.seq += 1;
    state.events.push({ seq: state.seq, type: type, statement: stmt, source: src, ts: now, answer: data.answer_id });
    if (type === 'click') { send(); }
    else { if (state.timer) { clearTimeout(state.timer); } state.timer = setTimeout(send, 700); }
  };

  // the stretch measured so far, as a 'dwell' event of the answer it belongs to (sent at once)
  const reportDwell = () => {
    dwellPause();
    if (DWELL.answer !== null && DWELL.ms >= MIN_DWELL_MS && data.report_events) {
      // by beacon where the dashboard receives it: as a state value it started a script run just as
      // the participant reached for the next control
      if (dwellBeacon()) { return; }
      state.seq += 1;
      state.events.push({ seq: state.seq, type: 'dwell', ms: Math.round(DWELL.ms), ts: Date.now(), answer: DWELL.answer });
      DWELL.ms = 0;
      send();
    }
  };
  if (data.report_events && data.answer_id) {
    if (DWELL.answer !== null && DWELL.answer !== data.answer_id) { reportDwell(); }
    if (DWELL.answer !== data.answer_id) { DWELL.answer = data.answer_id; DWELL.ms = 0; DWELL.since = null; }
    DWELL.report = reportDwell;
    DWELL.beacon = typeof data.beacon === 'string' && data.beacon ? data.beacon : null;
    state.reportDwell = reportDwell;
    dwellResume();
  } else {
    dwellPause();
    DWELL.answer = null; DWELL.ms = 0; DWELL.report = null; DWELL.beacon = null;
  }

  const root = el('div', 'aev');
  root.setAttribute('data-testid', 'answer-view');
  const statuses = data.statements || {};
  const sources = data.sources || {};
  const pairs = data.pairs || {};
  const symbols = data.status_symbols || {};
  const labels = data.status_labels || {};

  const legend = el('div', 'aev-legend');
  legend.setAttribute('aria-label', 'Legend');
  if (data.participant) {
    legend.appendChild(el('span', 'item wrap', 'Hover over or click a numbered marker to see the source it points to.'));
  }
  (data.participant ? [] : ['supported', 'unsupported', 'unchecked', 'uncited', 'filler']).forEach((k) => {
    const item = el('span', k === 'unchecked' ? 'item wrap' : 'item');
    const sw = el('span', 'stmt st-' + k);
    sw.appendChild(el('span', 'sym', symbols[k] || ''));
    sw.appendChild(document.createTextNode(k === 'unchecked' ? 'not checked' : k));
    item.appendChild(sw);
    item.appendChild(document.createTextNode(' ' + (labels[k] || '')));
    legend.appendChild(item);
  });
  if (!data.participant) {
    legend.appendChild(el('span', 'item wrap', 'Markers: solid = supports, dashed = partly, struck = does not, grey dotted = not checked (no text, for instance), red dotted = no such source'));
  }
  if (!data.participant && data.uncertain_count > 0) {
    const item = el('span', 'item wrap');
    item.setAttribute('data-testid', 'legend-uncertain');
    const sw = el('span', 'cite unc', data.uncertain_mark || '\u2248');
    item.appendChild(sw);
    item.appendChild(document.createTextNode(' ' + (data.uncertain_label || 'uncertain label')));
    legend.appendChild(item);
  }
  root.appendChild(legend);

  const body = el('div', 'aev-body');
  root.appendChild(body);
  const pop = el('div', 'pop');
  pop.hidden = true;
  pop.setAttribute('role', 'dialog');
  pop.setAttribute('data-testid', 'citation-popover');
  root.appendChild(pop);

  let pinned = null;
  let hideTimer = null;
  let activeBtn = null;

  const addRow = (parent, key, value, cls) => {
    const row = el('div', 'row' + (cls ? ' ' + cls : ''));
    if (key) { row.appendChild(el('span', 'k', key + ': ')); }
    if (value !== undefined && value !== null) { row.appendChild(document.createTextNode(String(value))); }
    parent.appendChild(row);
    return row;
  };

  const fill = (stmt, src, cls) => {
    while (pop.firstChild) { pop.removeChild(pop.firstChild); }
    const close = el('button', 'close', '\u00d7');
    close.setAttribute('aria-label', 'Close');
    close.addEventListener('click', (e) => { e.stopPropagation(); hide(true); });
    pop.appendChild(close);
    const s = sources[String(src)];
    if (!s) {
      pop.appendChild(el('div', 'title', 'Source [' + src + '] is not listed'));
      addRow(pop, null, (data.cite_labels || {}).dangling || '');
      return;
    }
    pop.appendChild(el('div', 'title', '[' + src + '] ' + s.title));
    const u = el('div', 'url');
    if (s.url) {
      let ok = false;
      try { const p = new URL(s.url); ok = s.http && (p.protocol === 'http:' || p.protocol === 'https:'); } catch (e) { ok = false; }
      if (ok) {
        const a = el('a', null, s.url);
        a.setAttribute('href', s.url);
        a.setAttribute('target', '_blank');
        a.setAttribute('rel', 'noopener noreferrer');
        a.addEventListener('click', (e) => { e.stopPropagation(); record('click', stmt, src); });
        u.appendChild(a);
      } else {
        u.textContent = s.url + ' (not a web link)';
      }
    } else {
      u.textContent = '(no URL)';
    }
    pop.appendChild(u);
    const excerpt = () => {
      const row = addRow(pop, 'Start of the source text', null);
      if (s.excerpt) { row.appendChild(el('blockquote', 'excerpt', s.excerpt)); }
      else {
        const why = el('div', 'no-text', s.no_text || '(no text)');
        why.setAttribute('data-testid', 'popover-no-text');
        row.appendChild(why);
      }
    };
    if (s.type) { addRow(pop, 'Type', s.type); }
    (s.flags || []).forEach((f) => addRow(pop, 'Flag', f, 'flag'));
    if (data.participant) { excerpt(); return; }
    if (stmt === null || stmt === undefined) {
      addRow(pop, null, 'This marker is not inside a statement.');
      excerpt();
      return;
    }
    const v = pairs[String(stmt) + ':' + String(src)];
    const st = statuses[String(stmt)] || {};
    addRow(pop, 'Statement', String(Number(stmt) + 1) + ' (' + (st.reason || labels[st.status] || st.status || '') + ')');
    if (v && v.label === 'unknown') {
      // nobody judged this pair: say why, never a label it does not have
      const row = addRow(pop, 'Judge label', (v.reason || 'not checked') + (v.judge ? ' \u2014 ' + v.judge : ''), 'unchecked');
      row.setAttribute('data-testid', 'popover-unchecked');
      addRow(pop, null, 'It counts neither as support nor against it: the metrics leave it out and say how many.', 'hint');
      excerpt();
    } else if (v) {
      let lab = v.label;
      if (v.score !== null && v.score !== undefined) { lab += ' (score ' + Number(v.score).toFixed(2) + ')'; }
      addRow(pop, 'Judge label', lab + ' \u2014 ' + v.judge);
      if (v.uncertain) {
        const u = addRow(pop, null, null, 'unc-note');
        u.setAttribute('data-testid', 'popover-uncertain');
        u.appendChild(el('span', 'unc-mark', data.uncertain_mark || '\u2248'));
        u.appendChild(document.createTextNode(' ' + (v.uncertain_note || 'Uncertain label.')));
      }
      const ev = addRow(pop, 'Evidence the judge used', null);
      if (v.evidence) { ev.appendChild(el('blockquote', 'evidence', v.evidence)); }
      else { ev.appendChild(document.createTextNode('(none recorded; the start of the source follows)')); excerpt(); }
      // the judge's own output is for auditors: folded away, one click opens it
      reliabilityRow();
      const raw = el('details', 'raw');
      raw.appendChild(el('summary', null, 'Raw judge output'));
      raw.appendChild(el('pre', null, v.raw || '(empty)'));
      pop.appendChild(raw);
    } else {
      addRow(pop, 'Judge label', (data.cite_labels || {})[cls] || 'no verdict');
      excerpt();
    }
  };
  // the judge's measured reliability in one line, with a link to the Judges page (same app, new tab)
  const reliabilityRow = () => {
    const r = data.reliability || {};
    if (!r.line) { return; }
    const row = addRow(pop, 'How far to trust it', r.line + ' ', 'reliability');
    row.setAttribute('data-testid', 'popover-reliability');
    if (r.url && /^[A-Za-z0-9_\-]+$/.test(r.url)) {
      const a = el('a', null, 'Judges page');
      a.setAttribute('href', r.url);
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
      a.addEventListener('click', (e) => { e.stopPropagation(); });
      row.appendChild(a);
    }
  };

  const place = (btn) => {
    const r = btn.getBoundingClientRect();
    const base = root.getBoundingClientRect();
    let left = r.left - base.left;
    const width = Math.min(520, base.width * 0.92);
    if (left + width > base.width) { left = Math.max(0, base.width - width); }
    pop.style.left = left + 'px';
    pop.style.top = (r.bottom - base.top + 6) + 'px';
  };
  const show = (btn, stmt, src, cls) => {
    if (hideTimer) { clearTimeout(hideTimer); hideTimer = null; }
    if (activeBtn && activeBtn !== btn) { activeBtn.classList.remove('active'); }
    activeBtn = btn;
    btn.classList.add('active');
    fill(stmt, src, cls);
    pop.hidden = false;
    place(btn);
  };
  const hide = (force) => {
    if (pinned && !force) { return; }
    pinned = null;
    pop.hidden = true;
    if (activeBtn) { activeBtn.classList.remove('active'); activeBtn = null; }
  };
  pop.addEventListener('mouseenter', () => { if (hideTimer) { clearTimeout(hideTimer); hideTimer = null; } });
  pop.addEventListener('mouseleave', () => { hideTimer = setTimeout(() => hide(false), 300); });
  root.addEventListener('keydown', (e) => { if (e.key === 'Escape') { hide(true); } });

  const chip = (part, stmt) => {
    const cls = part.cls || 'unjudged';
    const b = el('button', 'cite c-' + cls + (part.unc ? ' unc' : ''), '[' + part.src + ']');
    b.type = 'button';
    if (part.unc) { b.appendChild(el('span', 'unc-mark', data.uncertain_mark || '\u2248')); }
    b.setAttribute('data-source', String(part.src));
    if (stmt !== null && stmt !== undefined) { b.setAttribute('data-statement', String(stmt)); }
    const s = sources[String(part.src)];
    b.setAttribute('aria-label', 'Source ' + part.src + (s ? ': ' + s.title : ' (not listed)')
      + (part.unc ? ' (uncertain support label)' : ''));
    b.addEventListener('mouseenter', () => { if (!pinned) { show(b, stmt, part.src, cls); } record('hover', stmt, part.src); });
    b.addEventListener('mouseleave', () => { if (!pinned) { hideTimer = setTimeout(() => hide(false), 300); } });
    b.addEventListener('focus', () => { if (!pinned) { show(b, stmt, part.src, cls); } });
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      show(b, stmt, part.src, cls);
      pinned = b;
      record('click', stmt, part.src);
    });
    return b;
  };
  const addParts = (node, parts, stmt) => {
    (parts || []).forEach((p) => {
      if (p.t === 'cite') { node.appendChild(chip(p, stmt)); }
      else { node.appendChild(document.createTextNode(String(p.s))); }
    });
  };

  data.blocks.forEach((b) => {
    if (b.t === 'heading') { body.appendChild(el('h4', null, b.s)); return; }
    if (b.t === 'gap') { const g = el('span', 'gap'); addParts(g, b.parts, null); body.appendChild(g); return; }
    if (b.t !== 'stmt') { return; }
    const info = statuses[String(b.i)] || { status: 'uncited' };
    const span = el('span', 'stmt st-' + info.status + (b.own_line ? ' own-line' : ''));
    span.setAttribute('data-statement', String(b.i));
    if (!data.participant) {
      span.setAttribute('title', 'Statement ' + (b.i + 1) + ': ' + (info.reason || labels[info.status] || info.status));
      span.appendChild(el('span', 'sym', symbols[info.status] || ''));
    }
    addParts(span, b.parts, b.i);
    if (data.debate && info.stance) {
      const mark = { agree: '+ agrees', disagree: '\u2212 disagrees', neutral: '= neutral', unknown: '? stance unknown' }[info.stance] || info.stance;
      const badge = el('span', 'stance', mark);
      badge.setAttribute('title', 'Stance towards the query: ' + info.stance);
      span.appendChild(badge);
    }
    body.appendChild(span);
  });

  state.onDocClick = (e) => {
    if (!root.isConnected || pop.hidden) { return; }
    const path = e.composedPath ? e.composedPath() : [];
    if (path.indexOf(pop) < 0 && path.indexOf(activeBtn) < 0) { hide(true); }
  };
  document.addEventListener('click', state.onDocClick);
  host.appendChild(root);
  // unmounted (another page, a rerun): pause the stretch without reporting it, so a rerun never
  // sends an event that causes another rerun; the next mount resumes or reports it
  return () => { dwellPause(); send(); document.removeEventListener('click', state.onDocClick); };
}
