"""How a metric's value is written for people: its unit, which way is better, its Table 7
thresholds, and "n/a" with a reason where there is no value. Everything is read from the metric
registry (`pipeline.metrics.registry`); nothing here computes a metric.
"""

from __future__ import annotations

from typing import Any

from pipeline.metrics import METRICS, RATING_SYMBOLS
from pipeline.metrics.registry import percent_text

# Short unit marks for row labels, and the words the legend and Methodology use for them.
UNIT_MARKS = {"percent": "%", "count": "per answer", "ratio": "ratio", "likert": "1–5"}
UNIT_WORDS = {"percent": "percentage of answers or items (0-100)", "count": "count per answer, averaged",
              "ratio": "ratio per answer, averaged", "likert": "1-5 scale, averaged"}
DIRECTION_MARKS = {"higher_is_better": "↑ better", "lower_is_better": "↓ better", "neutral": ""}
DIRECTION_WORDS = {"higher_is_better": "higher is better", "lower_is_better": "lower is better",
                   "neutral": "descriptive (no better direction)"}
DIRECTION_SHORT = {"higher_is_better": "↑ higher", "lower_is_better": "↓ lower", "neutral": "descriptive"}
NA = "n/a"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def unit_mark(name: str) -> str:
    """"%", "per answer", "ratio" or "1–5" for a metric."""
    return UNIT_MARKS.get(METRICS[name].unit, METRICS[name].unit)


def row_label(name: str) -> str:
    """The metric's label with its unit and direction: "Uncited sources (%, ↓ better)"."""
    info = METRICS[name]
    direction = DIRECTION_MARKS[info.direction]
    return f"{info.label} ({unit_mark(name)}{', ' + direction if direction else ''})"


def fmt_metric(value: Any, name: str, decimals: int = 2) -> str:
    """A corpus value in its unit ("31.71%", "6.12"), or "n/a" when there is none."""
    if _missing(value):
        return NA
    text = f"{float(value):.{decimals}f}"
    return text + "%" if METRICS[name].unit == "percent" else text


def _num(x: float) -> str:
    return f"{x:g}"


def thresholds_text(name: str, exact: bool = False) -> str:
    """The metric's Table 7 bands in value order: "▲ below 10 · ● 10 to under 35 · ▼ 35 or more"
    (exact=True gives interval notation: "▲ acceptable [0, 10); ..."). "not rated" without bands."""
    bands = sorted(METRICS[name].bands, key=lambda b: b.low)
    if not bands:
        return "not rated"
    parts = []
    for b in bands:
        sym = RATING_SYMBOLS[b.rating]
        if exact:
            parts.append(f"{sym} {b.rating} [{_num(b.low)}, {_num(b.high)}{']' if b.high_inclusive else ')'}")
        elif b.low <= 0:
            parts.append(f"{sym} below {_num(b.high)}")
        elif b.high >= 100 and b.high_inclusive:
            parts.append(f"{sym} {_num(b.low)} or more")
        else:
            parts.append(f"{sym} {_num(b.low)} to under {_num(b.high)}")
    return ("; " if exact else " · ").join(parts)


def na(reason: str) -> str:
    """"n/a: <reason>" (the reason is plain text; escape it where markdown renders it)."""
    return f"{NA}: {reason}" if reason else NA


def blank_reason(name: str, engine: str, reasons: dict[tuple[str, str], str], *, has_debate: bool,
                 n_answers: Any = None) -> str:
    """Why a scorecard cell is empty, in words: debate-only metrics on a selection without debate
    queries, else the reason the pipeline stored for most of the engine's answers."""
    info = METRICS[name]
    if info.debate_only and not has_debate:
        return "defined for debate queries only, and this selection has no debate queries"
    if (engine, name) in reasons:
        return reasons[(engine, name)]
    if info.harmonic_of:
        parts = " and ".join(METRICS[m].label.lower() for m in info.harmonic_of)
        return f"needs both {parts}, and one of them has no value"
    if not n_answers:
        return "no answer of this engine has a value for it"
    return "no value"


def ci_text(low: Any, high: Any, name: str, value: Any, n_answers: Any) -> str:
    """A 95% interval "[28.10%, 35.20%]", or "n/a" with the reason there is none."""
    if _missing(value):
        return na("no value")
    if METRICS[name].harmonic_of:
        return na("a harmonic mean of two corpus means has no per-answer bootstrap")
    if _missing(low) or _missing(high):
        return na("no interval")
    if n_answers is not None and not _missing(n_answers) and int(n_answers) == 1:
        return na("one answer only")
    return f"[{fmt_metric(low, name)}, {fmt_metric(high, name)}]"


def judged_text(share: Any, name: str) -> str:
    """How much of what a scorecard cell needed was judged: "85% of statements", "all citations";
    "" when the metric needs no label that can be missing (or the share was not recorded)."""
    if _missing(share):
        return ""
    unit = METRICS[name].unknown_unit or "units"
    return f"all {unit}" if float(share) >= 1 else f"{percent_text(float(share))} of {unit}"


def cell_note(rec: dict) -> str:
    """The small line under a scorecard value: "n=37" answers averaged, or, for a cell that is n/a
    because too little was judged, how much was ("31% judged"); "" when neither applies."""
    if _missing(rec.get("value")):
        share = rec.get("judged_share")
        if not rec.get("judged_reason") or share is None or _missing(share):
            return ""
        return f"{percent_text(float(share))} judged"
    return f"n={int(rec['n_answers'])}" if not _missing(rec.get("n_answers")) and rec.get("n_answers") else ""
