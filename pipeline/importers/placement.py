"""Where a citation given by position lands: offsets in characters or UTF-8 bytes, verified against
the words they should cover, located again by text when they do not, and mapped onto statements.

The rule every mapper follows: a citation lands on the words its span covers, or it is dropped with a
counted reason. It is never moved onto a neighbouring statement because an offset was off: an offset
whose text does not match is located by that text (the segment text Gemini gives, the URL OpenAI
links) and counted as "located by text", and a citation that cannot be located is dropped.

Counts (`attach_spans`) and the notes a mapper adds (`EngineParse.note`) end up in the answer's
`meta["citation_notes"]`; `pipeline.importers.import_report` turns them into the import report.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable

from pipeline.text.text import CitationMarker

# How a span citation was placed: "offsets" (the provider's positions, checked), "text" (located by
# the segment text, cited text or URL after the offsets failed or were absent), "link" (located by
# its URL and allowed to fall back to the paragraph that holds it), "block" (a cited text block's
# own extent, Anthropic).
HOW = ("offsets", "text", "link", "block")

# Reasons a span citation is dropped; each is counted as `spans_<reason>` in citation_notes.
DROP_REASONS = {
    "outside_text": "point outside the answer text",
    "reversed": "end before they start",
    "empty": "cover no characters",
    "not_in_a_statement": "cover no statement (a heading or blank space)",
    "text_not_found": "give a text that is not in the answer",
    "url_not_in_text": "have no position and a URL that the answer text never links",
    "not_answer_text": "point into a part that is not answer text (thoughts, tool calls)",
}


@dataclass(frozen=True)
class SpanCitation:
    """A citation given as a character span of the answer text (end exclusive) and the sources it names."""

    start: int
    end: int
    indexes: tuple[int, ...]
    how: str = "offsets"


class Utf8Offsets:
    """Map UTF-8 byte offsets of a text to character offsets (Gemini counts bytes, Python counts
    characters: any non-ASCII character before a segment shifts the two apart)."""

    def __init__(self, text: str) -> None:
        self.n = len(text)
        self.starts: list[int] | None = None
        if not text.isascii():
            starts, pos = [], 0
            for ch in text:
                starts.append(pos)
                pos += len(ch.encode("utf-8", "surrogatepass"))
            starts.append(pos)
            self.starts = starts

    @property
    def total(self) -> int:
        return self.n if self.starts is None else self.starts[-1]

    def char(self, byte: int) -> int | None:
        """The character at which this byte offset falls (a byte inside a character counts as the
        character's start); None when the offset lies outside the text."""
        if not 0 <= byte <= self.total:
            return None
        if self.starts is None:
            return byte
        return bisect_right(self.starts, byte) - 1


def squash(text: str) -> str:
    """Whitespace collapsed: a segment text and the words it names compare equal across line breaks."""
    return " ".join(text.split())


def nearest_occurrence(text: str, needle: str, near: int) -> int | None:
    """Where `needle` occurs in `text` closest to position `near`, among its first 100
    occurrences (a mapper repairing offsets a provider got wrong); None when it is empty or absent."""
    if not needle:
        return None
    hits: list[int] = []
    pos = text.find(needle)
    while pos >= 0 and len(hits) < 100:
        hits.append(pos)
        pos = text.find(needle, pos + 1)
    return min(hits, key=lambda h: abs(h - near)) if hits else None


def locate_text(text: str, needle: str, near: int) -> tuple[int, int] | None:
    """The span of `needle` in `text` nearest to `near`: exactly, else with any run of whitespace
    matching any other (a segment text quoted on one line, the answer wrapped over two)."""
    needle = needle.strip()
    if not needle:
        return None
    at = nearest_occurrence(text, needle, near)
    if at is not None:
        return at, at + len(needle)
    words = needle.split()
    if len(words) < 2 or len(needle) > 5_000:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    found = [(m.start(), m.end()) for _, m in zip(range(100), pattern.finditer(text))]
    return min(found, key=lambda se: abs(se[0] - near)) if found else None


def attach_spans(text: str, spans: list[tuple[int, int]], citations: Iterable[SpanCitation]) -> tuple[list[list[tuple[int, int]]], dict[str, int]]:
    """For each statement span, the (position, source index) citations that land in it, and counts.

    A citation lands in every statement whose non-space characters it overlaps; a zero-length one
    in the statement that contains (or ends at) its position. A citation located by its link that
    covers no statement (the link on a line of its own) goes to the statement before it in the same
    paragraph. Everything else that lands nowhere is dropped and counted by reason."""
    hits: list[list[tuple[int, int]]] = [[] for _ in spans]
    counts = {"placed": 0, "by_text": 0, "in_paragraph": 0, "straddling": 0,
              "outside_text": 0, "reversed": 0, "not_in_a_statement": 0}
    starts = [s for s, _ in spans]
    n = len(text)
    for cit in citations:
        a, b = cit.start, cit.end
        if b < a and 0 <= b and a <= n:
            counts["reversed"] += 1
            continue
        if not (0 <= a <= b <= n):
            counts["outside_text"] += 1
            continue
        landed = _statements_under(text, spans, starts, a, b)
        if not landed and cit.how == "link":
            landed = _in_paragraph(text, spans, a, b)
            counts["in_paragraph"] += bool(landed)
        if not landed:
            counts["not_in_a_statement"] += 1
            continue
        counts["placed"] += 1
        counts["by_text"] += cit.how in ("text", "link")
        counts["straddling"] += len(landed) > 1
        for i in landed:
            hits[i].extend((max(a, spans[i][0]), index) for index in cit.indexes)
    return hits, counts


def _statements_under(text: str, spans: list[tuple[int, int]], starts: list[int], a: int, b: int) -> list[int]:
    landed: list[int] = []
    i = max(bisect_right(starts, a) - 1, 0)
    while i < len(spans) and spans[i][0] <= b:
        s, e = spans[i]
        if a == b:
            if s <= a <= e:
                landed.append(i)
                break
        else:
            lo, hi = max(a, s), min(b, e)
            if lo < hi and text[lo:hi].strip():
                landed.append(i)
        i += 1
    return landed


def _in_paragraph(text: str, spans: list[tuple[int, int]], a: int, b: int) -> list[int]:
    """The last statement before [a, b) in the same paragraph (no blank line between), else the first
    after it; [] when the paragraph holds no statement."""
    para_start = text.rfind("\n\n", 0, a)
    para_end = text.find("\n\n", b)
    para_start = 0 if para_start < 0 else para_start
    para_end = len(text) if para_end < 0 else para_end
    before = [i for i, (s, e) in enumerate(spans) if para_start <= s and e <= a]
    if before:
        return [before[-1]]
    after = [i for i, (s, e) in enumerate(spans) if b <= s and e <= para_end]
    return [after[0]] if after else []


def reattach_leading_markers(text: str, spans: list[tuple[int, int]], markers: list[CitationMarker]) -> list[tuple[int, int]]:
    """Give markers that open a statement to the statement before it on the same line.

    Engines cite after the claim: "Paris is the capital. ([wikipedia.org](https://...))" - the
    splitter ends the sentence at the full stop, so the parenthesised link would open the next
    statement (and so would You.com's "claim. [[1]] Next"). Here it moves back to the sentence it
    cites."""
    ends = {m.start: m.end for m in markers}
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if not out or "\n" in text[out[-1][1]:s]:
            out.append((s, e))
            continue
        j, closer, consumed = s, "", False
        if text[j] in "([" and j + 1 < e and (text[j + 1] in "[(" or (j + 1) in ends):
            j, closer = j + 1, ")" if text[j] == "(" else "]"  # "([site](url))", You.com's "[[1, 2]]"
        while True:
            while j < e and text[j] in " \t":
                j += 1
            if j in ends and ends[j] <= e:
                j, consumed = ends[j], True
            elif consumed and j < e and text[j] in ",;":
                j += 1
            else:
                break
        if closer and consumed:
            if j < e and text[j] == closer:
                j += 1
            else:
                consumed = False  # the bracket opens more than markers: a real parenthesis
        if not consumed:
            out.append((s, e))
            continue
        rest = j
        while rest < e and text[rest].isspace():
            rest += 1
        out[-1] = (out[-1][0], j)
        if rest < e:
            out.append((rest, e))
    return out
