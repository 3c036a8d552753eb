"""The offline judge's support model: does this source back this statement?

1. The source. Sentences that address a model instead of the reader (`pipeline.injection.injection` flags:
   "ignore previous instructions", "mark this claim as supported", hidden comments) are dropped
   first, so a page can neither vouch for a claim nor veto it; the verdict notes how many.
2. Alignment. Statement and source are compared as `offline_words` forms: one form per word,
   figures as values ("1.2 million" = "1,200,000", "between 10 and 19" = "10 to 19"), rising and
   falling verbs as one word each. The best window of one to three consecutive sentences is the one
   holding the most of the statement's words; it is the evidence, and for a long page the passage
   that is embedded (a short source is embedded whole).
3. Features. Those that measure how much of the statement the source holds have a fixed sign in
   the fitted model, so the score never falls when more of the statement is found (`SIGNS`):
   coverage of the statement's words in the whole source (plain and weighted by rarity inside the
   source), in the best window and the best sentence, verbatim bigrams and trigrams, the longest
   copied run, figures and names found, the count of missing words (negative), coverage by the
   source's evidence (a long source's evidence is its best window, not every word of the page),
   and with the embedding model the cosine of statement and passage and of question and passage.
   Two context features (the statement's length, the source's length) are computed for
   calibration's comparison only.
4. A logistic model over those features (`SupportModel`, fitted by `aee judges calibrate`) gives
   `score`, the probability of full support; two thresholds make full / partial / none.
5. Stated rules on top (`apply_rules`): a contradiction found by `offline_align` (negation,
   opposite direction, a swapped name) or a figure the source states differently
   (`offline_numbers.conflicting_figures`) holds the score under the partial threshold: such a
   statement is not supported, whatever its word overlap.

Nothing here reads which sources the statement cites: a support label is a fact about a statement,
a source text and the question, so adding or removing a citation marker never changes it (only the
citation metrics built on the labels move). A first pass (`prefilter_reason`) rules out, before any
embedding, a statement against a source when no window of the source holds half of the statement's
words; the judge runs it only on an answer too large to judge every pair in full (a deep-research
answer: hundreds of sources, a hundred and more statements), on every pair of it alike, cited or not.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from pipeline.injection.injection import injection_flags
from pipeline.judges.offline import meaning
from pipeline.judges.offline.align import clause_conflicts
from pipeline.judges.offline.figure_forms import normalise_figures
from pipeline.judges.offline.numbers import Figure, conflicting_figures, figure_token, same_figure
from pipeline.judges.offline.text import MAX_SOURCE_CHARS, WORD_RE, split_sentences
from pipeline.judges.offline.words import forms, forms_and_figures, words

log = logging.getLogger(__name__)

PARAMS_PATH = Path(__file__).with_name("params.json")
MAX_EVIDENCE_CHARS = 600
PASSAGE_CHARS = 1500  # a source up to this long is the passage; a longer one gives a window this long
# The passage embedding reads the passage's first PASSAGE_TOKENS word pieces: the length MiniLM was
# trained on (grouped cross-validation on ExpertQA moved by less than its fold noise against 256).
PASSAGE_TOKENS = 128
TOP_SENTENCES = 4  # best-matching sentences the contradiction checks look at
MIN_SHARED_FOR_CHECKS = 3

FEATURES_LEXICAL = (
    "coverage",  # share of the statement's words found anywhere in the source
    "coverage_idf",  # the same, each word weighted by its rarity inside the source
    "recall_win",  # share found inside the best window of one to three consecutive sentences
    "recall_sent",  # share found inside the best single sentence
    "bigram_recall",  # share of the statement's word bigrams found in the source
    "trigram_raw",  # share of the statement's trigrams (stopwords kept) found verbatim
    "longest_run",  # longest verbatim run of statement words in the source / statement length
    "bigram_raw",  # share of bigrams (stopwords kept) found verbatim
    "figure_match",  # share of the statement's figures the source states (1 when it has none)
    "name_cov",  # share of the statement's names found in the source (1 when none)
    "missing_words",  # log1p(count of the statement's words absent from the source)
    "union_recall",  # coverage by the source's evidence (a long source's evidence is its best window);
    # once read against all the statement's cited sources together, which made a pair's label follow
    # its citations (issue 30): now this source alone, whatever the statement cites
    "union_bigram",  # verbatim bigram share against the source
)
FEATURES_EMBED = (
    "cos_pass",  # cosine of the statement and the passage (whole source when short, else best window on)
    "q_pass",  # cosine of the question and the passage (a source on the question's topic)
)
# Meaning, not wording (`offline_meaning`, offline-v3): closest sentence and sentence pair by MiniLM
# cosine, the statement's words stated by form, synonym or a more specific word (WordNet), specific
# words the source never states
FEATURES_MEANING_LEXICAL = ("soft_win", "soft_src", "missing_specific")
FEATURES_MEANING_EMBED = ("cos_sent", "cos_pair")
FEATURES_CONTEXT = (  # what the pair is, not how much of the statement the source holds
    "log_len",  # log1p(count of the statement's words)
    "src_len",  # log1p(characters of the source)
)
# The sign each coefficient is held to in the fit: +1 (never below 0) for everything that measures
# how much of the statement the source holds, -1 for the count of missing words, so finding more of
# the statement never lowers the score. The context features are computed for `aee judges calibrate
# --grid`, which also tries them (and q_pass) free in sign; the shipped model leaves them out: they
# carry ExpertQA's label priors (longer claims citing more sources are more often Complete) that cost
# short-sentence sources their full labels on the check suite.
SIGNS = ({name: 1 for name in FEATURES_LEXICAL + FEATURES_EMBED + FEATURES_MEANING_LEXICAL + FEATURES_MEANING_EMBED}
         | {"missing_words": -1, "missing_specific": -1} | {name: 0 for name in FEATURES_CONTEXT})

WINDOW_SENTENCES = 3  # the best window holds at most this many consecutive sentences
# First pass (pairs of an answer too large to judge in full): ruled out when no window holds this
# share of the statement's words
PREFILTER_MIN_WINDOW = 0.5


class PairInput(NamedTuple):
    """A pair as the judge scores it."""

    statement: str  # markers stripped
    source: str
    cited_texts: Sequence[str]  # kept for the pairs calibration writes; no feature reads it (see the module doc)
    question: str
    screened: bool = False  # the first pass may rule this pair out (its answer is too large to judge in full)


@dataclass
class PairFeatures:
    features: dict[str, float]
    evidence: str
    conflicts: tuple[str, ...] = ()
    missing_part: str = ""  # a part of the statement the source does not state (at most partial)
    note: str = ""  # why the pair was ruled out early, or what was dropped from the source
    ruled_out: bool = False
    term_swaps: tuple[TermSwap, ...] = ()  # candidates, settled into `conflicts` in embed mode
    candidates: tuple[int, ...] = ()  # source sentences whose embeddings the meaning features read


# --------------------------------------------------------------------------------------------
# the source
# --------------------------------------------------------------------------------------------


def drop_addressing(text: str) -> tuple[tuple[str, ...], int]:
    """The source's sentences without those that address a model (injection flags), and how many
    were dropped."""
    sentences = split_sentences(text)
    flags = injection_flags(text) if text else []
    if not flags:
        return sentences, 0
    spans = sorted((f.start, f.end) for f in flags)
    starts = [a for a, _ in spans]
    kept, pos = [], 0
    for s in sentences:
        at = text.find(s[:40], pos)
        start = at if at >= 0 else pos
        end = start + len(s)
        pos = end if at >= 0 else pos
        k = bisect.bisect_right(starts, end)
        if any(a < end and b > start for a, b in spans[max(0, k - 8) : k]):
            continue
        kept.append(s)
    return tuple(kept), len(sentences) - len(kept)


class SourceIndex:
    """Sentences, their forms, figures and verbatim n-grams for one source text."""

    def __init__(self, text: str) -> None:
        text = normalise_figures(text[:MAX_SOURCE_CHARS])  # figures in one written form, as in statements
        self.sentences, self.dropped = drop_addressing(text)
        self.text = " ".join(self.sentences) if self.dropped else text
        parsed = [forms_and_figures(s) for s in self.sentences]
        self.sentence_figures: list[tuple[Figure, ...]] = [figs for _, figs in parsed]
        self.forms = [frozenset(fs) for fs, _ in parsed]
        self.all_forms: frozenset[str] = frozenset().union(*self.forms) if self.forms else frozenset()
        self.postings: dict[str, list[int]] = {}
        for i, fs in enumerate(self.forms):
            for f in fs:
                self.postings.setdefault(f, []).append(i)
        n = max(len(self.sentences), 1)
        self.idf = {f: math.log(1.0 + n / len(ids)) for f, ids in self.postings.items()}
        self._arrays: dict[str, np.ndarray] = {}  # postings as arrays, made when first asked (`posting_array`)
        self.default_idf = math.log(1.0 + n)
        self.figures: tuple[Figure, ...] = tuple(f for figs in self.sentence_figures for f in figs)
        self.bigrams = {b for fs, _ in parsed for b in zip(fs, fs[1:])}
        lower = self.text.lower()
        raw = WORD_RE.findall(lower)
        self.n_words = len(raw)
        self.raw_bigrams = set(zip(raw, raw[1:]))
        self.raw_trigrams = set(zip(raw, raw[1:], raw[2:]))

    def posting_array(self, form: str) -> np.ndarray:
        found = self._arrays.get(form)
        if found is None:
            found = self._arrays[form] = np.asarray(self.postings[form], dtype=np.intp)
        return found


# --------------------------------------------------------------------------------------------
# features
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementWords:
    """What is compared of a statement."""

    text: str
    forms: tuple[str, ...]  # unique, in order
    sequence: tuple[str, ...]  # in order, with repeats (for bigrams)
    figures: tuple[Figure, ...]
    names: frozenset[str]
    raw: tuple[str, ...]  # lower-cased words, stopwords kept


@lru_cache(maxsize=20_000)
def statement_words(text: str) -> StatementWords:
    text = normalise_figures(text)  # the same written form of figures as the source index
    ws = words(text)
    seq = forms(ws)
    return StatementWords(
        text=text, forms=tuple(dict.fromkeys(seq)), sequence=seq,
        figures=tuple(w.figure for w in ws if w.figure is not None and not w.figure.small),
        names=frozenset(w.form for w in ws if w.name and w.figure is None),
        raw=tuple(WORD_RE.findall(text.lower())),
    )


def _found(st: StatementWords, idx: SourceIndex) -> list[bool]:
    """Per statement form: found in the source (a figure also when the source states it rounded)."""
    out = []
    by_form = {figure_token(f): f for f in st.figures}
    for form in st.forms:
        ok = form in idx.all_forms
        if not ok and form in by_form:
            ok = any(same_figure(by_form[form], g) for g in idx.figures)
        out.append(ok)
    return out


def prefilter_reason(st: StatementWords, idx: SourceIndex) -> str:
    """Why a statement is ruled out against a source before the full judge runs, or "":
    no window of one to three consecutive sentences holds PREFILTER_MIN_WINDOW of its words (so the
    source cannot state it), counted first over the whole source, which is cheaper and never smaller."""
    return first_pass(st, idx)[0]


def first_pass(st: StatementWords, idx: SourceIndex) -> tuple[str, float]:
    """`prefilter_reason`, and the share of the statement's words the best window holds (what ranks
    the pairs that pass; 0 for a pair ruled out on the whole source)."""
    n = len(st.forms)
    shared = sum(1 for f in st.forms if f in idx.all_forms)
    if n == 0 or shared < PREFILTER_MIN_WINDOW * n:
        return f"ruled out before the full judge: {shared} of its {n} words in the source", 0.0
    _, in_window, _, _ = _best_window(st, idx)
    if in_window < PREFILTER_MIN_WINDOW * n:
        return (f"ruled out before the full judge: at most {in_window} of its {n} words in any window of "
                f"{WINDOW_SENTENCES} sentences"), in_window / n
    return "", in_window / n


# Above this many postings a statement's sentence counts are summed in numpy, below in Python; both
# add the same numbers in the same order (form by form, sentence by sentence), so they agree to the bit.
NUMPY_POSTINGS = 256


def _top_sentences(st: StatementWords, idx: SourceIndex) -> tuple[list[int], int]:
    """The best TOP_SENTENCES sentences (by statement words held, then their rarity, then position)
    and the words the first one holds; ([], 0) when no sentence holds any."""
    forms = [f for f in st.forms if f in idx.postings]
    if not forms:
        return [], 0
    if sum(len(idx.postings[f]) for f in forms) < NUMPY_POSTINGS:
        counts: dict[int, int] = {}
        weights: dict[int, float] = {}
        for f in forms:
            w = idx.idf[f]
            for i in idx.postings[f]:
                counts[i] = counts.get(i, 0) + 1
                weights[i] = weights.get(i, 0.0) + w
        top = sorted(counts, key=lambda i: (-counts[i], -weights[i], i))[:TOP_SENTENCES]
        return top, counts[top[0]]
    arrays = [idx.posting_array(f) for f in forms]
    ids = np.concatenate(arrays)
    each = np.repeat(np.array([idx.idf[f] for f in forms], dtype=np.float64), [len(a) for a in arrays])
    n = len(idx.sentences)
    held = np.bincount(ids, minlength=n)
    rarity = np.bincount(ids, weights=each, minlength=n)
    hit = np.flatnonzero(held)
    order = np.lexsort((hit, -rarity[hit], -held[hit]))  # the last key sorts first: words, rarity, position
    top = [int(i) for i in hit[order[:TOP_SENTENCES]]]
    return top, int(held[top[0]])


def _best_window(st: StatementWords, idx: SourceIndex) -> tuple[tuple[int, int], int, int, list[int]]:
    """Best window (start, end) of one to three sentences, the statement words it holds, the most
    any single sentence holds, and the best TOP_SENTENCES sentences in order (by words held, then
    their rarity, then position). Its cost grows with the postings of the statement's words, not
    with the pairs: the counts are summed in numpy for a long source."""
    top, most = _top_sentences(st, idx)
    if not top:
        return (0, min(1, len(idx.sentences))), 0, 0, []
    want = set(st.forms)
    best, best_n = (top[0], top[0] + 1), -1
    for s in top[:3]:
        for a, b in ((s, s + 1), (s - 1, s + 1), (s, s + 2), (s - 2, s + 1), (s - 1, s + 2), (s, s + 3)):
            if a < 0 or b > len(idx.sentences):
                continue
            got = len(set().union(*(want & idx.forms[k] for k in range(a, b))))
            if got > best_n or (got == best_n and b - a < best[1] - best[0]):
                best, best_n = (a, b), got
    return best, best_n, most, top


def _raw_overlap(st: StatementWords, idx: SourceIndex) -> dict[str, float]:
    """Verbatim overlap with stopwords kept: copied wording is a strong sign of support."""
    w = st.raw
    tri = list(zip(w, w[1:], w[2:]))
    bi = list(zip(w, w[1:]))
    best = run = 0
    for t in tri:
        run = run + 1 if t in idx.raw_trigrams else 0
        best = max(best, run)
    return {
        "trigram_raw": sum(t in idx.raw_trigrams for t in tri) / len(tri) if tri else 0.0,
        "longest_run": (best + 2 if best else 0) / max(len(w), 1),
        "bigram_raw": sum(t in idx.raw_bigrams for t in bi) / len(bi) if bi else 0.0,
    }


def lexical_features(st: StatementWords, idx: SourceIndex) -> tuple[dict[str, float], tuple[int, int], list[int]]:
    """The lexical features (all but the union ones), the best window, and the best sentences."""
    n = len(st.forms)
    f: dict[str, float] = {}
    if n == 0 or not idx.sentences:
        f.update(coverage=0.0, coverage_idf=0.0, recall_win=0.0, recall_sent=0.0, bigram_recall=0.0,
                 trigram_raw=0.0, longest_run=0.0, bigram_raw=0.0, figure_match=1.0, name_cov=1.0,
                 missing_words=math.log1p(n))
        return f, (0, 0), []
    found = _found(st, idx)
    f["coverage"] = sum(found) / n
    weights = [idx.idf.get(form, idx.default_idf) for form in st.forms]
    f["coverage_idf"] = sum(w for w, ok in zip(weights, found) if ok) / sum(weights)
    window, in_window, in_sentence, top = _best_window(st, idx)
    f["recall_win"] = max(in_window, 0) / n
    f["recall_sent"] = in_sentence / n
    bigrams = set(zip(st.sequence, st.sequence[1:]))
    f["bigram_recall"] = len(bigrams & idx.bigrams) / len(bigrams) if bigrams else f["coverage"]
    f.update(_raw_overlap(st, idx))
    figs = st.figures
    f["figure_match"] = (sum(any(same_figure(x, g) for g in idx.figures) for x in figs) / len(figs)) if figs else 1.0
    f["name_cov"] = sum(1 for x in st.names if x in idx.all_forms) / len(st.names) if st.names else 1.0
    f["missing_words"] = math.log1p(n - sum(found))
    return f, window, top


def context_features(st: StatementWords, p: PairInput) -> dict[str, float]:
    """FEATURES_CONTEXT: the statement's length, the source's length."""
    return {"log_len": math.log1p(len(st.forms)), "src_len": math.log1p(len(p.source))}


def conflicts(st: StatementWords, idx: SourceIndex, window: tuple[int, int], top: list[int],
              in_sentence: float) -> tuple[list[str], list[TermSwap]]:
    """Contradictions between the statement and the source (see `offline_align`), as short reasons,
    and the swapped-term candidates still to be settled by their words' meaning (`settle_term_swaps`).
    The clause checks need a sentence sharing MIN_SHARED_FOR_CHECKS words; a figure the source
    states otherwise is checked whatever the overlap (a short statement may be little more than it)."""
    out: list[str] = []
    terms: list[TermSwap] = []
    if in_sentence * len(st.forms) >= MIN_SHARED_FOR_CHECKS:
        sentences = [idx.sentences[i] for i in top[:TOP_SENTENCES]]
        for c in clause_conflicts(st.text, sentences, idx.all_forms):
            if c.kind == "term":
                terms.append(TermSwap(c.pair[0], c.pair[1], f"{c.kind}: {c.detail}"))
            else:
                out.append(f"{c.kind}: {c.detail}")
    window_figures = tuple(f for figs in idx.sentence_figures[window[0] : window[1]] for f in figs)
    out += [f"figure: {c}" for c in conflicting_figures(st.figures, idx.figures, window_figures)]
    return list(dict.fromkeys(out)), terms


class TermSwap(NamedTuple):
    """A statement word standing where the source has another (offline_align, kind "term")."""

    ours: str
    theirs: str
    reason: str


# A candidate term swap is a conflict when the two words are far apart in meaning and one of them is
# a specific term. Far apart: MiniLM vectors less similar than TERM_SWAP_MAX_COSINE. On word pairs
# written for it (not the check cases), 18 of 19 synonym pairs ("big"/"large", "buy"/"purchase",
# "study"/"research") lie above 0.5 - the one below, "rise"/"increase", is one form already - while
# far kinds of one sort ("heart"/"lung", "bus"/"train", "sodium"/"lithium") lie below; near kinds
# ("cat"/"dog", "Monday"/"Tuesday") lie above and are missed. Specific: rarer than 10 per million
# words of English (Zipf frequency below 4, wordfreq), the usual line for a low-frequency word;
# common words trade places in ordinary rewording ("generate heat" / "produce heat", "large areas"
# / "large-scale"), names of substances, species and diseases do not.
TERM_SWAP_MAX_COSINE = 0.5
TERM_SWAP_MAX_ZIPF = 4.0


@lru_cache(maxsize=20_000)
def word_zipf(word: str) -> float:
    """How common an English word is: log10 of its count per billion words (0 when unknown)."""
    from wordfreq import zipf_frequency  # loads its tables on first use

    return float(zipf_frequency(word, "en"))


def settle_term_swaps(rows: Sequence[PairFeatures], vectors: Callable[[Sequence[str]], dict[str, np.ndarray]]) -> None:
    """Turn each row's term-swap candidates into conflicts where the two words are far apart in
    meaning and one is a specific term (`TERM_SWAP_MAX_COSINE`, `TERM_SWAP_MAX_ZIPF`); `vectors`
    gives unit vectors for words. Needs the embedding
    model: the lexical-only mode leaves them out."""
    wanted = list(dict.fromkeys(w for r in rows for t in r.term_swaps for w in (t.ours, t.theirs)))
    if not wanted:
        return
    vecs = vectors(wanted)
    for r in rows:
        found = [t.reason for t in r.term_swaps
                 if max(word_zipf(t.ours), word_zipf(t.theirs)) < TERM_SWAP_MAX_ZIPF
                 and float(vecs[t.ours] @ vecs[t.theirs]) < TERM_SWAP_MAX_COSINE]
        if found:
            r.conflicts = tuple(dict.fromkeys((*r.conflicts, *found)))


_PART_SPLIT_RE = re.compile(r",\s+|;\s*|:\s+|\s+[\u2013\u2014-]\s+|\s+(?:and|but|while|whereas|although|though)\s+", re.I)
MIN_PART_FORMS = 3  # a part with fewer words is joined to the one before it
PART_FOUND_AT_MOST = 1 / 3  # a part with no more of its words in the evidence is missing ...
REST_FOUND_AT_LEAST = 2 / 3  # ... when the rest of the statement is found this well


def missing_part(statement: str, evidence: frozenset[str]) -> str:
    """A part of a two-part statement that the evidence does not state while it states the rest
    ("The tax raised 2 billion crowns and cut car traffic by a quarter" against a source on the
    revenue alone), or "". Parts are cut at commas, semicolons, dashes and joining words; a part
    of fewer than MIN_PART_FORMS words is joined to the one before it."""
    parts: list[tuple[str, tuple[str, ...]]] = []
    for piece in _PART_SPLIT_RE.split(statement):
        fs = tuple(dict.fromkeys(forms(words(piece))))
        if parts and (len(fs) < MIN_PART_FORMS or len(parts[-1][1]) < MIN_PART_FORMS):
            parts[-1] = (parts[-1][0] + " " + piece, tuple(dict.fromkeys(parts[-1][1] + fs)))
        elif fs:
            parts.append((piece, fs))
    if len(parts) < 2:
        return ""
    # only the last part: an opening part is often framing the source need not state ("Supporters
    # point to cleaner air: ...", "According to a field test, ...", "The idea goes back to Jevons, who ...")
    text, fs = parts[-1]
    rest = tuple(f for _, other in parts[:-1] for f in other if f not in fs)
    if not rest or len(fs) < MIN_PART_FORMS:
        return ""
    found = sum(f in evidence for f in fs) / len(fs)
    rest_found = sum(f in evidence for f in rest) / len(rest)
    if found <= PART_FOUND_AT_MOST and rest_found >= REST_FOUND_AT_LEAST:
        return text.strip(" .")[:120]
    return ""


def evidence_forms(st: StatementWords, idx: SourceIndex) -> frozenset[str]:
    """The words a reader checks the statement against in this source: all of a short source, the
    best window of a long one (where a statement's words turn up by chance all over the page)."""
    if is_whole_passage(idx.text):
        return idx.all_forms
    (a, b), _, _, _ = _best_window(st, idx)
    return frozenset().union(*idx.forms[a:b])


def union_overlap(st: StatementWords, idxs: Sequence[SourceIndex]) -> tuple[float, float, frozenset[str]]:
    """Coverage of the statement by the evidence of several sources together (`evidence_forms`),
    its verbatim-bigram share against their whole texts, and that evidence."""
    if not st.forms or not any(i.sentences for i in idxs):
        return 0.0, 0.0, frozenset()
    found = frozenset().union(*(evidence_forms(st, i) for i in idxs))
    recall = sum(1 for f in st.forms if f in found) / len(st.forms)
    bi = list(zip(st.raw, st.raw[1:]))
    bigram = sum(any(b in i.raw_bigrams for i in idxs) for b in bi) / len(bi) if bi else 0.0
    return recall, bigram, found


def is_whole_passage(text: str) -> bool:
    """A source this short is its own passage, whatever the statement."""
    return len(text) <= PASSAGE_CHARS


def passage_for(idx: SourceIndex, window: tuple[int, int]) -> str:
    """The text embedded for the passage features: the whole source when it is short (ExpertQA's
    evidence passages are), else the best window itself. A longer stretch around the window (the
    judge's first versions grew it to PASSAGE_CHARS) adds topic, not evidence, and costs as much
    again to embed: on a deep-research answer the passages are most of the encoder's work."""
    if is_whole_passage(idx.text) or not idx.sentences:
        return idx.text[:PASSAGE_CHARS]
    a, b = window
    return " ".join(idx.sentences[a:b])[:PASSAGE_CHARS]


# --------------------------------------------------------------------------------------------
# the model and its rules
# --------------------------------------------------------------------------------------------


def _sigmoid(z: np.ndarray | float) -> Any:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


class SupportModel:
    """Standardise -> logistic regression -> thresholds, from params.json."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.features: list[str] = list(spec["features"])
        self.mean = np.asarray(spec["mean"], dtype=np.float64)
        self.std = np.asarray(spec["std"], dtype=np.float64)
        self.coef = np.asarray(spec["coef"], dtype=np.float64)
        self.intercept = float(spec["intercept"])
        self.t_full = float(spec["threshold_full"])
        self.t_partial = float(spec["threshold_partial"])

    def score(self, feats: Sequence[dict[str, float]]) -> np.ndarray:
        """Probability of full support per feature row. Each row's sum is exactly rounded
        (`math.fsum` over its terms), so a pair's score does not depend on the other rows scored
        with it: a matrix-vector product gives a row other last bits in another row count (BLAS
        blocks it differently), which made a resumed run differ from a clean one."""
        if not feats:
            return np.zeros(0)
        x = np.array([[f.get(k, 0.0) for k in self.features] for f in feats], dtype=np.float64)
        terms = ((x - self.mean) / self.std) * self.coef  # element by element: no row sees another
        z = np.array([math.fsum(row) for row in terms.tolist()], dtype=np.float64) + self.intercept
        return _sigmoid(z)

    def label(self, p: float) -> str:
        return "full" if p >= self.t_full else "partial" if p >= self.t_partial else "none"


def apply_rules(p_full: float, conflicts_found: Sequence[str], t_partial: float, part_missing: str = "",
                t_full: float = 1.0) -> tuple[float, str]:
    """The judge's stated rules on top of the fitted model (also applied when calibration reports
    agreement): a statement the source contradicts is not supported, so its score is held just
    under the partial threshold; a statement with a part its sources do not state is at most partly
    supported, so its score is held just under the full threshold. Returns the final score and the
    rule that changed it, or ""."""
    if conflicts_found and p_full >= t_partial:
        return min(float(p_full), t_partial - 1e-4), "contradiction: not supported"
    if part_missing and p_full >= t_full:
        return min(float(p_full), t_full - 1e-4), "part of the statement not in its sources: at most partial"
    return float(p_full), ""


# Used when params.json is missing: hand-set weights of the same form (uncalibrated).
DEFAULT_PARAMS = {
    "embed": {
        "features": ["cos_pass", "recall_win", "coverage", "trigram_raw"],
        "mean": [0.55, 0.6, 0.6, 0.2], "std": [0.15, 0.2, 0.2, 0.2],
        "coef": [1.0, 0.8, 0.6, 0.5], "intercept": 0.0,
        "threshold_full": 0.6, "threshold_partial": 0.35,
    },
    "lexical": {
        "features": ["recall_win", "coverage", "bigram_recall", "trigram_raw"],
        "mean": [0.6, 0.6, 0.4, 0.2], "std": [0.2, 0.2, 0.25, 0.2],
        "coef": [1.0, 0.6, 0.6, 0.5], "intercept": 0.0,
        "threshold_full": 0.6, "threshold_partial": 0.35,
    },
}


def reads_sentence_vectors(params: dict[str, Any]) -> bool:
    """Whether a parameter set's embedding model reads `cos_sent` or `cos_pair` (the uncalibrated
    defaults count as yes: calibration computes every feature through them)."""
    if params.get("version") == "default":
        return True
    embed = params.get("embed") or {}
    return any(f in FEATURES_MEANING_EMBED for f in embed.get("features", ()))


def load_params(path: Path | None = None) -> dict[str, Any]:
    path = path or PARAMS_PATH
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        log.warning("offline judge: %s missing or unreadable; using uncalibrated default weights", path)
        return {"version": "default", **DEFAULT_PARAMS}


# --------------------------------------------------------------------------------------------
# many pairs at once
# --------------------------------------------------------------------------------------------


class FeatureBuilder:
    """Computes PairFeatures for many pairs, reusing source indexes between calls."""

    def __init__(self, max_evidence_chars: int = MAX_EVIDENCE_CHARS, sentence_vectors: bool = True) -> None:
        self.max_evidence_chars = max_evidence_chars
        # embed source sentences for `cos_sent` / `cos_pair` (most of the encoder's work on short
        # sources); off when the model in use reads neither
        self.sentence_vectors = sentence_vectors
        self._index_cache: dict[str, SourceIndex] = {}
        self._passes: dict[tuple[str, str], tuple[str, float]] = {}  # (statement, source) -> `first_pass`

    def first_pass(self, statement: str, source: str) -> tuple[str, float]:
        """`first_pass` of a statement (markers stripped) against a source text, remembered: the
        judge ranks the pairs of an answer too large to judge in full by it before it judges them."""
        key = (statement, source)
        found = self._passes.get(key)
        if found is None:
            if len(self._passes) > 200_000:
                self._passes.clear()
            found = self._passes[key] = first_pass(statement_words(statement), self.index(source))
        return found

    def index(self, text: str) -> SourceIndex:
        idx = self._index_cache.get(text)
        if idx is None:
            if len(self._index_cache) > 5000:
                self._index_cache.clear()
            idx = self._index_cache[text] = SourceIndex(text)
        return idx

    def build(self, pairs: Sequence[PairInput], mode: str, prefilter: bool = True) -> list[PairFeatures]:
        """Features and evidence for every pair; embeddings (mode "embed") are computed in batches
        for all pairs, so one call with many pairs is much faster than many calls. With `prefilter`,
        screened pairs (`PairInput.screened`) that share almost nothing are ruled out (see
        `prefilter_reason`). Nothing reads what the statement cites."""
        pending_short = feed = None
        short: list[str] = []
        if mode == "embed":  # embed statements and questions on the worker threads during the lexical pass
            from pipeline.judges.offline import embedding

            short = list(dict.fromkeys(t for p in pairs for t in (p.statement, p.question) if t))
            pending_short = embedding.embed_async(short) if short else None
            # and the sentences and passages in rounds, as the lexical pass finds them
            feed = embedding.EmbeddingFeed(max_tokens=PASSAGE_TOKENS)
        indexes: dict[str, SourceIndex] = {}  # each made when its first pair comes, so the feed starts at once
        memo: dict[tuple[str, str], tuple[dict[str, float], tuple[int, int], list[str], str, list[TermSwap], list[int]]] = {}
        rows: list[PairFeatures] = []
        passages: list[str] = []
        for p in pairs:
            idx = indexes[p.source] = indexes.get(p.source) or self.index(p.source)
            st = statement_words(p.statement)
            reason = self.first_pass(p.statement, p.source)[0] if prefilter and p.screened else ""
            if reason:
                rows.append(PairFeatures({}, "", note=reason, ruled_out=True))
                passages.append("")
                continue
            key = (p.statement, p.source)
            if key not in memo:
                f, window, top = lexical_features(st, idx)
                found, terms = conflicts(st, idx, window, top, f["recall_sent"])
                note = f"{idx.dropped} sentence(s) addressing a model left out of the source" if idx.dropped else ""
                memo[key] = (f, window, found, note, terms, top)
            f, window, found, note, terms, top = memo[key]
            f = dict(f)
            # this source alone: what else the statement cites is the set judge's question
            # (`support_set`), never this pair's
            f["union_recall"], f["union_bigram"], seen = union_overlap(st, [idx])
            f.update(context_features(st, p))
            sm = meaning.meanings_of(idx)
            f.update(meaning.lexical_meaning_features(st.text, statement_names(st.text), sm, window))
            cand = (tuple(meaning.candidates(meaning.content_words(st.text), sm, top))
                    if mode == "embed" and self.sentence_vectors else ())
            evidence = " ".join(idx.sentences[window[0] : window[1]])[: self.max_evidence_chars]
            missing = missing_part(st.text, seen)
            rows.append(PairFeatures(f, evidence, tuple(found), missing, note, term_swaps=tuple(terms), candidates=cand))
            passages.append(passage_for(idx, window))
            if feed is not None:
                for i in cand:
                    feed.add(idx.sentences[i])
                if passages[-1]:
                    feed.add(passages[-1])
        if feed is not None:
            self._embed_features(pairs, rows, passages, short, pending_short, indexes, feed.vectors())
        return rows

    @staticmethod
    def _embed_features(pairs: Sequence[PairInput], rows: list[PairFeatures], passages: list[str], short: list[str],
                        pending_short: Any, indexes: dict[str, SourceIndex], t_vecs: dict[str, np.ndarray]) -> None:
        """The embedding features of the rows not ruled out; `t_vecs`: the vectors of their passages
        and candidate sentences (read at PASSAGE_TOKENS word pieces)."""
        from pipeline.judges.offline import embedding

        vecs = dict(zip(short, pending_short.result())) if pending_short is not None else {}
        for p, row, passage in zip(pairs, rows, passages):
            if row.ruled_out:
                continue
            s_vec, p_vec, q_vec = vecs.get(p.statement), t_vecs.get(passage), vecs.get(p.question)
            row.features["cos_pass"] = float(s_vec @ p_vec) if s_vec is not None and p_vec is not None else 0.0
            row.features["q_pass"] = float(q_vec @ p_vec) if q_vec is not None and p_vec is not None else 0.0
            meaning.window_cosines(row.features, row.candidates, s_vec, indexes[p.source], t_vecs,
                                   normalise_figures(p.statement))
        settle_term_swaps(rows, lambda ws: dict(zip(ws, embedding.embed(ws))))


def statement_names(text: str) -> frozenset[str]:
    """The statement's words written as names, lower-cased as written (for `missing_specific`)."""
    return frozenset(w.text for w in words(normalise_figures(text)) if w.name and w.figure is None and w.text)
