"""The judge seam: the only place where labels are produced.

A judge labels one answer at a time. The annotate stage decides which methods to call (stance only
for debate queries, support only for sources with text) and wraps the judge in caching, retries and
rate limits; a judge itself stays a plain object that turns inputs into verdicts.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from pipeline.records import Answer, Source, Statement, Verdict


@runtime_checkable
class Judge(Protocol):
    """What every judge backend provides. Each method returns verdicts and never raises on bad
    model output: an unparseable answer becomes a verdict with label None and the raw text."""

    name: str  # stable id used in cache keys and Parquet, e.g. "offline", "openai:gpt-4o-mini"
    prompt_version: str  # version of the prompts / rules, e.g. "v1"

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One `relevance` verdict per statement: label "relevant" or "filler"."""
        ...

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One `stance` verdict per given statement: "agree", "disagree" or "neutral" with respect
        to the side the query's wording takes. Only called for debate queries."""
        ...

    def confidence(self, answer: Answer) -> Verdict:
        """One `confidence` verdict for the whole answer: label "1".."5"."""
        ...

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        """One `support` verdict per statement against this source: "full", "partial" or "none",
        with `score` in [0, 1] where the judge has a continuous score and `evidence` the passage
        it used."""
        ...


class JudgeError(Exception):
    """A judge could not be built or reached (bad configuration, missing model, no network)."""
