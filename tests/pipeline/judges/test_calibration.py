"""The offline judge's calibration (pipeline/judges/measure/calibration.py): threshold search, unrelated pairs, grouped CV folds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import close

from pipeline.judges.measure.agreement import balanced_accuracy
from pipeline.judges.measure.calibration import best_threshold, grouped_cv, unrelated_pairs
from pipeline.judges.offline.support import PairInput


def _brute_force(scores: np.ndarray, pos: np.ndarray) -> tuple[float, float]:
    best_t, best_b = 0.5, -1.0
    for t in np.unique(np.round(scores, 4)):
        b = balanced_accuracy(list(scores >= t), list(pos))
        if b is not None and b > best_b:
            best_t, best_b = float(t), b
    return best_t, best_b


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), min_size=2, max_size=60))
def test_best_threshold_equals_brute_force(items):
    scores = np.array([s for s, _ in items])
    pos = np.array([p for _, p in items])
    if pos.all() or not pos.any():
        assert best_threshold(scores, pos) == close((0.5, -1.0))
        return
    t, b = best_threshold(scores, pos)
    bt, bb = _brute_force(scores, pos)
    assert t == bt and abs(b - bb) < 1e-12


def test_best_threshold_hand_checked():
    # scores 0.1 0.4 0.6 0.9, positives at 0.6 and 0.9: t = 0.6 separates perfectly
    assert best_threshold(np.array([0.1, 0.4, 0.6, 0.9]), np.array([False, False, True, True])) == close((0.6, 1.0))


def _inputs():
    out = []
    for q in ("q1", "q2", "q3"):
        for k in range(4):
            out.append(PairInput(f"{q} claim {k}", f"{q} passage {k % 2}", (f"{q} passage {k % 2}",), q))
    return out


def test_unrelated_pairs_pair_each_claim_with_another_question():
    inputs = _inputs()
    pairs, owners = unrelated_pairs(inputs, 0.5, seed=7)
    assert len(pairs) == len(owners) == 2 * 6  # half the pairs, two kinds
    for (claim, passage, cited, question, _), (anchor, partner) in zip(pairs, owners):
        assert anchor == question != partner and cited == (passage,)
        # exactly one side comes from the other question; the question stays the anchor's
        assert (claim.startswith(partner)) != (passage.startswith(partner))
        assert claim.startswith(anchor) or passage.startswith(anchor)
    kinds = [p[1].startswith(a) for p, (a, _) in zip(pairs, owners)]
    assert kinds.count(False) == 6 and kinds.count(True) == 6  # 6 passage swaps, 6 claim swaps
    assert unrelated_pairs(inputs, 0.5, seed=7) == (pairs, owners)  # deterministic
    assert unrelated_pairs(inputs[:4], 0.5, seed=7) == ([], [])  # one question: nothing certain to pair


def test_grouped_cv_never_fits_on_a_scored_question():
    # Feature 0 is the question's id: a model that saw a question would score it perfectly.
    # Labels are a question-level coin, so on held-out questions the feature is useless (AUC ~0.5);
    # if folds leaked questions, the AUC would be near 1.
    rng = np.random.default_rng(0)
    groups = [f"q{i}" for i in range(60) for _ in range(8)]
    label_of = {g: rng.random() < 0.5 for g in set(groups)}
    y = np.array([label_of[g] for g in groups], dtype=float)
    x = np.array([[int(g[1:]) / 60.0, rng.random()] for g in groups])
    cv = grouped_cv(x, y, groups, [], l2=1.0, signs=[0, 0], folds=5, shuffles=2)
    assert 0.3 < cv["auc"] < 0.7 and cv["folds"] == 5 and cv["shuffles"] == 2
