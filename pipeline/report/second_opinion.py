"""One answer labelled by two judges, side by side: every metric under both with the difference,
and every label on which the two judges differ.

The Re-score page's "second opinion" reads this; both halves are ordinary `answer_report`s of
the same answer under the same scoring rules, so the numbers are the ones each judge alone gives.
"""

from __future__ import annotations

from typing import Any

from pipeline.matrices import label_view, unknown_pairs
from pipeline.metrics import METRICS, ScoreConfig
from pipeline.records import SUPPORT_UNKNOWN, AnnotatedAnswer
from pipeline.report.scoring import answer_report


def _difference(first: float | None, second: float | None) -> float | None:
    if first is None or second is None or first != first or second != second:
        return None
    return float(second) - float(first)


def compare_judges(first: AnnotatedAnswer, second: AnnotatedAnswer, config: ScoreConfig | None = None,
                   judges: tuple[str, str] = ("first", "second")) -> dict[str, Any]:
    """Both reports and their differences. `first` and `second` are the same answer labelled by two
    judges (`judges` names them). Metric rows carry each value as shown (percent scaled), the
    difference second - first (None when either is not scorable, with both reasons kept) and
    `differs`; label rows cover every statement's relevance and stance and every (statement,
    source) support label either judge gave, with `differs` where the labels are not the same."""
    if first.answer.answer_id != second.answer.answer_id:
        raise ValueError("a second opinion compares the same answer under two judges")
    config = config or ScoreConfig()
    reports = (answer_report(first, config, judges[0]), answer_report(second, config, judges[1]))
    metrics = []
    for name, a in reports[0]["metrics"].items():
        b = reports[1]["metrics"].get(name)
        if b is None:
            continue
        diff = _difference(a["display"], b["display"])
        metrics.append({"id": name, "label": a["label"], "unit": METRICS[name].unit,
                        "first": a["display"], "second": b["display"], "difference": diff,
                        "first_reason": a["reason"] or "", "second_reason": b["reason"] or "",
                        "differs": (diff is not None and abs(diff) > 1e-9) or ((a["display"] is None) != (b["display"] is None))})
    views = (label_view(first), label_view(second))
    texts = {s.index: s.text for s in first.statements}
    labels: list[dict[str, Any]] = []
    for s in first.statements:
        one = "relevant" if views[0].relevant.get(s.index, True) else "filler"
        two = "relevant" if views[1].relevant.get(s.index, True) else "filler"
        labels.append({"statement": s.index, "source": None, "kind": "relevance", "first": one, "second": two,
                       "differs": one != two, "text": texts[s.index]})
        if first.answer.query_type == "debate":
            a_st, b_st = views[0].stance.get(s.index), views[1].stance.get(s.index)
            if a_st is not None or b_st is not None:
                labels.append({"statement": s.index, "source": None, "kind": "stance", "first": a_st, "second": b_st,
                               "differs": a_st != b_st, "text": texts[s.index]})
    # a pair a judge did not decide shows as "unknown" (not checked), never as a missing label
    unknown = (unknown_pairs(first, views[0]), unknown_pairs(second, views[1]))

    def pair_label(k: int, key: tuple[int, int]) -> str | None:
        return views[k].support.get(key) or (SUPPORT_UNKNOWN if key in unknown[k] else None)

    for key in sorted(set(views[0].support) | set(views[1].support)):
        a_lab, b_lab = pair_label(0, key), pair_label(1, key)
        labels.append({"statement": key[0], "source": key[1], "kind": "support", "first": a_lab, "second": b_lab,
                       "first_score": views[0].support_score.get(key), "second_score": views[1].support_score.get(key),
                       "differs": a_lab != b_lab, "text": texts.get(key[0], "")})
    return {"judges": list(judges), "reports": list(reports), "metrics": metrics, "labels": labels,
            "metrics_differing": sum(m["differs"] for m in metrics),
            "labels_differing": sum(x["differs"] for x in labels)}
