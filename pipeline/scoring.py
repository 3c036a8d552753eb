"""Score one annotated answer into a report: metrics with ratings, statements and both matrices.

Shared by `python -m pipeline score`, the live re-score page and the answer inspector, so the
three always show the same numbers.
"""

from __future__ import annotations

from typing import Any

from pipeline.matrices import build_matrices, is_relevant, label_view
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.metrics.necessity import necessary_sources
from pipeline.records import AnnotatedAnswer


def answer_report(annotated: AnnotatedAnswer, config: ScoreConfig | None = None, judge: str = "") -> dict[str, Any]:
    """A JSON-ready report of one answer under one scoring configuration."""
    config = config or ScoreConfig()
    view = label_view(annotated)
    results = score_answer(annotated, config)
    m = build_matrices(annotated, view, config.mode)
    support_labels = [[view.support.get((row, col)) for col in m.source_indexes] for row in m.statement_indexes]
    # support verdicts whose score sits in the judge's uncertain band. The bands are declared on the
    # judge side; their module is loaded only when a support verdict carries a score, so scoring
    # labels without scores (carried, gold similarity) loads no judge module at all.
    uncertain: dict[tuple[int, int], bool] = {}
    if any(v.kind == "support" and v.score is not None for v in annotated.verdicts):
        from pipeline.judges.measure.reliability import uncertain_pairs

        uncertain = uncertain_pairs(annotated.verdicts)
    support_uncertain = [[uncertain.get((row, col), False) for col in m.source_indexes] for row in m.statement_indexes]
    method = config.necessity_in_use
    necessary = [m.source_indexes[j] for j in necessary_sources(m.support, method)] if m.support.size else []
    metrics = {}
    for name, result in results.items():
        info = METRICS[name]
        shown = info.scale(result.value)
        metrics[name] = {"value": result.value, "display": shown, "n": result.n, "reason": result.reason,
                         "rating": info.rate(shown) if info.unit == "percent" else None, "label": info.label}
    return {
        "answer_id": annotated.answer.answer_id,
        "engine": annotated.answer.engine,
        "query": annotated.answer.query,
        "query_type": annotated.answer.query_type,
        "judge": judge,
        "mode": config.mode,
        "necessity": method,
        "metrics": metrics,
        "statements": [
            {"index": s.index, "text": s.text, "start": s.start, "end": s.end, "citations": list(s.citations),
             "dangling": list(s.dangling), "relevant": is_relevant(view, s), "stance": view.stance.get(s.index)}
            for s in annotated.statements
        ],
        "sources": [{"index": s.index, "url": s.url, "title": s.title, "fetch_ok": s.fetch_ok, "text_origin": s.text_origin}
                    for s in annotated.answer.sources],
        "citation_matrix": {"rows": list(m.statement_indexes), "columns": list(m.source_indexes),
                            "values": m.citation.astype(int).tolist()},
        "support_matrix": {"rows": list(m.statement_indexes), "columns": list(m.source_indexes),
                           "values": m.support.astype(int).tolist(), "labels": support_labels,
                           "uncertain": support_uncertain},
        "uncertain_support": [{"statement": i, "source": j, "label": view.support.get((i, j)),
                               "score": view.support_score.get((i, j))}
                              for (i, j), flag in sorted(uncertain.items()) if flag and (i, j) in view.support],
        "necessary_sources": necessary,
        "confidence": view.confidence,
    }
