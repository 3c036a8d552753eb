"""Support outcomes of one answer's statements, by one source and by a set of sources: what the
attribution metrics (`pipeline.metrics.attribution`) read.

A (statement, source) pair is supported, not supported, or unknown. Unknown means no verdict
decides it: the judge was asked and could not answer (no label, or "unknown"), the source has no
text or could not be fetched so nobody could read it, or nobody was asked (an unlabelled HAGRID
sentence, a pair a carried judge did not cover). A source without text is unknown, never "does not
support": the page may well back the statement; nobody here has read it.

Support by a set of sources is read from a set verdict (`Verdict.source_set`; a union verdict with
no members means all the statement's citations that have text). Without one, a set that contains
a source supporting alone is supported (evidence that backs the statement alone still backs it
among others); otherwise the set is unknown. A set verdict about the readable part of a set that
also holds unreadable sources decides it only when it says "full".
"""

from __future__ import annotations

from typing import Iterable

from pipeline.records import SUPPORT_LABELS, AnnotatedAnswer, Statement, unreadable_code

__all__ = ["Outcome", "AttributionView", "any_supports"]

Outcome = bool | None  # supported, not supported, unknown


class AttributionView:
    """Support outcomes of one answer's statements: by one source, by a set of sources."""

    def __init__(self, annotated: AnnotatedAnswer) -> None:
        self.annotated = annotated
        answer = annotated.answer
        self.readable = {s.index for s in answer.sources if not unreadable_code(s)}
        # (statement, source) -> label; None = no decision (asked without an answer, or "unknown")
        self.pair: dict[tuple[int, int], str | None] = {}
        self.sets: dict[tuple[int, frozenset[int]], str | None] = {}
        self.legacy_union: dict[int, str | None] = {}  # union verdicts without members
        for v in annotated.verdicts:
            if v.kind != "support" or v.statement_index is None:
                continue
            if v.source_index is not None:
                self._keep(self.pair, (v.statement_index, v.source_index), v.label)
            elif v.source_set:
                self._keep(self.sets, (v.statement_index, frozenset(v.source_set)), v.label)
            else:
                self._keep(self.legacy_union, v.statement_index, v.label)
        self.citations = {s.index: s.citations for s in annotated.statements}

    @staticmethod
    def _keep(table: dict, key: object, label: str | None) -> None:
        # the last verdict wins, except that one that decided nothing never hides a decided label
        decided = label if label in SUPPORT_LABELS else None
        if decided is not None or key not in table:
            table[key] = decided

    def by_source(self, statement: int, source: int) -> Outcome:
        """Does this one source fully support the statement? None when no verdict decides it."""
        label = self.pair.get((statement, source))
        return None if label is None else label == "full"

    def _judged_part(self, statement: int, members: frozenset[int]) -> frozenset[int]:
        """The members a judge could read or did decide: what a set verdict about them covers."""
        return frozenset(i for i in members if i in self.readable or self.pair.get((statement, i)) is not None)

    def by_set(self, statement: int, sources: Iterable[int]) -> Outcome:
        """Do these sources, taken together, fully support the statement?"""
        members = frozenset(sources)
        if not members:
            return False
        if len(members) == 1:
            return self.by_source(statement, next(iter(members)))
        judged = self._judged_part(statement, members)
        for part in dict.fromkeys((members, judged)):  # the whole set, then the part a judge could read
            if len(part) < 2:
                continue
            label = self.sets.get((statement, part))
            if label is None and statement in self.legacy_union and part == self._judged_part(
                    statement, frozenset(self.citations.get(statement, ()))):
                label = self.legacy_union[statement]
            if label is not None and (label == "full" or part == members):
                return label == "full"
        outcomes = [self.by_source(statement, i) for i in members]
        if any(outcomes):
            return True
        return None

    def by_citations(self, statement: Statement) -> Outcome:
        """Do the statement's citations, together, fully support it (False when it cites nothing)?"""
        return self.by_set(statement.index, statement.citations)


def any_supports(outcomes: Iterable[Outcome]) -> Outcome:
    """True if any outcome is True, False if all are False, else unknown."""
    seen_unknown = False
    for o in outcomes:
        if o:
            return True
        seen_unknown |= o is None
    return None if seen_unknown else False
