"""Typed records shared by every stage: answers, sources, statements, verdicts, metric results.

All records are frozen: a stage never edits what an earlier stage produced, it makes new records.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Literal, Mapping

QueryType = Literal["debate", "expertise"]
# "unknown": the pair was not judged (the source has no text, the judge call failed, the data has
# no label for it...); raw says why. Never the same as "none": metrics leave it out or become null.
Support = Literal["full", "partial", "none", "unknown"]
Stance = Literal["agree", "disagree", "neutral", "unknown"]
VerdictError = Literal["", "call", "parse"]
# gold_similarity is a measurement, not a judge's opinion: the BERTScore-style similarity of an
# answer with one of its gold answers, taken by the annotate stage (pipeline/gold/similarity.py)
LabelKind = Literal["relevance", "stance", "confidence", "support", "worthiness", "reliability", "source_stance", "gold_similarity"]

# "unreachable" and "unfetched" mark a source whose fetch got no text, and why (pipeline/fetching/fetch_outcome.py)
TEXT_ORIGINS: tuple[str, ...] = ("", "page", "snippet", "unreachable", "unfetched")
SUPPORT_LABELS: tuple[str, ...] = ("full", "partial", "none")  # the decided support labels
RELEVANCE_LABELS: tuple[str, ...] = ("relevant", "filler")  # the decided relevance labels ("unknown" decides nothing)
SUPPORT_UNKNOWN = "unknown"
# "unknown": the judge could not tell (an abstention, not a side); metrics leave it out or become null
STANCE_LABELS: tuple[str, ...] = ("agree", "disagree", "neutral", "unknown")
# A listed source's stance on a debate query's proposition (verdict kind "source_stance", with
# `source_index` set): the same vocabulary, "unknown" included.
SOURCE_STANCE_LABELS: tuple[str, ...] = STANCE_LABELS
CONFIDENCE_LEVELS: dict[int, str] = {
    1: "Strongly not confident",
    2: "Not confident",
    3: "Neutral",
    4: "Confident",
    5: "Strongly confident",
}
CONFIDENCE_NAMES: tuple[str, ...] = tuple(CONFIDENCE_LEVELS.values())


# Why a (statement, source) pair has no support decision. Each cause has a code (stored nowhere but
# derived again from the verdicts and the sources), the words a pair or statement shows ("not
# checked: no text") and the words a count of them takes ("sources without text").
UNCHECKED: dict[str, tuple[str, str]] = {
    "no_text": ("not checked: no text", "sources without text"),
    "dead": ("not checked: the page could not be fetched", "pages that could not be fetched"),
    # a fetch that failed through no fault of the source (pipeline.fetching.fetch_outcome): never a dead source
    "unreachable": ("not checked: this machine could not reach the web", "sources not reached: this machine had no network"),
    "unfetched": ("not checked: the page was not fetched, not known to be gone", "pages not fetched, not known to be gone"),
    "call_failed": ("not checked: the judge could not be asked", "judge calls that failed"),
    "unreadable": ("not checked: the judge's reply could not be read", "judge replies that could not be read"),
    "undecided": ("not decided: the judge could not tell", "pairs the judge could not decide"),
    "no_label": ("not checked: no label for this pair", "pairs without a label"),
    "expert_na": ("not checked: the expert could not open the page (N/A)", "pages the experts could not open"),
    "expert_unlabelled": ("not checked: the expert gave no support label", "claims the experts did not label"),
    # carried labels that say which pairs they cover (canonical `labels`: "judged", "not_supported_by")
    "uncited_not_judged": ("not checked: the labels judge only the sources a statement cites",
                           "uncited pairs the labels do not judge"),
    "not_judged": ("not checked: the labels do not judge this pair", "pairs the labels do not judge"),
    # the `human:audit` judge (people's labels from audits, `aee audit publish`): most pairs were never drawn
    "not_audited": ("not checked: no one audited this pair", "pairs no one audited"),
    "audit_split": ("not decided: the people who audited it disagree", "pairs the auditors split on"),
    "audit_cant_tell": ("not decided: the people who audited it could not tell", "pairs the auditors could not tell"),
}


def unchecked_text(code: str) -> str:
    """What a pair or statement not checked for this reason reads: "not checked: no text"."""
    return UNCHECKED.get(code, UNCHECKED["no_label"])[0]


def unchecked_cause(code: str) -> str:
    """A count's cause for this reason: "sources without text"."""
    return UNCHECKED.get(code, UNCHECKED["no_label"])[1]


def unchecked_code(text: str) -> str | None:
    """The code of a pair's "not checked: ..." words (a verdict's raw), None when they are not ours."""
    return next((code for code, (words, _) in UNCHECKED.items() if words == text), None)


@dataclass(frozen=True, slots=True)
class Source:
    """A document listed by an answer, addressed by its 1-based marker index."""

    index: int  # 1-based, as in the "[n]" marker
    url: str = ""
    title: str = ""
    text: str = ""  # fetched or carried text; "" when unknown
    fetch_ok: bool | None = None  # None: no fetch attempted; False: dead / unfetchable
    # where `text` came from: "page" (fetched by the toolkit), "snippet" (the engine's own excerpt
    # or cited text, not the page), "" (carried by the dataset; origin not recorded); for a source
    # without text, why a fetch got none: "unreachable" (no network here), "unfetched" (the site
    # did not give the page; see pipeline/fetching/fetch_outcome.py)
    text_origin: str = ""


def unreadable_code(source: Source | None) -> str:
    """Why a judge cannot read this source ("dead", "no_text"), "" when it has text to judge.
    A source that is not listed (None) has nothing to read either."""
    if source is None:
        return "no_text"
    if source.fetch_ok is False:
        return "dead"
    if not (source.text or "").strip():
        # a fetch that could not reach the web, or that the site did not answer, says so
        return source.text_origin if source.text_origin in ("unreachable", "unfetched") else "no_text"
    return ""


@dataclass(frozen=True, slots=True)
class GoldAnswer:
    """A reference answer for the same query (HAGRID's human-checked answers), used by the answer
    correctness and citation overlap metrics. Never judged itself: it travels with the answer it is
    compared to."""

    text: str  # the reference text, citation markers included
    # identity keys (`pipeline.gold.gold.source_key`) of the sources this reference answer cites
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
    # For metrics built on labels a judge may not give (support of a pair, a stance): how many
    # units the metric needed (`units`, 0 when it does not track this), how many of them no label
    # decides (`unknown`, left out of the value), and the commonest cause in words
    # (`records.unchecked_cause`). The judged share is (units - unknown) / units.
    units: int = 0
    unknown: int = 0
    unknown_why: str = ""
