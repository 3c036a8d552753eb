"""Judges whose labels come with the data: `recorded` (canonical `labels`, the AEE release) and
`human` (expert labels, ExpertQA). They compute nothing; the annotate stage keeps the verdicts the
importer attached to each answer, so they are never cached and never called."""

from __future__ import annotations

from typing import Sequence

from pipeline.judges.base import BaseJudge, JudgeError
from pipeline.records import Answer, Source, Statement, Verdict


class CarriedLabels(BaseJudge):
    """Stands for the labels carried by the data under one judge id ("recorded" or "human")."""

    carries_labels = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.prompt_version = "carried"

    def _refuse(self) -> list[Verdict]:
        raise JudgeError(f"judge {self.name!r} uses labels carried by the data; it cannot label new text")

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._refuse()

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._refuse()

    def confidence(self, answer: Answer) -> Verdict:
        return self._refuse()[0]

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        return self._refuse()

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        # Support by several sources together comes with the data too: the union flag of a
        # statement (canonical `union_supported`, HAGRID's attributable label on a sentence citing
        # several quotes), a support verdict with no source index.
        return self._refuse()

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        return self._refuse()

    def __repr__(self) -> str:
        return f"CarriedLabels({self.name!r})"
