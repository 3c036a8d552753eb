"""The scorecard's exports (SVG / PNG / LaTeX), the cell tooltips the scorecard grid shows
(`dashboard.scorecard_grid`) and the judges' confusion tables. Inputs are display cells from
`dashboard.render`; nothing here computes a metric.

Exports work offline without kaleido or a browser: the SVG is written by hand from a small list
of drawing operations, and the PNG draws the same operations with Pillow (a Streamlit dependency).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dashboard.metric_text import (
    DIRECTION_WORDS,
    UNIT_WORDS,
    cell_note,
    fmt_metric,
    judged_text,
    row_label,
    thresholds_text,
)
from dashboard.render import (
    RATING_TINTS,
    fmt_ci,
    group_summaries,
    group_title,
    latex_escape,
    rating_text,
    records,
    xml_escape,
)
from pipeline.metrics import METRICS, RATING_COLOURS, RATING_SYMBOLS

FLAG = "⚑"


def _shown_rating(rec: dict) -> str | None:
    """The rating a cell shows: the printed one for published scorecards, else the computed one."""
    return rec.get("published_rating") or rec.get("rating")


def hover_lines(rec: dict, engine: str) -> list[str]:
    """What hovering a scorecard cell says, as plain text lines (callers escape for their medium)."""
    return [line.replace("<b>", "").replace("</b>", "") for line in _hover_parts(rec, engine, lambda t: str(t))]


def _hover_parts(rec: dict, engine_label: str, esc) -> list[str]:
    name = rec["metric"]
    info = METRICS[name]
    parts = [f"<b>{esc(info.label)}</b> · {engine_label}",
             f"value: {fmt_metric(rec['value'], name)}"]
    if rec["value"] is None:
        parts.append(f"why: {esc(rec.get('why_blank') or 'not printed in this scorecard')}")
    elif rec.get("ci_low") is not None:
        parts.append(f"95% CI: {fmt_ci(rec['ci_low'], rec['ci_high'])}")
    else:
        parts.append("95% CI: none (published figure or a single value)")
    if rec.get("n_answers") is not None:
        parts.append(f"answers: {int(rec['n_answers'])}")
    if rec.get("aggregated_as") and rec["value"] is not None:
        units = rec.get("pooled_units")
        count = f" ({int(units)})" if rec["aggregated_as"].startswith("pooled") and units is not None and units == units else ""
        parts.append(f"value is the {esc(rec['aggregated_as'])}{count}")
    if judged := judged_text(rec.get("judged_share"), name):
        parts.append(f"judged: {esc(judged)}")
    parts.append(f"unit: {UNIT_WORDS[info.unit]}; {DIRECTION_WORDS[info.direction]}")
    parts.append(f"thresholds: {thresholds_text(name)}")
    if rec.get("published_rating"):
        parts.append(f"printed rating: {rating_text(rec['published_rating'])}")
        parts.append(f"Table 7 thresholds give: {rating_text(rec.get('rating')) or 'not rated'}")
        if rec.get("disagrees"):
            parts.append(f"{FLAG} the printed rating disagrees with the thresholds")
    else:
        parts.append(f"rating: {rating_text(rec.get('rating')) or 'not rated'}")
    return parts


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
                note = cell_note(r)
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
    if "why_blank" in cells.columns:  # every n/a cell of the figure says why, beneath it
        for name, part in cells.groupby("metric", sort=False):
            blank = part[part["value"].isna()]
            reasons = [str(r) if isinstance(r, str) and r else "no value recorded" for r in blank["why_blank"]]
            if blank.empty:
                continue
            if len(blank) == len(part) and len(set(reasons)) == 1:
                notes.append(f"{METRICS[name].label} n/a: {reasons[0]}")
                continue
            for reason in dict.fromkeys(reasons):
                who = ", ".join(str(e) for e, r in zip(blank["engine"], reasons) if r == reason)
                notes.append(f"{METRICS[name].label} n/a for {who}: {reason}")
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


# ---- judges ------------------------------------------------------------------------------------


def confusion_table(rows: list[str], cols: list[str], matrix: list[list[int]], row_title: str = "judge",
                    col_title: str = "experts") -> "pd.io.formats.style.Styler":
    """A confusion matrix as a table of counts, each cell tinted by its share of the largest count
    (a static table: no chart bundle to load). Labels are escaped for st.table's markdown."""
    from dashboard.render import md_escape

    frame = pd.DataFrame(matrix, index=[md_escape(f"{row_title}: {r}") for r in rows],
                         columns=[md_escape(f"{col_title}: {c}") for c in cols])
    top = max((v for row in matrix for v in row), default=0) or 1

    def tint(value: int) -> str:
        share = value / top  # white to a mid blue; dark text stays readable on every step
        red, green, blue = (int(255 - share * (255 - c)) for c in (107, 174, 214))
        return f"background-color: rgb({red},{green},{blue}); text-align: center"

    return frame.style.map(tint)
