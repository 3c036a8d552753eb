"""Records an importer refuses, one line each, while the rest of the dataset goes on.

One bad record never aborts a dataset: every importer (canonical JSON / JSONL, engines' responses and
capture envelopes, the AEE release, ExpertQA, HAGRID, and so `aee run --path` folders) hands a
record it cannot read to `Refusals.refuse`, which notes the file, the line (or the item of a JSON
list), the field and why, and goes on with the next record. `strict` restores stop-at-first: the
first refusal raises its InputError (`aee run --strict`, `aee import --strict`).

An importer called without a `Refusals` (tests, `aee score`, library callers) raises as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar

from pipeline.errors import InputError, one_line

T = TypeVar("T")

MAX_LISTED = 200  # refusals kept in full per run; beyond, only counted (a file of a million bad rows)
_LINE_RE = re.compile(r"(?::(\d+)|\[(\d+)\]| event (\d+))")


@dataclass(frozen=True)
class Refusal:
    """One refused record: where it is and why."""

    file: str
    line: str  # "12" (JSONL line), "[3]" (item of a JSON list), or "" (the whole file, or unknown)
    field: str
    why: str
    record: str = ""  # the record as the error named it (file:line and the answer id, when known)

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "line": self.line, "field": self.field, "why": self.why, "record": self.record}

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line and not self.line.startswith("[") else f"{self.file}{self.line}"
        field = f", field {self.field!r}" if self.field else ""
        return one_line(f"refused {where}{field}: {self.why}", 600)


def refusal_of(exc: InputError, file: str = "") -> Refusal:
    """The refusal an InputError describes; its record names the file and line ("a.jsonl:12 (id)")."""
    record = exc.record or file
    found = _LINE_RE.search(record)
    line = ""
    if found:
        line = found.group(1) or (f"[{found.group(2)}]" if found.group(2) else "") or found.group(3) or ""
    why = str(exc)
    prefix = ", ".join(p for p in (f"record {exc.record}" if exc.record else "", f"field {exc.field!r}" if exc.field else "") if p)
    if prefix and why.startswith(prefix + ": "):
        why = why[len(prefix) + 2:]
    name = file or (record.split(":")[0].split("[")[0].split(" ")[0] if record else "")
    return Refusal(one_line(name, 300), line, exc.field, one_line(why, 400), exc.record)


class Refusals:
    """The refused records of one read; `strict` raises the first one instead."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.items: list[Refusal] = []
        self.count = 0
        self._seen: set[tuple[str, str, str, str]] = set()  # a read done twice (ids, then the stream) lists each once

    def refuse(self, exc: InputError, file: str = "") -> None:
        if self.strict:
            raise exc
        r = refusal_of(exc, file)
        key = (r.file, r.line, r.field, r.record or r.why)
        if key in self._seen:
            return
        self._seen.add(key)
        self.count += 1
        if len(self.items) < MAX_LISTED:
            self.items.append(r)

    def by_file(self) -> dict[str, list[dict[str, str]]]:
        out: dict[str, list[dict[str, str]]] = {}
        for r in self.items:
            out.setdefault(r.file or "(input)", []).append(r.as_dict())
        return out

    def lines(self) -> list[str]:
        out = [r.text() for r in self.items]
        if self.count > len(self.items):
            out.append(f"... and {self.count - len(self.items):,} more refused records (the first {MAX_LISTED} are listed)")
        return out


def refuse_or_raise(refusals: Refusals | None, exc: InputError, file: str = "") -> None:
    """Note the refusal, or raise when there is no collector (the importer's old stop-at-first)."""
    if refusals is None:
        raise exc
    refusals.refuse(exc, file)


def each_record(records: Iterable[tuple[str, Any]], parse: Callable[[str, Any], Iterable[T]],
                refusals: Refusals | None, file: str = "") -> Iterator[T]:
    """parse(where, obj) for every record, all of one record's answers or none: a record that raises
    InputError is refused (or raises, without a collector) and the next one is read."""
    for where, obj in records:
        try:
            made = list(parse(where, obj))
        except InputError as exc:
            refuse_or_raise(refusals, exc, file)
            continue
        yield from made
