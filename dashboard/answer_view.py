"""The interactive answer: statements highlighted by status, citation markers with a popover.

Built with `st.components.v2.component` from inline HTML/CSS/JS (no build step). The component
code below is a constant: answer and source text never enter it. They arrive as the mount's
`data` argument and the script inserts them with `textContent` / `createTextNode` only; a URL
becomes a link only when it parses as http(s), and then with `rel="noopener noreferrer"`.

When `report_events` is on, hovers and clicks on citation markers are sent back to Python
(batched: a click at once, hovers after a short pause) as a cumulative list with sequence
numbers, so a rerun that arrives late never loses or repeats an event.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import streamlit as st

_CSS = r"""
:host { display: block; }
.aev { position: relative; font-family: var(--st-font, sans-serif); color: var(--st-text-color, #222);
       font-size: var(--st-base-font-size, 16px); line-height: 1.75; padding-bottom: 4px; }
.aev-legend { display: flex; flex-wrap: wrap; gap: 6px 14px; font-size: 0.85em; margin: 0 0 10px 0;
              padding: 6px 8px; border: 1px solid var(--st-border-color, #ddd); border-radius: 6px; }
.aev-legend span.item { white-space: nowrap; }
.aev-body { border-left: 3px solid var(--st-border-color, #ddd); padding: 2px 0 2px 12px; }
.aev h4 { margin: 0.8em 0 0.2em 0; font-size: 1.05em; color: var(--st-heading-color, inherit); }
.aev .gap { white-space: pre-wrap; }
.stmt { border-radius: 3px; padding: 1px 2px; white-space: pre-wrap; }
.stmt .sym { font-weight: 700; font-size: 0.8em; margin-right: 2px; user-select: none; }
.st-supported { background: var(--st-green-background-color, rgba(33,195,84,.15));
                border-bottom: 2px solid var(--st-green-color, #1a7f37); }
.st-unsupported { background: repeating-linear-gradient(135deg, var(--st-red-background-color, rgba(255,43,43,.12)) 0 6px, transparent 6px 10px);
                  border-bottom: 2px dashed var(--st-red-color, #c53030); }
.st-uncited { background: var(--st-orange-background-color, rgba(255,164,33,.15));
              border-bottom: 2px dotted var(--st-orange-color, #b7791f); }
.st-filler { color: var(--st-gray-text-color, #777); font-style: italic; }
.st-supported .sym { color: var(--st-green-text-color, #1a7f37); }
.st-unsupported .sym { color: var(--st-red-text-color, #c53030); }
.st-uncited .sym { color: var(--st-orange-text-color, #b7791f); }
.own-line { display: block; margin: 4px 0; }
.stance { display: inline-block; font-size: 0.72em; line-height: 1.3; padding: 0 5px; margin: 0 2px;
          border-radius: 8px; border: 1px solid var(--st-border-color, #bbb); vertical-align: 2px;
          color: var(--st-text-color, #222); font-style: normal; }
.cite { font: inherit; font-size: 0.8em; line-height: 1.2; padding: 0 4px; margin: 0 1px; cursor: pointer;
        border-radius: 4px; border: 1px solid var(--st-border-color, #999); vertical-align: 2px;
        background: var(--st-secondary-background-color, #f0f2f6); color: var(--st-text-color, #222); }
.cite:focus-visible { outline: 2px solid var(--st-primary-color, #ff4b4b); outline-offset: 1px; }
.cite.c-full { border: 2px solid var(--st-green-color, #1a7f37); }
.cite.c-partial { border: 2px dashed var(--st-orange-color, #b7791f); }
.cite.c-none { border: 2px solid var(--st-red-color, #c53030); text-decoration: line-through; }
.cite.c-dangling { border: 2px dotted var(--st-red-color, #c53030); font-style: italic; }
.cite.c-unjudged, .cite.c-free { border-style: dotted; }
.cite.active { background: var(--st-primary-color, #ff4b4b); color: #fff; }
.pop { position: absolute; z-index: 10; width: min(520px, 92%); max-height: 420px; overflow: auto;
       background: var(--st-background-color, #fff); color: var(--st-text-color, #222);
       border: 1px solid var(--st-border-color, #999); border-radius: 8px; padding: 10px 12px;
       box-shadow: 0 4px 18px rgba(0,0,0,.25); font-size: 0.88em; line-height: 1.45; }
.pop[hidden] { display: none; }
.pop .title { font-weight: 700; margin-right: 26px; }
.pop .url { word-break: break-all; font-size: 0.9em; }
.pop .url a { color: var(--st-link-color, #0068c9); }
.pop .row { margin-top: 6px; }
.pop .k { font-weight: 600; }
.pop .flag { color: var(--st-red-text-color, #c53030); }
.pop blockquote { margin: 4px 0; padding: 4px 8px; border-left: 3px solid var(--st-primary-color, #ff4b4b);
                  background: var(--st-secondary-background-color, #f0f2f6); white-space: pre-wrap; }
.pop pre { margin: 4px 0; padding: 4px 6px; white-space: pre-wrap; word-break: break-word; font-size: 0.85em;
           background: var(--st-code-background-color, #f6f6f6); color: var(--st-code-text-color, inherit);
           max-height: 140px; overflow: auto; font-family: var(--st-code-font, monospace); }
.pop .close { position: absolute; top: 4px; right: 6px; border: none; background: transparent; cursor: pointer;
              font-size: 1.1em; color: var(--st-text-color, #222); }
.pop .hint { font-size: 0.8em; color: var(--st-gray-text-color, #777); margin-top: 6px; }
"""

# The component script: a constant. It reads `data` and builds the DOM with createElement,
# textContent and createTextNode; it never assigns innerHTML or builds markup from data.
_JS = r"""
export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const host = parentElement;
  const prev = host.__aev;
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
    state.seq += 1;
    state.events.push({ seq: state.seq, type: type, statement: stmt, source: src, ts: now, answer: data.answer_id });
    if (type === 'click') { send(); }
    else { if (state.timer) { clearTimeout(state.timer); } state.timer = setTimeout(send, 700); }
  };

  const root = el('div', 'aev');
  root.setAttribute('data-testid', 'answer-view');
  const statuses = data.statements || {};
  const sources = data.sources || {};
  const pairs = data.pairs || {};
  const symbols = data.status_symbols || {};
  const labels = data.status_labels || {};

  const legend = el('div', 'aev-legend');
  legend.setAttribute('aria-label', 'Legend');
  ['supported', 'unsupported', 'uncited', 'filler'].forEach((k) => {
    const item = el('span', 'item');
    const sw = el('span', 'stmt st-' + k);
    sw.appendChild(el('span', 'sym', symbols[k] || ''));
    sw.appendChild(document.createTextNode(k === 'filler' ? 'filler' : k === 'unsupported' ? 'unsupported' : k));
    item.appendChild(sw);
    item.appendChild(document.createTextNode(' ' + (labels[k] || '')));
    legend.appendChild(item);
  });
  const citeKey = el('span', 'item', 'Markers: solid = supports, dashed = partly, struck = does not, dotted = no verdict / no such source');
  legend.appendChild(citeKey);
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
      else { row.appendChild(document.createTextNode('(no text: the page was not fetched)')); }
    };
    addRow(pop, 'Type', s.type);
    (s.flags || []).forEach((f) => addRow(pop, 'Flag', f, 'flag'));
    if (stmt === null || stmt === undefined) {
      addRow(pop, null, 'This marker is not inside a statement.');
      excerpt();
      return;
    }
    const v = pairs[String(stmt) + ':' + String(src)];
    const st = statuses[String(stmt)] || {};
    addRow(pop, 'Statement', String(Number(stmt) + 1) + ' (' + (labels[st.status] || st.status || '') + ')');
    if (v) {
      let lab = v.label;
      if (v.score !== null && v.score !== undefined) { lab += ' (score ' + Number(v.score).toFixed(2) + ')'; }
      addRow(pop, 'Judge label', lab + ' \u2014 ' + v.judge);
      const ev = addRow(pop, 'Evidence the judge used', null);
      if (v.evidence) { ev.appendChild(el('blockquote', 'evidence', v.evidence)); }
      else { ev.appendChild(document.createTextNode('(none recorded; the start of the source follows)')); excerpt(); }
      const raw = addRow(pop, 'Raw judge output', null);
      raw.appendChild(el('pre', null, v.raw || '(empty)'));
    } else {
      addRow(pop, 'Judge label', (data.cite_labels || {})[cls] || 'no verdict');
      excerpt();
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
    const b = el('button', 'cite c-' + cls, '[' + part.src + ']');
    b.type = 'button';
    b.setAttribute('data-source', String(part.src));
    if (stmt !== null && stmt !== undefined) { b.setAttribute('data-statement', String(stmt)); }
    const s = sources[String(part.src)];
    b.setAttribute('aria-label', 'Source ' + part.src + (s ? ': ' + s.title : ' (not listed)'));
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
    span.setAttribute('title', 'Statement ' + (b.i + 1) + ': ' + (labels[info.status] || info.status));
    span.appendChild(el('span', 'sym', symbols[info.status] || ''));
    addParts(span, b.parts, b.i);
    if (data.debate && info.stance) {
      const mark = { agree: '+ agrees', disagree: '\u2212 disagrees', neutral: '= neutral' }[info.stance] || info.stance;
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
  return () => { send(); document.removeEventListener('click', state.onDocClick); };
}
"""

_component = st.components.v2.component("aee_answer_view", css=_CSS, js=_JS)


def _noop() -> None:
    return None


def answer_view(data: dict[str, Any], *, key: str) -> list[dict]:
    """Mount the answer component and return the events not seen in earlier runs.

    Each event: {"event": "hover"|"click", "statement": int|None, "source": int,
    "timestamp": datetime (UTC), "answer_id": str}. Empty unless data["report_events"].
    """
    result = _component(data=data, key=key, default={"events": None}, on_events_change=_noop)
    payload = None
    try:
        payload = result["events"] if "events" in result else getattr(result, "events", None)
    except (KeyError, TypeError, AttributeError):
        payload = None
    return new_events(payload, key)


def new_events(payload: Any, key: str) -> list[dict]:
    """The events of a cumulative payload that this session has not returned yet."""
    if not isinstance(payload, dict):
        return []
    mount = str(payload.get("mount") or "")[:64]
    events = payload.get("events")
    if not mount or not isinstance(events, list):
        return []
    seen: dict[str, int] = st.session_state.setdefault(f"_aev_seen_{key}", {})
    last = seen.get(mount, 0)
    out = []
    for ev in events:
        parsed = _parse_event(ev)
        if parsed is None or parsed["seq"] <= last:
            continue
        out.append(parsed)
    if out:
        seen[mount] = max(e["seq"] for e in out)
    return out


def _parse_event(ev: Any) -> dict | None:
    if not isinstance(ev, dict):
        return None
    kind = ev.get("type")
    seq, src, stmt, ts = ev.get("seq"), ev.get("source"), ev.get("statement"), ev.get("ts")
    if kind not in ("hover", "click") or not isinstance(seq, int) or isinstance(src, bool) or not isinstance(src, int):
        return None
    if stmt is not None and (isinstance(stmt, bool) or not isinstance(stmt, int)):
        stmt = None
    try:
        stamp = datetime.fromtimestamp(float(ts) / 1000.0, tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        stamp = datetime.now(timezone.utc)
    return {"seq": seq, "event": kind, "statement": stmt, "source": src, "timestamp": stamp,
            "answer_id": str(ev.get("answer") or "")[:200]}


def study_rows(events: list[dict], *, participant: str, session: str, alignment: str,
               context: dict[str, str]) -> list[dict]:
    """Component events as rows of the study log (participant code only, no other person data)."""
    return [{"participant": participant, "session": session, "engine": context["engine"],
             "query_id": context["query_id"], "query_type": context["query_type"], "alignment": alignment,
             "event": e["event"], "source_rank": e["source"], "timestamp": e["timestamp"]}
            for e in events if e["source"] >= 1]


# ---- charts and the shared block of views ---------------------------------------------------

CELL_CITATION = {  # code: (symbol, name, colour)
    0: ("·", "not cited, not supporting", "#eceff3"),
    1: ("✓", "accurate: cited and supporting", "#8fd19e"),
    2: ("✗", "inaccurate: cited but not supporting", "#f4a3a3"),
    3: ("○", "missed: supporting but not cited", "#ffd08a"),
}
CELL_SUPPORT = {
    0: ("–", "no verdict", "#ffffff"),
    1: ("·", "does not support", "#eceff3"),
    2: ("◐", "partly supports", "#ffe08a"),
    3: ("●", "fully supports", "#8fd19e"),
}


def _plain(text: str, limit: int = 160) -> str:
    """User text made inert for plotly labels (plotly reads a subset of HTML in text)."""
    import html

    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def _discrete_scale(colours: list[str]) -> list:
    n = len(colours)
    scale = []
    for k, c in enumerate(colours):
        scale.append([k / n, c])
        scale.append([(k + 1) / n, c])
    return scale


def matrix_cells(rep: dict) -> tuple[list[list[int]], list[list[int]]]:
    """Category codes of each (statement, source) cell of the two matrices (see CELL_*)."""
    c = rep["citation_matrix"]["values"]
    s = rep["support_matrix"]["values"]
    labels = rep["support_matrix"]["labels"]
    cit, sup = [], []
    for i in range(len(c)):
        cit.append([1 if c[i][j] and s[i][j] else 2 if c[i][j] else 3 if s[i][j] else 0 for j in range(len(c[i]))])
        sup.append([{None: 0, "none": 1, "partial": 2, "full": 3}.get(labels[i][j], 0) for j in range(len(c[i]))])
    return cit, sup


def matrix_key() -> str:
    """The symbols of both matrices in words (the cells carry the symbol, not only a colour)."""
    cit = " · ".join(f"{sym} {name}" for sym, name, _ in (CELL_CITATION[k] for k in (1, 2, 3, 0)))
    sup = " · ".join(f"{sym} {name}" for sym, name, _ in (CELL_SUPPORT[k] for k in (3, 2, 1, 0)))
    return f"Citations: {cit}. Support: {sup}. Rows are the answer's relevant statements (S1 = first statement)."


def matrices_figure(rep: dict):
    """Citation matrix and support matrix side by side on shared rows (statements) and columns."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows, cols = rep["citation_matrix"]["rows"], rep["citation_matrix"]["columns"]
    texts = {s["index"]: s["text"] for s in rep["statements"]}
    y = [f"S{r + 1}" for r in rows]
    x = [f"[{c}]" for c in cols]
    cit, sup = matrix_cells(rep)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=("Citations (what the answer cites)", "Support (what the judge found)"))
    for k, (codes, table) in enumerate(((cit, CELL_CITATION), (sup, CELL_SUPPORT)), start=1):
        hover = [[f"{y[i]}: {_plain(texts.get(rows[i], ''), 90)}<br>source {x[j]}: {table[codes[i][j]][1]}"
                  for j in range(len(cols))] for i in range(len(rows))]
        fig.add_trace(go.Heatmap(
            z=codes, x=x, y=y, zmin=-0.5, zmax=len(table) - 0.5, showscale=False,
            colorscale=_discrete_scale([table[c][2] for c in sorted(table)]),
            text=[[table[v][0] for v in row] for row in codes], texttemplate="%{text}",
            textfont={"size": 16, "color": "#111111"}, hovertext=hover, hoverinfo="text",
            xgap=2, ygap=2), row=1, col=k)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="bottom", title_text="source")
    fig.update_layout(height=max(220, 110 + 34 * len(rows)), margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      showlegend=False, plot_bgcolor="rgba(0,0,0,0)")
    return fig


def graph_figure(rep: dict):
    """Statement-source graph: citation and support edges, the minimum necessary sources marked."""
    import networkx as nx
    import plotly.graph_objects as go

    rows, cols = rep["support_matrix"]["rows"], rep["support_matrix"]["columns"]
    cit, _ = matrix_cells(rep)
    texts = {s["index"]: s["text"] for s in rep["statements"]}
    titles = {s["index"]: s["title"] or s["url"] for s in rep["sources"]}
    necessary = set(rep["necessary_sources"])
    g = nx.Graph()
    left = [("s", r) for r in rows]
    g.add_nodes_from(left)
    g.add_nodes_from(("c", c) for c in cols)
    kinds = {1: "accurate citation", 2: "cited, not supporting", 3: "supporting, not cited"}
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            if cit[i][j]:
                g.add_edge(("s", r), ("c", c), kind=cit[i][j])
    pos = nx.bipartite_layout(g, left, align="vertical") if left and cols else {}
    # bipartite_layout gives each side its column; keep the reading order top to bottom on both
    for side in (left, [("c", c) for c in cols]):
        ys = sorted((pos[n][1] for n in side), reverse=True)
        for n, y_value in zip(side, ys):
            pos[n] = (pos[n][0], y_value)
    fig = go.Figure()
    styles = {1: ("#2f9e44", "solid", 3), 2: ("#e03131", "dash", 2), 3: ("#e8890c", "dot", 2)}
    for code, name in kinds.items():
        xs, ys = [], []
        for a, b, d in g.edges(data=True):
            if d["kind"] == code:
                xs += [pos[a][0], pos[b][0], None]
                ys += [pos[a][1], pos[b][1], None]
        colour, dash, width = styles[code]
        fig.add_trace(go.Scatter(x=xs or [None], y=ys or [None], mode="lines", name=name, hoverinfo="skip",
                                 line={"color": colour, "dash": dash, "width": width}))
    sx = [pos[n][0] for n in left]
    sy = [pos[n][1] for n in left]
    fig.add_trace(go.Scatter(x=sx, y=sy, mode="markers+text", name="statement", text=[f"S{r + 1}" for r in rows],
                             textposition="middle left", hovertext=[_plain(texts.get(r, "")) for r in rows],
                             hoverinfo="text", marker={"size": 14, "symbol": "circle", "color": "#74c0fc",
                                                       "line": {"width": 1, "color": "#1c7ed6"}}))
    for flag, name, symbol, colour, size in ((False, "source", "square", "#ced4da", 16),
                                             (True, "necessary source (minimum set)", "star", "#fab005", 24)):
        nodes = [("c", c) for c in cols if (c in necessary) == flag]
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in nodes] or [None], y=[pos[n][1] for n in nodes] or [None], mode="markers+text",
            name=name, text=[f"[{n[1]}]" + (" necessary" if flag else "") for n in nodes],
            textposition="middle right", hovertext=[_plain(titles.get(n[1], "")) for n in nodes], hoverinfo="text",
            marker={"size": size, "symbol": symbol, "color": colour, "line": {"width": 1.5, "color": "#495057"}}))
    fig.update_xaxes(visible=False, range=[-1.6, 1.6])
    fig.update_yaxes(visible=False)
    fig.update_layout(height=max(280, 40 * max(len(rows), len(cols)) + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      legend={"orientation": "h", "y": -0.05}, plot_bgcolor="rgba(0,0,0,0)")
    return fig


def show_report_views(annotated, rep: dict, source_rows: list[dict], *, key: str,
                      report_events: bool = False) -> list[dict]:
    """The answer component, flags, metrics, matrices and graph for one answer (both pages).
    Returns the component's new events."""
    import pandas as pd

    from dashboard import answer_data

    data = answer_data.component_data(annotated, rep, source_rows, report_events=report_events)
    st.markdown("#### Answer")
    events = answer_view(data, key=key)

    flags = answer_data.answer_flags(annotated, rep, source_rows)
    st.markdown("#### Flags")
    if flags:
        st.dataframe(pd.DataFrame(flags, columns=["kind", "where", "message"]), hide_index=True,
                     width="stretch", key=f"{key}_flags")
    else:
        st.caption("No dangling citations, dead, duplicate or injection-flagged sources.")

    st.markdown("#### Metrics for this answer")
    st.caption(f"Scored with {rep['mode']} rules, necessity by the {rep['necessity']} method. "
               "Ratings use the published thresholds: ▲ acceptable, ● borderline, ▼ problematic.")
    table = answer_data.metrics_table(rep)
    st.dataframe(table.drop(columns=["id"]), hide_index=True, width="stretch", key=f"{key}_metrics",
                 height=35 * (len(table) + 1) + 3,
                 column_config={"value": st.column_config.NumberColumn("value", format="%.2f")})

    st.markdown("#### Citation and support matrices")
    if not rep["citation_matrix"]["rows"] or not rep["citation_matrix"]["columns"]:
        st.info("No relevant statement or no usable source: the matrices are empty.")
    else:
        st.plotly_chart(matrices_figure(rep), key=f"{key}_matrices", width="stretch")
        st.caption(matrix_key())
        st.markdown("#### Statements and sources")
        nec = ", ".join(f"[{c}]" for c in rep["necessary_sources"]) or "none"
        st.caption(f"Minimum set of sources that together support every supported statement: {nec}.")
        st.plotly_chart(graph_figure(rep), key=f"{key}_graph", width="stretch")
    return events
