"""Find pre-split statements (claims) in the answer text they were cut from.

Some datasets ship an answer together with its claims but without character offsets (ExpertQA:
the claims were produced by a sentence splitter that ate newlines, list bullets and bold markers,
and occasionally an annotator's copy lost or added a citation marker). To highlight such claims in
place we compare word sequences, not characters:

* both texts are reduced to word tokens (letters and digits after Unicode NFKC folding and
  lower-casing), so whitespace, markdown emphasis, quotes, dashes and punctuation do not matter;
* tokens inside citation markers ("[2]", "[1, 3]", "[2][4]") are dropped on both sides, so a
  marker missing from the claim or from the answer does not break the match;
* list bullets the splitter glued to a claim's end ("... are:  1.", "... [3]. - **") or start
  are cut from the claim before matching.

A claim is found by an exact token-sequence match, searched first after the previous located claim
(claims come in answer order) and then anywhere in a part of the text no other claim holds. A
claim that does not match exactly is aligned with `difflib` against the text after the previous
claim and accepted when at least LOOSE_MIN_RATIO of its tokens line up. Whatever is not found
keeps (-1, -1): callers show those claims apart, as before.

Everything is a pure function of strings and never raises.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Sequence

from pipeline.text.text import find_citation_markers

__all__ = ["locate_spans", "LOOSE_MIN_RATIO"]

LOOSE_MIN_RATIO = 0.85  # share of a claim's tokens that must align for a loose match
LOOSE_WINDOW_FACTOR = 3  # a loose search looks at most this many claim lengths past the cursor
MAX_TEXT_CHARS = 400_000  # longer answers are not searched (bounded work per answer)

_WORD_RE = re.compile(r"[^\W_]+")
# bullets and numbering glued to a claim's end by the splitter: "  1.", " -", " - **", "  6."
_TRAILING_BULLETS_RE = re.compile(r"(?:\s+(?:[-*+\u2022]|\d{1,3}[.)])(?:\s*(?:\*\*|__))?)+\s*$")
_LEADING_BULLETS_RE = re.compile(r"^\s*(?:(?:[-*+\u2022]|\d{1,3}[.)])\s+)+")
# characters that still belong to a statement right after its last word / before its first word
_CLOSING = ".,;:!?)]}\"'*_\u2019\u201d\u00bb\u2026"
_SPACED_PUNCT = tuple(".,;:!?")
_OPENING = "([{\"'*_\u2018\u201c\u00ab"


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(folded word, start, end) for every word outside a citation marker."""
    markers = [(m.start, m.end) for m in find_citation_markers(text)]
    out: list[tuple[str, int, int]] = []
    k = 0
    for m in _WORD_RE.finditer(text):
        while k < len(markers) and markers[k][1] <= m.start():
            k += 1
        if k < len(markers) and markers[k][0] <= m.start() < markers[k][1]:
            continue
        out.append((unicodedata.normalize("NFKC", m.group()).casefold(), m.start(), m.end()))
    return out


def _claim_words(claim: str) -> list[str]:
    core = _TRAILING_BULLETS_RE.sub("", claim)
    core = _LEADING_BULLETS_RE.sub("", core)
    return [w for w, _, _ in _tokens(core)]


def _find(words: list[str], hay: list[str], start: int, stop: int) -> int:
    """First position p in [start, stop) with hay[p:p+len(words)] == words, else -1."""
    n = len(words)
    first = words[0]
    p = start
    while p <= stop - n:
        try:
            p = hay.index(first, p, stop - n + 1)
        except ValueError:
            return -1
        if hay[p:p + n] == words:
            return p
        p += 1
    return -1


def _free(taken: list[tuple[int, int]], a: int, b: int) -> bool:
    return all(b <= s or a >= e for s, e in taken)


def _loose(words: list[str], hay: list[str], start: int) -> tuple[int, int] | None:
    """The token range after `start` that best aligns with `words`, when enough of them line up."""
    stop = min(len(hay), start + LOOSE_WINDOW_FACTOR * len(words) + 10)
    window = hay[start:stop]
    if not window:
        return None
    matcher = difflib.SequenceMatcher(None, window, words, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return None
    matched = sum(b.size for b in blocks)
    if matched < LOOSE_MIN_RATIO * len(words):
        return None
    lo = blocks[0].a
    hi = blocks[-1].a + blocks[-1].size
    if hi - lo > len(words) * 1.5 + 3:  # scattered matches, not one passage
        return None
    return start + lo, start + hi


def _char_span(text: str, toks: list[tuple[str, int, int]], a: int, b: int) -> tuple[int, int]:
    """Characters of tokens a..b-1, widened over adjacent emphasis, quotes, closing punctuation
    and the citation markers that directly follow the statement's last word."""
    start, end = toks[a][1], toks[b - 1][2]
    while start > 0 and text[start - 1] in _OPENING:
        start -= 1
    markers = {m.start: m.end for m in find_citation_markers(text[end:end + 400])}
    pos = 0
    tail = text[end:end + 400]
    while pos < len(tail):
        if tail[pos] in _CLOSING:
            pos += 1
        elif pos in markers:
            pos = markers[pos]
        else:
            gap = len(tail[pos:]) - len(tail[pos:].lstrip(" \t"))
            if gap and pos + gap in markers:  # "word [2]" keeps its marker
                pos = markers[pos + gap]
            elif gap and tail[pos + gap:pos + gap + 1] in _SPACED_PUNCT:  # "word ." keeps its full stop
                pos += gap + 1
            else:
                break
    return start, end + pos


def locate_spans(text: str, claims: Sequence[str]) -> list[tuple[int, int]]:
    """Character span in `text` of each claim, in order; (-1, -1) for a claim not found."""
    spans = [(-1, -1)] * len(claims)
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        return spans
    toks = _tokens(text)
    hay = [w for w, _, _ in toks]
    taken: list[tuple[int, int]] = []  # token ranges already given to a claim
    cursor = 0
    for i, claim in enumerate(claims):
        words = _claim_words(claim if isinstance(claim, str) else "")
        if not words:
            continue
        found: tuple[int, int] | None = None
        p = _find(words, hay, cursor, len(hay))
        if p < 0:  # out of order: anywhere not yet taken
            q = _find(words, hay, 0, len(hay))
            while q >= 0 and not _free(taken, q, q + len(words)):
                q = _find(words, hay, q + 1, len(hay))
            p = q
        if p >= 0:
            found = (p, p + len(words))
        else:
            found = _loose(words, hay, cursor)
            if found is not None and not _free(taken, *found):
                found = None
        if found is None:
            continue
        taken.append(found)
        cursor = found[1]
        spans[i] = _char_span(text, toks, *found)
    return _no_overlap(spans)


def _no_overlap(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Trim widened edges so that located spans never overlap (their words never do)."""
    order = sorted((start, i) for i, (start, _) in enumerate(spans) if start >= 0)
    out = list(spans)
    for (_, before), (next_start, _) in zip(order, order[1:]):
        if out[before][1] > next_start:
            out[before] = (out[before][0], next_start)
    return out
