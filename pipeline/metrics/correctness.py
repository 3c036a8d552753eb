"""Answer correctness against gold answers (Djeddal et al., 2024, section 2.5): ROUGE-L, BLEU and a
BERTScore-style similarity, each the best over the query's gold answers.

Texts are compared without their citation markers, lower-cased, as runs of letters and digits
(`words`). A query can have several acceptable answers, so every metric compares the answer with
each gold answer and keeps the best: for ROUGE-L and the BERTScore-style score, the gold answer with
the best F-score gives all three numbers (precision, recall, F), as in the authors' evaluation code;
for BLEU, the highest BLEU.

* ROUGE-L: L = length of the longest common subsequence of words; precision L / answer words,
  recall L / gold words, F their harmonic mean. Plain ROUGE-L (no stemming); the authors' tool
  computed the summary-level variant, which is the same number for single-paragraph answers.
* BLEU: sentence-level BLEU-4 of the answer against one gold answer: clipped n-gram precisions
  p1..p4, geometric mean times the brevity penalty exp(1 - gold words / answer words) when the
  answer is shorter. Add-one smoothing on p2..p4 (an answer of a few words otherwise scores 0 for
  lacking a 4-gram); p1 is never smoothed. The paper reports corpus-level BLEU, so its numbers are
  not directly comparable with a mean of these.
* BERTScore-style: each word piece of both texts gets its contextual vector from the offline
  embedding model (all-MiniLM-L6-v2); precision = mean over the answer's pieces of the best cosine
  with a gold piece, recall = the same from the gold side, F = harmonic mean. NOT the original
  BERTScore: another, much smaller model, no idf weighting and no baseline rescaling, so values sit
  on their own scale (near 1 for any fluent English pair). Metrics run no model: the annotate stage
  measures the three numbers for every gold answer (`pipeline.gold.similarity`) and stores them as
  `gold_similarity` verdicts, which these metrics read through `ScoringContext.gold_similarity`.
  Null with the reason when the model was not installed at annotation, or when the verdicts are
  missing (results annotated before the measurement existed, or for other texts).

Values are fractions in [0, 1] (shown x100). With no gold answer for the query every metric here is
null: "not scorable", never 0.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

from pipeline.gold.gold import comparable_text
from pipeline.metrics.attribution import NO_GOLD
from pipeline.metrics.context import ScoringContext
from pipeline.metrics.registry import metric
from pipeline.records import MetricResult

__all__ = ["words", "rouge_l", "bleu", "best_over_golds"]

_WORD_RE = re.compile(r"[^\W_]+")
BLEU_ORDER = 4

PRF = tuple[float, float, float]


def words(text: str) -> tuple[str, ...]:
    """Lower-cased runs of letters and digits of a text, citation markers removed."""
    return tuple(_WORD_RE.findall(comparable_text(text).casefold()))


def _f(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (one row of the table at a time)."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@lru_cache(maxsize=50_000)
def rouge_l(candidate: tuple[str, ...], reference: tuple[str, ...]) -> PRF:
    """(precision, recall, F) of ROUGE-L between two word sequences."""
    if not candidate or not reference:
        return 0.0, 0.0, 0.0
    common = _lcs(candidate, reference)
    p, r = common / len(candidate), common / len(reference)
    return p, r, _f(p, r)


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


@lru_cache(maxsize=50_000)
def bleu(candidate: tuple[str, ...], reference: tuple[str, ...]) -> float:
    """Sentence BLEU-4 of a candidate against one reference (smoothing: see the module doc)."""
    if not candidate or not reference:
        return 0.0
    log_sum = 0.0
    for n in range(1, BLEU_ORDER + 1):
        cand, ref = _ngrams(candidate, n), _ngrams(reference, n)
        total = sum(cand.values())
        matched = sum(min(count, ref[gram]) for gram, count in cand.items())
        if n == 1:
            if matched == 0:
                return 0.0
            log_sum += math.log(matched / total)
        else:
            log_sum += math.log((matched + 1) / (total + 1))
    brevity = 1.0 if len(candidate) > len(reference) else math.exp(1 - len(reference) / len(candidate))
    return brevity * math.exp(log_sum / BLEU_ORDER)


def best_over_golds(scores: Sequence[PRF]) -> PRF:
    """The (precision, recall, F) of the gold answer with the highest F (the first on ties)."""
    return max(scores, key=lambda s: s[2])


# ---- metrics -----------------------------------------------------------------------------------


def _golds(ctx: ScoringContext) -> tuple[tuple[str, ...], list[tuple[str, ...]]] | MetricResult:
    if not ctx.answer.gold:
        return MetricResult(None, 0, NO_GOLD)
    candidate = words(ctx.answer.text)
    if not candidate:
        return MetricResult(None, 0, "the answer has no words once citation markers are removed")
    references = [words(g.text) for g in ctx.answer.gold]
    if not any(references):
        return MetricResult(None, 0, "the gold answers have no words")
    return candidate, [r for r in references if r]


def _rouge(ctx: ScoringContext, part: int) -> MetricResult:
    found = _golds(ctx)
    if isinstance(found, MetricResult):
        return found
    candidate, references = found
    best = best_over_golds([rouge_l(candidate, r) for r in references])
    return MetricResult(best[part], len(references))


NOT_MEASURED = "no BERTScore-style similarity with the gold answers in the labels (annotate again to measure it)"


def _bertscore(ctx: ScoringContext, part: int) -> MetricResult:
    found = _golds(ctx)
    if isinstance(found, MetricResult):
        return found
    wanted = [i for i, g in enumerate(ctx.answer.gold) if words(g.text)]
    similarity = ctx.gold_similarity
    missing = [i for i in wanted if i not in similarity.measured]
    if missing:
        reason = next((similarity.failed[i] for i in missing if i in similarity.failed), NOT_MEASURED)
        return MetricResult(None, 0, reason)
    best = best_over_golds([(m.precision, m.recall, m.f) for m in (similarity.measured[i] for i in wanted)])
    return MetricResult(best[part], len(wanted))


@metric(label="BLEU", group="correctness", direction="higher_is_better",
        formula="best over gold answers of sentence BLEU-4 (add-one smoothing on 2- to 4-grams)",
        reference_column="bleu")
def bleu_score(ctx: ScoringContext) -> MetricResult:
    """How many of the answer's word n-grams (n = 1..4) a gold answer shares, best over gold answers."""
    found = _golds(ctx)
    if isinstance(found, MetricResult):
        return found
    candidate, references = found
    return MetricResult(max(bleu(candidate, r) for r in references), len(references))


_ROUGE_GOLD = "; from the gold answer with the best ROUGE-L F"


@metric(label="ROUGE-L precision", group="correctness", direction="higher_is_better",
        formula="longest common word subsequence / answer words" + _ROUGE_GOLD, reference_column="rouge_l_precision")
def rouge_l_precision(ctx: ScoringContext) -> MetricResult:
    """Share of the answer's words that appear, in the same order, in the best-matching gold answer."""
    return _rouge(ctx, 0)


@metric(label="ROUGE-L recall", group="correctness", direction="higher_is_better",
        formula="longest common word subsequence / gold answer words" + _ROUGE_GOLD, reference_column="rouge_l_recall")
def rouge_l_recall(ctx: ScoringContext) -> MetricResult:
    """Share of the best-matching gold answer's words that appear, in the same order, in the answer."""
    return _rouge(ctx, 1)


@metric(label="ROUGE-L F", group="correctness", direction="higher_is_better",
        formula="2PR / (P + R) of ROUGE-L precision and recall" + _ROUGE_GOLD, reference_column="rouge_l_f")
def rouge_l_f(ctx: ScoringContext) -> MetricResult:
    """ROUGE-L F-score of the answer against the best-matching gold answer."""
    return _rouge(ctx, 2)


_BERT_GOLD = "; MiniLM word-piece vectors, from the gold answer with the best F"


@metric(label="BERTScore-style precision", group="correctness", direction="higher_is_better",
        formula="mean over the answer's word pieces of the best cosine with a gold word piece" + _BERT_GOLD,
        reference_column="bertscore_precision")
def bertscore_precision(ctx: ScoringContext) -> MetricResult:
    """How closely each part of the answer is matched in meaning by the gold answer (MiniLM, not BERTScore's model)."""
    return _bertscore(ctx, 0)


@metric(label="BERTScore-style recall", group="correctness", direction="higher_is_better",
        formula="mean over the gold answer's word pieces of the best cosine with an answer word piece" + _BERT_GOLD,
        reference_column="bertscore_recall")
def bertscore_recall(ctx: ScoringContext) -> MetricResult:
    """How closely each part of the gold answer is matched in meaning by the answer (MiniLM, not BERTScore's model)."""
    return _bertscore(ctx, 1)


@metric(label="BERTScore-style F", group="correctness", direction="higher_is_better",
        formula="2PR / (P + R) of the BERTScore-style precision and recall" + _BERT_GOLD,
        reference_column="bertscore_f")
def bertscore_f(ctx: ScoringContext) -> MetricResult:
    """BERTScore-style F of the answer against the best-matching gold answer (MiniLM, not BERTScore's model)."""
    return _bertscore(ctx, 2)
