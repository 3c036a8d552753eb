"""Prediction-powered estimates (pipeline.audit.ppi): a hand-computed case, the coverage of the 95%
interval over 200 seeded simulations with a biased judge and imperfect annotators, and the real
teaching corpus where the hand labels stand in for the annotators."""

from __future__ import annotations

import numpy as np
import pytest
from tolerances import COUNTS, close

pytest.importorskip("ppi_py", reason="the `audit` extra (ppi-python) is not installed")

from pipeline.audit.ppi import Stratum, halving_labels, pool_short, stratified, stratum_total  # noqa: E402
from pipeline.audit.sample import allocate  # noqa: E402

# ---- a case small enough to do by hand ------------------------------------------------------------
# One stratum of N = 10 units; the judge says 1 for six of them (mean 0.6). Five are labelled:
#   judge 1 1 1 0 0,  people 1 0 1 0 0  -> rectifier 0 -1 0 0 0, mean -0.2
# PPI mean = 0.6 - 0.2 = 0.4.
# Rectifier sample variance (n - 1 = 4): deviations 0.2 -0.8 0.2 0.2 0.2 -> 0.8 / 4 = 0.2;
# variance of the mean without replacement: 0.2 / 5 * (1 - 5/10) = 0.02; se = 0.141421356.
# Human only: 1 0 1 0 0 -> mean 0.4, variance (1.2 / 4) / 5 * 0.5 = 0.03, se = 0.173205081.
N = 10
JUDGE_ALL = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=float)
JUDGE_LABELLED = np.array([1, 1, 1, 0, 0], dtype=float)
PEOPLE = np.array([1, 0, 1, 0, 0], dtype=float)


def _one_stratum(use_judge: bool = True) -> Stratum:
    # values divided by N: the estimator adds N_h x the stratum mean, so this gives the mean itself
    yhat = JUDGE_LABELLED if use_judge else np.zeros(5)
    return Stratum("s", N, PEOPLE / N, yhat / N, (JUDGE_ALL if use_judge else np.zeros(N)) / N)


def test_ppi_mean_and_interval_by_hand():
    est = stratified([_one_stratum()], floor=False)
    assert float(est.value[0]) == close(0.4)
    assert float(est.se[0]) == close(0.02 ** 0.5)
    # one stratum of five labelled units: Student's t on 4 degrees of freedom (2.776445), not the normal
    assert float(est.df[0]) == close(4.0)
    low, high = est.interval()
    assert (float(low[0]), float(high[0])) == close((0.4 - 2.776445 * 0.02 ** 0.5, 0.4 + 2.776445 * 0.02 ** 0.5), 1e-6)
    assert (float(low[0]), float(high[0])) == close((0.007351, 0.792649), 1e-6)
    # with the floor: five labels allow a disagreement rate up to z^2 / (5 + z^2) (Wilson), each
    # disagreement 0.1 (the one seen): s.e. of the rectifier mean >= 0.1 z / (5 + z^2) = 0.0221679,
    # above the 0.02 observed; times the finite-population factor 0.5 and N^2 = 100: variance 0.0245707
    floored = stratified([_one_stratum()])
    assert float(floored.se[0]) ** 2 == close(0.0245707, 1e-6)
    assert float(floored.value[0]) == close(0.4)


def test_human_only_mean_and_interval_by_hand():
    est = stratified([_one_stratum(use_judge=False)], use_predictions=False)
    assert float(est.value[0]) == close(0.4)
    assert float(est.se[0]) == close(0.03 ** 0.5)


def test_strata_add_up_and_a_census_is_exact():
    # stratum B: all 4 units labelled (a census): it adds its exact total (1 + 0 + 1 + 1 = 3, over
    # N_total = 1 here) and no variance
    census = Stratum("b", 4, np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0]))
    a = Stratum("a", N, PEOPLE, JUDGE_LABELLED, JUDGE_ALL)
    est = stratified([a, census], constant=2.5, floor=False)
    # constant 2.5 + N x 0.4 (stratum a's total) + 3 (census)
    assert float(est.value[0]) == close(2.5 + 4.0 + 3.0)
    assert float(est.variances["b"][0]) == close(0.0)
    assert float(est.se[0]) == close((100 * 0.02) ** 0.5)


def test_a_stratum_with_one_labelled_unit_of_several_is_pooled_with_its_weight():
    short = Stratum("thin", 5, np.array([1.0]), np.array([1.0]), np.ones(5))
    alone = stratified([_one_stratum(), short], pool=False)
    assert alone.value is None
    assert "'thin' (1 of 5)" in alone.reason and "at least two" in alone.reason
    est = stratified([_one_stratum(), short])
    # the pool: thin's one labelled unit weighs 5 / 1, each of s's five 10 / 5 (together 15 = N).
    # The judge's labels add 0.6 (s) + 5 (thin) = 5.6; the weighted rectifier: N x (2 x -0.1) / 15 = -0.2
    assert est.pooled == ("thin", "s") and est.reason == ""
    assert float(est.value[0]) == close(5.4)
    # six labelled units in the pool: the interval is Student's t with 5 degrees of freedom, wider than the normal
    pool = pool_short([_one_stratum(), short])[0][-1]
    assert list(pool.w) == [5.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    # one disagreement (-0.1) among six labelled units: the floor (Wilson's bound on the disagreement
    # rate, z^2 / (6 + z^2), each 0.1 away) is above what the weighted rectifiers show: s.e. of the
    # mean 0.1 z / (6 + z^2), times (1 - 6/15) and N^2 = 225: 0.0535440 (without the floor 0.024)
    assert float(stratum_total(pool)[1][0]) == close(0.024, 1e-9)
    assert float(est.se[0]) ** 2 == close(0.0535440, 1e-6)
    assert float(est.df[0]) == close(5.0)
    low, high = est.interval()
    assert float(high[0] - low[0]) == close(2 * 2.570582 * float(est.se[0]), 1e-6)
    nobody = Stratum("empty", 5, np.zeros(0), np.zeros(0), np.ones(5))
    assert stratified([nobody]).value is None  # no two labelled units anywhere: nothing to pool


def test_labels_needed_to_halve_the_interval_by_hand():
    # var(k) = V0/k - C with V0 = s^2/n = 0.2/5 = 0.04 and C = s^2/N = 0.02 (in mean units):
    # halving the interval needs k = 4 V0 / (V0 + 3 C) = 0.16 / 0.10 = 1.6, so 8 units, 3 more;
    # with 8 units the variance is 0.2/8 * (1 - 0.8) = 0.005 = 0.02 / 4.
    stratum = _one_stratum()
    est = stratified([stratum], floor=False)
    assert halving_labels([stratum], est, {"s": 2.0}) == 6  # 3 units of 2 items each


def test_allocation_keeps_every_stratum_and_is_proportional_otherwise():
    # 20 clusters over strata of 100, 5, 1 and 50: two each (the one-cluster stratum whole) = 7,
    # then the 13 left go to a (share 12.9) and d (6.45), the one furthest below its share first
    assert allocate({"a": 100, "b": 5, "c": 1, "d": 50}, 20) == {"a": 12, "b": 2, "c": 1, "d": 5}
    assert allocate({"a": 3, "b": 4}, 10) == {"a": 3, "b": 4}  # more than the population: everything


# ---- validity by simulation ------------------------------------------------------------------------
# A corpus of 4000 (statement, source) pairs from two engines whose true "full support" rates are
# 0.6 and 0.35. The judge misses a third of the true supports and invents one in ten (so it reads
# support too low). Each seed draws a new stratified sample of 300 pairs (engine x judge label) and
# three annotators who each get a label wrong with probability 0.05; their majority is the human
# label. The truth is the true full-support rate of the whole corpus.

SEEDS = 200


def _simulate(annotator_errors: tuple[float, ...], n: int = 300, seeds: int = SEEDS, lenient: float = 0.0):
    rng = np.random.default_rng(2023)
    size = 4000
    engine = rng.integers(0, 2, size)
    truth = rng.random(size) < np.where(engine == 0, 0.6, 0.35)
    judge = np.where(truth, rng.random(size) < 2 / 3, rng.random(size) < 0.10)
    key = engine * 2 + judge
    alloc = allocate({str(h): int((key == h).sum()) for h in range(4)}, n)
    draws = np.random.default_rng(7)
    strata = []
    for h in range(4):
        idx = np.flatnonzero(key == h)
        picked = np.argsort(draws.random((seeds, len(idx))), axis=1)[:, : alloc[str(h)]]  # one sample per seed (rows)
        true = truth[idx][picked]
        votes = sum((true ^ (draws.random(true.shape) < e)).astype(int) for e in annotator_errors)
        human = (2 * votes > len(annotator_errors)) | (draws.random(true.shape) < lenient)  # a lenient reader's extra "full"
        human = human.astype(float)
        predicted = judge[idx][picked].astype(float)
        everyone = np.repeat(judge[idx][:, None].astype(float), seeds, axis=1)
        strata.append(Stratum(str(h), len(idx), human.T / size, predicted.T / size, everyone / size))
    est = stratified(strata)  # one column per seed: the package computes all of them at once
    low, high = est.interval()
    theta, judge_only = truth.mean(), judge.mean()
    covered = (low <= theta) & (theta <= high)
    shown_biased = (judge_only < low) | (judge_only > high)
    return float(covered.mean()), float(shown_biased.mean()), theta, judge_only


def test_ppi_interval_covers_the_truth_and_shows_the_judge_biased():
    coverage, biased, theta, judge_only = _simulate((0.05, 0.05, 0.05))
    assert judge_only < theta - 0.05  # the judge really is biased (reads too little support)
    assert 0.93 <= coverage <= 0.97, coverage
    assert biased >= 0.95, biased


def test_a_lenient_annotator_is_what_the_interval_then_covers():
    # PPI corrects the judge towards the people: one annotator who calls a fifth of the unsupported
    # pairs "full" moves the estimate to their rate, and the interval misses the truth (why the
    # Judges page shows how people agree with each other). Symmetric slips, as above, mostly cancel.
    coverage, _, _, _ = _simulate((0.0,), lenient=0.2)
    assert coverage < 0.2, coverage
