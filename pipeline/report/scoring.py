"""Score one annotated answer into a report: metrics with ratings, statements and both matrices.

Shared by `python -m pipeline score`, the live re-score page and the answer inspector, so the
three always show the same numbers.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.matrices import LabelView, build_matrices, is_relevant, label_view, unknown_pairs
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.metrics.necessity import necessary_sources
from pipeline.records import SUPPORT_UNKNOWN, AnnotatedAnswer, Statement, unchecked_cause, unchecked_text


def answer_report(annotated: AnnotatedAnswer, config: ScoreConfig | None = None, judge: str = "") -> dict[str, Any]:
    """A JSON-ready report of one answer under one scoring configuration."""
    config = config or ScoreConfig()
    view = label_view(annotated)
    results = score_answer(annotated, config)
    m = build_matrices(annotated, view, config.mode)
    # every pair that must be decided and is not, whatever the mode (parity counts them as 0 in its
    # matrices, but a reader still sees that nobody checked them)
    unknown = unknown_pairs(annotated, view)
    support_labels = [[view.support.get((row, col)) or (SUPPORT_UNKNOWN if (row, col) in unknown else None)
                       for col in m.source_indexes] for row in m.statement_indexes]
    support_reasons = [[unchecked_text(unknown[(row, col)]) if (row, col) in unknown and (row, col) not in view.support
                        else "" for col in m.source_indexes] for row in m.statement_indexes]
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
                         "rating": info.rate(shown) if info.unit == "percent" else None, "label": info.label,
                         "units": result.units, "unknown": result.unknown, "unknown_why": result.unknown_why}
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
             "dangling": list(s.dangling), "stance": view.stance.get(s.index)}
            | relevance_entry(view, s)
            | statement_status(s, view, unknown)
            for s in annotated.statements
        ],
        "sources": [{"index": s.index, "url": s.url, "title": s.title, "fetch_ok": s.fetch_ok, "text_origin": s.text_origin}
                    for s in annotated.answer.sources],
        "citation_matrix": {"rows": list(m.statement_indexes), "columns": list(m.source_indexes),
                            "values": m.citation.astype(int).tolist()},
        "support_matrix": {"rows": list(m.statement_indexes), "columns": list(m.source_indexes),
                           "values": m.support.astype(int).tolist(), "labels": support_labels,
                           "reasons": support_reasons, "uncertain": support_uncertain},
        "unchecked_support": unchecked_summary(annotated, view, unknown),
        "uncertain_support": [{"statement": i, "source": j, "label": view.support.get((i, j)),
                               "score": view.support_score.get((i, j))}
                              for (i, j), flag in sorted(uncertain.items()) if flag and (i, j) in view.support],
        "necessary_sources": necessary,
        "confidence": view.confidence,
    }


def relevance_entry(view: LabelView, statement: Statement) -> dict[str, Any]:
    """{"relevant": True/False as labelled, or None with "relevant_reason" when nobody decided it}: the
    metrics treat an undecided statement as content (`is_relevant`), but a report must not claim a
    label nobody gave."""
    decided = view.relevant.get(statement.index)
    if decided is None:
        return {"relevant": None, "relevant_reason": "no relevance label (the metrics treat it as content)"}
    return {"relevant": decided}


# What a statement's chip says about the sources it cites (the answer view, the HTML report, the CLI).
STATUSES: tuple[str, ...] = ("supported", "unsupported", "unchecked", "uncited", "filler")


def statement_status(statement: Statement, view: LabelView, unknown: dict[tuple[int, int], str]) -> dict[str, str]:
    """{"status", "status_reason"} of one statement by the sources it cites: "supported" when one
    of them fully supports it, "unchecked" when none does but one was not checked (the reason says
    why: "not checked: no text"), "unsupported" only when every cited source was judged and none
    supports it; "uncited" and "filler" otherwise."""
    if not is_relevant(view, statement):
        return {"status": "filler", "status_reason": ""}
    if not statement.citations:
        return {"status": "uncited", "status_reason": ""}
    labels = [view.support.get((statement.index, c)) for c in statement.citations]
    if "full" in labels:
        return {"status": "supported", "status_reason": ""}
    codes = Counter(unknown[(statement.index, c)] for c in statement.citations if (statement.index, c) in unknown)
    if codes:
        return {"status": "unchecked", "status_reason": unchecked_text(codes.most_common(1)[0][0])}
    return {"status": "unsupported", "status_reason": ""}


def unchecked_summary(annotated: AnnotatedAnswer, view: LabelView, unknown: dict[tuple[int, int], str]) -> dict[str, Any]:
    """How many (relevant statement, source) pairs that must be decided are not, out of how many,
    with the count per cause in words and each cited one: what the Flags panel and the CLI say."""
    cited_only = annotated.answer.meta.get("support_scope") == "cited_only"
    must = sum(1 for s in annotated.statements if is_relevant(view, s)
               for src in annotated.answer.sources if not cited_only or src.index in s.citations)
    causes: dict[str, int] = {}
    for code in unknown.values():
        causes[unchecked_cause(code)] = causes.get(unchecked_cause(code), 0) + 1
    by_statement = {s.index: s.citations for s in annotated.statements}
    cited = [{"statement": i, "source": j, "reason": unchecked_text(code)}
             for (i, j), code in sorted(unknown.items()) if j in by_statement.get(i, ())]
    return {"pairs": len(unknown), "of": must, "causes": causes, "cited": cited}
