"""Source-stance metrics (debate queries): which sides the listed sources take, how balanced they are
next to the answer, and whether the statements citing a source go its way.

Inputs are `source_stance` verdicts (one per listed source: agree / disagree / neutral towards the
side the query's wording takes, or unknown) and the statements' own `stance` verdicts. Sources the
judge could not label (unknown, a parse failure, or no verdict at all, as for every source without
text) are left out of every share; when they are more than MAX_UNKNOWN_SHARE of the listed sources
(the registry's one threshold) the metrics are null with the reason, because a share over the few
labelled ones would describe the judge's blind spots rather than the answer.

`source_stance_rows` gives the per-source detail behind the numbers (the inspector panel and the
dataset-level tables in `pipeline.conflict.sides` read it); it is a pure function like the metrics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Iterable
from urllib.parse import urlsplit

from pipeline.matrices import is_relevant, label_view
from pipeline.metrics.context import ScoringContext
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, judged_share_text, metric
from pipeline.records import AnnotatedAnswer, MetricResult, unchecked_cause, unreadable_code
from pipeline.sources import source_type

NOT_DEBATE = "defined for debate queries only"
KNOWN = ("agree", "disagree", "neutral")
SIDES = ("agree", "disagree")
MIN_KNOWN_SHARE = 1 - MAX_UNKNOWN_SHARE  # below this share of listed sources with a known stance, the metrics are null


def source_stance_labels(annotated: AnnotatedAnswer) -> dict[int, str]:
    """Listed source index -> its stance label (the last verdict wins; null labels left out)."""
    listed = {s.index for s in annotated.answer.sources}
    out: dict[int, str] = {}
    for v in annotated.verdicts:
        if v.kind == "source_stance" and v.label is not None and v.source_index in listed:
            out[v.source_index] = v.label
    return out


def statement_sides(annotated: AnnotatedAnswer) -> dict[int, str]:
    """Relevant statement index -> its stance label (agree / disagree / neutral)."""
    view = label_view(annotated)
    return {s.index: view.stance[s.index] for s in annotated.statements if is_relevant(view, s) and s.index in view.stance}


def answer_side(sides: dict[int, str]) -> str | None:
    """The side most of the answer's statements take: agree, disagree, "balanced" on a tie, None
    when no statement takes a side."""
    counts = Counter(sides.values())
    agree, disagree = counts["agree"], counts["disagree"]
    if agree + disagree == 0:
        return None
    return "agree" if agree > disagree else "disagree" if disagree > agree else "balanced"


def balance(agree: int, disagree: int) -> float | None:
    """1 when both sides are equally present, 0 when only one is; None when neither is."""
    if agree + disagree == 0:
        return None
    return 1.0 - abs(agree - disagree) / (agree + disagree)


def _known_sources(ctx: ScoringContext) -> tuple[dict[int, str], MetricResult | None]:
    """The known source stances, or the null result that says why there are too few."""
    if not ctx.is_debate:
        return {}, MetricResult(None, 0, NOT_DEBATE)
    listed = len(ctx.answer.sources)
    if listed == 0:
        return {}, MetricResult(None, 0, "no listed sources")
    labels = source_stance_labels(ctx.annotated)
    if not labels:
        return {}, MetricResult(None, 0, "no source stance labels")
    known = {k: v for k, v in labels.items() if v in KNOWN}
    if len(known) < MIN_KNOWN_SHARE * listed:
        counts = _source_counts(ctx, known)
        why = counts["unknown_why"] or "the rest unknown or unlabelled"
        return known, MetricResult(None, len(known), f"{judged_share_text(len(known), listed, 'listed sources')} ({why})",
                                   **counts)
    return known, None


def _source_counts(ctx: ScoringContext, known: dict[int, str]) -> dict:
    """units / unknown / unknown_why of a metric over the listed sources' stances."""
    labelled = source_stance_labels(ctx.annotated)
    unknown = [s for s in ctx.answer.sources if s.index not in known]
    # a source the judge was never asked about because it has no text, not one it could not tell
    no_text = sum(1 for s in unknown if s.index not in labelled and unreadable_code(s))
    why = ""
    if unknown:
        why = unchecked_cause("no_text") if no_text * 2 > len(unknown) else "sources whose stance the judge could not tell"
    return {"units": len(ctx.answer.sources), "unknown": len(unknown), "unknown_why": why}


def _stance_note(known: dict[int, str], listed: int) -> str:
    return "" if len(known) == listed else f"over the {len(known)} of {listed} listed sources with a known stance"


def _balance_result(labels: Iterable[str], none_take_a_side: str) -> MetricResult:
    """`balance` of the agree and disagree labels among `labels`, n = how many take a side; null
    with the reason `none_take_a_side` when none does."""
    counts = Counter(labels)
    value = balance(counts["agree"], counts["disagree"])
    if value is None:
        return MetricResult(None, 0, none_take_a_side)
    return MetricResult(value, counts["agree"] + counts["disagree"])


def _side_share(ctx: ScoringContext, side: str) -> MetricResult:
    """Share of the listed sources with a known stance that take `side` (agree / disagree)."""
    known, null = _known_sources(ctx)
    if null:
        return null
    taking = sum(1 for v in known.values() if v == side)
    return MetricResult(taking / len(known), len(known), _stance_note(known, len(ctx.answer.sources)),
                        **_source_counts(ctx, known))


@metric(label="Pro sources", group="source stance", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="listed sources", direction="neutral", debate_only=True,
        formula="sources agreeing with the question's side / listed sources with a known stance", pool_unit="source")
def pro_source_share(ctx: ScoringContext) -> MetricResult:
    """Share of the listed sources that take the side the question's wording takes."""
    return _side_share(ctx, "agree")


@metric(label="Con sources", group="source stance", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="listed sources", direction="neutral", debate_only=True,
        formula="sources disagreeing with the question's side / listed sources with a known stance", pool_unit="source")
def con_source_share(ctx: ScoringContext) -> MetricResult:
    """Share of the listed sources that take the side opposite to the question's wording."""
    return _side_share(ctx, "disagree")


@metric(label="Source balance", group="source stance", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="listed sources", direction="higher_is_better", debate_only=True,
        formula="1 - |agree - disagree| / (agree + disagree) over listed sources", pool_unit="answer")
def source_balance(ctx: ScoringContext) -> MetricResult:
    """How evenly the listed sources split between the two sides (1 even, 0 all on one side)."""
    known, null = _known_sources(ctx)
    if null:
        return null
    return replace(_balance_result(known.values(), "no listed source takes a side"), **_source_counts(ctx, known))


@metric(label="Answer balance", group="source stance", direction="higher_is_better", debate_only=True,
        formula="1 - |agree - disagree| / (agree + disagree) over relevant statements")
def answer_balance(ctx: ScoringContext) -> MetricResult:
    """How evenly the answer's own statements split between the two sides (1 even, 0 one side)."""
    if not ctx.is_debate:
        return MetricResult(None, 0, NOT_DEBATE)
    return _balance_result(statement_sides(ctx.annotated).values(), "no statement takes a side")


@metric(label="Balance gap (answer - sources)", group="source stance", direction="neutral", debate_only=True,
        formula="answer balance - source balance (negative: the answer is more one-sided than its sources)")
def balance_gap(ctx: ScoringContext) -> MetricResult:
    """How much more (negative) or less (positive) one-sided the answer is than the sources it lists."""
    answer = answer_balance(ctx)
    if answer.value is None:
        return MetricResult(None, 0, answer.reason)
    sources = source_balance(ctx)
    if sources.value is None:
        return MetricResult(None, 0, sources.reason)
    return MetricResult(answer.value - sources.value, answer.n + sources.n)


@metric(label="Side picked from two-sided sources", group="source stance", max_unknown_share=MAX_UNKNOWN_SHARE,
        unknown_unit="listed sources", direction="lower_is_better",
        debate_only=True,
        formula="for one-sided answers: 1 if the listed sources include both an agreeing and a disagreeing source, else 0")
def side_picked(ctx: ScoringContext) -> MetricResult:
    """Whether a one-sided answer picked its side although its sources offered both."""
    if not ctx.is_debate:
        return MetricResult(None, 0, NOT_DEBATE)
    counts = Counter(statement_sides(ctx.annotated).values())
    if counts["agree"] and counts["disagree"]:
        return MetricResult(None, 0, "the answer is not one-sided (its statements take both sides)")
    if not counts["agree"] and not counts["disagree"]:
        return MetricResult(None, 0, "no statement takes a side")
    known, null = _known_sources(ctx)
    if null:
        return null
    sides = set(known.values())
    return MetricResult(1.0 if {"agree", "disagree"} <= sides else 0.0, len(known), **_source_counts(ctx, known))


@metric(label="Citations follow source stance", group="source stance", direction="higher_is_better",
        debate_only=True,
        formula="(statement, cited source) pairs where both take a side and it is the same side / such pairs")
def citing_follows_source(ctx: ScoringContext) -> MetricResult:
    """Share of citations from a statement with a side to a source with a side where the two agree."""
    if not ctx.is_debate:
        return MetricResult(None, 0, NOT_DEBATE)
    labels = source_stance_labels(ctx.annotated)
    if not labels:
        return MetricResult(None, 0, "no source stance labels")
    sides = statement_sides(ctx.annotated)
    same = total = unknown = 0
    for s in ctx.annotated.statements:
        if sides.get(s.index) not in SIDES:
            continue
        for index in s.citations:
            stance = labels.get(index)
            if stance in SIDES:
                total += 1
                same += stance == sides[s.index]
            elif stance not in KNOWN:
                unknown += 1
    if total == 0:
        reason = "no statement with a side cites a source with a side"
        return MetricResult(None, 0, reason + (f" ({unknown} citations to sources of unknown stance)" if unknown else ""))
    if unknown > total:
        return MetricResult(None, total, f"{unknown} of {unknown + total} citations point to sources of unknown stance")
    note = f"{unknown} citations to sources of unknown stance left out" if unknown else ""
    return MetricResult(same / total, total, note)


# ---- per-source detail ------------------------------------------------------------------------


def domain_of(url: str) -> str:
    """The host of a URL without a leading "www." ("" when there is none)."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""
    return host.removeprefix("www.")


def source_stance_rows(annotated: AnnotatedAnswer) -> list[dict[str, Any]]:
    """One row per listed source: its stance, who labelled it and why, the statements citing it by
    their side, whether they follow it, and whether it is on the side the answer takes.

    `follows`: True when most citing statements that take a side take the source's side, False
    when most take the other side, None when none takes a side or the source has no side (ties
    count as None). `on_answer_side`: the source's side equals the answer's majority side (None
    when either has no side, or the answer is balanced)."""
    verdicts = {v.source_index: v for v in annotated.verdicts if v.kind == "source_stance" and v.source_index is not None}
    sides = statement_sides(annotated)
    side_of_answer = answer_side(sides)
    rows = []
    for source in annotated.answer.sources:
        v = verdicts.get(source.index)
        stance = v.label if v is not None else None
        citing = [s.index for s in annotated.statements if source.index in s.citations]
        counts = Counter(sides.get(i, "none") for i in citing)
        follows: bool | None = None
        if stance in SIDES:
            with_it, against = counts[stance], counts["disagree" if stance == "agree" else "agree"]
            follows = True if with_it > against else False if against > with_it else None
        on_side = None
        if stance in SIDES and side_of_answer in SIDES:
            on_side = stance == side_of_answer
        rows.append({
            "source_index": source.index, "url": source.url, "title": source.title, "domain": domain_of(source.url),
            "source_type": source_type(source.url), "stance": stance,
            "judge": v.judge if v is not None else "", "prompt_version": v.prompt_version if v is not None else "",
            "evidence": v.evidence if v is not None else "", "error": v.error if v is not None else "",
            "cited_by": citing, "citing_agree": counts["agree"], "citing_disagree": counts["disagree"],
            "citing_neutral": counts["neutral"], "follows": follows, "answer_side": side_of_answer,
            "on_answer_side": on_side,
        })
    return rows
