"""Overlapping windows over a long source, for judges whose model reads a bounded input.

An entailment model reads a few hundred tokens at most, and a small fact-checking LLM behind a local
server reads a few thousand. So a long source is cut into windows that fit, each starting at a
sentence start where one lies near, consecutive windows overlapping so that a sentence cut at the end
of one window is whole in the next. The judge scores the statement against every window and keeps
the best one, whose text becomes the verdict's evidence. When a source has more windows than a
judge wants to score for one statement, `rank_windows` keeps those that share the most words with
the statement (weighted by how rare each word is among the windows).

Pure functions over integers and strings: no model, no I/O. The unit of `plan_windows` is whatever
the caller counts: tokens for an entailment model (`pipeline.judges.backends.nli`), characters for an LLM
(`char_windows`, used by `pipeline.judges.backends.minicheck`).
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Sequence

from pipeline.judges.backends.passages import content_words

__all__ = ["sentence_starts", "plan_windows", "char_windows", "rank_windows"]

# A sentence starts after end punctuation (and any closing quote or bracket) followed by white
# space, or after a line break.
_BOUNDARY_RE = re.compile(r"(?<=[.!?\u2026\u3002\uff01\uff1f])[\"'\u201d\u2019)\]]*\s+|\n\s*")


def sentence_starts(text: str) -> list[int]:
    """Character positions where a sentence begins (0 first when the text is not empty)."""
    if not text:
        return []
    starts = [0] + [m.end() for m in _BOUNDARY_RE.finditer(text) if 0 < m.end() < len(text)]
    return sorted(set(starts))


def plan_windows(n: int, breaks: Sequence[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows `[start, end)` over `n` units, each at most `size` long, together covering all of
    them, in order.

    `breaks` are the unit positions where a sentence begins. A window that does not reach the end
    ends at the last break in its second half when there is one (so it stops between sentences);
    the next one starts at the earliest break at most `overlap` units before that end, else exactly
    `overlap` units before it. Each window starts at least half its length after the previous one,
    so a source of n units gives at most about 4n/size windows.
    """
    n, size = int(n), max(1, int(size))
    overlap = max(0, min(int(overlap), size - 1))
    if n <= 0:
        return []
    marks = sorted({b for b in breaks if 0 < b < n})
    windows: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + size, n)
        if end < n:
            # the last sentence start in the window's second half: end the window just before it
            k = bisect.bisect_right(marks, end) - 1
            if k >= 0 and marks[k] > start + size // 2:
                end = marks[k]
        windows.append((start, end))
        if end >= n:
            return windows
        earliest = max(end - overlap, start + (end - start + 1) // 2)
        k = bisect.bisect_left(marks, earliest)
        start = marks[k] if k < len(marks) and marks[k] <= end else earliest


def char_windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """`plan_windows` over the characters of `text`, breaking at sentence starts; spans are
    trimmed of surrounding white space, and empty ones dropped."""
    out = []
    for s, e in plan_windows(len(text), sentence_starts(text), size, overlap):
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def _words(text: str) -> set[str]:
    return set(content_words(text))


def rank_windows(statement: str, windows: Sequence[str], keep: int) -> list[int]:
    """Indexes of the `keep` windows sharing the most statement words, each word weighted by its
    rarity among the windows (ties: the earlier window), returned in document order. All windows
    when there are no more than `keep`."""
    keep = max(1, int(keep))
    if len(windows) <= keep:
        return list(range(len(windows)))
    wanted = _words(statement)
    bags = [_words(w) for w in windows]
    df = {t: sum(1 for bag in bags if t in bag) for t in wanted}
    n = len(windows)
    scores = [sum(math.log(1.0 + n / df[t]) for t in wanted & bag) for bag in bags]
    best = sorted(range(n), key=lambda j: (-scores[j], j))[:keep]
    return sorted(best)
