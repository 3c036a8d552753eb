"""The interactive answer: statements highlighted by status, citation markers with a popover.

Built with `st.components.v2.component` from `static/answer_view.css` and `static/answer_view.js`
(no build step). The component code is a constant: answer and source text never enter it. They
arrive as the mount's `data` argument and the script inserts them with `textContent` / `createTextNode` only; a URL
becomes a link only when it parses as http(s), and then with `rel="noopener noreferrer"`.

When `report_events` is on, hovers and clicks on citation markers are sent back to Python
(batched: a click at once, hovers after a short pause) as a cumulative list with sequence
numbers, so a rerun that arrives late never loses or repeats an event. The component also measures
how long the answer stays visible and reports it (a "dwell" event) when the reader moves to another
answer or hides the tab (as the page goes away, by a beacon: `dashboard.study_beacon`); the
inspector records, besides, a "shown" row for every answer it shows.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from dashboard.render import md_escape
from pipeline.metrics import MODE_LABELS
from pipeline.study.log import MAX_DWELL_SECONDS
from pipeline.text.citation_scope import scope_note

# The component's code lives in static files (no build step); it is a constant, never formatted
# with answer or source text.
_STATIC = Path(__file__).resolve().parent / "static"
_CSS = (_STATIC / "answer_view.css").read_text(encoding="utf-8")
_JS = (_STATIC / "answer_view.js").read_text(encoding="utf-8")

_component = st.components.v2.component("aee_answer_view", css=_CSS, js=_JS)


def _noop() -> None:
    return None


def answer_view(data: dict[str, Any], *, key: str) -> list[dict]:
    """Mount the answer component and return the events not seen in earlier runs.

    Each event: {"event": "hover"|"click", "statement": int|None, "source": int,
    "timestamp": datetime (UTC), "answer_id": str}, or {"event": "dwell", "seconds": float, "source":
    None, ...} when the reader leaves an answer or hides the tab. Empty unless data["report_events"].
    """
    result = _component(data=data, key=key, default={"events": None}, on_events_change=_noop)
    payload = None
    try:
        payload = result["events"] if "events" in result else getattr(result, "events", None)
    except (KeyError, TypeError, AttributeError):
        payload = None
    return new_events(payload, key)


def new_events(payload: Any, key: str) -> list[dict]:
    """The events of a cumulative payload that this session has not stored yet (`mark_stored`). An
    event stays new until the run that read it has written it: a run cut short by a rerun (a participant
    choosing the next query at once) leaves it to the next run, which reads the same payload again."""
    if not isinstance(payload, dict):
        return []
    mount = str(payload.get("mount") or "")[:64]
    events = payload.get("events")
    if not mount or not isinstance(events, list):
        return []
    last = stored_marks(key).get(mount, 0)
    out = []
    for ev in events:
        parsed = _parse_event(ev)
        if parsed is None or parsed["seq"] <= last:
            continue
        out.append({**parsed, "mount": mount})
    return out


def stored_marks(key: str) -> dict[str, int]:
    """This session's record of the component `key`'s stored events: each mount's last sequence number.
    Fetch it before writing, so that marking needs no Streamlit call after the write (`mark_stored`)."""
    return st.session_state.setdefault(f"_aev_seen_{key}", {})


def mark_stored(marks: dict[str, int], events: list[dict]) -> None:
    """Record `events` (from `new_events`) as written. Plain dictionary work: Streamlit stops a run for a
    rerun only inside one of its own calls, so done right after the write, nothing can cut in between
    and an event is neither written twice nor marked without being written."""
    for e in events:
        marks[e["mount"]] = max(marks.get(e["mount"], 0), int(e["seq"]))


def _parse_event(ev: Any) -> dict | None:
    if not isinstance(ev, dict):
        return None
    kind = ev.get("type")
    seq, src, stmt, ts = ev.get("seq"), ev.get("source"), ev.get("statement"), ev.get("ts")
    if kind == "dwell":  # how long an answer stayed on screen, in milliseconds
        ms = ev.get("ms")
        if not isinstance(seq, int) or isinstance(ms, bool) or not isinstance(ms, (int, float)) \
                or not 0 <= ms <= MAX_DWELL_SECONDS * 1000:
            return None
        return {"seq": seq, "event": "dwell", "statement": None, "source": None, "seconds": round(float(ms) / 1000, 1),
                "timestamp": _event_time(ts), "answer_id": str(ev.get("answer") or "")[:200]}
    if kind not in ("hover", "click") or not isinstance(seq, int) or isinstance(src, bool) or not isinstance(src, int):
        return None
    if stmt is not None and (isinstance(stmt, bool) or not isinstance(stmt, int)):
        stmt = None
    return {"seq": seq, "event": kind, "statement": stmt, "source": src, "timestamp": _event_time(ts),
            "answer_id": str(ev.get("answer") or "")[:200]}


def _event_time(ts: object) -> datetime:
    """The browser's time of an event (ms since the epoch); now when it sent none or an unusable one."""
    if isinstance(ts, (int, float, str)):
        try:
            return datetime.fromtimestamp(float(ts) / 1000.0, tz=timezone.utc)
        except (ValueError, OverflowError, OSError):
            pass
    return datetime.now(timezone.utc)


def study_rows(events: list[dict], *, participant: str, session: str, alignment: str,
               context: dict[str, str]) -> list[dict]:
    """Component events as rows of the study log (participant code only, no other person data):
    hovers and clicks on a source, and dwell times of the answer."""
    base = {"participant": participant, "session": session, "engine": context["engine"],
            "query_id": context["query_id"], "query_type": context["query_type"], "alignment": alignment}
    rows = []
    for e in events:
        if e["event"] == "dwell":
            rows.append({**base, "event": "dwell", "source_rank": None, "timestamp": e["timestamp"],
                         "dwell_seconds": e["seconds"]})
        elif e["source"] is not None and e["source"] >= 1:
            rows.append({**base, "event": e["event"], "source_rank": e["source"], "timestamp": e["timestamp"]})
    return rows


def shown_rows(annotated, *, participant: str, session: str, alignment: str, context: dict[str, str],
               when: datetime | None = None) -> list[dict]:
    """The rows that say an answer was on a participant's screen, whether or not they touch it:
    "shown", one "displayed" per listed source and one "cited" per listed source a statement cites.
    With them a participant who reads without hovering leaves counts of zero, which is data."""
    stamp = when or datetime.now(timezone.utc)
    base = {"participant": participant, "session": session, "engine": context["engine"],
            "query_id": context["query_id"], "query_type": context["query_type"], "alignment": alignment,
            "timestamp": stamp}
    listed = sorted({s.index for s in annotated.answer.sources if s.index >= 1})
    cited = sorted({i for st_ in annotated.statements for i in st_.citations if i in set(listed)})
    return ([{**base, "event": "shown", "source_rank": None}]
            + [{**base, "event": "displayed", "source_rank": i} for i in listed]
            + [{**base, "event": "cited", "source_rank": i} for i in cited])


# ---- charts and the shared block of views ---------------------------------------------------

# Each symbol has one meaning across both panels. The citation panel follows the metrics: a source
# "supports" a statement only when the judge says it fully supports it, so a cited source that
# partly supports shows ✗ there and ◐ in the support panel.
CELL_CITATION = {  # code: (symbol, name, colour)
    0: ("", "not cited, does not fully support", "#f1f3f5"),
    1: ("✓", "accurate citation: cited, fully supports", "#8fd19e"),
    2: ("✗", "inaccurate citation: cited, does not fully support", "#f4a3a3"),
    3: ("+", "missed citation: not cited, yet fully supports", "#ffd08a"),
    4: ("◌", "cited, not checked: nobody judged this pair (hover for why: no text, for instance)", "#dde3ea"),
}
CELL_SUPPORT = {
    0: ("", "no verdict needed: an uncited pair outside what the labels cover", "#ffffff"),
    1: ("○", "does not support", "#e9ecef"),
    2: ("◐", "partly supports", "#ffe08a"),
    3: ("●", "fully supports", "#8fd19e"),
    4: ("≈", "uncertain: the judge's score is close to its cut point; the symbol before ≈ is its label", "#d0bfff"),
    5: ("◌", "not checked: nobody judged this pair (hover for why: no text, for instance); "
             "it counts neither as support nor against it", "#dde3ea"),
}
UNCERTAIN_CODE = 4
UNCHECKED_CITATION, UNCHECKED_SUPPORT = 4, 5
CITATION_ORDER = (1, 2, UNCHECKED_CITATION, 3, 0)  # the legends' order
SUPPORT_ORDER = (3, 2, 1, UNCHECKED_SUPPORT, 0, UNCERTAIN_CODE)
ROW_LABEL_CHARS = 42


def _plain(text: str, limit: int = 160) -> str:
    """User text made inert for plotly labels (plotly reads a subset of HTML in text)."""
    import html

    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def matrix_cells(rep: dict) -> tuple[list[list[int]], list[list[int]]]:
    """Category codes of each (statement, source) cell of the two matrices (see CELL_*)."""
    c = rep["citation_matrix"]["values"]
    s = rep["support_matrix"]["values"]
    labels = rep["support_matrix"]["labels"]
    cit, sup = [], []
    for i in range(len(c)):
        unchecked = [labels[i][j] == "unknown" for j in range(len(c[i]))]
        cit.append([1 if c[i][j] and s[i][j] else UNCHECKED_CITATION if c[i][j] and unchecked[j] else 2 if c[i][j]
                    else 3 if s[i][j] else 0 for j in range(len(c[i]))])
        sup.append([{None: 0, "none": 1, "partial": 2, "full": 3, "unknown": UNCHECKED_SUPPORT}.get(labels[i][j], 0)
                    for j in range(len(c[i]))])
    return cit, sup


def support_cell_texts(rep: dict, sup: list[list[int]]) -> tuple[list[list[int]], list[list[str]]]:
    """Support-panel colour codes and cell symbols: a verdict the pipeline flags as uncertain keeps
    its label's symbol, followed by ≈, on the uncertain colour."""
    flags = rep["support_matrix"].get("uncertain") or [[False] * len(row) for row in sup]
    codes = [[UNCERTAIN_CODE if flags[i][j] and code else code for j, code in enumerate(row)] for i, row in enumerate(sup)]
    texts = [[CELL_SUPPORT[code][0] + (CELL_SUPPORT[UNCERTAIN_CODE][0] if flags[i][j] and code else "")
              for j, code in enumerate(row)] for i, row in enumerate(sup)]
    return codes, texts


def matrix_key() -> str:
    """The symbols of both matrices in words, and why "partly supports" shows ✗ on the left."""
    cit = " · ".join(f"{sym or 'blank'} {name}" for sym, name, _ in (CELL_CITATION[k] for k in CITATION_ORDER))
    sup = " · ".join(f"{sym or 'blank'} {name}" for sym, name, _ in (CELL_SUPPORT[k] for k in SUPPORT_ORDER))
    return (f"Citations panel: {cit}. Support panel: {sup}. "
            "Partly supports: the source backs only part of the statement. The citation metrics count a source "
            "as supporting only when it fully supports, so a cited source that partly supports is ◐ on the right "
            "and ✗ on the left. Rows are the answer's relevant statements.")


def row_labels(rep: dict) -> list[str]:
    """Matrix row names: statement number and the start of its text ("S3 · Cars pollute the…")."""
    texts = {s["index"]: " ".join(str(s["text"]).split()) for s in rep["statements"]}
    out = []
    for r in rep["citation_matrix"]["rows"]:
        text = texts.get(r, "")
        short = text if len(text) <= ROW_LABEL_CHARS else text[: ROW_LABEL_CHARS - 1].rstrip() + "…"
        out.append(f"S{r + 1} · {short}" if short else f"S{r + 1}")
    return out


_MATRIX_CSS = """
<style>
.aee-mx-wrap { overflow-x: auto; max-width: 100%; margin: 2px 0 8px 0; }
table.aee-mx { border-collapse: separate; border-spacing: 2px; font-size: 13px; }
table.aee-mx th { font-weight: 600; color: #31333f; padding: 2px 4px; text-align: center; }
table.aee-mx th.lab { text-align: left; font-weight: 400; color: #31333f; position: sticky; left: 0; background: #ffffff;
  max-width: 280px; min-width: 150px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
table.aee-mx th.panel { border-bottom: 1px solid #d0d3da; }
table.aee-mx td { width: 30px; min-width: 30px; height: 26px; text-align: center; font-size: 15px; color: #111111;
  border-radius: 2px; cursor: default; }
table.aee-mx td.gap, table.aee-mx th.gap { width: 14px; min-width: 14px; background: transparent; }
</style>
"""


def matrices_html(rep: dict, compact: bool = False) -> str:
    """Citation matrix and support matrix side by side on shared rows (statements), as an HTML
    table: a symbol and a tint per cell, the statement, the source and the verdict on hover (the
    cell's title). Plain HTML: no chart bundle to load before the answer's page is usable.
    `compact` names rows "S3" only (the text stays on hover), so both panels fit a narrow column."""
    import html

    rows, cols = rep["citation_matrix"]["rows"], rep["citation_matrix"]["columns"]
    texts = {s["index"]: " ".join(str(s["text"]).split()) for s in rep["statements"]}
    titles = {s["index"]: s["title"] or s["url"] for s in rep["sources"]}
    labels = [f"S{r + 1}" for r in rows] if compact else row_labels(rep)
    cit, sup = matrix_cells(rep)
    sup_codes, sup_texts = support_cell_texts(rep, sup)
    reasons = rep["support_matrix"].get("reasons") or [[""] * len(cols) for _ in rows]  # why a pair is not checked
    heads = "".join(f"<th>[{html.escape(str(c))}]</th>" for c in cols)
    out = [_MATRIX_CSS, '<div class="aee-mx-wrap"><table class="aee-mx"><thead><tr><th class="lab"></th>',
           f'<th class="panel" colspan="{len(cols)}">Citations: what the answer cites</th><th class="gap"></th>',
           f'<th class="panel" colspan="{len(cols)}">Support: what the judge found</th></tr>',
           f'<tr><th class="lab">statement</th>{heads}<th class="gap"></th>{heads}</tr></thead><tbody>']
    for i, r in enumerate(rows):
        cells = []
        for panel, (codes, shown, base, table) in enumerate(((cit, [[CELL_CITATION[v][0] for v in row] for row in cit], cit,
                                                              CELL_CITATION), (sup_codes, sup_texts, sup, CELL_SUPPORT))):
            if panel:
                cells.append('<td class="gap"></td>')
            for j, c in enumerate(cols):
                meaning = f"{table[base[i][j]][0]} {table[base[i][j]][1]}".strip()
                if codes[i][j] != base[i][j]:
                    meaning += f"\n{table[UNCERTAIN_CODE][0]} {table[UNCERTAIN_CODE][1]}"
                if panel and reasons[i][j]:
                    meaning += f"\n{reasons[i][j]}"
                tip = f"S{r + 1}: {texts.get(r, '')[:400]}\nsource [{c}] {str(titles.get(c, ''))[:120]}\n{meaning}"
                cells.append(f'<td style="background:{table[codes[i][j]][2]}" title="{html.escape(tip, quote=True)}">'
                             f"{html.escape(shown[i][j])}</td>")
        out.append(f'<tr><th class="lab" title="{html.escape(texts.get(r, ""), quote=True)}">{html.escape(labels[i])}</th>'
                   f'{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


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
    kinds = {1: "accurate citation", 2: "cited, not supporting", UNCHECKED_CITATION: "cited, not checked",
             3: "supporting, not cited"}
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
    styles = {1: ("#2f9e44", "solid", 3), 2: ("#e03131", "dash", 2), UNCHECKED_CITATION: ("#868e96", "dashdot", 2),
              3: ("#e8890c", "dot", 2)}
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


def scoring_controls(prefix: str, columns) -> tuple[str, str]:
    """The "Scoring rules" and "Necessity method" radios in two columns; returns (mode, necessity chosen).

    Parity rules always run the greedy method (the paper's notebook), so under parity the method
    radio shows greedy, greyed out; the user's own choice is kept for when strict comes back."""
    from pipeline.metrics import MODES, NECESSITY_METHODS, effective_necessity

    methods = list(NECESSITY_METHODS)
    mode = columns[0].radio("Scoring rules", list(MODES), format_func=MODE_LABELS.get, horizontal=True, key=f"{prefix}_mode",
                            help="Strict: every listed source counts. Paper parity: the paper's notebook rules "
                                 "(unfetched sources dropped, greedy necessity).")
    if mode == "parity":
        used = effective_necessity(mode, methods[0])
        columns[1].radio("Necessity method (fixed by paper parity)", methods, index=methods.index(used), horizontal=True,
                         key=f"{prefix}_necessity_parity", disabled=True,
                         help=f"Paper parity always uses the {used} method, as the paper's notebook did. "
                              "Switch to strict rules to choose another.")
        chosen = st.session_state.get(f"{prefix}_necessity_kept", methods[0])
    else:
        chosen = columns[1].radio("Necessity method", methods, horizontal=True, key=f"{prefix}_necessity",
                                  help="How the minimum set of necessary sources is found.")
        st.session_state[f"{prefix}_necessity_kept"] = chosen
    return mode, chosen if chosen in methods else methods[0]


def matrix_legend_markdown(table: dict[int, tuple[str, str, str]], order: tuple[int, ...], title: str) -> str:
    """One panel's legend as a markdown table (fixed text)."""
    lines = [f"| {title} | meaning |", "|:-:|---|"]
    lines += [f"| {table[k][0] or '(blank)'} | {table[k][1]} |" for k in order]
    return "\n".join(lines)


def reliability_header(reliability: dict[str, str], where=None) -> None:
    """The judge's measured reliability in one line, with a link to the Judges page."""
    from dashboard.render import link_to_page

    target = where or st
    c1, c2 = target.columns([5, 1], vertical_alignment="center")
    c1.caption(f"How far to trust these labels: {md_escape(reliability['line'])}.")
    link_to_page("judges.py", "Judges page", icon=":material/gavel:", where=c2)


def report_download(where, report_html: Callable[[], str], file_name: str, key: str) -> None:
    """The button that downloads the one-answer HTML report (built by `report_html` on click)."""
    where.download_button("Download as HTML report", data=report_html, file_name=file_name, mime="text/html",
                          key=key, on_click="ignore", icon=":material/download:",
                          help="One self-contained file: statements, verdicts, matrices, flags, metrics and the "
                               "judge's reliability. No scripts, nothing loaded from the web; safe to open offline.")


def unchecked_headline(rep: dict) -> str:
    """One sentence when some (statement, source) pairs were not checked: how many, why, and what
    that means for the chips and the metrics ("" when every pair that must be was judged)."""
    summary = rep.get("unchecked_support") or {}
    if not summary.get("pairs"):
        return ""
    causes = "; ".join(f"{why}: {n}" for why, n in sorted(summary["causes"].items(), key=lambda kv: -kv[1]))
    every = summary["pairs"] == summary["of"]
    return (f"Not checked: {'all ' if every else ''}{summary['pairs']} of {summary['of']} (statement, source) pairs "
            f"({causes}). Statements that rest on them read \"not checked\", never \"unsupported\"; the metrics "
            "leave them out and say how many, or are n/a when most are unchecked.")


def show_report_views(annotated, rep: dict, source_rows: list[dict], *, key: str,
                      report_events: bool = False, participant: bool = False,
                      reliability: dict[str, str] | None = None, unchecked_hint: str = "",
                      no_text: str = "", beacon: str = "") -> list[dict]:
    """The answer component, flags, metrics, matrices and graph for one answer (inspector,
    re-score). `participant` shows only what a study participant may see: the answer and its
    sources. `reliability`: the judge's reliability line and the Judges page address, for the
    verdict popovers. `unchecked_hint`: how to get pairs checked here, after the line saying some
    were not. `no_text`: what a popover says of a source without text. `beacon`: the recording
    session's token (`dashboard.study_beacon`), so the time on screen is sent as the page goes away.
    Returns the component's new events."""
    import pandas as pd

    from dashboard import answer_model

    data = answer_model.component_data(annotated, rep, source_rows, report_events=report_events,
                                       participant=participant, reliability=reliability, no_text=no_text)
    if beacon and report_events:
        data["beacon"] = beacon
    headline = unchecked_headline(rep)
    if headline and not participant:
        st.info(md_escape(headline + (" " + unchecked_hint if unchecked_hint else "")), icon=":material/visibility_off:")
    st.markdown("#### Answer")
    scope_line = scope_note(annotated.answer.meta, annotated.answer.engine)  # "" where markers bind per sentence
    if scope_line and not participant:
        st.caption(md_escape(scope_line))
    events = answer_view(data, key=key)
    if participant:
        st.caption("Participant view: verdicts, flags, metrics and matrices are hidden. Turn it off to see them.")
        return events

    flags = answer_model.answer_flags(annotated, rep, source_rows)
    st.markdown("#### Flags")
    if flags:
        # a static table wraps a long message (a data grid cut it mid-sentence); on a phone each flag is a
        # card with its message on a line of its own (layout.css, "cards_")
        with st.container(key=f"cards_flags_{key}"):
            st.table(pd.DataFrame(flags, columns=["kind", "where", "message"]).map(md_escape), hide_index=True,
                     width="stretch")
    else:
        st.caption("No dangling citations, dead, duplicate or injection-flagged sources.")
    headline, pairs = answer_model.uncertain_summary(rep)
    if headline:  # counted apart: not a problem of the answer, a limit of the judge
        st.markdown(f":violet[**{md_escape(headline)}**] (the judge's score is close to its cut point) "
                    f"{md_escape(pairs)}",
                    help="These verdicts' scores sit in the judge's uncertain band, near the cut point between "
                         "two labels. Read the source before relying on them; the Judges page says how the band "
                         "was chosen.")

    st.markdown("#### Metrics for this answer")
    st.caption(f"Scored with {MODE_LABELS.get(rep['mode'], rep['mode']).lower()} rules, necessity by the {rep['necessity']} method. "
               "Ratings use the published thresholds: ▲ acceptable, ● borderline, ▼ problematic. "
               "n/a: the metric cannot be scored for this answer; the note says why.")
    table = answer_model.metrics_table(rep).drop(columns=["id"])
    # short cells stay on one line: a wrapped "↑ higher" or "▼ problematic" doubles every row's height
    cells = ", ".join(f"td.col{table.columns.get_loc(c)} p" for c in ("value", "better", "rating"))
    nowrap = table.map(md_escape).style.set_table_styles([{"selector": cells, "props": [("white-space", "nowrap")]}])
    with st.container(key=f"cards_metrics_{key}"):  # on a phone: a card per metric, its note full width
        st.table(nowrap, hide_index=True, width="stretch")

    st.markdown("#### Citation and support matrices")
    if not rep["citation_matrix"]["rows"] or not rep["citation_matrix"]["columns"]:
        st.info("No relevant statement or no usable source: the matrices are empty.")
    else:
        st.html(matrices_html(rep))
        k1, k2 = st.columns(2)
        k1.markdown(matrix_legend_markdown(CELL_CITATION, CITATION_ORDER, "Citations panel"))
        k2.markdown(matrix_legend_markdown(CELL_SUPPORT, SUPPORT_ORDER, "Support panel"))
        st.caption("Partly supports (◐): the source backs only part of the statement. The citation metrics count "
                   "a source as supporting only when it fully supports, so a cited source that partly supports "
                   "shows ◐ on the right and ✗ on the left. Hover a cell for the whole statement.")
        st.markdown("#### Statements and sources")
        nec = ", ".join(f"[{c}]" for c in rep["necessary_sources"]) or "none"
        st.caption(f"Minimum set of sources that together support every supported statement: {nec}.")
        graph = st.expander("The statements and sources as a graph", key=f"{key}_graph_box", on_change="rerun")
        if graph.open:  # a chart: drawn only when asked for, so the page is usable before its bundle loads
            graph.plotly_chart(graph_figure(rep), key=f"{key}_graph", width="stretch")
    return events
