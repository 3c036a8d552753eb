"""Text helpers of the offline judge: content tokens and stems, negation, sentence splitting. Pure
functions over strings, shared by its support model and its cue rules (the support model's own word
forms, figures and contradiction checks are in offline_words, offline_numbers and offline_align)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from pipeline.text.text import find_citation_markers, strip_citation_markers

MAX_SENTENCE_CHARS = 400
MAX_SOURCE_CHARS = 200_000  # longer source texts are cut (a judge must stay bounded)


WORD_RE = re.compile(r"[a-z0-9]+(?:['\u2019][a-z]+)?")
SENT_SPLIT_RE = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c(\[]?[A-Z0-9])|\n+")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves may might must shall one ones however
    thus therefore additionally furthermore moreover also well often including include includes
    several various many much within without among upon via per etc e g i e s t us use used using
    """.split()
)
NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't won't don't doesn't didn't isn't
    aren't wasn't weren't shouldn't wouldn't couldn't without lack lacks lacking fail fails failed
    unable""".split()
)


def strip_markers(text: str) -> str:
    """Remove citation markers ([1], [1, 2], [2-4], 【1】, ^1, [^1]) and tidy the spaces."""
    return strip_citation_markers(text, find_citation_markers(text))


@lru_cache(maxsize=100_000)  # words repeat across sentences and sources; stemming was a hot spot
def stem(word: str) -> str:
    """A very small suffix stripper: enough to match plural / tense variants."""
    if len(word) <= 4 or word.isdigit():
        return word
    for suf in ("ational", "ization", "fulness", "ousness", "iveness", "ments", "ment", "ings", "ing",
                "edly", "ies", "ied", "ers", "er", "ed", "es", "ly", "s"):
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            return word[: -len(suf)]
    return word


@lru_cache(maxsize=200_000)
def content_tokens(text: str) -> tuple[str, ...]:
    """Lower-cased, stemmed content words (stopwords and 1-letter tokens removed)."""
    return tuple(stem(w) for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS and len(w) > 1)


def is_negated(tokens: Iterable[str]) -> bool:
    return any(t in NEGATIONS or t.endswith("n't") for t in tokens)


@lru_cache(maxsize=20_000)
def split_sentences(text: str) -> tuple[str, ...]:
    """Split a source text into sentence-sized pieces (long pieces cut at ~MAX_SENTENCE_CHARS)."""
    out: list[str] = []
    for piece in SENT_SPLIT_RE.split(text[:MAX_SOURCE_CHARS]):
        piece = piece.strip()
        if not piece or not any(c.isalnum() for c in piece):
            continue
        while len(piece) > MAX_SENTENCE_CHARS:
            cut = piece.rfind(" ", 0, MAX_SENTENCE_CHARS)
            cut = cut if cut > MAX_SENTENCE_CHARS // 2 else MAX_SENTENCE_CHARS
            out.append(piece[:cut].strip())
            piece = piece[cut:].strip()
        if piece:
            out.append(piece)
    return tuple(out)
