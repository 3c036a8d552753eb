"""Judges whose labels come with the data: `recorded` (canonical `labels`, the AEE release),
`human` (expert labels, ExpertQA) and `human:audit` (the labels people gave a dataset's audit
samples). They compute nothing; the annotate stage keeps the verdicts attached to each answer, so
they are never cached and never called."""

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


AUDIT_JUDGE = "human:audit"


class AuditLabels(CarriedLabels):
    """`human:audit`: the labels people gave in audits of a dataset (pipeline.audit). The data never
    carries them: `aee audit publish` attaches them to each answer as the runner reads it. Built any
    other way (`aee run --judge human:audit`) it would find no label and write a judge that knows
    nothing over the published one, so the factory refuses it with the command that writes it."""

    def __init__(self, name: str = AUDIT_JUDGE, *, labels_attached: bool = False) -> None:
        if not labels_attached:
            raise JudgeError(f"judge {name!r} holds the labels people gave in audits; it is written by "
                             "`aee audit publish --dataset NAME` (or the Audit the judge page), not by `aee run`")
        super().__init__(name)


FITTED_JUDGE = "fitted"


class FittedLabels(CarriedLabels):
    """`fitted`: the judge an audit's labels fitted over the audited judge's signals
    (pipeline.audit.fitted_run). Its labels are computed once from the fit and attached by `aee audit
    fit`; built any other way it would hold nothing, so the factory refuses it with the command."""

    def __init__(self, name: str = FITTED_JUDGE, *, labels_attached: bool = False) -> None:
        if not labels_attached:
            raise JudgeError(f"judge {name!r} is fitted to people's audit labels; it is written by "
                             "`aee audit fit --dataset NAME` (or the Audit page's \"Fit a judge\"), not by `aee run`")
        super().__init__(name)
