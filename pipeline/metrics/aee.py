"""The eight AEE metrics and the scorecard's basic statistics, as pure functions of a context.

Each function returns a MetricResult for one answer; value None means the metric is not defined
for that answer (the reason says why). Corpus values are macro means computed in aggregate.py.
"""

from __future__ import annotations

from pipeline.metrics.context import CITED_ONLY_REASON, ScoringContext
from pipeline.metrics.necessity import necessary_sources, solve_cover
from pipeline.metrics.registry import higher_bands, lower_bands, metric
from pipeline.records import MetricResult

NOT_DEBATE = "defined for debate queries only"
# A judge may answer `unknown` for a statement's stance. When more than this share of the relevant
# statements that carry a stance label are unknown, the stance metrics are null for the answer
# (a rating built on guesses would mislead); below it, unknown statements are left out.
MAX_UNKNOWN_STANCE = 1 / 3


def _known_stances(ctx: ScoringContext) -> tuple[list[str], int, str]:
    """(stance labels of the relevant statements other than unknown, how many were unknown, reason
    for null or ""). Statements without any stance label are left out as before."""
    labels = [ctx.view.stance.get(s.index) for s in ctx.relevant_statements]
    labelled = [x for x in labels if x is not None]
    unknown = labelled.count("unknown")
    if labelled and unknown / len(labelled) > MAX_UNKNOWN_STANCE:
        return [], unknown, (f"stance unknown for {unknown} of {len(labelled)} relevant statements "
                             f"(more than {MAX_UNKNOWN_STANCE:.0%}): the judge could not tell their side")
    return [x for x in labelled if x != "unknown"], unknown, ""


def _unknown_note(unknown: int) -> str:
    return f"{unknown} statement(s) with unknown stance left out" if unknown else ""


def _skip(ctx: ScoringContext) -> MetricResult | None:
    return MetricResult(None, 0, ctx.parity_skip) if ctx.parity_skip else None


# ---- basic statistics -------------------------------------------------------------------------


@metric(label="Sources", group="basic", direction="neutral", unit="count",
        formula="number of listed sources (paper-parity: fetched sources only)",
        reference_column="avg_sources")
def n_sources(ctx: ScoringContext) -> MetricResult:
    """Number of sources the answer lists."""
    if skipped := _skip(ctx):
        return skipped
    count = len(ctx.matrices.source_indexes)
    return MetricResult(float(count), count)


@metric(label="Statements", group="basic", direction="neutral", unit="count",
        formula="number of relevant statements", reference_column="avg_statements")
def n_statements(ctx: ScoringContext) -> MetricResult:
    """Number of relevant (non-filler) statements in the answer."""
    if skipped := _skip(ctx):
        return skipped
    count = len(ctx.relevant_statements)
    return MetricResult(float(count), count)


@metric(label="Citations / statement", group="basic", direction="neutral", unit="ratio",
        formula="sum(C) / relevant statements", reference_column="citations_per_statement")
def citations_per_statement(ctx: ScoringContext) -> MetricResult:
    """Average number of citations carried by a relevant statement."""
    if skipped := _skip(ctx):
        return skipped
    rows = len(ctx.relevant_statements)
    if rows == 0:
        return MetricResult(None, 0, "no relevant statements")
    return MetricResult(float(ctx.matrices.citation.sum()) / rows, rows)


@metric(label="Statement agreement", group="basic", direction="neutral", debate_only=True, version=2,
        formula="agree / (agree + disagree) over relevant statements (unknown stance left out; "
                "null when more than a third are unknown)",
        reference_column="pct_statement_agreement", max_unknown_share=MAX_UNKNOWN_STANCE)
def statement_agreement(ctx: ScoringContext) -> MetricResult:
    """Share of the answer's opinionated statements that side with the query's wording.

    Statements whose stance the judge marked `unknown` are left out of both counts; when they are
    more than MAX_UNKNOWN_STANCE of the labelled relevant statements the value is null with the reason.
    """
    if not ctx.is_debate:
        return MetricResult(None, 0, NOT_DEBATE)
    if skipped := _skip(ctx):
        return skipped
    stances, unknown, too_uncertain = _known_stances(ctx)
    if too_uncertain:
        return MetricResult(None, 0, too_uncertain)
    agree, disagree = stances.count("agree"), stances.count("disagree")
    if agree + disagree == 0:
        return MetricResult(None, 0, "no agree or disagree statement")
    return MetricResult(agree / (agree + disagree), agree + disagree, _unknown_note(unknown))


@metric(label="Confidence", group="basic", direction="neutral", unit="likert",
        formula="answer confidence on the 1..5 scale", reference_column="avg_confidence")
def confidence(ctx: ScoringContext) -> MetricResult:
    """How confident the answer's language sounds (1 strongly not confident .. 5 strongly confident)."""
    if ctx.view.confidence is None:
        return MetricResult(None, 0, "no confidence label")
    return MetricResult(float(ctx.view.confidence), 1)


# ---- answer text ------------------------------------------------------------------------------


@metric(label="One-sided answer", group="answer text", direction="lower_is_better", debate_only=True, version=2,
        formula="1 if relevant statements lack either an agree or a disagree statement, else 0 "
                "(unknown stance left out; null when more than a third are unknown)",
        bands=lower_bands(20, 40), finding="A.II", recommendation="Provide balanced answers",
        reference_column="pct_one_sided", max_unknown_share=MAX_UNKNOWN_STANCE)
def one_sided(ctx: ScoringContext) -> MetricResult:
    """Whether a debate answer presents only one side of the question.

    Statements whose stance the judge marked `unknown` are left out (the answer is two-sided when
    the known labels hold both an agree and a disagree); when they are more than MAX_UNKNOWN_STANCE
    of the labelled relevant statements the value is null with the reason, never a guess.
    """
    if not ctx.is_debate:
        return MetricResult(None, 0, NOT_DEBATE)
    if skipped := _skip(ctx):
        return skipped
    relevant = ctx.relevant_statements
    if not relevant:
        return MetricResult(None, 0, "no relevant statements")
    if all(ctx.view.stance.get(s.index) is None for s in relevant):
        return MetricResult(None, 0, "no stance labels")
    stances, unknown, too_uncertain = _known_stances(ctx)
    if too_uncertain:
        return MetricResult(None, 0, too_uncertain)
    both = "agree" in stances and "disagree" in stances
    return MetricResult(0.0 if both else 1.0, len(relevant) - unknown, _unknown_note(unknown))


@metric(label="Overconfident answer", group="answer text", direction="lower_is_better", version=2,
        debate_only=True, formula="1 if one-sided = 1 and confidence = 5, else 0 (null when one-sided is)",
        max_unknown_share=MAX_UNKNOWN_STANCE,
        bands=lower_bands(20, 40), finding="A.III",
        recommendation="Provide objective detail to claims", reference_column="pct_overconfident")
def overconfident(ctx: ScoringContext) -> MetricResult:
    """Whether a debate answer is one-sided and also strongly confident."""
    sided = one_sided(ctx)
    if sided.value is None:
        return MetricResult(None, 0, sided.reason)
    if ctx.view.confidence is None:
        return MetricResult(None, 0, "no confidence label")
    return MetricResult(1.0 if sided.value == 1.0 and ctx.view.confidence == 5 else 0.0, 1)


@metric(label="Relevant statements", group="answer text", direction="higher_is_better",
        formula="relevant statements / all statements", bands=higher_bands(90, 70),
        finding="A.IV", recommendation="Minimize fluff information",
        reference_column="pct_relevant_statements")
def relevant_statements(ctx: ScoringContext) -> MetricResult:
    """Share of the answer's statements that carry answer content rather than filler."""
    if skipped := _skip(ctx):
        return skipped
    total = len(ctx.annotated.statements)
    if total == 0:
        return MetricResult(None, 0, "no statements")
    return MetricResult(len(ctx.relevant_statements) / total, total)


# ---- sources ----------------------------------------------------------------------------------


@metric(label="Uncited sources", group="sources", direction="lower_is_better",
        formula="listed sources never cited in the answer / listed sources",
        bands=lower_bands(5, 10), finding="S.II", recommendation="Listed and cited sources match",
        reference_column="pct_uncited_sources")
def uncited_sources(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources that no citation in the answer points to."""
    if skipped := _skip(ctx):
        return skipped
    cited = set(ctx.cited_anywhere)
    listed = [s.index for s in ctx.answer.sources]
    if ctx.mode == "parity":
        # The notebook counts slots 1..m, m the highest listed or cited index, with no fetch filter.
        m = max([*listed, *cited, 0])
        if m == 0:
            return MetricResult(None, 0, "no listed sources")
        return MetricResult(sum(1 for k in range(1, m + 1) if k not in cited) / m, m)
    if not listed:
        return MetricResult(None, 0, "no listed sources")
    return MetricResult(sum(1 for k in listed if k not in cited) / len(listed), len(listed))


@metric(label="Unsupported statements", group="sources", direction="lower_is_better",
        formula="relevant statements with an all-zero row in F / relevant statements",
        bands=lower_bands(10, 25), finding="C.III", recommendation="Avoid unsupported citations",
        reference_column="pct_unsupported_statements")
def unsupported_statements(ctx: ScoringContext) -> MetricResult:
    """Share of relevant statements that no listed source fully supports."""
    if skipped := _skip(ctx):
        return skipped
    rows = len(ctx.relevant_statements)
    if rows == 0:
        return MetricResult(None, 0, "no relevant statements")
    if not ctx.has_support_labels and not ctx.support_scope_cited_only:
        return MetricResult(None, 0, "no support labels")
    unsupported = int((~ctx.matrices.support.any(axis=1)).sum()) if ctx.matrices.support.size else rows
    note = "support known for cited pairs only: a lower bound on support" if ctx.support_scope_cited_only else ""
    return MetricResult(unsupported / rows, rows, note)


@metric(label="Source necessity", group="sources", direction="higher_is_better",
        formula="size of a minimum source set supporting every supported statement / listed sources",
        bands=higher_bands(80, 60), finding="C.IV, S.IV",
        recommendation="Cite all relevant sources; present only necessary sources",
        reference_column="pct_source_necessity")
def source_necessity(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources needed to support everything the sources support."""
    if skipped := _skip(ctx):
        return skipped
    columns = len(ctx.matrices.source_indexes)
    if columns == 0:
        return MetricResult(None, 0, "no listed sources")
    if ctx.support_scope_cited_only:
        return MetricResult(None, 0, CITED_ONLY_REASON)
    if not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels")
    # Parity reproduces the notebook's greedy cover whatever variant is asked for.
    method = ctx.config.necessity_in_use
    if method == "exact":
        cover = solve_cover(ctx.matrices.support)
        note = "method=exact" if cover.proven_optimal else (
            f"method=exact, optimum not proven within the time limit (lower bound {cover.lower_bound} sources)")
        return MetricResult(len(cover.columns) / columns, columns, note)
    chosen = necessary_sources(ctx.matrices.support, method)
    return MetricResult(len(chosen) / columns, columns, f"method={method}")


# ---- citation ---------------------------------------------------------------------------------


@metric(label="Citation accuracy", group="citation", direction="higher_is_better",
        formula="sum(C * F) / sum(C)", bands=higher_bands(90, 50), finding="C.I",
        recommendation="Double-check for misattributions", reference_column="pct_citation_accuracy")
def citation_accuracy(ctx: ScoringContext) -> MetricResult:
    """Share of citations whose source fully supports the citing statement."""
    if skipped := _skip(ctx):
        return skipped
    cited = int(ctx.matrices.citation.sum())
    if cited == 0:
        if ctx.mode == "parity":
            return MetricResult(1.0, 0, "paper-parity scores an answer with no citations as 1.0")
        return MetricResult(None, 0, "no citations")
    if ctx.mode == "strict" and not ctx.has_support_labels:
        # no source had text to judge (an engine response without snippets, nothing fetched):
        # unknown, not inaccurate
        return MetricResult(None, 0, "no support labels")
    accurate = int((ctx.matrices.citation & ctx.matrices.support).sum())
    return MetricResult(accurate / cited, cited)


@metric(label="Citation thoroughness", group="citation", direction="higher_is_better",
        formula="sum(C * F) / sum(F)", bands=higher_bands(50, 20), finding="S.III",
        recommendation="Give importance to expert sources",
        reference_column="pct_citation_thoroughness")
def citation_thoroughness(ctx: ScoringContext) -> MetricResult:
    """Share of all (statement, source) support links that the answer actually cites."""
    if skipped := _skip(ctx):
        return skipped
    if ctx.support_scope_cited_only:
        return MetricResult(None, 0, CITED_ONLY_REASON)
    if not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels")
    supported = int(ctx.matrices.support.sum())
    accurate = int((ctx.matrices.citation & ctx.matrices.support).sum())
    if ctx.mode == "parity":
        # The notebook divides by sum(F) + 1e-6, so "nothing supported" scores 0.
        return MetricResult(accurate / (supported + 1e-6), supported)
    if supported == 0:
        return MetricResult(None, 0, "no statement is supported by any source")
    return MetricResult(accurate / supported, supported)
