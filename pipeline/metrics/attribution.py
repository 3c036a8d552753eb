"""Attribution metrics of attributed information seeking (Djeddal et al., 2024, section 2.5):
AutoAIS over citations and over all sources, ALCE's NLI citation recall and precision, and
citation overlap with a gold answer.

A support label "full" plays the part of the entailment decision of an NLI model (1); "partial" and
"none" are 0. Every metric is a pure function of the answer's verdicts, read through
`AttributionView` (which says when a pair or a set is unknown). A unit (statement or citation)
whose outcome depends on an unknown is left out of the mean; a metric with more than
MAX_UNKNOWN_SHARE of its units unknown is null, with the reason and the judged share (the one
threshold of the metric registry).

Statements the judge marked as filler are left out of every metric, as everywhere in this toolkit
(the paper scores every sentence); the remaining ones are called "statements" below.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.gold.gold import cited_keys, preferred_gold
from pipeline.matrices import is_relevant, label_view
from pipeline.metrics.attribution_view import AttributionView, Outcome, any_supports
from pipeline.metrics.context import CITED_ONLY_REASON, ScoringContext
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, decided_mean, metric
from pipeline.records import AnnotatedAnswer, MetricResult, Statement

__all__ = ["StatementAttribution", "statement_attribution", "MAX_UNKNOWN_SHARE"]

NO_GOLD = "no gold answer for this query"


def _mean(ctx: ScoringContext, outcomes: list[Outcome], unit: str, empty_reason: str) -> MetricResult:
    """Mean of the decided outcomes (`registry.decided_mean`), with the answer's commonest cause of
    unknown pairs as the reason some are undecided."""
    return decided_mean(outcomes, unit, empty_reason, ctx.cause() if None in outcomes else "")


def _statements(ctx: ScoringContext) -> list[Statement]:
    return ctx.relevant_statements


# ---- per statement (also shown by the answer inspector) ----------------------------------------


@dataclass(frozen=True)
class StatementAttribution:
    """What the attribution metrics decided for one statement (None = unknown or not applicable)."""

    statement_index: int
    relevant: bool
    autoais: Outcome  # some cited source supports it alone (None also when it cites nothing)
    autoais_passages: Outcome  # some listed source supports it alone
    citations_support: Outcome  # its citations together support it (NLI citation recall)
    irrelevant_citations: tuple[int, ...]  # citations NLI citation precision counts as irrelevant
    undecided_citations: tuple[int, ...]  # citations whose relevance depends on an unknown


def _citation_relevance(view: AttributionView, statement: Statement) -> tuple[list[int], list[int], list[int]]:
    """(relevant, irrelevant, unknown) citations of a statement, by ALCE's rule: when the citations
    together do not support the statement, none of them is relevant; when they do, a citation is
    irrelevant if it does not support the statement alone while the others, without it, still do."""
    cited = list(statement.citations)
    joint = view.by_citations(statement)
    if joint is None:
        return [], [], cited
    if not joint:
        return [], cited, []
    if len(cited) == 1:
        return cited, [], []
    relevant: list[int] = []
    irrelevant: list[int] = []
    unknown: list[int] = []
    for c in cited:
        alone = view.by_source(statement.index, c)
        if alone:
            relevant.append(c)
            continue
        if alone is None:
            unknown.append(c)
            continue
        rest = view.by_set(statement.index, [i for i in cited if i != c])
        (irrelevant if rest else relevant if rest is False else unknown).append(c)
    return relevant, irrelevant, unknown


def statement_attribution(annotated: AnnotatedAnswer) -> list[StatementAttribution]:
    """Per-statement decisions behind the attribution metrics, in statement order."""
    view = AttributionView(annotated)
    labels = label_view(annotated)
    listed = [s.index for s in annotated.answer.sources]
    out = []
    for s in annotated.statements:
        _, irrelevant, unknown = _citation_relevance(view, s) if s.citations else ([], [], [])
        out.append(StatementAttribution(
            statement_index=s.index, relevant=is_relevant(labels, s),
            autoais=any_supports(view.by_source(s.index, c) for c in s.citations) if s.citations else None,
            autoais_passages=any_supports(view.by_source(s.index, i) for i in listed) if listed else None,
            citations_support=view.by_citations(s) if s.citations else False,
            irrelevant_citations=tuple(irrelevant), undecided_citations=tuple(unknown)))
    return out


# ---- metrics -----------------------------------------------------------------------------------


@metric(label="AutoAIS (citations)", group="attribution", direction="higher_is_better", version=2,
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="cited statements",
        formula="statements with a citation that supports them alone / statements with citations",
        reference_column="autoais_cit", pool_unit="cited statement")
def autoais_citations(ctx: ScoringContext) -> MetricResult:
    """Share of cited statements that at least one of their own citations supports on its own."""
    view = ctx.attribution
    cited = [s for s in _statements(ctx) if s.citations]
    outcomes = [any_supports(view.by_source(s.index, c) for c in s.citations) for s in cited]
    return _mean(ctx, outcomes, "cited statements", "no statement cites a source")


@metric(label="AutoAIS (passages)", group="attribution", direction="higher_is_better", version=2,
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="statements",
        formula="statements supported alone by some listed source, cited or not / statements",
        reference_column="autoais_pssg", pool_unit="statement")
def autoais_passages(ctx: ScoringContext) -> MetricResult:
    """Share of statements that some source the answer lists supports on its own, cited or not."""
    statements = _statements(ctx)
    listed = [s.index for s in ctx.answer.sources]
    if not listed:
        return MetricResult(None, 0, "no listed sources")
    if ctx.support_scope_cited_only:
        return MetricResult(None, 0, CITED_ONLY_REASON)
    view = ctx.attribution
    outcomes = [any_supports(view.by_source(s.index, i) for i in listed) for s in statements]
    return _mean(ctx, outcomes, "statements", "no relevant statements")


@metric(label="NLI citation recall", group="attribution", direction="higher_is_better", version=2,
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="statements",
        formula="statements its citations support taken together / statements (uncited ones count 0)",
        reference_column="nli_recall", pool_unit="statement")
def nli_citation_recall(ctx: ScoringContext) -> MetricResult:
    """Share of statements that their citations, read together, fully support (ALCE's citation recall)."""
    view = ctx.attribution
    outcomes = [view.by_citations(s) if s.citations else False for s in _statements(ctx)]
    return _mean(ctx, outcomes, "statements", "no relevant statements")


@metric(label="NLI citation precision", group="attribution", direction="higher_is_better", version=2,
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="citations",
        formula="citations not irrelevant / citations; irrelevant = the statement's citations do not support it "
                "together, or this one does not support it alone while the others still do",
        reference_column="nli_precision", pool_unit="citation")
def nli_citation_precision(ctx: ScoringContext) -> MetricResult:
    """Share of citations that earn their place (ALCE's citation precision)."""
    view = ctx.attribution
    outcomes: list[Outcome] = []
    for s in _statements(ctx):
        if not s.citations:
            continue
        relevant, irrelevant, unknown = _citation_relevance(view, s)
        outcomes += [True] * len(relevant) + [False] * len(irrelevant) + [None] * len(unknown)
    return _mean(ctx, outcomes, "citations", "no citations")


def _overlap(ctx: ScoringContext, direction: str) -> MetricResult:
    gold = preferred_gold(ctx.answer.gold)
    if gold is None:
        return MetricResult(None, 0, NO_GOLD)
    generated, reference = set(cited_keys(ctx.answer)), set(gold.cited)
    if direction == "precision":
        if not generated:
            return MetricResult(None, 0, "the answer cites no source")
        return MetricResult(len(generated & reference) / len(generated), len(generated))
    if not reference:
        return MetricResult(None, 0, "the gold answer cites no source")
    return MetricResult(len(generated & reference) / len(reference), len(reference))


@metric(label="Citation overlap precision", group="attribution", direction="higher_is_better",
        formula="|sources cited by both the answer and the gold answer| / |sources the answer cites|",
        reference_column="overlap_precision", pool_unit="citation")
def citation_overlap_precision(ctx: ScoringContext) -> MetricResult:
    """Share of the sources the answer cites that the gold answer for the query also cites."""
    return _overlap(ctx, "precision")


@metric(label="Citation overlap recall", group="attribution", direction="higher_is_better",
        formula="|sources cited by both the answer and the gold answer| / |sources the gold answer cites|",
        reference_column="overlap_recall", pool_unit="gold citation")
def citation_overlap_recall(ctx: ScoringContext) -> MetricResult:
    """Share of the sources the gold answer cites that the answer cites too."""
    return _overlap(ctx, "recall")
