"""What the Compare page lines up: two answers' metrics row by row, and two judges' verdicts on one
answer item by item.

Values come from the pipeline's reports (`answer_report`) and the stored verdicts; this module
only pairs them and says which side the registry's direction favours. It never computes a metric.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboard.answer_model import DIRECTION_MARKS, metric_value_text
from pipeline.matrices import unknown_verdict_code
from pipeline.metrics import METRICS
from pipeline.records import SUPPORT_LABELS, AnnotatedAnswer, unchecked_text

SAME, DIFFERENT = "same", "differs"
ONE_SIDE = "one side only"  # one judge decided the item, the other did not (the people's audit covers a sample)
ITEM_ORDER = {"relevance": 0, "stance": 1, "support": 2, "support_set": 3}


def _favoured(a: float | None, b: float | None, direction: str) -> str:
    """Which side the registry's direction favours: "A", "B", "=" or "" (no direction or a missing value)."""
    if a is None or b is None or direction == "neutral":
        return ""
    if round(a, 2) == round(b, 2):
        return "="
    better_high = direction == "higher_is_better"
    return "A" if (a > b) == better_high else "B"


def metrics_side_by_side(rep_a: dict, rep_b: dict, name_a: str, name_b: str) -> pd.DataFrame:
    """One row per metric: label, which direction is better, both values as shown, the side the
    direction favours, and why a value is missing or what it left out. Column names carry the two sides' names."""
    rows = []
    for name, ma in rep_a["metrics"].items():
        mb = rep_b["metrics"].get(name)
        if mb is None:
            continue
        info = METRICS.get(name)
        unit = info.unit if info else "ratio"
        direction = info.direction if info else "neutral"
        favoured = _favoured(ma["display"], mb["display"], direction)
        # why a value is missing, and what a value left out (units nobody judged)
        notes = [f"{side}: {m['reason']}" for side, m in (("A", ma), ("B", mb))
                 if (m["display"] is None or m.get("unknown")) and m["reason"]]
        if len(notes) == 2 and ma["reason"] == mb["reason"]:
            notes = [f"both: {ma['reason']}"]  # one reason for both sides reads once, not twice
        rows.append({
            "metric": ma["label"], "better": DIRECTION_MARKS.get(direction, ""),
            f"A: {name_a}": metric_value_text(ma["display"], unit), f"B: {name_b}": metric_value_text(mb["display"], unit),
            "favours": {"A": f"A ({name_a})", "B": f"B ({name_b})", "=": "equal", "": ""}[favoured],
            "note": "; ".join(notes),
        })
    return pd.DataFrame(rows, columns=["metric", "better", f"A: {name_a}", f"B: {name_b}", "favours", "note"])


def _labels(annotated: AnnotatedAnswer) -> dict[tuple[str, int | None, int | None], str]:
    """The label of every judged item: (kind, statement, source) -> label shown to a reader."""
    out: dict[tuple[str, int | None, int | None], str] = {}
    for v in annotated.verdicts:
        if v.kind not in ITEM_ORDER and v.kind != "confidence":
            continue
        if v.kind == "support" and v.label not in SUPPORT_LABELS:  # nobody decided it: say why
            label = unchecked_text(unknown_verdict_code(v))
        elif v.label == "unknown" and v.raw.startswith(("not checked", "not decided")):
            label = v.raw  # a relevance or stance nobody decided, with why ("not checked: no one audited ...")
        elif v.error:
            label = f"no label ({v.error} error)"
        elif v.label is None:
            label = "no label (unparsed output)"
        else:
            label = v.label
        out[_item_key(v)] = label
    return out


def _undecided(label: str) -> bool:
    """A shown label that decides nothing: "no verdict", "unknown", "not checked: ...", "not decided: ..."."""
    return label in ("no verdict", "unknown") or label.startswith(("not checked", "not decided", "no label"))


def _item_key(v: Any) -> tuple[str, int | None, int | None]:
    """(kind, statement, source) of a verdict; support by a set of sources (NLI citation recall and
    precision) is its own kind, keyed by a number standing for the set."""
    if v.kind == "support" and v.source_index is None and v.source_set:
        return ("support_set", v.statement_index, _set_number(v.source_set))
    return (v.kind, v.statement_index, v.source_index)


def _set_number(source_set: tuple[int, ...]) -> int:
    """A stable sortable number for a set of source indexes (sets are small: a few citations)."""
    return sum(1 << min(n, 62) for n in source_set)


def _source_sets(annotated: AnnotatedAnswer) -> dict[tuple[int | None, int | None], tuple[int, ...]]:
    return {(v.statement_index, _set_number(v.source_set)): tuple(sorted(v.source_set))
            for v in annotated.verdicts if v.kind == "support" and v.source_index is None and v.source_set}


def statements_match(a: AnnotatedAnswer, b: AnnotatedAnswer) -> bool:
    """True when both judges' records split the answer into the same statements."""
    return [s.text for s in a.statements] == [s.text for s in b.statements]


def verdict_differences(a: AnnotatedAnswer, b: AnnotatedAnswer) -> pd.DataFrame:
    """Every item either judge labelled on one answer, side by side: statement number and text,
    what was judged (relevance, stance, support by source [n], the answer's confidence), both
    labels ("no verdict" where a judge gave none) and whether they agree: same, differs, or one side
    only (one judge decided the item, the other did not)."""
    la, lb = _labels(a), _labels(b)
    sets = {**_source_sets(a), **_source_sets(b)}
    texts = {s.index: s.text for s in a.statements}
    keys = sorted(set(la) | set(lb), key=lambda k: (k[1] if k[1] is not None else -1, ITEM_ORDER.get(k[0], -1),
                                                    k[2] if k[2] is not None else -1))
    rows: list[dict[str, Any]] = []
    for kind, stmt, src in keys:
        sources = "+".join(str(n) for n in sets.get((stmt, src), ()))
        what = {"support": f"support by source [{src}]", "support_set": f"support by sources [{sources}] together",
                "relevance": "relevance", "stance": "stance", "confidence": "confidence of the whole answer"}[kind]
        va, vb = la.get((kind, stmt, src), "no verdict"), lb.get((kind, stmt, src), "no verdict")
        # two labels that decide nothing (not checked, no verdict, unknown) do not disagree; where only one
        # side decided, there is nothing to compare (a judge beside the people's audit of a few items)
        same = va == vb or (_undecided(va) and _undecided(vb))
        agreement = SAME if same else ONE_SIDE if _undecided(va) or _undecided(vb) else DIFFERENT
        rows.append({"statement": "" if stmt is None else f"S{stmt + 1}",
                     "text": "" if stmt is None else " ".join(texts.get(stmt, "").split()),
                     "judged": what, "judge A": va, "judge B": vb, "agreement": agreement})
    return pd.DataFrame(rows, columns=["statement", "text", "judged", "judge A", "judge B", "agreement"])
