"""Liu et al. (2023) citation recall and precision, plus the source-analysis metrics.

Recall asks whether each verification-worthy statement is fully supported by the union of its own
citations; precision asks whether each citation earns its place. Both read only the three-way
support labels of cited pairs. When a judge gives no label for the union of a statement's
citations, the union counts as fully supporting when any single citation does (a lower bound).
A cited pair left unknown (its source has no text, the judge could not tell) decides nothing: a
statement or citation whose outcome it could change is left out, and the metric is null when
those are more than MAX_UNKNOWN_SHARE of its units.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.metrics.attribution_view import Outcome
from pipeline.metrics.context import ScoringContext
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, decided_mean, metric
from pipeline.records import MetricResult, Statement
from pipeline.sources import dead_sources, duplicate_pairs


def _worthy(ctx: ScoringContext) -> list[Statement]:
    return [s for s in ctx.relevant_statements if ctx.view.worthy.get(s.index, True)]


def _cited_labels(ctx: ScoringContext, statement: Statement) -> list[str | None]:
    """The decided support label of each of the statement's citations, None where it is unknown."""
    return [ctx.view.support.get((statement.index, c)) for c in statement.citations]


def _union_full(ctx: ScoringContext, statement: Statement) -> Outcome:
    """Do the statement's citations together fully support it? A decided union verdict says; without
    one, yes when a single citation does, no when every citation is decided and none does (the lower
    bound above), and unknown when a citation nobody decided could still."""
    union = ctx.view.union_support.get(statement.index)
    if union is not None:
        return union == "full"
    labels = _cited_labels(ctx, statement)
    if "full" in labels:
        return True
    return None if None in labels else False


def _unknown_cited(ctx: ScoringContext, statements: list[Statement]) -> list[tuple[int, int]]:
    return [(s.index, c) for s in statements for c in s.citations if (s.index, c) not in ctx.view.support]


@metric(label="Citation recall", group="liu", direction="higher_is_better", version=2,
        formula="worthy statements fully supported by their own citations / worthy statements "
                "(statements whose citations are not judged left out; null when more than half)",
        reference_column="citation_recall", max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="worthy statements", pool_unit="worthy statement")
def citation_recall(ctx: ScoringContext) -> MetricResult:
    """Share of verification-worthy statements fully supported by the sources they cite."""
    worthy = _worthy(ctx)
    outcomes = [_union_full(ctx, s) if s.citations else False for s in worthy]
    undecided = [s for s, o in zip(worthy, outcomes) if o is None]
    result = decided_mean(outcomes, "worthy statements", "no verification-worthy statements",
                          ctx.cause(_unknown_cited(ctx, undecided)))
    decided = [s for s, o in zip(worthy, outcomes) if o is not None]
    if result.value is None and decided:
        # "only 2 of 8 judged" with no source text at all puzzles a reader: name the two and why they count
        result = replace(result, reason=f"{result.reason}: {_which_decided(decided)}")
    return result


def _which_decided(decided: list[Statement]) -> str:
    """Which statements a null recall did decide, and on what ground, in words."""
    uncited = [s for s in decided if not s.citations]
    judged = [s for s in decided if s.citations]
    parts = []
    if uncited:
        parts.append(f"{_numbers(uncited)} cite{'s' if len(uncited) == 1 else ''} no source, which counts as not "
                     "supported without reading any")
    if judged:
        parts.append(f"{_numbers(judged)} had {'its' if len(judged) == 1 else 'their'} citations judged")
    return "; ".join(parts)


def _numbers(statements: list[Statement], limit: int = 8) -> str:
    """"statement 3", "statements 3 and 7", "statements 1, 2, 4 and 2 more" (numbered from 1, as shown)."""
    nums = [str(s.index + 1) for s in statements]
    if len(nums) == 1:
        return f"statement {nums[0]}"
    if len(nums) > limit:
        return f"statements {', '.join(nums[:limit])} and {len(nums) - limit} more"
    return f"statements {', '.join(nums[:-1])} and {nums[-1]}"


def _citation_good(label: str | None, labels: list[str | None], union: Outcome) -> Outcome:
    """Does one citation earn its place: it fully supports its statement, or it supports it in part
    and completes a union that fully supports it while no single citation does?"""
    if label == "full":
        return True
    if label == "none":
        return False
    if label is None:
        return None
    if "full" in labels or union is False:  # a partial one counts only where no single one is full
        return False
    return None if union is None or None in labels else True


@metric(label="Citation precision", group="liu", direction="higher_is_better", version=2,
        formula="(fully supporting citations + partial ones that complete a union) / citations "
                "(undecided citations left out; null when more than half)",
        reference_column="citation_precision", max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="citations", pool_unit="citation")
def citation_precision(ctx: ScoringContext) -> MetricResult:
    """Share of citations that support their statement, alone or as a needed part of a union."""
    outcomes: list[Outcome] = []
    for s in ctx.relevant_statements:
        labels = _cited_labels(ctx, s)
        union = _union_full(ctx, s) if s.citations else False
        outcomes += [_citation_good(label, labels, union) for label in labels]
    return decided_mean(outcomes, "citations", "no citations", ctx.cause(_unknown_cited(ctx, ctx.relevant_statements)))


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
        formula="listed sources whose text or URL near-duplicates an earlier source / listed sources", pool_unit="source")
def duplicate_sources(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources that repeat the content of another listed source."""
    sources = ctx.answer.sources
    if not sources:
        return MetricResult(None, 0, "no listed sources")
    repeated = {b for _, b, _ in duplicate_pairs(sources)}
    return MetricResult(len(repeated) / len(sources), len(sources))


@metric(label="Dead sources", group="source analysis", direction="lower_is_better",
        formula="listed sources whose fetch failed / listed sources", pool_unit="source")
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
