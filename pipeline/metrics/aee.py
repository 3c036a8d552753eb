"""The eight AEE metrics and the scorecard's basic statistics, as pure functions of a context.

Each function returns a MetricResult for one answer; value None means the metric is not defined
for that answer (the reason says why). Corpus values are macro means computed in aggregate.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from pipeline.metrics.context import CITED_ONLY_REASON, ScoringContext
from pipeline.metrics.necessity import necessary_sources, solve_cover
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, decided_mean, higher_bands, judged_share_text, lower_bands, metric
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
                             f"(more than {MAX_UNKNOWN_STANCE:.0%}): their side was not decided (the judge could not tell, or nobody audited them)")
    return [x for x in labelled if x != "unknown"], unknown, ""


def _unknown_note(unknown: int) -> str:
    return f"{unknown} statement(s) with unknown stance left out" if unknown else ""


UNKNOWN_STANCE_CAUSE = "statements whose stance the judge could not tell"


def _stance_counts(ctx: ScoringContext) -> dict[str, Any]:
    """units / unknown / unknown_why of a stance metric (over the relevant statements with a stance label)."""
    labels = [ctx.view.stance.get(s.index) for s in ctx.relevant_statements]
    labelled = [x for x in labels if x is not None]
    unknown = labelled.count("unknown")
    return {"units": len(labelled), "unknown": unknown, "unknown_why": UNKNOWN_STANCE_CAUSE if unknown else ""}


def _skip(ctx: ScoringContext) -> MetricResult | None:
    return MetricResult(None, 0, ctx.parity_skip) if ctx.parity_skip else None


RELEVANCE_UNKNOWN_CAUSE = "statements whose relevance nobody decided"


def relevance_undecided(ctx: ScoringContext) -> set[int]:
    """Statements whose relevance no verdict decided: the judge said `unknown`, or nothing was said
    at all (labels that come with the data may cover some statements only, or none: an imported
    answer without labels must not read as 100% relevant)."""
    view = ctx.view
    return {s.index for s in ctx.annotated.statements if s.index in view.relevance_unknown or s.index not in view.relevant}


def _relevance_counts(ctx: ScoringContext) -> tuple[int, int, MetricResult | None]:
    """(statements, statements of undecided relevance, a null result when those are more than
    MAX_UNKNOWN_SHARE of them) for the metrics that count relevant statements. A relevance verdict
    `unknown` (people's audit labels cover a sample only) decides nothing; below the limit such a
    statement counts as content, as it does for the support metrics."""
    total = len(ctx.annotated.statements)
    unknown = len(relevance_undecided(ctx))
    if total and unknown > MAX_UNKNOWN_SHARE * total:
        return total, unknown, MetricResult(
            None, total - unknown, f"{judged_share_text(total - unknown, total, 'statements')} for relevance "
                                   f"({RELEVANCE_UNKNOWN_CAUSE})", units=total, unknown=unknown,
            unknown_why=RELEVANCE_UNKNOWN_CAUSE)
    return total, unknown, None


def _counted(value: float | None, n: int, total: int, unknown: int, reason: str = "") -> MetricResult:
    """A count metric's result with its relevance counts and, when some relevance is undecided, the note."""
    note = f"{unknown} statement(s) of undecided relevance counted as content" if unknown else ""
    return MetricResult(value, n, "; ".join(x for x in (reason, note) if x), units=total, unknown=unknown,
                        unknown_why=RELEVANCE_UNKNOWN_CAUSE if unknown else "")


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


@metric(label="Statements", group="basic", direction="neutral", unit="count", version=3,
        formula="number of relevant statements (null when the relevance of more than half is undecided)",
        reference_column="avg_statements", max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="statements")
def n_statements(ctx: ScoringContext) -> MetricResult:
    """Number of relevant (non-filler) statements in the answer."""
    if skipped := _skip(ctx):
        return skipped
    total, unknown, undecided = _relevance_counts(ctx)
    if undecided is not None:
        return undecided
    count = len(ctx.relevant_statements)
    # the answer shows every statement (S1..Sn); say why this count is smaller (issue 32)
    filler = len(ctx.annotated.statements) - count
    why = f"claims only: {filler} of {len(ctx.annotated.statements)} statements are filler" if filler > 0 else ""
    return _counted(float(count), count, total, unknown, why)


@metric(label="Citations / statement", group="basic", direction="neutral", unit="ratio", version=3,
        formula="sum(C) / relevant statements (null when the relevance of more than half is undecided)",
        reference_column="citations_per_statement", max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="statements", pool_unit="statement")
def citations_per_statement(ctx: ScoringContext) -> MetricResult:
    """Average number of citations carried by a relevant statement."""
    if skipped := _skip(ctx):
        return skipped
    total, unknown, undecided = _relevance_counts(ctx)
    if undecided is not None:
        return undecided
    rows = len(ctx.relevant_statements)
    if rows == 0:
        return _counted(None, 0, total, unknown, "no relevant statements")
    return _counted(float(ctx.matrices.citation.sum()) / rows, rows, total, unknown)


@metric(label="Statement agreement", group="basic", direction="neutral", debate_only=True, version=2,
        formula="agree / (agree + disagree) over relevant statements (unknown stance left out; "
                "null when more than a third are unknown)",
        reference_column="pct_statement_agreement", max_unknown_share=MAX_UNKNOWN_STANCE,
        unknown_unit="statements with a stance label", pool_unit="stance statement")
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
        return MetricResult(None, 0, too_uncertain, **_stance_counts(ctx))
    agree, disagree = stances.count("agree"), stances.count("disagree")
    if agree + disagree == 0:
        return MetricResult(None, 0, "no agree or disagree statement", **_stance_counts(ctx))
    return MetricResult(agree / (agree + disagree), agree + disagree, _unknown_note(unknown), **_stance_counts(ctx))


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
        reference_column="pct_one_sided", max_unknown_share=MAX_UNKNOWN_STANCE,
        unknown_unit="statements with a stance label")
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
        return MetricResult(None, 0, too_uncertain, **_stance_counts(ctx))
    both = "agree" in stances and "disagree" in stances
    return MetricResult(0.0 if both else 1.0, len(relevant) - unknown, _unknown_note(unknown), **_stance_counts(ctx))


@metric(label="Overconfident answer", group="answer text", direction="lower_is_better", version=2,
        debate_only=True, formula="1 if one-sided = 1 and confidence = 5, else 0 (null when one-sided is)",
        max_unknown_share=MAX_UNKNOWN_STANCE, unknown_unit="statements with a stance label",
        bands=lower_bands(20, 40), finding="A.III",
        recommendation="Provide objective detail to claims", reference_column="pct_overconfident")
def overconfident(ctx: ScoringContext) -> MetricResult:
    """Whether a debate answer is one-sided and also strongly confident."""
    sided = one_sided(ctx)
    if sided.value is None:
        return MetricResult(None, 0, sided.reason, units=sided.units, unknown=sided.unknown, unknown_why=sided.unknown_why)
    if ctx.view.confidence is None:
        return MetricResult(None, 0, "no confidence label")
    return MetricResult(1.0 if sided.value == 1.0 and ctx.view.confidence == 5 else 0.0, 1,
                        units=sided.units, unknown=sided.unknown, unknown_why=sided.unknown_why)


@metric(label="Relevant statements", group="answer text", direction="higher_is_better", version=3,
        formula="relevant statements / statements whose relevance is decided (undecided ones left out; null "
                "when more than half are undecided)", bands=higher_bands(90, 70),
        finding="A.IV", recommendation="Minimize fluff information",
        reference_column="pct_relevant_statements", max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="statements", pool_unit="statement")
def relevant_statements(ctx: ScoringContext) -> MetricResult:
    """Share of the answer's statements that carry answer content rather than filler.

    A statement whose relevance verdict decided nothing (`unknown`) is left out; when more than
    MAX_UNKNOWN_SHARE of the statements are such, the value is null with the judged share."""
    if skipped := _skip(ctx):
        return skipped
    statements = ctx.annotated.statements
    if not statements:
        return MetricResult(None, 0, "no statements")
    undecided = relevance_undecided(ctx)
    relevant = {s.index for s in ctx.relevant_statements}
    return decided_mean([None if s.index in undecided else s.index in relevant for s in statements], "statements",
                        "no statements", RELEVANCE_UNKNOWN_CAUSE)


# ---- sources ----------------------------------------------------------------------------------


@metric(label="Uncited sources", group="sources", direction="lower_is_better",
        formula="listed sources never cited in the answer / listed sources",
        bands=lower_bands(5, 10), finding="S.II", recommendation="Listed and cited sources match",
        reference_column="pct_uncited_sources", pool_unit="source")
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


@metric(label="Unsupported statements", group="sources", direction="lower_is_better", version=3,
        formula="relevant statements with an all-zero row in F / relevant statements (strict: a statement "
                "counts only when no pair left unknown could support it, an uncited source without text "
                "leaving no doubt; null when more than half are undecided)",
        bands=lower_bands(10, 25), finding="C.III", recommendation="Avoid unsupported citations",
        reference_column="pct_unsupported_statements", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="statements", pool_unit="statement")
def unsupported_statements(ctx: ScoringContext) -> MetricResult:
    """Share of relevant statements that no listed source fully supports.

    A statement is unsupported only when every pair of its row is decided and none is "full"; one
    whose row holds no full pair but an unknown one (a source without text, a judge that could not
    tell) is undecided and left out, and the value is null when more than MAX_UNKNOWN_SHARE of the
    statements are undecided. Paper parity counts a missing label as 0, as the notebook did."""
    if skipped := _skip(ctx):
        return skipped
    rows = len(ctx.relevant_statements)
    if rows == 0:
        return MetricResult(None, 0, "no relevant statements")
    if ctx.mode == "parity" and not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels")
    supported = [ctx.statement_supported(i) for i in range(rows)]
    undecided = [i for i, o in enumerate(supported) if o is None]
    result = decided_mean([None if o is None else not o for o in supported], "statements", "no relevant statements",
                          ctx.cause(ctx.unknown_in_rows(undecided)))
    if result.value is not None and ctx.support_scope_cited_only:
        scope = "support known for cited pairs only: a lower bound on support"
        result = replace(result, reason="; ".join(x for x in (scope, result.reason) if x))
    return result


@metric(label="Source necessity", group="sources", direction="higher_is_better", version=2,
        formula="size of a minimum source set supporting every supported statement / listed sources "
                "(strict: over the decided pairs; null when more than half of the pairs are unknown)",
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="(statement, source) pairs",
        bands=higher_bands(80, 60), finding="C.IV, S.IV",
        recommendation="Cite all relevant sources; present only necessary sources",
        reference_column="pct_source_necessity", pool_unit="source")
def source_necessity(ctx: ScoringContext) -> MetricResult:
    """Share of listed sources needed to support everything the sources support."""
    if skipped := _skip(ctx):
        return skipped
    columns = len(ctx.matrices.source_indexes)
    if columns == 0:
        return MetricResult(None, 0, "no listed sources")
    if ctx.support_scope_cited_only:
        return MetricResult(None, 0, CITED_ONLY_REASON)
    if (unknown := _unknown_pairs_null(ctx)) is not None:
        return unknown
    if not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels", **_pair_counts(ctx))
    # Parity reproduces the notebook's greedy cover whatever variant is asked for.
    method = ctx.config.necessity_in_use
    if method == "exact":
        cover = solve_cover(ctx.matrices.support)
        note = "method=exact" if cover.proven_optimal else (
            f"method=exact, optimum not proven within the time limit (lower bound {cover.lower_bound} sources)")
        return MetricResult(len(cover.columns) / columns, columns, _with_unknown_note(ctx, note), **_pair_counts(ctx))
    chosen = necessary_sources(ctx.matrices.support, method)
    return MetricResult(len(chosen) / columns, columns, _with_unknown_note(ctx, f"method={method}"), **_pair_counts(ctx))


# ---- citation ---------------------------------------------------------------------------------


@metric(label="Citation accuracy", group="citation", direction="higher_is_better", version=2,
        formula="sum(C * F) / sum(C) (strict: over the citations whose pair is decided; null when more than half "
                "are not)", bands=higher_bands(90, 50), finding="C.I",
        recommendation="Double-check for misattributions", reference_column="pct_citation_accuracy",
        max_unknown_share=MAX_UNKNOWN_SHARE, unknown_unit="citations", pool_unit="citation")
def citation_accuracy(ctx: ScoringContext) -> MetricResult:
    """Share of citations whose source fully supports the citing statement.

    A citation whose pair is unknown (its source has no text, the judge could not tell) is neither
    accurate nor inaccurate: it is left out, and the value is null when such citations are more than
    MAX_UNKNOWN_SHARE of them."""
    if skipped := _skip(ctx):
        return skipped
    m = ctx.matrices
    cited = int(m.citation.sum())
    if cited == 0:
        if ctx.mode == "parity":
            return MetricResult(1.0, 0, "paper-parity scores an answer with no citations as 1.0")
        return MetricResult(None, 0, "no citations")
    assert m.unknown is not None
    outcomes: list[bool | None] = []
    unknown: list[tuple[int, int]] = []
    for i, j in zip(*np.nonzero(m.citation)):
        if m.unknown[i, j]:
            outcomes.append(None)
            unknown.append((m.statement_indexes[i], m.source_indexes[j]))
        else:
            outcomes.append(bool(m.support[i, j]))
    return decided_mean(outcomes, "citations", "no citations", ctx.cause(unknown))


@metric(label="Citation thoroughness", group="citation", direction="higher_is_better", version=2,
        formula="sum(C * F) / sum(F) (strict: over the decided pairs; null when more than half of the pairs are unknown)",
        bands=higher_bands(50, 20), finding="S.III", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="(statement, source) pairs",
        recommendation="Give importance to expert sources",
        reference_column="pct_citation_thoroughness", pool_unit="pair")
def citation_thoroughness(ctx: ScoringContext) -> MetricResult:
    """Share of all (statement, source) support links that the answer actually cites."""
    if skipped := _skip(ctx):
        return skipped
    if ctx.support_scope_cited_only:
        return MetricResult(None, 0, CITED_ONLY_REASON)
    if (unknown := _unknown_pairs_null(ctx)) is not None:
        return unknown
    if not ctx.has_support_labels:
        return MetricResult(None, 0, "no support labels", **_pair_counts(ctx))
    supported = int(ctx.matrices.support.sum())
    accurate = int((ctx.matrices.citation & ctx.matrices.support).sum())
    if ctx.mode == "parity":
        # The notebook divides by sum(F) + 1e-6, so "nothing supported" scores 0.
        return MetricResult(accurate / (supported + 1e-6), supported)
    if supported == 0:
        return MetricResult(None, 0, "no statement is supported by any source", **_pair_counts(ctx))
    return MetricResult(accurate / supported, supported, _with_unknown_note(ctx, ""), **_pair_counts(ctx))


# ---- pairs left unknown (strict) ----------------------------------------------------------------


def _pair_counts(ctx: ScoringContext) -> dict[str, Any]:
    """units / unknown / unknown_why of a metric over every (relevant statement, source column) pair."""
    m = ctx.matrices
    assert m.unknown is not None
    unknown = int(m.unknown.sum())
    return {"units": int(m.support.size), "unknown": unknown,
            "unknown_why": ctx.cause(m.unknown_codes) if unknown else ""}


def _unknown_pairs_null(ctx: ScoringContext) -> MetricResult | None:
    """The null result of a metric over every pair when too many of them are unknown, else None."""
    counts = _pair_counts(ctx)
    total, unknown = counts["units"], counts["unknown"]
    if total and unknown > MAX_UNKNOWN_SHARE * total:
        why = f" ({counts['unknown_why']})" if counts["unknown_why"] else ""
        return MetricResult(None, 0, judged_share_text(total - unknown, total, "(statement, source) pairs") + why, **counts)
    return None


def _with_unknown_note(ctx: ScoringContext, note: str) -> str:
    """A note saying how many pairs were left out as unknown, after `note`."""
    counts = _pair_counts(ctx)
    if not counts["unknown"]:
        return note
    why = f" ({counts['unknown_why']})" if counts["unknown_why"] else ""
    left = f"{counts['unknown']} of {counts['units']} (statement, source) pairs left out, not judged{why}"
    return f"{note}; {left}" if note else left
