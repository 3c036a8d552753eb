"""Liu et al. (2023) citation recall and precision, plus the source-analysis metrics.

Recall asks whether each verification-worthy statement is fully supported by the union of its own
citations; precision asks whether each citation earns its place. Both read only the three-way
support labels of cited pairs. When a judge gives no label for the union of a statement's
citations, the union counts as fully supporting when any single citation does (a lower bound).
"""

from __future__ import annotations

from pipeline.metrics.context import ScoringContext
from pipeline.metrics.registry import metric
from pipeline.records import MetricResult
from pipeline.sources import dead_sources, duplicate_pairs


def _worthy(ctx: ScoringContext):
    return [s for s in ctx.relevant_statements if ctx.view.worthy.get(s.index, True)]


def _union_full(ctx: ScoringContext, statement) -> bool:
    union = ctx.view.union_support.get(statement.index)
    if union is not None:
        return union == "full"
    return any(ctx.view.support.get((statement.index, c)) == "full" for c in statement.citations)


@metric(label="Citation recall", group="liu", direction="higher_is_better",
        formula="worthy statements fully supported by their own citations / worthy statements",
        reference_column="citation_recall")
def citation_recall(ctx: ScoringContext) -> MetricResult:
    """Share of verification-worthy statements fully supported by the sources they cite."""
    worthy = _worthy(ctx)
    if not worthy:
        return MetricResult(None, 0, "no verification-worthy statements")
    if not ctx.has_support_labels and any(s.citations for s in worthy):
        return MetricResult(None, 0, "no support labels")
    supported = sum(1 for s in worthy if s.citations and _union_full(ctx, s))
    return MetricResult(supported / len(worthy), len(worthy))


@metric(label="Citation precision", group="liu", direction="higher_is_better",
        formula="(fully supporting citations + partial ones that complete a union) / citations",
        reference_column="citation_precision")
def citation_precision(ctx: ScoringContext) -> MetricResult:
    """Share of citations that support their statement, alone or as a needed part of a union."""
    total = 0
    good = 0
    for s in ctx.relevant_statements:
        labels = [ctx.view.support.get((s.index, c)) for c in s.citations]
        total += len(labels)
        full = labels.count("full")
        good += full
        if full == 0 and _union_full(ctx, s):
            good += labels.count("partial")
    if total == 0:
        return MetricResult(None, 0, "no citations")
    if not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels")
    return MetricResult(good / total, total)


@metric(label="Citation F1", group="liu", direction="higher_is_better",
        formula="harmonic mean of citation precision and recall (corpus: of the two means)",
        reference_column="citation_f1", harmonic_of=("citation_precision", "citation_recall"))
def citation_f1(ctx: ScoringContext) -> MetricResult:
    """Harmonic mean of citation precision and recall."""
    p, r = citation_precision(ctx).value, citation_recall(ctx).value
    if p is None or r is None:
        return MetricResult(None, 0, "precision or recall undefined")
    return MetricResult(0.0 if p + r == 0 else 2 * p * r / (p + r), 1)


@metric(label="Duplicate sources", group="source analysis", direction="lower_is_better",
        formula="listed sources whose text or URL near-duplicates an earlier source / listed sources")
def duplicate_sources(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources that repeat the content of another listed source."""
    sources = ctx.answer.sources
    if not sources:
        return MetricResult(None, 0, "no listed sources")
    repeated = {b for _, b, _ in duplicate_pairs(sources)}
    return MetricResult(len(repeated) / len(sources), len(sources))


@metric(label="Dead sources", group="source analysis", direction="lower_is_better",
        formula="listed sources whose fetch failed / listed sources")
def dead_source_share(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources that could not be fetched."""
    sources = ctx.answer.sources
    if not sources:
        return MetricResult(None, 0, "no listed sources")
    return MetricResult(len(dead_sources(sources)) / len(sources), len(sources))


@metric(label="Dangling citations", group="source analysis", direction="lower_is_better",
        unit="count", formula="citations pointing to an index with no listed source")
def dangling_citations(ctx: ScoringContext) -> MetricResult:
    """Number of citation markers that point to a source the answer does not list."""
    return MetricResult(float(ctx.dangling_count), len(ctx.annotated.statements))
