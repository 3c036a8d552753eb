"""Citation matrix C and factual-support matrix F, plus the label view every metric reads.

Rows are the answer's relevant statements, columns its sources (in paper-parity mode only the
sources whose text was fetched). Both are pure functions of an AnnotatedAnswer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pipeline.records import AnnotatedAnswer, Answer, Statement

Mode = Literal["strict", "parity"]


@dataclass(frozen=True)
class LabelView:
    """The verdicts of one answer, indexed for quick lookup (last verdict wins per key)."""

    relevant: dict[int, bool]  # statement index -> relevant?; missing when the judge gave nothing
    stance: dict[int, str]  # statement index -> agree/disagree/neutral
    confidence: int | None  # 1..5
    support: dict[tuple[int, int], str]  # (statement index, source index) -> full/partial/none
    support_score: dict[tuple[int, int], float]
    union_support: dict[int, str]  # statement index -> label against all its citations together
    worthy: dict[int, bool]  # statement index -> verification-worthy?


def readable_citations(answer: Answer, statement: Statement) -> tuple[int, ...]:
    """The statement's citations whose source has text to judge (not dead): the set a judge is asked
    about when support by all of a statement's citations together is needed."""
    out = []
    for index in statement.citations:
        source = answer.source(index)
        if source is not None and source.fetch_ok is not False and (source.text or "").strip():
            out.append(index)
    return tuple(out)


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
    """Index an answer's verdicts by kind; verdicts with a null label are left out."""
    relevant: dict[int, bool] = {}
    stance: dict[int, str] = {}
    support: dict[tuple[int, int], str] = {}
    scores: dict[tuple[int, int], float] = {}
    union: dict[int, str] = {}
    worthy: dict[int, bool] = {}
    confidence: int | None = None
    for v in annotated.verdicts:
        if v.label is None:
            continue
        if v.kind == "relevance" and v.statement_index is not None:
            relevant[v.statement_index] = v.label == "relevant"
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
                if is_union_verdict(annotated, v.statement_index, v.source_set):
                    union[v.statement_index] = v.label
            else:
                support[(v.statement_index, v.source_index)] = v.label
                if v.score is not None and v.score == v.score:
                    scores[(v.statement_index, v.source_index)] = float(v.score)
        elif v.kind == "worthiness" and v.statement_index is not None:
            worthy[v.statement_index] = v.label.lower() in ("yes", "worthy", "true", "1")
    return LabelView(relevant, stance, confidence, support, scores, union, worthy)


def is_relevant(view: LabelView, statement: Statement) -> bool:
    """A statement without a relevance verdict counts as relevant (content, not filler)."""
    return view.relevant.get(statement.index, True)


@dataclass(frozen=True)
class Matrices:
    """C, F and the partial-support matrix over relevant statements x source columns."""

    statement_indexes: tuple[int, ...]
    source_indexes: tuple[int, ...]
    citation: np.ndarray  # bool, C[i, j]: statement i cites source j
    support: np.ndarray  # bool, F[i, j]: source j fully supports statement i
    partial: np.ndarray  # bool: judge said partial
    judged: np.ndarray  # bool: a support verdict exists for the pair


def usable_sources(annotated: AnnotatedAnswer, mode: Mode) -> tuple[int, ...]:
    """Source columns: every listed source (strict) or only fetched ones (paper-parity)."""
    sources = annotated.answer.sources
    if mode == "parity":
        return tuple(s.index for s in sources if s.fetch_ok is not False)
    return tuple(s.index for s in sources)


def build_matrices(annotated: AnnotatedAnswer, view: LabelView, mode: Mode = "strict") -> Matrices:
    """Build C and F for the relevant statements of an answer."""
    rows = tuple(s.index for s in annotated.statements if is_relevant(view, s))
    cols = usable_sources(annotated, mode)
    col_pos = {index: j for j, index in enumerate(cols)}
    shape = (len(rows), len(cols))
    citation = np.zeros(shape, dtype=bool)
    support = np.zeros(shape, dtype=bool)
    partial = np.zeros(shape, dtype=bool)
    judged = np.zeros(shape, dtype=bool)
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
    return Matrices(rows, cols, citation, support, partial, judged)
