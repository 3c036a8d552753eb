"""Probabilities as the prediction: the fitted judge's units predicted by their expected value.

The fitted judge (`pipeline.audit.fitted_run`) gives every (statement, source) pair a probability p
that the people call it full support. Thresholded at 0.5 into "full"/"none", a weakly informative
model flips a unit's prediction between its two extremes: the rectifier y - yhat then varies more
than the people's value itself (Var(y - f) = Var(y) + Var(f) - 2 Cov(y, f), and Var(f) is large for
a 0/1 f that agrees with y little), and the corrected interval gets wider than through a judge that
does not vary inside the sample's strata at all (bench row r, first measurement: 7% wider).

A calibrated probability does the opposite: when E[y | p] = p, Cov(y, p) = Var(p) and
Var(y - p) = Var(y) - Var(p), never above Var(y). So a unit's prediction here is the expected value
of its share of the answer's metric when each of its pairs is "full" with its own probability
(independently) and every other pair keeps the fitted judge's label:
    yhat_u = share_u + E_p[value(answer with u's pairs relabelled)] - value(answer),
the same quantity as the people's y_u = share_u + value(answer with u's pairs as the people
labelled them) - value(answer) (`pipeline.audit.ppi`), with the people's labels replaced by draws
from the model. The expectation is exact: every full/none combination of the unit's pairs is
scored by the metric itself (nothing here restates a metric), weighted by its probability. A unit
with more than `MAX_SOFT_PAIRS` pairs, or one without a fitted probability on any pair, keeps the
thresholded prediction (any fixed prediction keeps the estimate unbiased; these are rare).

Validity is the cross-PPI argument unchanged: a labelled unit's probabilities come from the fold
model that never saw its answer, every other unit's from the mean of the fold models, and the
prediction is a fixed function of those, so the rectifier's mean is still the judge's bias.
"""

from __future__ import annotations

import itertools
import json
from typing import Callable, Mapping, Sequence

from pipeline.records import AnnotatedAnswer

MAX_SOFT_PAIRS = 6  # 2^6 = 64 metric evaluations for one unit at most
Pair = tuple[int, int]  # (statement index, source index)


def pair_probabilities(answers: Mapping[str, AnnotatedAnswer]) -> dict[str, dict[Pair, float]]:
    """answer id -> (statement, source) -> the fitted probability of full support, from the support
    verdicts whose raw JSON holds `p_fitted` (the fitted judge's; a pair that kept its base judge's
    label has none). Empty for any other judge: its units keep their labels as the prediction."""
    out: dict[str, dict[Pair, float]] = {}
    for aid, a in answers.items():
        got: dict[Pair, float] = {}
        for v in a.verdicts:
            if v.kind != "support" or v.source_index is None or v.statement_index is None or "p_fitted" not in (v.raw or ""):
                continue
            try:
                p = json.loads(v.raw).get("p_fitted")
            except ValueError:
                continue
            if isinstance(p, (int, float)) and 0.0 <= float(p) <= 1.0:
                got[(int(v.statement_index), int(v.source_index))] = float(p)
        if got:
            out[aid] = got
    return out


def expected_change(value: Callable[[Mapping[Pair, str]], float | None], base: float, pairs: Sequence[Pair],
                    probs: Mapping[Pair, float]) -> float | None:
    """E[value(pairs labelled full with their probabilities, independently)] - base; `value` scores the
    answer with the given labels on `pairs`. None when no pair has a probability, there are more than
    `MAX_SOFT_PAIRS` of them, or some combination leaves the metric undefined."""
    soft = [p for p in pairs if p in probs]
    if not soft or len(soft) > MAX_SOFT_PAIRS:
        return None
    total = 0.0
    for bits in itertools.product((False, True), repeat=len(soft)):
        weight = 1.0
        for pair, full in zip(soft, bits):
            weight *= probs[pair] if full else 1.0 - probs[pair]
        if weight <= 0.0:
            continue
        got = value({pair: "full" if full else "none" for pair, full in zip(soft, bits)})
        if got is None:
            return None
        total += weight * got
    return total - base
