"""BERTScore-style similarity of an answer with each of its gold answers, measured in the annotate stage.

Answer correctness (`pipeline.metrics.correctness`) reports a BERTScore-style precision, recall and
F against the query's gold answers. Those numbers need the offline embedding model, and metrics
never run models, so the annotate stage measures them here and stores one `gold_similarity`
verdict per gold answer (layout: `pipeline.gold.gold.GoldSimilarity`); the metrics only read them.

It is a deterministic measurement, not a judge's opinion: the same for every judge, computed for
carried judges (`recorded`, `human`) as well, and only for answers that carry gold answers. The
verdict's `judge` names the similarity model and method (SIMILARITY_JUDGE), `prompt_version` its
version (SIMILARITY_VERSION); `score` is F, `label` F to four decimals, `raw` the JSON of all three.
When the model is not installed each verdict has `error="call"`, no label, and the reason in `raw`.

The measure: each word piece of both texts (citation markers removed) gets its contextual vector
from all-MiniLM-L6-v2 (`pipeline.judges.offline.embedding.token_vectors`); precision = mean over the
answer's pieces of the best cosine with a gold piece, recall = the same from the gold side, F =
their harmonic mean. Not the original BERTScore (another, much smaller model; no idf weighting, no
baseline rescaling). Word-piece vectors are cached per text for the process, so a gold answer
shared by every engine's answer to a query is encoded once.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pipeline.gold.gold import GOLD_SIMILARITY, GoldSimilarity, comparable_text, text_digest
from pipeline.judges.offline.embedding import ModelUnavailable, token_vectors
from pipeline.records import Answer, Verdict

__all__ = ["SIMILARITY_JUDGE", "SIMILARITY_VERSION", "bertscore_style", "gold_similarity_verdicts"]

SIMILARITY_JUDGE = "minilm-bertscore-v1"  # stable id of the model + method: bump it when either changes
SIMILARITY_VERSION = "gold-similarity-v1"  # layout of the verdict's raw JSON

PRF = tuple[float, float, float]


@lru_cache(maxsize=1024)
def _token_vectors(text: str) -> np.ndarray:
    return token_vectors(text)  # the model loads on the first call


def _f(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def bertscore_style(candidate: str, reference: str) -> PRF:
    """(precision, recall, F) of greedy cosine matching of the word-piece vectors of two texts
    (citation markers removed first). Raises `ModelUnavailable` when the model is not installed."""
    a, b = _token_vectors(comparable_text(candidate)), _token_vectors(comparable_text(reference))
    if not len(a) or not len(b):
        return 0.0, 0.0, 0.0
    sim = a @ b.T
    p, r = float(sim.max(axis=1).mean()), float(sim.max(axis=0).mean())
    return p, r, _f(p, r)


def gold_similarity_verdicts(answer: Answer) -> list[Verdict]:
    """One `gold_similarity` verdict per gold answer of this answer (none when it has no gold)."""
    if not answer.gold:
        return []
    answer_digest = text_digest(answer.text)
    out = []
    for position, gold in enumerate(answer.gold):
        gold_digest = text_digest(gold.text)
        try:
            p, r, f = bertscore_style(answer.text, gold.text)
        except ModelUnavailable as exc:
            failed = GoldSimilarity(position, answer_digest, gold_digest, error=f"embedding model unavailable: {exc}")
            out.append(Verdict(answer.answer_id, GOLD_SIMILARITY, None, SIMILARITY_JUDGE, SIMILARITY_VERSION,
                               raw=failed.to_raw(), error="call"))
            continue
        measured = GoldSimilarity(position, answer_digest, gold_digest, precision=p, recall=r, f=f)
        out.append(Verdict(answer.answer_id, GOLD_SIMILARITY, f"{f:.4f}", SIMILARITY_JUDGE, SIMILARITY_VERSION,
                           raw=measured.to_raw(), score=f))
    return out
