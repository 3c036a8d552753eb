"""Citation matrix C and factual-support matrix F, plus the label view every metric reads.

Rows are the answer's relevant statements, columns its sources (in paper-parity mode only the
sources whose text was fetched). Both are pure functions of an AnnotatedAnswer.

A pair is decided (full / partial / none) only by a verdict that says so. A pair without one is
`unknown` with its cause (`records.UNCHECKED`): the judge said unknown or failed, the source has
no text or could not be fetched, or the data carries no label for it. Unknown is never "none":
strict metrics leave such pairs out or become null. Which pairs must be decided: every pair in
strict mode, or only the cited ones when the labels' scope is cited pairs (ExpertQA's experts,
`support_scope` "cited_only"); paper parity counts a missing label as 0, as the released notebook
did, after keeping only the sources whose text was fetched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from pipeline.records import RELEVANCE_LABELS, SUPPORT_LABELS, AnnotatedAnswer, Answer, Statement, Verdict, unchecked_code, unreadable_code

Mode = Literal["strict", "parity"]


@dataclass(frozen=True)
class LabelView:
    """The verdicts of one answer, indexed for quick lookup (last verdict wins per key)."""

    relevant: dict[int, bool]  # statement index -> relevant?; missing when the judge gave nothing
    stance: dict[int, str]  # statement index -> agree/disagree/neutral/unknown
    confidence: int | None  # 1..5
    support: dict[tuple[int, int], str]  # (statement index, source index) -> full/partial/none (decided only)
    support_score: dict[tuple[int, int], float]
    union_support: dict[int, str]  # statement index -> decided label against all its citations together
    worthy: dict[int, bool]  # statement index -> verification-worthy?
    # (statement index, source index) -> cause code (records.UNCHECKED) of a verdict that decided
    # nothing: the judge said unknown, its call failed, or its reply could not be read
    support_unknown: dict[tuple[int, int], str] = field(default_factory=dict)
    # statement index -> the words of a relevance verdict that decided nothing ("unknown": people's
    # audit labels leave most statements unjudged); such a statement is not in `relevant`
    relevance_unknown: dict[int, str] = field(default_factory=dict)


def unknown_verdict_code(v: Verdict) -> str:
    """The cause code of a support verdict that decided nothing (label None or "unknown")."""
    if v.label is None:
        return "unreadable" if v.error == "parse" else "call_failed"
    return unchecked_code(v.raw) or "undecided"


def readable_citations(answer: Answer, statement: Statement) -> tuple[int, ...]:
    """The statement's citations whose source has text to judge (not dead): the set a judge is asked
    about when support by all of a statement's citations together is needed."""
    return tuple(index for index in statement.citations if not unreadable_code(answer.source(index)))


def is_union_verdict(annotated: AnnotatedAnswer, statement_index: int, members: tuple[int, ...]) -> bool:
    """True when a set-support verdict (source_index None) is about ALL the statement's citations:
    no members recorded (labels that predate set support), or exactly its readable citations. Other
    sets (the "all but one citation" sets of NLI citation precision) are not."""
    if not members:
        return True
    statement = next((s for s in annotated.statements if s.index == statement_index), None)
    if statement is None:
        return False
    wanted = set(members)
    return wanted == set(readable_citations(annotated.answer, statement)) or wanted == set(statement.citations)


def label_view(annotated: AnnotatedAnswer) -> LabelView:
    """Index an answer's verdicts by kind. Support verdicts that decided nothing go to
    `support_unknown` (a decided label for the same pair wins whatever the order); other verdicts
    with a null label are left out."""
    relevant: dict[int, bool] = {}
    stance: dict[int, str] = {}
    support: dict[tuple[int, int], str] = {}
    scores: dict[tuple[int, int], float] = {}
    union: dict[int, str] = {}
    worthy: dict[int, bool] = {}
    unknown: dict[tuple[int, int], str] = {}
    relevance_unknown: dict[int, str] = {}
    confidence: int | None = None
    for v in annotated.verdicts:
        if (v.kind == "support" and v.statement_index is not None and v.source_index is not None
                and v.label not in SUPPORT_LABELS):
            key = (v.statement_index, v.source_index)
            if key not in support:
                unknown[key] = unknown_verdict_code(v)
            continue
        if v.label is None:
            continue
        if v.kind == "relevance" and v.statement_index is not None:
            if v.label in RELEVANCE_LABELS:
                relevant[v.statement_index] = v.label == "relevant"
                relevance_unknown.pop(v.statement_index, None)
            elif v.statement_index not in relevant:  # "unknown" decides nothing, and never means filler
                relevance_unknown[v.statement_index] = v.raw or "relevance not decided"
        elif v.kind == "stance" and v.statement_index is not None:
            stance[v.statement_index] = v.label
        elif v.kind == "confidence":
            try:
                level = int(v.label)
            except ValueError:
                continue
            if 1 <= level <= 5:
                confidence = level
        elif v.kind == "support" and v.statement_index is not None:
            if v.source_index is None:
                if v.label in SUPPORT_LABELS and is_union_verdict(annotated, v.statement_index, v.source_set):
                    union[v.statement_index] = v.label
            else:
                support[(v.statement_index, v.source_index)] = v.label
                unknown.pop((v.statement_index, v.source_index), None)
                if v.score is not None and v.score == v.score:
                    scores[(v.statement_index, v.source_index)] = float(v.score)
        elif v.kind == "worthiness" and v.statement_index is not None:
            worthy[v.statement_index] = v.label.lower() in ("yes", "worthy", "true", "1")
    return LabelView(relevant, stance, confidence, support, scores, union, worthy, unknown, relevance_unknown)


def is_relevant(view: LabelView, statement: Statement) -> bool:
    """A statement without a relevance verdict (or with one that decided nothing) counts as relevant
    (content, not filler): its support is still asked about; the relevance metrics leave it out."""
    return view.relevant.get(statement.index, True)


def cited_only_scope(annotated: AnnotatedAnswer) -> bool:
    """True when the labels cover only cited (statement, source) pairs (ExpertQA's experts judged a
    claim against the evidence it came with): uncited pairs are then outside what must be decided."""
    return annotated.answer.meta.get("support_scope") == "cited_only"


def unknown_pairs(annotated: AnnotatedAnswer, view: LabelView) -> dict[tuple[int, int], str]:
    """{(statement, source): cause code} for every pair of a relevant statement and a listed source
    that must be decided (all pairs; cited ones only under a cited-only scope) and is not."""
    cited_only = cited_only_scope(annotated)
    out: dict[tuple[int, int], str] = {}
    for s in annotated.statements:
        if not is_relevant(view, s):
            continue
        for source in annotated.answer.sources:
            key = (s.index, source.index)
            if key in view.support or (cited_only and source.index not in s.citations):
                continue
            out[key] = view.support_unknown.get(key) or unreadable_code(source) or "no_label"
    return out


@dataclass(frozen=True)
class Matrices:
    """C, F and the partial-support matrix over relevant statements x source columns."""

    statement_indexes: tuple[int, ...]
    source_indexes: tuple[int, ...]
    citation: np.ndarray  # bool, C[i, j]: statement i cites source j
    support: np.ndarray  # bool, F[i, j]: source j fully supports statement i
    partial: np.ndarray  # bool: judge said partial
    judged: np.ndarray  # bool: a decided support verdict (full / partial / none) exists for the pair
    # bool: the pair must be decided and is not (always False in paper parity, which counts it 0)
    unknown: np.ndarray | None = None
    # (statement index, source index) -> cause code of each unknown pair of the matrix
    unknown_codes: dict[tuple[int, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.unknown is None:
            object.__setattr__(self, "unknown", np.zeros(self.support.shape, dtype=bool))


def usable_sources(annotated: AnnotatedAnswer, mode: Mode) -> tuple[int, ...]:
    """Source columns: every listed source (strict) or only those whose text was fetched
    (paper-parity: the release counted a source only when its fetch succeeded, so a source with no
    text, dead or never fetched, is not a column there)."""
    sources = annotated.answer.sources
    if mode == "parity":
        return tuple(s.index for s in sources if not unreadable_code(s))
    return tuple(s.index for s in sources)


def build_matrices(annotated: AnnotatedAnswer, view: LabelView, mode: Mode = "strict") -> Matrices:
    """Build C and F (and, in strict mode, the mask of unknown pairs) for the relevant statements."""
    rows = tuple(s.index for s in annotated.statements if is_relevant(view, s))
    cols = usable_sources(annotated, mode)
    col_pos = {index: j for j, index in enumerate(cols)}
    shape = (len(rows), len(cols))
    citation = np.zeros(shape, dtype=bool)
    support = np.zeros(shape, dtype=bool)
    partial = np.zeros(shape, dtype=bool)
    judged = np.zeros(shape, dtype=bool)
    unknown = np.zeros(shape, dtype=bool)
    codes = unknown_pairs(annotated, view) if mode == "strict" else {}
    by_index = {s.index: s for s in annotated.statements}
    for i, row in enumerate(rows):
        for cited in by_index[row].citations:
            j = col_pos.get(cited)
            if j is not None:
                citation[i, j] = True
        for index, j in col_pos.items():
            label = view.support.get((row, index))
            if label is not None:
                judged[i, j] = True
                support[i, j] = label == "full"
                partial[i, j] = label == "partial"
            elif (row, index) in codes:
                unknown[i, j] = True
    return Matrices(rows, cols, citation, support, partial, judged, unknown, codes)
