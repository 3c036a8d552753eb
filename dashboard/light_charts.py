"""Figures drawn as plain HTML and inline SVG, for the pages a reader opens first (Confidence, the
usability study). A page with a plotly chart must load and start a 4.6 MB charting bundle before
it is usable, which on two busy cores took seconds in a fresh browser; these need nothing loaded.
Hovering a bar segment or a dot shows its numbers (the browser's own tooltip).

Every piece of text from data goes through `html.escape`; Streamlit sanitises the HTML again.
"""

from __future__ import annotations

import html
from typing import Iterable

import numpy as np
import pandas as pd

CONFIDENCE_COLOURS = ("#b2182b", "#ef8a62", "#bdbdbd", "#67a9cf", "#2166ac")
STUDY_COLOURS = {"hovered": "#1f77b4", "clicked": "#d62728"}

_BARS_CSS = """
<style>
.aee-bars { font-size: 13px; margin: 4px 0 10px 0; }
.aee-bars h5 { font-size: 14px; margin: 10px 0 4px 0; font-weight: 600; }
.aee-bars .row { display: flex; align-items: center; margin: 3px 0; }
.aee-bars .name { flex: 0 0 30%; max-width: 170px; text-align: right; padding-right: 8px; color: #31333f;
  overflow-wrap: anywhere; }
.aee-bars .bar { flex: 1 1 auto; display: flex; height: 24px; background: #f0f2f6; border-radius: 2px; overflow: hidden; }
.aee-bars .seg { display: flex; align-items: center; justify-content: center; color: #ffffff; font-size: 12px;
  white-space: nowrap; overflow: hidden; }
.aee-bars .seg.light { color: #111111; }
.aee-bars .total { flex: 0 0 auto; padding-left: 8px; color: #6b7280; font-size: 12px; white-space: nowrap; }
.aee-bars .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin-top: 8px; color: #31333f; }
.aee-bars .legend span.sw { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
</style>
"""


def confidence_bars(counts: pd.DataFrame, levels: Iterable[str], splits: Iterable[str]) -> str:
    """Stacked bars per engine of the share of answers at each confidence level, one block per
    query-type split (the paper's Figure 8b), counts in the segments; the HTML as one string."""
    levels = list(levels)
    blocks = []
    for split in [s for s in splits if s in set(counts["split"])]:
        part = counts[counts["split"] == split]
        totals = part.groupby("engine")["count"].sum()
        rows = []
        for engine in sorted(part["engine"].unique().tolist()):
            total = int(totals.get(engine, 0))
            segs = []
            for level, colour in zip(levels, CONFIDENCE_COLOURS):
                n = int(part.loc[(part["engine"] == engine) & (part["level"] == level), "count"].sum())
                if not n or not total:
                    continue
                share = 100 * n / total
                light = " light" if colour == "#bdbdbd" else ""
                tip = f"{engine} · {level}: {n} of {total} answers ({share:.1f}%)"
                segs.append(f'<div class="seg{light}" style="width:{share:.3f}%;background:{colour}" '
                            f'title="{html.escape(tip, quote=True)}">{n if share >= 6 else ""}</div>')
            rows.append(f'<div class="row"><div class="name">{html.escape(engine)}</div>'
                        f'<div class="bar">{"".join(segs)}</div><div class="total">{total}</div></div>')
        title = "all queries" if split == "all" else f"{split} queries"
        blocks.append(f"<h5>{html.escape(title)}</h5>{''.join(rows)}")
    legend = "".join(f'<span><span class="sw" style="background:{c}"></span>{html.escape(level)}</span>'
                     for level, c in zip(levels, CONFIDENCE_COLOURS))
    return f'{_BARS_CSS}<div class="aee-bars">{"".join(blocks)}<div class="legend">{legend}</div></div>'


# ---- usability study: counts per participant x question ------------------------------------------


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(median), float(q3)


_DOTS_CSS = """
<style>
.aee-dots { font-size: 12px; color: #31333f; margin: 6px 0 12px 0; max-width: 900px; }
.aee-dots .ttl { font-weight: 600; font-size: 13px; margin-bottom: 6px; }
.aee-dots .plot { position: relative; margin-left: 40px; border-left: 1px solid #d0d3da; border-bottom: 1px solid #d0d3da; }
.aee-dots .grid { position: absolute; left: 0; right: 0; border-top: 1px solid #eceef2; }
.aee-dots .tick { position: absolute; left: -40px; width: 34px; text-align: right; color: #6b7280; transform: translateY(-50%); }
.aee-dots .box { position: absolute; border: 1.5px solid; box-sizing: border-box; }
.aee-dots .med { position: absolute; height: 0; border-top: 3px solid; }
.aee-dots .dot { position: absolute; width: 8px; height: 8px; margin: -4px 0 0 -4px; border-radius: 50%; opacity: 0.6; }
.aee-dots .names { position: relative; margin-left: 40px; height: 34px; }
.aee-dots .names div { position: absolute; transform: translateX(-50%); text-align: center; white-space: nowrap; }
.aee-dots .names small { color: #6b7280; }
.aee-dots .key { margin: 4px 0 0 40px; color: #6b7280; }
.aee-dots .key span.sw { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin: 0 4px 0 10px; }
</style>
"""


def study_dots(counts: pd.DataFrame, engines: list[str], label: str, height: int = 260) -> str:
    """Sources hovered and clicked per participant x question row, per engine: every row a dot
    (spread sideways by a fixed jitter), a box from the first to the third quartile and a thick line
    at the median. The seed study's Figure 6 drew violins; with a class of five, a violin of counts
    that are all equal collapses to a line, while dots show every student. HTML as one string."""
    measures = list(STUDY_COLOURS)
    values_all = counts[measures].to_numpy(dtype=float) if len(counts) else np.zeros((0, 2))
    top = max(1.0, float(np.nanmax(values_all)) if values_all.size and not np.isnan(values_all).all() else 1.0)
    slot = 100 / max(len(engines), 1)

    def y(v: float) -> float:
        return height - v / top * (height - 10)  # px from the top, 10 px headroom

    parts = [f'{_DOTS_CSS}<div class="aee-dots"><div class="ttl">'
             f'{html.escape("Sources hovered and clicked per answer: " + label)}</div>'
             f'<div class="plot" style="height:{height}px">']
    step = 1 if top <= 10 else int(np.ceil(top / 8))
    for tick in range(0, int(top) + 1, step):
        parts.append(f'<div class="grid" style="top:{y(tick):.1f}px"></div>'
                     f'<div class="tick" style="top:{y(tick):.1f}px">{tick}</div>')
    rng = np.random.default_rng(0)  # the same spread on every run
    names = []
    for k, engine in enumerate(engines):
        part = counts[counts["engine"] == engine]
        centre = slot * (k + 0.5)
        names.append(f'<div style="left:{centre:.2f}%">{html.escape(engine)}<br>'
                     f'<small>{len(part)} row{"s" if len(part) != 1 else ""}</small></div>')
        for m, measure in enumerate(measures):
            values = part[measure].dropna().astype(float).to_numpy()
            if not values.size:
                continue
            x0 = centre + (m - 0.5) * slot * 0.42
            half = slot * 0.14
            colour = STUDY_COLOURS[measure]
            q1, median, q3 = _quartiles(values)
            summary = (f"{engine}, {measure}: median {median:g}, quartiles {q1:g} to {q3:g}, {values.size} rows, "
                       f"mean {values.mean():.2f}")
            parts.append(f'<div class="box" style="left:{x0 - half:.2f}%;width:{2 * half:.2f}%;top:{y(q3):.1f}px;'
                         f'height:{max(y(q1) - y(q3), 2):.1f}px;border-color:{colour}" '
                         f'title="{html.escape(summary, quote=True)}"></div>'
                         f'<div class="med" style="left:{x0 - half:.2f}%;width:{2 * half:.2f}%;top:{y(median):.1f}px;'
                         f'border-color:{colour}"></div>')
            for v, dx in zip(values, rng.uniform(-half * 0.8, half * 0.8, size=values.size)):
                parts.append(f'<div class="dot" style="left:{x0 + dx:.2f}%;top:{y(v):.1f}px;background:{colour}" '
                             f'title="{html.escape(f"{engine}, {measure}: {v:g}", quote=True)}"></div>')
    key = "".join(f'<span class="sw" style="background:{c}"></span>{m}' for m, c in STUDY_COLOURS.items())
    parts.append(f'</div><div class="names">{"".join(names)}</div><div class="key">{key} · one dot per participant '
                 "x question; box: first to third quartile; thick line: median</div></div>")
    return "".join(parts)
