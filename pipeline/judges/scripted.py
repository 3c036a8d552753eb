"""`scripted`: a deterministic rule-based judge for tests, demos and plumbing checks.

It answers instantly from fixed rules (no model, no network) and counts every call it answers,
so tests can assert how often a stage asked. Select it by name like any judge:
`get_judge("scripted")`. Its labels mean nothing about real support; never report them as such.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Sequence

from pipeline.judges.base import BaseJudge, text_digest, unchecked_verdicts
from pipeline.records import Answer, Source, Statement, Verdict
from pipeline.text.text import find_citation_markers, strip_citation_markers

_WORD = re.compile(r"[a-z0-9]+")


class ScriptedJudge(BaseJudge):
    """Relevance by a filler phrase list, stance 'agree', confidence 4, support by word overlap."""

    name = "scripted"
    # v2: every marker form is left out of a statement's words (v1 stripped only "[n]", so a "【n】"
    # marker counted as a word and a support label moved with a citation)
    prompt_version = "scripted-v2"

    def __init__(self, **_: object) -> None:
        self.calls = 0
        # A delay per call makes runs slow enough to be killed part-way (crash-safety tests).
        self.delay = float(os.environ.get("SCRIPTED_JUDGE_DELAY", "0"))

    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        """Its rules read the statements' texts (relevance, support), how many statements there are
        (stance), nothing (confidence) and each source's text (support)."""
        texts = [s.text for s in statements]
        if method == "relevance":
            return [texts]
        if method == "stance":
            return [len(statements)]
        if method == "confidence":
            return [None]
        if method == "support":
            return [{"statements": texts, "source": text_digest(s.text)} for s in sources]
        return super().cache_material(method, answer, statements, sources)

    def _v(self, answer: Answer, kind: str, label: str, **kw) -> Verdict:
        return Verdict(answer.answer_id, kind, label, self.name, self.prompt_version, raw=label, **kw)  # type: ignore[arg-type]

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        self.calls += 1
        filler = ("hope this helps", "great question", "here are some")
        return [self._v(answer, "relevance", "filler" if any(f in s.text.lower() for f in filler) else "relevant",
                        statement_index=s.index) for s in statements]

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        self.calls += 1
        return [self._v(answer, "stance", "agree", statement_index=s.index) for s in statements]

    def confidence(self, answer: Answer) -> Verdict:
        self.calls += 1
        return self._v(answer, "confidence", "4")

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if not (source.text or "").strip():  # nothing to read: not checked, as every judge answers
            return unchecked_verdicts(self, answer, statements, source)
        words = set(_WORD.findall(source.text.lower()))
        out = []
        for s in statements:
            mine = set(_WORD.findall(strip_citation_markers(s.text, find_citation_markers(s.text)).lower()))
            share = len(mine & words) / max(len(mine), 1)
            label = "full" if share >= 0.6 else "partial" if share >= 0.3 else "none"
            out.append(self._v(answer, "support", label, statement_index=s.index, source_index=source.index, score=share))
        return out
