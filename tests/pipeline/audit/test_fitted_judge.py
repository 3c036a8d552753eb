"""Fitted judge (issue 41): cross-PPI against the library, coverage with known truth, guard rails."""

from statistics import NormalDist

import numpy as np
import pytest

from pipeline.audit import fitted_sim
from pipeline.audit.fitted_judge import (
    answer_folds,
    check_fit,
    crossppi_stratified,
    dataset_note,
    kappa,
    pair_covariates,
    what_labels_bought,
)


def test_plain_case_matches_crossppi_mean_ci():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    n, big_n, k = 200, 3000, 5
    y = (rng.random(n) < 0.6).astype(float)
    yhat = np.clip(y * 0.5 + rng.random(n) * 0.5, 0, 1)
    pop = rng.random((big_n, k))
    low, high = ppi_py.crossppi_mean_ci(y, yhat, pop, alpha=0.05)
    point = ppi_py.crossppi_mean_pointestimate(y, yhat, pop)
    ours = crossppi_stratified(y, yhat, ["s"] * n, [str(i) for i in range(n)], pop, ["s"] * big_n, clip=None)
    assert abs(ours.value - float(np.squeeze(point))) < 1e-12
    z = NormalDist().inv_cdf(0.975)
    lib_var = ((float(np.squeeze(high)) - float(np.squeeze(low))) / (2 * z)) ** 2
    # The only difference: the library's rectifier variance divides by n, ours by n - 1.
    r = y - yhat
    expected = lib_var - r.var(ddof=0) / n + r.var(ddof=1) / n
    assert abs(ours.se ** 2 - expected) < 1e-12


def test_folds_keep_answers_whole():
    groups = ["a", "a", "b", "c", "c", "c", "d", "e", "f"]
    folds = answer_folds(groups, 3, seed=1)
    for g in set(groups):
        assert len({f for f, h in zip(folds, groups) if h == g}) == 1
    assert sorted(set(folds)) == [0, 1, 2]


@pytest.mark.parametrize("overfit", [False, True])
def test_coverage_with_known_truth(overfit):
    make = fitted_sim._default_model
    if overfit:
        from sklearn.tree import DecisionTreeClassifier

        def make():  # fully grown: fits its training labels perfectly
            return DecisionTreeClassifier(random_state=0)
    pop = fitted_sim.population(seed=0, answers_per_engine=300)
    runs = [fitted_sim.one_draw(pop, 600, seed, make) for seed in range(30)]
    for e in fitted_sim.ENGINES:
        covered = np.mean([r[e]["fit"].low <= r[e]["truth"] <= r[e]["fit"].high for r in runs])
        # 95% nominal over 30 draws: below 80% has probability < 1% if the interval is valid.
        assert covered >= 0.8, (e, covered)


def test_guard_rails_say_how_many_more():
    y = np.array([1.0, 0.0] * 75)
    groups = [str(i // 3) for i in range(150)]
    check = check_fit(y, groups, ["s"] * 150, ["A"] * 150, ["A", "B"], k=5)
    assert not check.ok
    assert "150 labels are too few for a 5-fold fit: label 50 more" in check.reasons[0]
    assert check.notes == ["engine B has no labels: the fitted judge does not predict it, its pairs keep the "
                           "unfitted judge's labels."]
    one_answer = check_fit(np.array([1.0, 0.0] * 200), [str(i // 2) for i in range(399)] + ["z"],
                           ["s"] * 399 + ["t"], ["A"] * 400, ["A"])
    assert any("stratum t has 1 labelled answer(s): label 1 more." == r for r in one_answer.reasons)
    rare = check_fit(np.array([1.0] * 390 + [0.0] * 10), [str(i // 2) for i in range(400)], ["s"] * 400,
                     ["A"] * 400, ["A"])
    assert rare.reasons == ["only 10 labels of the rarer kind: about 30 more of them are needed (at least 8 per fold)."]
    assert check_fit(np.array([1.0, 0.0] * 200), [str(i // 2) for i in range(400)], ["s"] * 400,
                     ["A"] * 400, ["A"]).ok


def test_kappa_and_sentence_golden():
    y = np.array([1, 1, 1, 0, 0, 0, 1, 0])
    p = np.array([0.9, 0.8, 0.2, 0.1, 0.3, 0.7, 0.6, 0.4])
    # po = 6/8, pe = 0.5*0.5 + 0.5*0.5 = 0.5 -> kappa 0.5
    assert abs(kappa(y, p) - 0.5) < 1e-12
    assert kappa(np.ones(4), np.ones(4)) is None
    assert what_labels_bought(600, 0.5, None, 0.09, 0.12) == (
        "With your 600 labels the fitted judge agrees with the held-out labels at kappa 0.50 (the judge "
        "alone not computable (one kind of label only)); intervals 25% narrower.")
    assert what_labels_bought(611, 0.06, 0.11, 0.1002, 0.1000).endswith("; intervals about as wide as through the judge alone.")
    assert what_labels_bought(611, 0.06, 0.11, 0.106, 0.100).endswith("; intervals 6% wider.")
    assert dataset_note("expertqa", "expertqa") is None
    assert "fitted on expertqa and is applied to webgpt" in dataset_note("expertqa", "webgpt")


def test_pair_covariates():
    row = pair_covariates(statement="Revenue rose 12% in 2020", source_text="a b c", cited=True, p_full=None,
                          features={"cos_pair": 0.5})
    assert row["figures"] == 1.0 and row["cited"] == 1.0 and row["has_p_full"] == 0.0
    assert abs(row["judge_cos_pair"] - 0.5) < 1e-12 and row["judge_soft_win"] == 0.0
    assert abs(row["log_statement_words"] - np.log1p(5)) < 1e-12
