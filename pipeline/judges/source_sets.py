"""Support of a statement by a SET of sources taken together, for judges that only judge one source.

NLI citation recall asks whether a statement's citations together back it up, which two sources can
do when neither does alone ("X was founded in 1990 [1] by Y [2]"). Judges answer that through
`Judge.support_set`. This module holds the two ways a single-source judge does it:

* `joined_source`: one synthetic document that joins the sources' texts, each under its own
  heading ("Document A", "Document B": letters, so a heading adds no number the statement could
  match). `BaseJudge.support_set` judges the statement against it with the ordinary `support`.
* `WindowedSetSupport`: for judges whose support verdicts name the passage they relied on
  (`Verdict.evidence`, the offline judge's best window). Each source is first judged alone; the
  passage each one gave as evidence for a statement is joined into a short document, and the
  statement is judged against that. Long sources stay cheap, and the combined evidence sits
  together where a window-based judge can see it. The joined passages are the verdict's evidence.

Either way the verdicts come back as set verdicts: `source_index` None, `source_set` the sorted
indexes of the sources (see `records.Verdict`).
"""

from __future__ import annotations

import dataclasses
import string
from typing import Sequence

from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["JOINED_INDEX", "joined_source", "as_set_verdicts", "WindowedSetSupport"]

MAX_EVIDENCE_CHARS = 2000  # a set verdict's evidence: the joined passages, bounded
JOINED_INDEX = 0  # no listed source has index 0 (markers start at 1), so it cannot be confused with one


def _heading(k: int) -> str:
    letters = string.ascii_uppercase
    return f"Document {letters[k % 26]}{k // 26 or ''}"


def joined_source(sources: Sequence[Source]) -> Source:
    """One document holding every source's text, each under a lettered heading with its title."""
    parts = []
    for k, source in enumerate(s for s in sources if (s.text or "").strip()):
        title = " ".join((source.title or "").split())[:200]
        parts.append(f"{_heading(k)}{': ' + title if title else ''}\n{source.text.strip()}")
    text = "\n\n".join(parts)
    return Source(index=JOINED_INDEX, title="sources taken together", text=text, fetch_ok=True if text else None)


def as_set_verdicts(verdicts: Sequence[Verdict], sources: Sequence[Source]) -> list[Verdict]:
    """Single-document verdicts about a joined document, restated as verdicts about the set."""
    members = tuple(sorted({s.index for s in sources}))
    return [dataclasses.replace(v, source_index=None, source_set=members) for v in verdicts]


class WindowedSetSupport:
    """`support_set` from the evidence passages of single-source verdicts (see the module doc).
    Mix in before `BaseJudge`; the class must provide `support`."""

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        evidence: dict[tuple[int, int], str] = {}
        for source in sources:
            for v in self.support(answer, statements, source):  # type: ignore[attr-defined]
                if v.statement_index is not None:
                    evidence[(v.statement_index, source.index)] = v.evidence or ""
        out: list[Verdict] = []
        for statement in statements:
            windows = [dataclasses.replace(s, text=evidence.get((statement.index, s.index), "")) for s in sources]
            joined = joined_source(windows)
            verdicts = self.support(answer, [statement], joined)  # type: ignore[attr-defined]
            # the evidence is what the judge read: every source's passage, under its heading
            out.extend(dataclasses.replace(v, evidence=joined.text[:MAX_EVIDENCE_CHARS]) for v in as_set_verdicts(verdicts, sources))
        return out
