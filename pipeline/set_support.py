"""Which sets of sources the annotate stage asks a judge about (pure planning; asking is
`pipeline.annotate.set_support_verdicts`, so this module needs no judge and the LLM cost estimate
can plan with it from below).

Support by a set of sources (`Judge.support_set`) costs a call per set, so it is asked only where a
metric reads it:

* NLI citation recall needs, for every relevant statement that cites two or more sources with
  text, one verdict on all of them together (the "union" set). One citation needs no set: its
  single-source verdict answers.
* NLI citation precision asks, for a citation that does not support its statement alone, whether
  the statement's other citations still support it without it. With two citations, "the others" is
  one source, whose single verdict exists already; with three or more it is a set, asked only when
  the union supports the statement (otherwise precision never reads it) and only for citations
  whose own verdict is not "full".

Statements that cite the same set are asked in one call. The verdicts are ordinary support
verdicts with `source_index` None and `source_set` the members.
"""

from __future__ import annotations

from typing import Sequence

from pipeline.matrices import readable_citations
from pipeline.records import Answer, Source, Statement

__all__ = ["union_groups", "leave_one_out_groups"]

SetGroup = tuple[tuple[Source, ...], list[Statement]]


def _group(answer: Answer, wanted: Sequence[tuple[tuple[int, ...], Statement]]) -> list[SetGroup]:
    """(sources of the set, statements asking about it), sets in order of first appearance."""
    by_set: dict[tuple[int, ...], list[Statement]] = {}
    for members, statement in wanted:
        group = by_set.setdefault(tuple(sorted(members)), [])
        if statement not in group:
            group.append(statement)
    out: list[SetGroup] = []
    for members, statements in by_set.items():
        sources = tuple(s for s in (answer.source(i) for i in members) if s is not None)
        out.append((sources, statements))
    return out


def union_groups(answer: Answer, statements: Sequence[Statement]) -> list[SetGroup]:
    """The sets NLI citation recall needs: each statement's readable citations, when two or more."""
    wanted = []
    for statement in statements:
        cited = readable_citations(answer, statement)
        if len(cited) >= 2:
            wanted.append((cited, statement))
    return _group(answer, wanted)


def leave_one_out_groups(answer: Answer, statements: Sequence[Statement], single: dict[tuple[int, int], str | None],
                         union: dict[int, str | None]) -> list[SetGroup]:
    """The "all citations but this one" sets NLI citation precision needs (see the module doc):
    statements with three or more readable citations whose union is "full", for each citation
    whose single verdict is not "full"."""
    wanted = []
    for statement in statements:
        cited = readable_citations(answer, statement)
        if len(cited) < 3 or union.get(statement.index) != "full":
            continue
        for index in cited:
            if single.get((statement.index, index)) != "full":
                wanted.append((tuple(i for i in cited if i != index), statement))
    return _group(answer, wanted)
