"""Shared ground of the judges that only label support (`nli`, `minicheck`).

An entailment model answers one question: does this text back this statement? It has nothing to say
about filler, stance or how confident an answer sounds. A support-only judge therefore hands
relevance, stance and confidence to the offline judge's rules, and says so in every such verdict:
the verdict carries the support judge's name (it is that judge's run), the rule set's own prompt
version, and a raw output that names the rules and keeps theirs.

Both judges also share the way a support probability becomes a label (`SupportThresholds`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Sequence

from pipeline.judges.base import BaseJudge, JudgeError, text_digest
from pipeline.judges.source_sets import joined_source
from pipeline.records import Answer, Source, Statement, Verdict
from pipeline.text.text import find_citation_markers, strip_citation_markers

__all__ = ["SupportOnlyJudge", "SupportThresholds", "statement_text", "DELEGATED_TO"]

DELEGATED_TO = "offline"  # the judge whose rules label relevance, stance and confidence


@dataclass(frozen=True)
class SupportThresholds:
    """Probability that the source supports the statement -> label: `full` from `full` up,
    `partial` from `partial` up, `none` below. Defaults: 0.5 (the usual decision point of an
    entailment head and the one Bespoke-MiniCheck's documentation gives) and 0.2 (a band where the
    model leans against support without ruling it out). Neither was fitted on expert labels; the
    AUC that `aee judges evaluate` reports does not depend on them."""

    full: float = 0.5
    partial: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 <= self.partial <= self.full <= 1.0:
            raise JudgeError(f"support thresholds must satisfy 0 <= partial <= full <= 1 (got partial={self.partial}, full={self.full})")

    def label(self, p: float) -> str:
        return "full" if p >= self.full else "partial" if p >= self.partial else "none"


def statement_text(statement: Statement) -> str:
    """The statement as the model should read it: citation markers removed, white space collapsed."""
    text = strip_citation_markers(statement.text, find_citation_markers(statement.text))
    return " ".join(text.split())


class SupportOnlyJudge(BaseJudge):
    """Base of the support-only judges: relevance, stance and confidence come from the offline
    judge's rules. Subclasses set `name` before labelling anything."""

    def __init__(self) -> None:
        from pipeline.judges.offline.judge import OfflineJudge

        # The offline judge loads its model only for support, which this judge never asks of it.
        self.rules = OfflineJudge()

    @property
    def rules_version(self) -> str:
        """The rule set's version, part of the cache fingerprint of a support-only judge."""
        return f"{DELEGATED_TO}:{self.rules.prompt_version}"

    def _delegated(self, verdict: Verdict) -> Verdict:
        try:
            inner: object = json.loads(verdict.raw) if verdict.raw else None
        except ValueError:
            inner = verdict.raw
        raw = {
            "delegated_to": DELEGATED_TO,
            "why": f"{self.name} labels support only; {verdict.kind} comes from the {DELEGATED_TO} judge's rules",
            "rules_output": inner,
        }
        return dataclasses.replace(verdict, judge=self.name, raw=json.dumps(raw, sort_keys=True, ensure_ascii=False))

    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        """Relevance, stance and confidence: the offline rules' material. Support: what the
        subclass's model reads of every statement (`support_inputs`) and of the source; set
        support: the same against the document that joins the set (`BaseJudge.support_set`)."""
        if method in ("relevance", "stance", "confidence"):
            return self.rules.cache_material(method, answer, statements, sources)
        if method == "support":
            claims = self.support_inputs(statements)
            return [{"claims": claims, "source": text_digest(self.source_read(s.text))} for s in sources]
        if method == "support_set":
            joined = joined_source(sources).text
            return [{"claims": self.support_inputs(statements), "source": text_digest(self.source_read(joined))}]
        return super().cache_material(method, answer, statements, sources)

    def support_inputs(self, statements: Sequence[Statement]) -> list[str]:
        """What the support model reads of each statement of a call (all of them: a judge may size
        its windows by the longest)."""
        return [statement_text(st) for st in statements]

    def source_read(self, text: str) -> str:
        """What the support model reads of a source text (the whole text, unless a subclass bounds it)."""
        return text or ""

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return [self._delegated(v) for v in self.rules.relevance(answer, statements)]

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return [self._delegated(v) for v in self.rules.stance(answer, statements)]

    def confidence(self, answer: Answer) -> Verdict:
        return self._delegated(self.rules.confidence(answer))
