"""Signals of meaning for the support judge: does the source say this, in whatever words?

Word-form overlap (`support.lexical_features`) follows how many words a statement shares with its
source, so a faithful rewording scores like a statement the source never makes. These signals read
meaning instead, each measured on the sentences that could hold the statement's support:

- `cos_sent`, `cos_pair`: the MiniLM cosine of the statement and its closest source sentence, and of
  the statement and its closest pair of neighbouring sentences (their vectors added: a statement
  often joins two sentences' facts). A paraphrase sits near its sentence whatever its words.
- `soft_win`: the share of the statement's content words the best sentence window states by form, by
  a synonym or another part of speech of the same word ("purchased" / "bought", "decided" /
  "decision"), or by a more specific word ("animal" where the source says "dog"), from the WordNet
  table in `synonyms`. The window is the closest one by meaning, or the best one by words, whichever
  states more.
- `soft_src`: the same share against the whole source.
- `missing_specific`: how many specific words of the statement (names, and words rarer than
  SPECIFIC_ZIPF) the source states in no form: a rewording keeps its specific terms, a statement the
  source does not make brings its own.

Which sentences are embedded: all of a short source (up to SHORT_SOURCE_SENTENCES), else the
TOP_CANDIDATES sentences sharing most of the statement's words by meaning and their neighbours, so
the cost stays bounded on a long page and on a deep-research answer.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np

from pipeline.judges.offline import synonyms
from pipeline.judges.offline.text import STOPWORDS, WORD_RE

SHORT_SOURCE_SENTENCES = 24  # a source with at most this many sentences has every sentence embedded
TOP_CANDIDATES = 4  # else: this many best sentences by meaning-aware overlap, each with its neighbours
MAX_CANDIDATES = 12
SPECIFIC_ZIPF = 3.5  # rarer than about 3 per million words of English: a specific term
MEANING_VERSION = "meaning-v2"


@lru_cache(maxsize=200_000)
def content_words(text: str) -> tuple[str, ...]:
    """Lower-cased content words of a text, in order, without repeats (figures are `numbers`' job)."""
    return tuple(dict.fromkeys(w for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS and len(w) > 1
                               and not w.isdigit()))


@lru_cache(maxsize=50_000)
def _zipf(word: str) -> float:
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


@lru_cache(maxsize=200_000)
def tokens(text: str) -> tuple[str, ...]:
    """Every lower-cased word of a text in order, stopwords kept (phrases are looked up on them)."""
    return tuple(WORD_RE.findall(text.lower()))


def _sentence_meanings(text: str, ws: frozenset[str]) -> tuple[frozenset[int], frozenset[int]]:
    """What a sentence's words and its table phrases ("high blood pressure") mean and are kinds of."""
    m, k = synonyms.source_meanings(ws)
    found = synonyms.phrases_in(tokens(text))
    if found:
        pm, pk = synonyms.source_meanings(p for _, _, p in found)
        m, k = m | pm, k | pk
    return m, k


def phrase_words(text: str, means: frozenset[int], kinds: frozenset[int]) -> frozenset[str]:
    """The statement's words inside a table phrase that a text states ("high blood pressure" where
    the source says "hypertension"): each of them counts as stated."""
    toks = tokens(text)
    out: set[str] = set()
    for a, b, phrase in synonyms.phrases_in(toks):
        m = synonyms.meanings(phrase)
        if m and (not m.isdisjoint(means) or not m.isdisjoint(kinds)):
            out.update(toks[a:b])
    return frozenset(out)


class SentenceMeanings:
    """Per source sentence: its content words, what they mean and what they are kinds of."""

    def __init__(self, sentences: Sequence[str]) -> None:
        self.words = [frozenset(content_words(s)) for s in sentences]
        self.stems = [frozenset(w[:6] for w in ws) for ws in self.words]
        parts = [_sentence_meanings(s, ws) for s, ws in zip(sentences, self.words)]
        self.means = [m for m, _ in parts]
        self.kinds = [k for _, k in parts]
        self.all_words = frozenset().union(*self.words) if self.words else frozenset()
        self.all_stems = frozenset().union(*self.stems) if self.stems else frozenset()
        self.all_means = frozenset().union(*self.means) if self.means else frozenset()
        self.all_kinds = frozenset().union(*self.kinds) if self.kinds else frozenset()


def meanings_of(idx: object) -> SentenceMeanings:
    """The source index's `SentenceMeanings`, made once per index."""
    found = getattr(idx, "_meanings", None)
    if found is None:
        found = SentenceMeanings(idx.sentences)  # type: ignore[attr-defined]
        idx._meanings = found  # type: ignore[attr-defined]
    return found


def _matches(word: str, words: frozenset[str], stems: frozenset[str], means: frozenset[int], kinds: frozenset[int]) -> bool:
    """A statement word stated by a text: the same word or stem, a synonym or derived form, or a
    more specific word (the statement's word names what the text's word is a kind of)."""
    if word in words or word[:6] in stems:
        return True
    m = synonyms.meanings(word)
    return bool(m) and (not m.isdisjoint(means) or not m.isdisjoint(kinds))


def soft_share(stmt_text: str, sm: SentenceMeanings, ids: Sequence[int] | None) -> float:
    """Share of the statement's content words stated (`_matches`, or inside a stated phrase) by the
    sentences `ids` (None: all)."""
    stmt_words = content_words(stmt_text)
    if not stmt_words:
        return 0.0
    if ids is None:
        w, s, m, k = sm.all_words, sm.all_stems, sm.all_means, sm.all_kinds
    else:
        w = frozenset().union(*(sm.words[i] for i in ids))
        s = frozenset().union(*(sm.stems[i] for i in ids))
        m = frozenset().union(*(sm.means[i] for i in ids))
        k = frozenset().union(*(sm.kinds[i] for i in ids))
    in_phrase = phrase_words(stmt_text, m, k)
    return sum(x in in_phrase or _matches(x, w, s, m, k) for x in stmt_words) / len(stmt_words)


def missing_specific(stmt_words: Sequence[str], names: frozenset[str], sm: SentenceMeanings) -> int:
    """Specific words (rare, or written as names) the source states in no form."""
    out = 0
    for x in stmt_words:
        if (x in names or _zipf(x) < SPECIFIC_ZIPF) and not _matches(x, sm.all_words, sm.all_stems, sm.all_means, sm.all_kinds):
            out += 1
    return out


def candidates(stmt_words: Sequence[str], sm: SentenceMeanings, lexical_top: Sequence[int]) -> list[int]:
    """The sentences to embed for this statement: every sentence of a short source, else the best
    by meaning-aware overlap (and the lexical best) with their neighbours, in order."""
    n = len(sm.words)
    if n <= SHORT_SOURCE_SENTENCES:
        return list(range(n))
    want = list(stmt_words)
    scored = []
    for i in range(n):
        hit = sum(_matches(x, sm.words[i], sm.stems[i], sm.means[i], sm.kinds[i]) for x in want)
        if hit:
            scored.append((-hit, i))
    scored.sort()
    picked: set[int] = set()
    for i in [i for _, i in scored[:TOP_CANDIDATES]] + list(lexical_top[:2]):
        picked.update(j for j in (i - 1, i, i + 1) if 0 <= j < n)
    return sorted(picked)[:MAX_CANDIDATES] if len(picked) > MAX_CANDIDATES else sorted(picked)


def cosine_features(s_vec: np.ndarray, cand: Sequence[int], vecs: Sequence[np.ndarray]) -> tuple[float, float, list[int]]:
    """(best sentence cosine, best neighbouring-pair cosine, the best window's sentence ids)."""
    if not cand:
        return 0.0, 0.0, []
    sims = [float(s_vec @ v) for v in vecs]
    k = int(np.argmax(sims))
    best_sent, best_ids = sims[k], [cand[k]]
    best_pair = best_sent
    for a in range(len(cand) - 1):
        if cand[a + 1] != cand[a] + 1:
            continue
        joint = vecs[a] + vecs[a + 1]
        norm = float(np.linalg.norm(joint))
        if norm <= 0:
            continue
        c = float(s_vec @ joint) / norm
        if c > best_pair:
            best_pair, pair_ids = c, [cand[a], cand[a + 1]]
            if c > best_sent:
                best_ids = pair_ids
    return best_sent, best_pair, best_ids


def lexical_meaning_features(stmt_text: str, names: frozenset[str], sm: SentenceMeanings,
                             window: tuple[int, int]) -> dict[str, float]:
    """The signals that need no embedding: soft shares (best word window, whole source) and the
    specific words left unstated."""
    ws = content_words(stmt_text)
    a, b = window
    return {
        "soft_win": soft_share(stmt_text, sm, list(range(a, b))) if b > a else 0.0,
        "soft_src": soft_share(stmt_text, sm, None),
        "missing_specific": math.log1p(missing_specific(ws, names, sm)),
    }


def window_cosines(features: dict[str, float], candidates: Sequence[int], s_vec: np.ndarray | None, idx: object,
                   vecs: dict[str, np.ndarray], statement: str) -> None:
    """The embedding half of the meaning features, written into `features`: closest sentence and pair
    by cosine among the embedded candidates of the source index `idx`, and the soft share of the
    closest window when it states more than the best word window. `statement` has its figures in the
    source index's written form (`normalise_figures`)."""
    sentences = idx.sentences  # type: ignore[attr-defined]
    cand = [i for i in candidates if sentences[i] in vecs]
    if s_vec is None or not cand:
        features["cos_sent"] = features["cos_pair"] = 0.0
        return
    best_sent, best_pair, ids = cosine_features(s_vec, cand, [vecs[sentences[i]] for i in cand])
    features["cos_sent"], features["cos_pair"] = best_sent, best_pair
    features["soft_win"] = max(features.get("soft_win", 0.0), soft_share(statement, meanings_of(idx), ids))
