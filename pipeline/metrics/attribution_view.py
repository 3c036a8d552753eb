"""Support outcomes of one answer's statements, by one source and by a set of sources: what the
attribution metrics (`pipeline.metrics.attribution`) read.

A (statement, source) pair is supported, not supported, or unknown. Unknown means the judge was
asked and could not answer (a verdict with no label), or was never asked although the source has
text to read (an unlabelled HAGRID sentence, a pair a carried judge did not cover). A source
without text and without a verdict supports nothing: there is nothing a reader could check.

Support by a set of sources is read from a set verdict (`Verdict.source_set`; a union verdict with
no members means all the statement's citations). Without one, a set that contains a source
supporting alone is supported (evidence that backs the statement alone still backs it among
others); otherwise the set is unknown.
"""

from __future__ import annotations

from typing import Iterable

from pipeline.records import AnnotatedAnswer, Statement

__all__ = ["Outcome", "AttributionView", "any_supports"]

Outcome = bool | None  # supported, not supported, unknown


class AttributionView:
    """Support outcomes of one answer's statements: by one source, by a set of sources."""

    def __init__(self, annotated: AnnotatedAnswer) -> None:
        self.annotated = annotated
        answer = annotated.answer
        self.readable = {s.index for s in answer.sources if s.fetch_ok is not False and (s.text or "").strip()}
        self.pair: dict[tuple[int, int], str | None] = {}  # (statement, source) -> label; None = asked, no answer
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
        # the last verdict wins, except that a failed one never hides a real label
        if label is not None or key not in table:
            table[key] = label

    def by_source(self, statement: int, source: int) -> Outcome:
        """Does this one source fully support the statement?"""
        key = (statement, source)
        if key in self.pair:
            label = self.pair[key]
            return None if label is None else label == "full"
        return None if source in self.readable else False

    def by_set(self, statement: int, sources: Iterable[int]) -> Outcome:
        """Do these sources, taken together, fully support the statement?"""
        members = frozenset(sources)
        # a source with neither text nor a verdict adds nothing to a set
        members = frozenset(i for i in members if i in self.readable or (statement, i) in self.pair)
        if not members:
            return False
        if len(members) == 1:
            return self.by_source(statement, next(iter(members)))
        label: str | None
        if (statement, members) in self.sets:
            label = self.sets[(statement, members)]
            if label is not None:
                return label == "full"
        elif statement in self.legacy_union and members == self._effective(statement):
            label = self.legacy_union[statement]
            if label is not None:
                return label == "full"
        if any(self.by_source(statement, i) for i in members):
            return True
        return None

    def _effective(self, statement: int) -> frozenset[int]:
        cited = self.citations.get(statement, ())
        return frozenset(i for i in cited if i in self.readable or (statement, i) in self.pair)

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
