"""The scorecard grid as an HTML table: metrics down (a header row per group), engines across, each
cell tinted by its rating with value, symbol and n; hovering a cell shows its 95% interval,
thresholds and rating (the browser's own tooltip, from the cell's title).

Why not a chart: the page opened in a fresh browser had to load and start the 4.6 MB charting
bundle before showing anything (seconds on two busy cores), and a heatmap squeezes its cells to
nothing in a window 800 px wide. A table needs no bundle, keeps its cells readable (the label column
stays put while the engines scroll sideways) and is text a screen reader can read.

Every piece of text from data goes through `html.escape`; Streamlit sanitises the HTML once more.
"""

from __future__ import annotations

import html
from typing import Iterable

import pandas as pd

from dashboard.charts import FLAG, hover_lines
from dashboard.metric_text import cell_note, fmt_metric, row_label
from dashboard.render import RATING_TINTS, group_title, records
from pipeline.metrics import METRICS, RATING_SYMBOLS

_CSS = """
<style>
.aee-grid-wrap { overflow-x: auto; max-width: 100%; margin: 4px 0 12px 0; }
.aee-grid-more { display: none; font-size: 12px; color: #555867; }
@media (max-width: 640px) { .aee-grid-more { display: block; } }
table.aee-grid { border-collapse: separate; border-spacing: 2px; font-size: 13px; line-height: 1.25; }
table.aee-grid th, table.aee-grid td { padding: 4px 6px; }
table.aee-grid thead th { font-weight: 600; text-align: center; vertical-align: bottom; color: #31333f;
  overflow-wrap: normal; word-break: normal; min-width: 58px; max-width: 110px; }
table.aee-grid th.lab { text-align: right; font-weight: 400; color: #555867; position: sticky; left: 0;
  background: #ffffff; z-index: 1; min-width: 150px; max-width: 230px; }
table.aee-grid th.lab .unit { color: #808495; white-space: nowrap; }
table.aee-grid tr.grp th { text-align: left; font-weight: 700; color: #31333f; padding-top: 10px;
  border-bottom: 1px solid #d0d3da; position: sticky; left: 0; background: #ffffff; }
table.aee-grid td { text-align: center; color: #111111; white-space: nowrap; border-radius: 2px; cursor: default; }
table.aee-grid td small { font-size: 10.5px; color: #3b3d45; }
table.aee-grid .div { border-left: 3px solid #6b7280; }
</style>
"""


def _header(engine: str) -> str:
    """An engine's column header: may break after "_", " ", "-" or "/", never inside a word."""
    out = []
    for ch in engine:
        out.append(html.escape(ch))
        if ch in "_-/":
            out.append("<wbr>")
    return "".join(out)


def _cell(rec: dict | None, engine: str, metric: str, with_n: bool) -> tuple[str, str, str]:
    """(text, tint, tooltip) of one cell."""
    if rec is None:
        rec = {"engine": engine, "metric": metric, "value": None, "ci_low": None, "ci_high": None, "n_answers": None,
               "rating": None, "published_rating": None, "disagrees": False, "why_blank": ""}
    shown = rec.get("published_rating") or rec.get("rating")
    marks = RATING_SYMBOLS[shown] if shown else ""
    if rec.get("disagrees") and rec.get("rating"):
        marks += f"{FLAG}{RATING_SYMBOLS[rec['rating']]}"
    value = html.escape(fmt_metric(rec["value"], metric))
    # n, or for a cell that is n/a because too little was judged, how much was
    note = cell_note(rec) if with_n else ""
    second = " ".join(part for part in (html.escape(marks), html.escape(note)) if part)
    text = value + (f"<br><small>{second}</small>" if second else "")
    tooltip = "\n".join(hover_lines(rec, engine))
    return text, RATING_TINTS.get(shown, RATING_TINTS[None]), tooltip


def scorecard_html(cells: pd.DataFrame, divider_after: int | None = None, no_n_for: Iterable[str] = ()) -> str:
    """The grid of `cells` (display cells from `dashboard.render.scorecard_cells`, optionally with
    published engines appended) as one HTML string; `divider_after` columns are computed, the rest
    published (a grey rule between them); `no_n_for` engines show no n (published figures)."""
    order = {name: i for i, name in enumerate(METRICS)}
    cells = cells.assign(_order=cells["metric"].map(order)).sort_values("_order", kind="stable").drop(columns="_order")
    engines = list(dict.fromkeys(cells["engine"]))
    no_n = set(no_n_for)

    def edge(k: int) -> str:
        return ' class="div"' if divider_after and k == divider_after else ""

    head = "".join(f"<th{edge(k)}>{_header(e)}</th>" for k, e in enumerate(engines))
    rows = [f'<thead><tr><th class="lab"></th>{head}</tr></thead><tbody>']
    last_group = None
    for (group, name), part in cells.groupby(["group", "metric"], sort=False):
        if group != last_group:
            rows.append(f'<tr class="grp"><th colspan="{len(engines) + 1}">{html.escape(group_title(group))}</th></tr>')
            last_group = group
        label, _, unit = row_label(name).rpartition(" (")
        recs = {r["engine"]: r for r in records(part)}
        tds = []
        for k, engine in enumerate(engines):
            text, tint, tip = _cell(recs.get(engine), engine, name, engine not in no_n)
            klass = ' class="div"' if divider_after and k == divider_after else ""
            tds.append(f'<td{klass} style="background:{tint}" title="{html.escape(tip, quote=True)}">{text}</td>')
        rows.append(f'<tr><th class="lab" scope="row">{html.escape(label)} <span class="unit">({html.escape(unit)}'
                    f'</span></th>{"".join(tds)}</tr>')
    rows.append("</tbody>")
    # more engines than a phone shows beside the pinned metric column: say that the grid scrolls
    hint = (f'<div class="aee-grid-more">{len(engines)} engines: swipe the table sideways to see them all →</div>'
            if len(engines) > 3 else "")
    return f'{_CSS}{hint}<div class="aee-grid-wrap"><table class="aee-grid">{"".join(rows)}</table></div>'
