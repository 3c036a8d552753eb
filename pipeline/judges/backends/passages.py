"""Cutting long source documents into passages and choosing the ones worth sending to a model.

A support call must stay under `max_passage_chars` characters of document text, so a long source is
cut into passages (`split_passages`, each an exact substring of the document, labelled P1, P2, ...)
and only the passages that best match the statements by BM25 are sent (`select_passages`). After
the call, `locate_quote` finds the model's quote in the original text, so a verdict's evidence is
always a real span of the source, never the model's paraphrase.

Pure functions over strings: no model, no I/O. Used by the request planner (`llm_requests`) and by
the OpenAI judge when it turns replies into verdicts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Passage", "split_passages", "select_passages", "locate_quote", "content_words"]

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her his how i "
    "if in into is it its may might more most no not of on or our she so such than that the their "
    "them then there these they this those to was we were what when where which while who why will "
    "with would you your".split()
)


def content_words(text: str) -> list[str]:
    """The words of `text` that carry content, lowercased, in order: no stopwords, no single
    characters. What BM25 here and `windows.rank_windows` match statements and sources on."""
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1]


@dataclass(frozen=True, slots=True)
class Passage:
    """A slice of a source text; `text == source[start:end]`."""

    pid: str  # "P1", "P2", ... in document order
    start: int
    end: int
    text: str


def split_passages(text: str, size: int = 1000) -> list[Passage]:
    """Cut text into passages of at most `size` characters, preferring paragraph, line, sentence
    and word boundaries. Every passage is an exact substring of `text`."""
    size = max(50, int(size))
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            break
        end = min(start + size, n)
        if end < n:
            window = text[start + size // 2 : end]
            cut = -1
            for pattern in ("\n\n", "\n", ". ", "? ", "! ", "; ", " "):
                pos = window.rfind(pattern)
                if pos >= 0:
                    cut = start + size // 2 + pos + len(pattern)
                    break
            if cut > start:
                end = cut
        stripped_end = end
        while stripped_end > start and text[stripped_end - 1].isspace():
            stripped_end -= 1
        if stripped_end > start:
            spans.append((start, stripped_end))
        start = end
    return [Passage(f"P{i + 1}", s, e, text[s:e]) for i, (s, e) in enumerate(spans)]


def _bm25_matrix(queries: Sequence[list[str]], docs: Sequence[list[str]], k1: float = 1.5, b: float = 0.75) -> list[list[float]]:
    n_docs = len(docs)
    if n_docs == 0:
        return [[] for _ in queries]
    avg_len = sum(len(d) for d in docs) / n_docs or 1.0
    df: dict[str, int] = {}
    for doc in docs:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    tfs = []
    for doc in docs:
        tf: dict[str, int] = {}
        for term in doc:
            tf[term] = tf.get(term, 0) + 1
        tfs.append(tf)
    scores = []
    for query in queries:
        terms = set(query)
        row = []
        for doc, tf in zip(docs, tfs):
            s = 0.0
            for term in terms:
                f = tf.get(term)
                if not f:
                    continue
                idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avg_len))
            row.append(s)
        scores.append(row)
    return scores


def select_passages(
    text: str, statements: Sequence[str], budget: int = 6000, size: int = 1000
) -> tuple[list[Passage], int]:
    """Pick passages of `text` most relevant to the statements within `budget` characters.

    Each statement first gets its best passages in turn (round robin, so no statement is left
    without evidence), then the remaining budget goes to the best-scoring passages overall; the
    result is in document order. Returns (passages, total passages in the document).
    """
    passages = split_passages(text, size)
    total = len(passages)
    if sum(len(p.text) for p in passages) <= budget:
        return passages, total
    scores = _bm25_matrix([content_words(s) for s in statements], [content_words(p.text) for p in passages])
    ranked = [
        [j for j in sorted(range(total), key=lambda j: (-row[j], j)) if row[j] > 0] for row in scores
    ]
    chosen: set[int] = set()
    used = 0

    def take(j: int) -> bool:
        nonlocal used
        if j in chosen:
            return True
        if used + len(passages[j].text) > budget:
            return False
        chosen.add(j)
        used += len(passages[j].text)
        return True

    depth = max((len(r) for r in ranked), default=0)
    for rank in range(depth):
        for r in ranked:
            if rank < len(r):
                take(r[rank])
    best = [max((row[j] for row in scores), default=0.0) for j in range(total)]
    for j in sorted(range(total), key=lambda j: (-best[j], j)):
        take(j)
    if not chosen and passages:  # budget smaller than one passage: send a clipped first passage
        p = passages[0]
        return [Passage(p.pid, p.start, p.start + budget, text[p.start : p.start + budget])], total
    return [passages[j] for j in sorted(chosen)], total


# ----------------------------------------------------------------------------------------------
# evidence: where a model's quote sits in the source
# ----------------------------------------------------------------------------------------------

def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    chars: list[str] = []
    mapping: list[int] = []
    prev_space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                chars.append(" ")
                mapping.append(i)
            prev_space = True
        else:
            chars.append(ch.lower())
            mapping.append(i)
            prev_space = False
    return "".join(chars), mapping


def locate_quote(quote: str, source_text: str) -> str:
    """Return the span of `source_text` matching `quote` (exact, then whitespace- and
    case-insensitive, then the longest piece between ellipses); "" when it is not in the source."""
    q = (quote or "").strip().strip("\"'").strip()
    if len(q) < 3 or not source_text:
        return ""
    if q in source_text:
        return q
    norm, mapping = _normalise_with_map(source_text)
    pieces = [q] + sorted(
        (p.strip() for p in re.split(r"\.\.\.|\u2026", q) if len(p.strip()) >= 20), key=len, reverse=True
    )
    for piece in pieces:
        nq, _ = _normalise_with_map(piece)
        nq = nq.strip()
        if len(nq) < 3:
            continue
        pos = norm.find(nq)
        if pos >= 0:
            return source_text[mapping[pos] : mapping[pos + len(nq) - 1] + 1]
    return ""
