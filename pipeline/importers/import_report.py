"""The import report: per input file, how many answers, statements and sources came in, and how
every citation got onto its statement (a numbered marker, the provider's offsets, or its text found
in the answer) or why it was dropped, and each record refused (line, field, why: `refusals`).

Counts come from the answers themselves (statements, sources, the `citation_notes` an engine mapper
left in `meta`), so the report of a run (`aee run`, the manifest's `import_report`, the Overview
page) and of one file (`aee score`) agree. A citation here is one (statement span, source) link as
the response gave it: one cited span (a Gemini support, an OpenAI annotation, an Anthropic cited
block), whatever the number of sources it names, or one source number of a marker ([1][2] is two).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable

from pipeline.importers.placement import DROP_REASONS
from pipeline.importers.refusals import Refusals
from pipeline.records import AnnotatedAnswer

REPORT_COLUMNS = ("answers", "statements", "sources", "by_markers", "by_offsets", "by_text", "dropped", "dangling")
COLUMN_LABELS = {
    "file": "file", "formats": "format", "answers": "answers", "statements": "statements", "sources": "sources",
    "by_markers": "markers", "by_offsets": "offsets", "by_text": "by text",
    "dropped": "dropped", "dangling": "dangling", "why_dropped": "why dropped",
    "refused": "refused", "why_refused": "why refused",
}


@dataclass
class FileReport:
    """What one input file gave."""

    answers: int = 0
    statements: int = 0
    sources: int = 0
    by_markers: int = 0
    by_offsets: int = 0
    by_text: int = 0
    dropped: int = 0
    dangling: int = 0
    beyond_table: int = 0  # span citations whose source number the tables cannot hold (kept, dangling)
    why_dropped: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)

    def add(self, annotated: AnnotatedAnswer, statements: int) -> None:
        answer = annotated.answer
        self.answers += 1
        self.statements += statements
        self.sources += len(answer.sources)
        fmt = answer.meta.get("format") or "canonical"
        self.formats[fmt] = self.formats.get(fmt, 0) + 1
        notes = _notes(answer.meta.get("citation_notes"))
        if notes is None or not notes and fmt in ("canonical", "expertqa", "hagrid", "aee"):
            # records that carry their statements: every listed citation came from the data's markers or lists
            self.by_markers += sum(len(s.citations) for s in annotated.statements)
            self.dangling += sum(len(s.dangling) for s in annotated.statements)
            return
        placed, by_text = notes.get("spans_placed", 0), notes.get("spans_by_text", 0)
        self.by_markers += notes.get("markers_placed", 0)
        self.dangling += notes.get("markers_dangling", 0)
        self.beyond_table += notes.get("index_past_table", 0)
        self.by_offsets += placed - by_text
        self.by_text += by_text
        for reason in DROP_REASONS:
            n = notes.get(f"spans_{reason}", 0)
            if n:
                self.dropped += n
                self.why_dropped[reason] = self.why_dropped.get(reason, 0) + n

    def as_dict(self) -> dict:
        return {"answers": self.answers, "statements": self.statements, "sources": self.sources,
                "by_markers": self.by_markers, "by_offsets": self.by_offsets, "by_text": self.by_text,
                "dropped": self.dropped, "dangling": self.dangling, "beyond_table": self.beyond_table,
                "why_dropped": dict(sorted(self.why_dropped.items())),
                "formats": dict(sorted(self.formats.items()))}


def _notes(raw: str | None) -> dict[str, int] | None:
    if not raw:
        return {}
    try:
        notes = json.loads(raw)
    except ValueError:
        return None
    return {k: v for k, v in notes.items() if isinstance(v, int)} if isinstance(notes, dict) else None


class ImportReport:
    """Reports per file, filled answer by answer (the runner's chunks, `aee score`'s list)."""

    def __init__(self) -> None:
        self.files: dict[str, FileReport] = {}

    def add(self, annotated: AnnotatedAnswer, statements: int | None = None, default_file: str = "") -> None:
        name = annotated.answer.meta.get("source_file") or default_file or "(input)"
        count = len(annotated.statements) if statements is None else statements
        self.files.setdefault(name, FileReport()).add(annotated, count)

    def extend(self, answers: Iterable[AnnotatedAnswer], default_file: str = "") -> ImportReport:
        for a in answers:
            self.add(a, default_file=default_file)
        return self

    def as_dict(self, refusals: Refusals | None = None) -> dict[str, dict]:
        """Per file; with `refusals`, each file's refused records under "refused" (a file whose every
        record was refused is listed too, with 0 answers)."""
        out = {name: report.as_dict() for name, report in sorted(self.files.items())}
        if refusals is not None:
            for name, items in refusals.by_file().items():
                out.setdefault(name, FileReport().as_dict())["refused"] = items
            out = dict(sorted(out.items()))
        return out


def why_text(why: dict[str, int]) -> str:
    """"3 citation(s) point outside the answer text; 1 citation(s) cover no statement" ("" when none dropped)."""
    return "; ".join(f"{n} citation(s) {DROP_REASONS.get(reason, reason)}" for reason, n in sorted(why.items()) if n)


def refused_text(refused: list[dict], limit: int = 20) -> list[str]:
    """Each refused record of a file in words ("line 12, field 'sources': why"), at most `limit`."""
    out = []
    for r in refused[:limit]:
        line = r.get("line") or ""
        where = (f"record {r['record']}" if r.get("record") else "the file") if not line else \
            f"item {line}" if line.startswith("[") else f"line {line}"
        field = f", field {r['field']!r}" if r.get("field") else ""
        out.append(f"{where}{field}: {r.get('why', '')}")
    if len(refused) > limit:
        out.append(f"and {len(refused) - limit} more")
    return out


def report_lines(report: dict[str, dict]) -> list[str]:
    """The report as terminal lines: one per file, then why citations were dropped."""
    lines = []
    for name, row in report.items():
        formats = ", ".join(row.get("formats", {})) or "?"
        lines.append(f"import {name} ({formats}): {row['answers']} answers, {row['statements']} statements, "
                     f"{row['sources']} sources; citations: {row['by_markers']} by markers, {row['by_offsets']} placed by offsets, "
                     f"{row['by_text']} located by text, {row['dropped']} dropped"
                     + (f", {row['dangling']} dangling markers" if row.get("dangling") else ""))
        if row.get("why_dropped"):
            lines.append(f"  dropped: {why_text(row['why_dropped'])}")
        if row.get("beyond_table"):
            lines.append(f"  warning: {row['beyond_table']} citation(s) name a source number past what the results tables "
                         "store (2,147,483,647); kept as dangling at that bound")
        lines.extend(f"  refused {text}" for text in refused_text(row.get("refused") or [], limit=10_000))
    return lines
