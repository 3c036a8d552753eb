"""Typed records shared by every stage: answers, sources, statements, verdicts, metric results.

All records are frozen: a stage never edits what an earlier stage produced, it makes new records.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Literal, Mapping

QueryType = Literal["debate", "expertise"]
Support = Literal["full", "partial", "none"]
Stance = Literal["agree", "disagree", "neutral"]
VerdictError = Literal["", "call", "parse"]
LabelKind = Literal["relevance", "stance", "confidence", "support", "worthiness", "reliability", "source_stance"]

SUPPORT_LABELS: tuple[str, ...] = ("full", "partial", "none")
STANCE_LABELS: tuple[str, ...] = ("agree", "disagree", "neutral")
# A listed source's stance on a debate query's proposition (verdict kind "source_stance", with
# `source_index` set): the statement stances plus "unknown", which a judge gives when it cannot tell.
SOURCE_STANCE_LABELS: tuple[str, ...] = ("agree", "disagree", "neutral", "unknown")
CONFIDENCE_LEVELS: dict[int, str] = {
    1: "Strongly not confident",
    2: "Not confident",
    3: "Neutral",
    4: "Confident",
    5: "Strongly confident",
}
CONFIDENCE_NAMES: tuple[str, ...] = tuple(CONFIDENCE_LEVELS.values())


@dataclass(frozen=True, slots=True)
class Source:
    """A document listed by an answer, addressed by its 1-based marker index."""

    index: int  # 1-based, as in the "[n]" marker
    url: str = ""
    title: str = ""
    text: str = ""  # fetched or carried text; "" when unknown
    fetch_ok: bool | None = None  # None: no fetch attempted; False: dead / unfetchable


@dataclass(frozen=True, slots=True)
class GoldAnswer:
    """A reference answer for the same query (HAGRID's human-checked answers), used by the answer
    correctness and citation overlap metrics. Never judged itself: it travels with the answer it is
    compared to."""

    text: str  # the reference text, citation markers included
    # identity keys (`pipeline.gold.source_key`) of the sources this reference answer cites
    cited: tuple[str, ...] = ()
    attributable: bool | None = None  # the dataset's answer-level human labels, None when unlabelled
    informative: bool | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer engine's response to one query."""

    answer_id: str
    engine: str
    query: str
    query_type: QueryType
    text: str  # markdown with inline citation markers
    sources: tuple[Source, ...] = ()
    dataset: str = ""
    field: str = ""  # subject field (ExpertQA) or "" when unknown
    meta: Mapping[str, str] = dataclass_field(default_factory=dict)  # free-form provenance, strings only
    gold: tuple[GoldAnswer, ...] = ()  # reference answers for this query; empty when there are none

    def source(self, index: int) -> Source | None:
        """Return the listed source with this marker index, or None for a dangling index."""
        for s in self.sources:
            if s.index == index:
                return s
        return None


@dataclass(frozen=True, slots=True)
class Statement:
    """A unit of the answer text (normally a sentence) with the markers found inside it."""

    answer_id: str
    index: int  # 0-based position in the answer
    text: str
    start: int = -1  # character span in Answer.text; -1 when the statement came pre-split
    end: int = -1
    citations: tuple[int, ...] = ()  # distinct listed-source indexes cited, in order of appearance
    dangling: tuple[int, ...] = ()  # cited indexes that match no listed source


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judge decision: about a statement, an answer, or a (statement, source) pair."""

    answer_id: str
    kind: LabelKind
    label: str | None  # None: the judge's output could not be parsed (see raw)
    judge: str  # stable judge id, e.g. "offline:v1", "recorded", "human:expertqa"
    prompt_version: str  # prompt or rule-set version that produced the label
    raw: str = ""  # the judge's own output, kept for audit
    statement_index: int | None = None
    source_index: int | None = None
    score: float | None = None  # the judge's continuous score where it has one (e.g. support prob.)
    evidence: str = ""  # the passage or cue the judge relied on
    # "" when the judge answered; "call" when it could not be asked (network, HTTP error, no source
    # text: retried on the next run, never cached); "parse" when its reply could not be read into a
    # label (the model's own answer: cached). raw then holds the reason and any reply text.
    error: VerdictError = ""
    # A support verdict about several sources taken together (source_index None): the listed
    # indexes of those sources, sorted. Empty on a per-source verdict, and on a union verdict that
    # predates this field, which means "all the statement's citations".
    source_set: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AnnotatedAnswer:
    """An answer, its statements and every verdict a judge gave about them."""

    answer: Answer
    statements: tuple[Statement, ...]
    verdicts: tuple[Verdict, ...] = ()


@dataclass(frozen=True, slots=True)
class MetricResult:
    """A metric value for one answer; value None means not scorable (never silently 0)."""

    value: float | None
    n: int = 0  # units the value is computed over (statements, citations, sources...)
    reason: str = ""  # why the value is None, or a note on how it was computed
