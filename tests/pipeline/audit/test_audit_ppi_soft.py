"""Probabilities as the prediction (`pipeline.audit.ppi_soft`): the exact expectation over a unit's
pairs, the fitted judge's probabilities read from its verdicts, and why they narrow what 0/1 labels
widen (a seeded simulation with known truth, `pipeline.audit.fitted_sim`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.audit import fitted_sim
from pipeline.audit.ppi_soft import MAX_SOFT_PAIRS, expected_change, pair_probabilities
from pipeline.records import AnnotatedAnswer, Answer, Verdict


def test_expected_change_is_exact():
    # "supported when any pair is full": E = 1 - (1 - 0.2)(1 - 0.5) = 0.6; minus a base of 1.0 -> -0.4
    def value(labels):
        return 1.0 if "full" in labels.values() else 0.0

    got = expected_change(value, 1.0, [(0, 1), (0, 2)], {(0, 1): 0.2, (0, 2): 0.5})
    assert got == pytest.approx(-0.4, abs=1e-12)
    # a pair without a probability keeps its label (not enumerated): only (0, 1) varies here
    got = expected_change(lambda lab: 0.25 * (lab[(0, 1)] == "full"), 0.0, [(0, 1), (0, 2)], {(0, 1): 0.8})
    assert got == pytest.approx(0.2, abs=1e-12)
    assert expected_change(value, 0.0, [(0, 1)], {}) is None
    many = [(0, i) for i in range(MAX_SOFT_PAIRS + 1)]
    assert expected_change(value, 0.0, many, {p: 0.5 for p in many}) is None
    assert expected_change(lambda lab: None, 0.0, [(0, 1)], {(0, 1): 0.5}) is None


def test_probabilities_read_from_the_fitted_judges_verdicts():
    a = Answer("a1", "E", "q?", "expertise", "text.")
    fitted = Verdict("a1", "support", "none", "fitted", "fitted-logistic-v1",
                     json.dumps({"p_fitted": 0.3125, "provenance": "x"}), statement_index=0, source_index=1)
    kept = Verdict("a1", "support", "full", "fitted", "fitted-logistic-v1",
                   json.dumps({"p_fitted": None, "provenance": "kept"}), statement_index=1, source_index=1)
    other = Verdict("a1", "support", "full", "offline", "v1", json.dumps({"p_full": 0.9}), statement_index=2,
                    source_index=1, score=0.9)
    got = pair_probabilities({"a1": AnnotatedAnswer(a, (), (fitted, kept, other))})
    assert got == {"a1": {(0, 1): pytest.approx(0.3125, abs=1e-12)}}


def test_probabilities_narrow_what_thresholded_labels_widen():
    """Known truth: people who follow the judge's signal only loosely (kappa near 0.15 for every
    predictor, ExpertQA's situation). The fitted model's 0/1 labels flip inside a stratum and widen
    the interval beyond the unfitted judge's; its probabilities do not. Both cover."""
    pop = fitted_sim.population(seed=3, answers_per_engine=300, strength=0.35)
    runs = [fitted_sim.one_draw(pop, 600, seed) for seed in range(30)]
    for e in fitted_sim.ENGINES:
        for kind in ("fit", "hard", "plain"):
            covered = np.mean([r[e][kind].low <= r[e]["truth"] <= r[e][kind].high for r in runs])
            assert covered >= 0.8, (e, kind, covered)  # 95% nominal: < 80% of 30 has probability < 1%
    width = {k: float(np.mean([r[e][k].high - r[e][k].low for r in runs for e in fitted_sim.ENGINES]))
             for k in ("fit", "hard", "plain")}
    # golden (seeded), in points: thresholded 38% wider than the probabilities, which are 9% narrower
    # than the unfitted judge's p_full
    assert 100 * width["hard"] == pytest.approx(16.91, abs=0.1)
    assert 100 * width["fit"] == pytest.approx(12.22, abs=0.1)
    assert 100 * width["plain"] == pytest.approx(13.37, abs=0.1)


def test_an_overfitting_judge_costs_width_not_coverage():
    """The same loose people, a fully grown tree as the fitted model (it learns its training labels
    by heart, so its probabilities are 0 or 1): cross-fitting keeps the interval valid, the noise it
    learned makes it wider than the unfitted judge's (golden, seeded)."""
    from sklearn.tree import DecisionTreeClassifier

    pop = fitted_sim.population(seed=3, answers_per_engine=300, strength=0.35)
    runs = [fitted_sim.one_draw(pop, 600, seed, lambda: DecisionTreeClassifier(random_state=0)) for seed in range(30)]
    for e in fitted_sim.ENGINES:
        assert np.mean([r[e]["fit"].low <= r[e]["truth"] <= r[e]["fit"].high for r in runs]) >= 0.8, e
    width = {k: 100 * float(np.mean([r[e][k].high - r[e][k].low for r in runs for e in fitted_sim.ENGINES]))
             for k in ("fit", "plain")}
    assert width["fit"] == pytest.approx(17.31, abs=0.1) and width["plain"] == pytest.approx(13.37, abs=0.1)


def test_the_penalty_is_chosen_by_held_out_loss():
    from pipeline.audit.fitted_judge import C_GRID, choose_c

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 8))
    groups = [f"a{i // 2}" for i in range(400)]
    noise = (rng.random(400) < 0.6).astype(int)  # nothing to learn: the strongest penalty
    assert choose_c(x, noise, groups) == pytest.approx(min(C_GRID), abs=1e-12)
    signal = (rng.random(400) < 1 / (1 + np.exp(-3 * x[:, 0]))).astype(int)
    assert choose_c(x, signal, groups) == pytest.approx(1.0, abs=1e-12)
