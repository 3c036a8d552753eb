"""Everything a metric function reads about one answer, computed once per (answer, config)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

import numpy as np

from pipeline.gold.gold import GoldSimilarities, read_gold_similarity
from pipeline.matrices import LabelView, Matrices, Mode, build_matrices, is_relevant, label_view, unknown_pairs
from pipeline.metrics.attribution_view import AttributionView, Outcome
from pipeline.metrics.necessity import NECESSITY_METHODS
from pipeline.records import AnnotatedAnswer, Statement, unchecked_cause, unreadable_code
from pipeline.text.text import all_cited_indexes

MODES: tuple[str, ...] = ("strict", "parity")  # the two rule sets (docs/design/decisions.md)
MODE_LABELS: dict[str, str] = {"strict": "Strict", "parity": "Paper parity"}  # as every page names them
PARITY_NECESSITY = "greedy"  # the released notebook's set cover; parity always uses it


@dataclass(frozen=True)
class ScoreConfig:
    """How to score: which rules (strict or paper-parity) and which necessity algorithm."""

    mode: Mode = "strict"
    necessity: str = "exact"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.necessity not in NECESSITY_METHODS:
            raise ValueError(f"necessity must be one of {', '.join(NECESSITY_METHODS)}, not {self.necessity!r}")

    @property
    def necessity_in_use(self) -> str:
        """The necessity algorithm these rules really run: parity always uses the notebook's greedy cover."""
        return effective_necessity(self.mode, self.necessity)


def effective_necessity(mode: str, necessity: str) -> str:
    """The necessity algorithm a (mode, necessity) choice runs: parity fixes it to greedy."""
    return PARITY_NECESSITY if mode == "parity" else necessity


PARITY_SKIP_REASON = "paper-parity skips answers with no relevant statement or no fetched source"
CITED_ONLY_REASON = (
    "the labels judge only cited (statement, source) pairs, so support by uncited sources is unknown"
)


class ScoringContext:
    """Label view, matrices and derived facts of one annotated answer under one config."""

    def __init__(self, annotated: AnnotatedAnswer, config: ScoreConfig | None = None) -> None:
        self.annotated = annotated
        self.answer = annotated.answer
        self.config = config or ScoreConfig()
        self.view: LabelView = label_view(annotated)
        self.matrices: Matrices = build_matrices(annotated, self.view, self.config.mode)

    @property
    def mode(self) -> Mode:
        return self.config.mode

    @cached_property
    def relevant_statements(self) -> list[Statement]:
        """Statements the judge did not mark as filler."""
        return [s for s in self.annotated.statements if is_relevant(self.view, s)]

    @cached_property
    def attribution(self) -> AttributionView:
        """Support by one source and by sets of sources, as the attribution metrics read it."""
        return AttributionView(self.annotated)

    @cached_property
    def gold_similarity(self) -> GoldSimilarities:
        """The BERTScore-style similarity with each gold answer, as the annotate stage measured it."""
        return read_gold_similarity(self.answer, self.annotated.verdicts)

    @cached_property
    def is_debate(self) -> bool:
        return self.answer.query_type == "debate"

    @cached_property
    def support_scope_cited_only(self) -> bool:
        """True when the labels cover only cited pairs (ExpertQA's expert judgments)."""
        return self.answer.meta.get("support_scope") == "cited_only"

    @cached_property
    def has_support_labels(self) -> bool:
        """True when any decided support verdict (full / partial / none) exists for this answer."""
        return bool(self.view.support) or bool(self.view.union_support)

    @cached_property
    def unknown_pairs(self) -> dict[tuple[int, int], str]:
        """{(statement, source): cause code} of every pair that must be decided and is not, whatever
        the mode (the attribution and Liu metrics do not depend on it)."""
        return unknown_pairs(self.annotated, self.view)

    def cause(self, pairs: Iterable[tuple[int, int]] | None = None) -> str:
        """The commonest cause, in words, among these unknown pairs (all of the answer's by default)."""
        codes = self.unknown_pairs
        keys = codes.keys() if pairs is None else [p for p in pairs if p in codes]
        counts = Counter(codes[k] for k in keys)
        return unchecked_cause(counts.most_common(1)[0][0]) if counts else ""

    def statement_supported(self, row: int) -> Outcome:
        """Row `row` of the matrices: does some source column fully support it (True), does every
        column decidedly not (False), or could an unknown pair still (None)?

        A source the statement does not cite and that has no text to read (none pasted or carried, a
        fetch that failed) leaves no doubt about the statement: nothing can be read in it and the
        statement does not claim it, so such pairs do not make a cited statement whose readable sources
        were all judged undecided. The statement's mark, which reads its cited pairs, then agrees
        with this metric (issue 32). Pairs the judge could not decide, and cited sources without
        text, still make it undecided."""
        m = self.matrices
        if m.support[row].any():
            return True
        assert m.unknown is not None
        statement = m.statement_indexes[row]
        doubt = [m.source_indexes[j] for j in np.flatnonzero(m.unknown[row])
                 if not self._unreadable_uncited(statement, m.source_indexes[j])]
        return None if doubt else False

    @cached_property
    def _unreadable_sources(self) -> frozenset[int]:
        return frozenset(s.index for s in self.answer.sources if unreadable_code(s))

    @cached_property
    def _citations(self) -> dict[int, tuple[int, ...]]:
        return {s.index: tuple(s.citations) for s in self.annotated.statements}

    def _unreadable_uncited(self, statement: int, source: int) -> bool:
        """The pair's source has no text and the statement, which cites some other listed source,
        does not cite it (see statement_supported). A statement that cites no listed source claims
        none of them, so a source nobody could read may still be the one that backs it: undecided."""
        cited = self._citations.get(statement, ())
        return (bool(cited) and source in self._unreadable_sources and source not in cited
                and self.matrices.unknown_codes.get((statement, source)) not in ("undecided", "call_failed", "unreadable"))

    def unknown_in_rows(self, rows: Iterable[int]) -> list[tuple[int, int]]:
        """The unknown (statement, source) pairs of these matrix rows."""
        m = self.matrices
        assert m.unknown is not None
        return [(m.statement_indexes[i], m.source_indexes[j]) for i in rows for j in np.flatnonzero(m.unknown[i])]

    @cached_property
    def parity_skip(self) -> str:
        """Reason the released notebook would skip this answer entirely, or ""."""
        if self.mode != "parity":
            return ""
        if not self.relevant_statements or not self.matrices.source_indexes:
            return PARITY_SKIP_REASON
        return ""

    @cached_property
    def source_urls(self) -> dict[str, int]:
        return {s.url: s.index for s in self.answer.sources if s.url}

    @cached_property
    def cited_anywhere(self) -> list[int]:
        """Every index a marker points to in the full answer text or in any statement."""
        seen: dict[int, None] = {}
        for index in all_cited_indexes(self.answer.text, self.source_urls):
            seen.setdefault(index, None)
        for s in self.annotated.statements:
            for index in (*s.citations, *s.dangling):
                seen.setdefault(index, None)
        return list(seen)

    @cached_property
    def dangling_count(self) -> int:
        """Distinct (statement, index) citations that point to no listed source."""
        return sum(len(s.dangling) for s in self.annotated.statements)
