"""Figures and exports: the scorecard heatmap, its SVG / PNG / LaTeX exports, the confidence bars
and the judges' confusion matrices. Inputs are display cells from `dashboard.render`; nothing here
computes a metric.

Exports work offline without kaleido or a browser: the SVG is written by hand from a small list
of drawing operations, and the PNG draws the same operations with Pillow (a Streamlit dependency).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.metric_text import DIRECTION_WORDS, UNIT_WORDS, fmt_metric, row_label, thresholds_text
from dashboard.render import (
    RATING_TINTS,
    fmt_ci,
    group_summaries,
    group_title,
    latex_escape,
    plot_escape,
    rating_text,
    records,
    xml_escape,
)
from pipeline.metrics import METRICS, RATING_COLOURS, RATING_SYMBOLS

_RATING_CODE = {None: 0, "problematic": 1, "borderline": 2, "acceptable": 3}
# z = code / 3 on the colour axis: 0 unrated, 1/3 problematic, 2/3 borderline, 1 acceptable.
_SCALE = [
    [0.0, RATING_TINTS[None]], [1 / 6, RATING_TINTS[None]],
    [1 / 6, RATING_TINTS["problematic"]], [0.5, RATING_TINTS["problematic"]],
    [0.5, RATING_TINTS["borderline"]], [5 / 6, RATING_TINTS["borderline"]],
    [5 / 6, RATING_TINTS["acceptable"]], [1.0, RATING_TINTS["acceptable"]],
]
CONFIDENCE_COLOURS = ("#b2182b", "#ef8a62", "#bdbdbd", "#67a9cf", "#2166ac")
FLAG = "⚑"


def _shown_rating(rec: dict) -> str | None:
    """The rating a cell shows: the printed one for published scorecards, else the computed one."""
    return rec.get("published_rating") or rec.get("rating")


def wrap_label(name: str, width: int = 14) -> str:
    """An escaped axis label broken into lines of about `width` characters at "_", " ", "-" or "/"."""
    import re

    parts = re.split(r"(?<=[_\s/-])", str(name))
    lines, line = [], ""
    for part in parts:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return "<br>".join(plot_escape(chunk) for chunk in lines)


def _wrapped_row_label(name: str, width: int = 26) -> str:
    """The row label of a metric, escaped, its unit and direction on a second line when long."""
    label = row_label(name)
    head, sep, tail = label.rpartition(" (")
    if not sep or len(label) <= width:
        return plot_escape(label)
    return f"{plot_escape(head)}<br>({plot_escape(tail)}"


def _cell_text(rec: dict, with_n: bool = True, compact: bool = False) -> str:
    """A cell's value, rating symbol (and a flag when the printed rating disagrees) and n. `compact`
    (many engines, narrow columns): the symbol moves to the second line beside n, so the widest
    line is the value alone."""
    shown = _shown_rating(rec)
    text = fmt_metric(rec["value"], rec["metric"])
    marks = f"{RATING_SYMBOLS[shown]}" if shown else ""
    if rec.get("disagrees") and rec.get("rating"):
        marks += f"{FLAG}{RATING_SYMBOLS[rec['rating']]}"
    n = f"n={int(rec['n_answers'])}" if with_n and rec.get("n_answers") else ""
    if not compact:
        text += f" {marks}" if marks else ""
        return text + (f"<br><span style='font-size:10px'>{n}</span>" if n else "")
    second = " ".join(part for part in (marks, f"<span style='font-size:10px'>{n}</span>" if n else "") if part)
    return text + (f"<br>{second}" if second else "")


def _hover(rec: dict, engine_label: str) -> str:
    name = rec["metric"]
    info = METRICS[name]
    parts = [f"<b>{plot_escape(info.label)}</b> · {engine_label}",
             f"value: {fmt_metric(rec['value'], name)}"]
    if rec["value"] is None:
        parts.append(f"why: {plot_escape(rec.get('why_blank') or 'not printed in this scorecard')}")
    elif rec.get("ci_low") is not None:
        parts.append(f"95% CI: {fmt_ci(rec['ci_low'], rec['ci_high'])}")
    else:
        parts.append("95% CI: none (published figure or a single value)")
    if rec.get("n_answers") is not None:
        parts.append(f"answers: {int(rec['n_answers'])}")
    parts.append(f"unit: {UNIT_WORDS[info.unit]}; {DIRECTION_WORDS[info.direction]}")
    parts.append(f"thresholds: {thresholds_text(name)}")
    if rec.get("published_rating"):
        parts.append(f"printed rating: {rating_text(rec['published_rating'])}")
        parts.append(f"Table 7 thresholds give: {rating_text(rec.get('rating')) or 'not rated'}")
        if rec.get("disagrees"):
            parts.append(f"{FLAG} the printed rating disagrees with the thresholds")
    else:
        parts.append(f"rating: {rating_text(rec.get('rating')) or 'not rated'}")
    return "<br>".join(parts)


def _blank(engine: str, name: str) -> dict:
    return {"engine": engine, "metric": name, "value": None, "ci_low": None, "ci_high": None, "n_answers": None,
            "rating": None, "published_rating": None, "disagrees": False, "why_blank": ""}


def scorecard_figure(cells: pd.DataFrame, title: str = "", with_n: bool = True, divider_after: int | None = None,
                     no_n_for: Iterable[str] = (), with_summary: bool = True) -> go.Figure:
    """The scorecard as a heatmap: metrics down (grouped as the registry orders them), engines
    across, each cell tinted by its rating and labelled with value, symbol and n; hover shows the
    95% interval. A final block holds each group's symbols per engine (with_summary; the page
    shows them as a table naming each metric instead). `divider_after` draws a line after that
    many columns (computed | published)."""
    order = {name: i for i, name in enumerate(METRICS)}
    cells = cells.assign(_order=cells["metric"].map(order)).sort_values("_order", kind="stable").drop(columns="_order")
    engines = list(dict.fromkeys(cells["engine"]))
    no_n = set(no_n_for)
    crowded = len(engines) > 4
    # names break only at "_", " ", "-" or "/", never inside a word; narrow columns get short lines
    x = [wrap_label(e, 7 if crowded else 14) for e in engines]
    # One label column: a bold header row per group, then its metrics with the label wrapped over two
    # lines ("Unsupported statements<br>(%, ↓ better)"). A second axis level for the groups took
    # about 200 px beside the labels, which left the cells unreadable in a window 800 px wide.
    y_label: list[str] = []
    z: list[list[float | None]] = []  # None (a rating with no code) leaves the cell blank
    text: list[list[str]] = []
    hover: list[list[str]] = []
    header_rows: list[int] = []

    def header(title: str) -> None:
        header_rows.append(len(y_label))
        y_label.append(f"<b>{plot_escape(title)}</b>")
        z.append([None for _ in engines])
        text.append(["" for _ in engines])
        hover.append([plot_escape(title) for _ in engines])

    last_group = None
    for (group, name), part in cells.groupby(["group", "metric"], sort=False):
        if group != last_group:
            header(group_title(group))
            last_group = group
        recs = {r["engine"]: r for r in records(part)}
        row = [recs.get(e) or _blank(e, name) for e in engines]
        y_label.append(_wrapped_row_label(name))
        z.append([_RATING_CODE.get(_shown_rating(r)) for r in row])
        text.append([_cell_text(r, with_n and r["engine"] not in no_n, compact=crowded) for r in row])
        hover.append([_hover(r, plot_escape(r["engine"])) for r in row])
    if with_summary:
        header("Summary")
        for group, part in group_summaries(cells).groupby("group", sort=False):
            by_engine = dict(zip(part["engine"], part["symbols"]))
            named = dict(zip(part["engine"], part["named"]))
            y_label.append(plot_escape(f"{group_title(group)} ratings"))
            z.append([0 for _ in engines])
            text.append([f"<span style='font-size:17px'>{by_engine.get(e, '')}</span>" for e in engines])
            hover.append([f"<b>{plot_escape(group_title(group))}</b> · {plot_escape(e)}<br>"
                          + "<br>".join(plot_escape(item) for item in named.get(e, '').split(" · ")) for e in engines])
    # plotly needs distinct category names: a zero-width space per repeat keeps equal labels apart
    seen: dict[str, int] = {}
    y_unique = []
    for label in y_label:
        seen[label] = seen.get(label, -1) + 1
        y_unique.append(label + "\u200b" * seen[label])
    fig = go.Figure(go.Heatmap(
        x=x, y=y_unique, z=z, zmin=0, zmax=3, colorscale=_SCALE, showscale=False,
        text=text, texttemplate="%{text}", textfont={"color": "#111111", "size": 11 if crowded else 13},
        customdata=hover, hovertemplate="%{customdata}<extra></extra>", xgap=2, ygap=2,
    ))
    for k in header_rows[1:]:  # a rule above each group after the first
        fig.add_hline(y=k - 0.5, line_width=1, line_color="#9ca3af")
    if divider_after:
        fig.add_vline(x=divider_after - 0.5, line_width=3, line_color="#6b7280")
    fig.update_yaxes(autorange="reversed", tickson="boundaries", ticks="")
    fig.update_xaxes(side="top", tickangle=0, tickfont={"size": 11 if crowded else 13})
    lines = max((x_.count("<br>") + 1 for x_ in x), default=1)
    top = 24 + 16 * lines + (34 if title else 0)
    fig.update_layout(
        title={"text": plot_escape(title), "x": 0, "y": 0.995, "yanchor": "top", "font": {"size": 15}} if title else None,
        height=top + 20 + 38 * len(y_label), margin={"l": 10, "r": 10, "t": top, "b": 10},
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return fig


# ---- exports: drawing operations shared by SVG and PNG ---------------------------------------------


@dataclass(frozen=True)
class _Op:
    kind: str  # "rect" | "text" | "symbol"
    x: float
    y: float
    w: float = 0
    h: float = 0
    fill: str = ""
    text: str = ""
    size: float = 13
    bold: bool = False
    anchor: str = "start"  # start | middle
    rating: str = ""


ILLUSTRATIVE_NOTE = "Illustrative teaching data: invented engines and answers; says nothing about any real product."


def _layout(cells: pd.DataFrame, title: str, illustrative: bool = False) -> tuple[list[_Op], int, int]:
    engines = list(dict.fromkeys(cells["engine"]))
    label_w, col_w, row_h, pad = 310, 150, 28, 12
    width = max(label_w + col_w * len(engines) + 2 * pad, 760 if illustrative else 0)
    ops: list[_Op] = []
    y = pad
    if title:
        ops.append(_Op("text", pad, y + 18, text=title, size=16, bold=True))
        y += 32
    if illustrative:
        ops.append(_Op("rect", pad, y, width - 2 * pad, row_h, fill="#fde68a"))
        ops.append(_Op("text", pad + 8, y + 19, text=ILLUSTRATIVE_NOTE, bold=True, fill="#78350f"))
        y += row_h + 6
    ops.append(_Op("rect", pad, y, width - 2 * pad, row_h, fill="#f3f4f6"))
    ops.append(_Op("text", pad + 6, y + 19, text="Metric", bold=True))
    for i, e in enumerate(engines):
        ops.append(_Op("text", pad + label_w + i * col_w + col_w / 2, y + 19, text=str(e)[:22], bold=True, anchor="middle"))
    y += row_h

    def cell_row(label: str, entries: list[tuple[str, list[str], str | None, str]]) -> None:
        nonlocal y
        ops.append(_Op("text", pad + 14, y + 19, text=label))
        for i, (value, symbols, tint_rating, note) in enumerate(entries):
            x0 = pad + label_w + i * col_w
            ops.append(_Op("rect", x0 + 1, y + 1, col_w - 2, row_h - 2, fill=RATING_TINTS.get(tint_rating, RATING_TINTS[None])))
            cx = x0 + col_w / 2
            total = len(value) * 8.2 + (len(symbols) * 16)
            start = cx - total / 2
            if value:
                ops.append(_Op("text", start, y + 19, text=value, fill="#111111"))
            sx = start + len(value) * 8.2 + 12
            for s in symbols:
                ops.append(_Op("symbol", sx, y + row_h / 2, w=6, rating=s))
                sx += 16
            if note:
                ops.append(_Op("text", x0 + col_w - 4, y + 24, text=note, size=9, fill="#374151", anchor="end"))
        y += row_h

    for group, gpart in cells.groupby("group", sort=False):
        ops.append(_Op("text", pad + 4, y + 19, text=group_title(group), bold=True))
        y += row_h
        for _, part in gpart.groupby("metric", sort=False):
            recs = {r["engine"]: r for r in records(part)}
            entries = []
            for e in engines:
                r = recs[e]
                shown = _shown_rating(r)
                note = f"n={int(r['n_answers'])}" if r.get("n_answers") else ""
                syms = [shown] if shown else []
                if r.get("disagrees") and r.get("rating"):
                    syms.append("flag:" + r["rating"])
                entries.append((fmt_metric(r["value"], r["metric"]), syms, shown, note))
            cell_row(row_label(part["metric"].iloc[0]), entries)
    summaries = group_summaries(cells)
    if len(summaries):
        ops.append(_Op("text", pad + 4, y + 19, text="Summary", bold=True))
        y += row_h
        rated = cells[cells["metric"].map(lambda m: bool(METRICS[m].bands))]
        for group, part in rated.groupby("group", sort=False):
            entries = []
            for e in engines:
                syms = [(_shown_rating(r) or "none") for r in records(part[part["engine"] == e])]
                entries.append(("", syms, None, ""))
            cell_row(group_title(group), entries)
    notes = ["▲ acceptable · ● borderline · ▼ problematic · grey: not rated · % share (0-100) · ↑/↓: higher/lower is better"]
    for group, part in summaries.groupby("group", sort=False):
        notes.append(f"Summary {group_title(group)}, in order: {part['names'].iloc[0]}")
    if "why_blank" in cells.columns:
        for name, part in cells.groupby("metric", sort=False):
            reasons = set(part["why_blank"].fillna("")) - {""}
            if len(reasons) == 1 and part["value"].isna().all():
                notes.append(f"{METRICS[name].label} n/a: {next(iter(reasons))}")
    for note in notes:
        ops.append(_Op("text", pad, y + 18, text=note, size=11, fill="#374151"))
        y += 18
    y += 10
    return ops, int(width), int(y + pad)


def _symbol_points(kind: str, cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    if kind == "acceptable":
        return [(cx - r, cy + r * 0.8), (cx + r, cy + r * 0.8), (cx, cy - r)]
    return [(cx - r, cy - r * 0.8), (cx + r, cy - r * 0.8), (cx, cy + r)]


def scorecard_svg(cells: pd.DataFrame, title: str = "", illustrative: bool = False) -> str:
    """The scorecard as a standalone SVG document (all text escaped); `illustrative` adds a banner
    saying the data are invented teaching data."""
    ops, width, height = _layout(cells, title, illustrative)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']
    for op in ops:
        if op.kind == "rect":
            out.append(f'<rect x="{op.x:.1f}" y="{op.y:.1f}" width="{op.w:.1f}" height="{op.h:.1f}" fill="{op.fill}"/>')
        elif op.kind == "text":
            weight = ' font-weight="bold"' if op.bold else ""
            anchor = {"middle": "middle", "end": "end"}.get(op.anchor, "start")
            out.append(f'<text x="{op.x:.1f}" y="{op.y:.1f}" font-size="{op.size}"{weight} text-anchor="{anchor}" '
                       f'fill="{op.fill or "#111111"}">{xml_escape(op.text)}</text>')
        elif op.kind == "symbol":
            out.append(_svg_symbol(op))
    out.append("</svg>")
    return "\n".join(out)


def _svg_symbol(op: _Op) -> str:
    rating, flagged = op.rating, op.rating.startswith("flag:")
    if flagged:
        rating = rating[5:]
    if rating == "none":
        return f'<text x="{op.x:.1f}" y="{op.y + 4:.1f}" font-size="12" text-anchor="middle" fill="#6b7280">–</text>'
    colour = RATING_COLOURS.get(rating, "#6b7280")
    stroke = ' stroke="#111111" stroke-dasharray="2,1"' if flagged else ""
    label = f"<title>{xml_escape(('thresholds: ' if flagged else '') + rating)}</title>"
    if rating == "borderline":
        return f'<circle cx="{op.x:.1f}" cy="{op.y:.1f}" r="{op.w:.1f}" fill="{colour}"{stroke}>{label}</circle>'
    pts = " ".join(f"{px:.1f},{py:.1f}" for px, py in _symbol_points(rating, op.x, op.y, op.w))
    return f'<polygon points="{pts}" fill="{colour}"{stroke}>{label}</polygon>'


_FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:/Windows/Fonts/arial.ttf",
)


def _font(size: float, bold: bool):
    from PIL import ImageFont

    for candidate in _FONT_CANDIDATES:
        path = Path(candidate.replace("DejaVuSans.ttf", "DejaVuSans-Bold.ttf") if bold else candidate)
        if not path.exists():
            path = Path(candidate)
        if path.exists():
            try:
                return ImageFont.truetype(str(path), int(size))
            except OSError:
                continue
    try:
        return ImageFont.load_default(size=int(size))
    except TypeError:  # very old Pillow
        return ImageFont.load_default()


def scorecard_png(cells: pd.DataFrame, title: str = "", scale: int = 2, illustrative: bool = False) -> bytes:
    """The scorecard as a PNG drawn with Pillow (same layout as the SVG; symbols are shapes, so no
    font needs the ▲●▼ glyphs)."""
    from PIL import Image, ImageDraw

    ops, width, height = _layout(cells, title, illustrative)
    img = Image.new("RGB", (width * scale, height * scale), "#ffffff")
    draw = ImageDraw.Draw(img)
    for op in ops:
        if op.kind == "rect":
            draw.rectangle([op.x * scale, op.y * scale, (op.x + op.w) * scale, (op.y + op.h) * scale], fill=op.fill)
        elif op.kind == "text":
            font = _font(op.size * scale, op.bold)
            anchor = {"middle": "ms", "end": "rs"}.get(op.anchor, "ls")
            text = op.text
            try:
                draw.text((op.x * scale, op.y * scale), text, fill=op.fill or "#111111", font=font, anchor=anchor)
            except (ValueError, TypeError):
                draw.text((op.x * scale, (op.y - op.size) * scale), text, fill=op.fill or "#111111", font=font)
        elif op.kind == "symbol":
            rating, flagged = op.rating, op.rating.startswith("flag:")
            if flagged:
                rating = rating[5:]
            cx, cy, r = op.x * scale, op.y * scale, op.w * scale
            if rating == "none":
                draw.line([cx - r / 2, cy, cx + r / 2, cy], fill="#6b7280", width=scale)
                continue
            colour = RATING_COLOURS.get(rating, "#6b7280")
            outline = "#111111" if flagged else None
            if rating == "borderline":
                draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour, outline=outline)
            else:
                draw.polygon(_symbol_points(rating, cx, cy, r), fill=colour, outline=outline)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


_LATEX_SYMBOLS = {"acceptable": r"$\blacktriangle$", "borderline": r"$\bullet$", "problematic": r"$\blacktriangledown$"}


def scorecard_latex(cells: pd.DataFrame, caption: str = "", label: str = "tab:scorecard", illustrative: bool = False) -> str:
    """A booktabs LaTeX table of the scorecard (needs \\usepackage{booktabs,amssymb}); all text escaped.
    `illustrative` starts the caption (and a comment line) with a note that the data are invented."""
    engines = list(dict.fromkeys(cells["engine"]))
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * len(engines) + "}", r"\toprule",
             "Metric & " + " & ".join(latex_escape(e) for e in engines) + r" \\", r"\midrule"]
    first = True
    for group, gpart in cells.groupby("group", sort=False):
        if not first:
            lines.append(r"\midrule")
        first = False
        lines.append(r"\multicolumn{" + str(len(engines) + 1) + r"}{l}{\textit{" + latex_escape(group_title(group)) + r"}} \\")
        for name, part in gpart.groupby("metric", sort=False):
            recs = {r["engine"]: r for r in records(part)}
            row = [latex_escape(row_label(name)).replace("↑", r"$\uparrow$").replace("↓", r"$\downarrow$")]
            for e in engines:
                r = recs[e]
                shown = _shown_rating(r)
                cell = latex_escape(fmt_metric(r["value"], name)) + (" " + _LATEX_SYMBOLS[shown] if shown else "")
                if r.get("disagrees") and r.get("rating"):
                    cell += r" (thr.\ " + _LATEX_SYMBOLS[r["rating"]] + ")"
                row.append(cell)
            lines.append(" & ".join(row) + r" \\")
    summaries = group_summaries(cells)
    if len(summaries):
        lines.append(r"\midrule")
        latex_sym = {v: _LATEX_SYMBOLS[k] for k, v in RATING_SYMBOLS.items()}
        for group, part in summaries.groupby("group", sort=False):
            by_engine = dict(zip(part["engine"], part["symbols"]))
            row = ["Summary: " + latex_escape(group_title(group))]
            for e in engines:
                row.append(" ".join(latex_sym.get(s, "--") for s in by_engine.get(e, "").split()))
            lines.append(" & ".join(row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if illustrative:
        caption = ILLUSTRATIVE_NOTE + (" " + caption if caption else "")
        lines.insert(0, "% " + ILLUSTRATIVE_NOTE)
    if caption:
        lines.append(r"\caption{" + latex_escape(caption) + "}")
    lines += [r"\label{" + latex_escape(label) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """A frame as Parquet bytes."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


# ---- confidence --------------------------------------------------------------------------------


def confidence_figure(counts: pd.DataFrame, levels: Iterable[str], splits: Iterable[str], title: str = "") -> go.Figure:
    """Stacked horizontal bars per engine of the share of answers at each confidence level, one
    panel per split; counts are printed in the bars and on hover."""
    levels = list(levels)
    splits = [s for s in splits if s in set(counts["split"])]
    titles = [f"{s} queries" if s != "all" else "all queries" for s in splits]
    weights = [max(110, 48 * counts.loc[counts["split"] == s, "engine"].nunique()) for s in splits] or [1]
    fig = make_subplots(rows=max(len(splits), 1), cols=1, shared_xaxes=True, subplot_titles=titles,
                        vertical_spacing=min(0.25, 50 / (sum(weights) + 50 * max(len(splits) - 1, 1))),
                        row_heights=[w / sum(weights) for w in weights])
    for row, split in enumerate(splits, start=1):
        part = counts[counts["split"] == split]
        engines = sorted(part["engine"].unique().tolist(), reverse=True)
        totals = part.groupby("engine")["count"].sum()
        for level, colour in zip(levels, CONFIDENCE_COLOURS):
            sub = part[part["level"] == level].set_index("engine").reindex(engines)["count"].fillna(0).astype(int)
            share = [100 * c / totals[e] if totals.get(e, 0) else 0 for e, c in zip(engines, sub)]
            fig.add_trace(go.Bar(
                orientation="h", y=[plot_escape(e) for e in engines], x=share, name=level, legendgroup=level,
                showlegend=row == 1, marker={"color": colour},
                text=[str(c) if c else "" for c in sub], textposition="inside", insidetextanchor="middle",
                customdata=[[c, int(totals.get(e, 0))] for e, c in zip(engines, sub)],
                hovertemplate=f"{plot_escape(level)}<br>%{{y}}: %{{customdata[0]}} of %{{customdata[1]}} answers "
                              "(%{x:.1f}%)<extra></extra>",
            ), row=row, col=1)
    panel = [max(110, 48 * counts.loc[counts["split"] == s, "engine"].nunique()) for s in splits]
    fig.update_layout(barmode="stack", height=170 + sum(panel) + 50 * max(len(splits) - 1, 0),
                      legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom", "x": 0,
                              "traceorder": "normal"},
                      margin={"l": 10, "r": 10, "t": 70 if title else 40, "b": 120},
                      title={"text": plot_escape(title), "x": 0} if title else None)
    fig.update_xaxes(range=[0, 100], ticksuffix="%")
    return fig


# ---- judges ------------------------------------------------------------------------------------


def confusion_figure(rows: list[str], cols: list[str], matrix: list[list[int]], title: str,
                     row_title: str = "judge", col_title: str = "experts") -> go.Figure:
    """A confusion matrix as an annotated heatmap (counts in the cells)."""
    fig = go.Figure(go.Heatmap(
        z=matrix, x=[plot_escape(c) for c in cols], y=[plot_escape(r) for r in rows], colorscale="Blues",
        text=[[str(v) for v in r] for r in matrix], texttemplate="%{text}", showscale=False,
        hovertemplate=f"{plot_escape(row_title)}: %{{y}}<br>{plot_escape(col_title)}: %{{x}}<br>items: %{{z}}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", title_text=plot_escape(row_title))
    fig.update_xaxes(title_text=plot_escape(col_title), side="bottom")
    fig.update_layout(title={"text": plot_escape(title), "x": 0}, height=340, margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


# ---- usability study -----------------------------------------------------------------------------

STUDY_COLOURS = {"hovered": "#1f77b4", "clicked": "#d62728"}
MIN_ROWS_FOR_VIOLIN = 20  # below this (or with few distinct counts) a violin's shape is an artefact


def _violin_fits(values: pd.Series) -> bool:
    return len(values) >= MIN_ROWS_FOR_VIOLIN and values.nunique() > 3


def study_counts_figure(counts: pd.DataFrame, label: str, engines: list[str]) -> go.Figure:
    """Sources hovered and clicked per participant x query row, per engine (the seed study's Figure 6).

    Split violins only where an engine has enough rows with enough distinct counts to give a shape;
    otherwise a box with every row drawn as a jittered point, so a class of five where every
    student hovered twice shows five points at 2, not a violin collapsed to a flat line."""
    fig = go.Figure()
    shown_legend: set[str] = set()
    for engine in engines:
        part = counts[counts["engine"] == engine]
        for measure in STUDY_COLOURS:
            values = part[measure].dropna().astype(float)
            colour = STUDY_COLOURS[measure]
            common = dict(name=measure, legendgroup=measure, showlegend=measure not in shown_legend,
                          y=values, x=[plot_escape(engine)] * len(values))
            shown_legend.add(measure)
            if _violin_fits(values):
                fig.add_trace(go.Violin(**common, side="negative" if measure == "hovered" else "positive",
                                        box_visible=True, meanline_visible=True, points=False, spanmode="hard",
                                        line_color=colour))
            else:
                fig.add_trace(go.Box(**common, boxpoints="all", jitter=0.5, pointpos=0, offsetgroup=measure,
                                     marker={"color": colour, "size": 8, "opacity": 0.75}, line_color=colour,
                                     fillcolor="rgba(0,0,0,0)",
                                     hovertemplate=f"{measure}: %{{y}}<extra>{plot_escape(engine)}: {len(values)} row(s)</extra>"))
    small = any(not _violin_fits(counts.loc[counts["engine"] == e, m].dropna()) for e in engines for m in STUDY_COLOURS)
    how = "boxes with every row as a point" if small else "violins with the box and mean line inside"
    fig.update_layout(violinmode="overlay", boxmode="group", yaxis_title="sources per answer", xaxis_title="engine",
                      title={"text": plot_escape(f"Sources hovered and clicked per engine ({how}): {label}"), "x": 0},
                      legend={"orientation": "h", "y": -0.2}, margin={"l": 10, "r": 10, "t": 60, "b": 40})
    fig.update_yaxes(rangemode="tozero", dtick=1 if counts[list(STUDY_COLOURS)].max().max() <= 10 else None)
    return fig
