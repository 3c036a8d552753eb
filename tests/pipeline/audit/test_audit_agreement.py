"""Agreement of the judge with the people who audited it (pipeline.audit.agreement), on tables small
enough to check by hand, against `pipeline.judges.measure.agreement` where the weights are all 1, and
Krippendorff's alpha on a hand-computed case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tolerances import close

from pipeline.audit.agreement import (
    audit_agreement,
    balanced_accuracy_from,
    judge_vs_human,
    kappa_from,
    krippendorff_alpha,
    majority_labels,
    replicate_weights,
    weighted_auc,
    weighted_confusion,
)
from pipeline.judges.measure.agreement import auc, balanced_accuracy, cohen_kappa

# Ten support pairs, one stratum each half:
#            judge full   judge none
# human full     3             1
# human none     1             5
PRED = ["full"] * 3 + ["none"] + ["full"] + ["none"] * 5
GOLD = ["full"] * 3 + ["full"] + ["none"] + ["none"] * 5


def test_unweighted_statistics_by_hand_and_as_the_expert_agreement_computes_them():
    conf = weighted_confusion(np.ones(10), PRED, GOLD, ("full", "none"))
    assert conf[0].tolist() == [[3, 1], [1, 5]]  # rows judge, columns people
    # balanced accuracy: recall of "full" 3/4, of "none" 5/6 -> (0.75 + 0.8333) / 2
    assert float(balanced_accuracy_from(conf)[0]) == close((3 / 4 + 5 / 6) / 2)
    # kappa: observed 8/10; chance 0.4 * 0.4 + 0.6 * 0.6 = 0.52 -> (0.8 - 0.52) / 0.48 = 0.58333
    assert float(kappa_from(conf)[0]) == close(0.28 / 0.48)
    assert float(kappa_from(conf)[0]) == close(cohen_kappa(PRED, GOLD))
    assert float(balanced_accuracy_from(conf)[0]) == close(balanced_accuracy(PRED, GOLD))


def test_weights_count_items_as_the_population_they_stand_for():
    # the "none" half of the table weighs 3 (the judge's "none" stratum was sampled at 1 in 3):
    #            judge full   judge none (x3)
    # human full     3             3
    # human none     1            15
    weights = np.array([1, 1, 1, 3, 1, 3, 3, 3, 3, 3], dtype=float)
    conf = weighted_confusion(weights, PRED, GOLD, ("full", "none"))
    assert conf[0].tolist() == [[3, 1], [3, 15]]
    assert float(balanced_accuracy_from(conf)[0]) == close((3 / 6 + 15 / 16) / 2)
    total = 22
    po, pe = 18 / total, (4 / total) * (6 / total) + (18 / total) * (16 / total)
    assert float(kappa_from(conf)[0]) == close((po - pe) / (1 - pe))


def test_weighted_auc_with_unit_weights_is_the_mann_whitney_auc():
    scores = [0.9, 0.8, 0.8, 0.3, 0.7, 0.2, 0.3, 0.1, 0.05, 0.8]
    positive = [g == "full" for g in GOLD]
    assert float(weighted_auc(np.ones(10), scores, positive)[0]) == close(auc(scores, positive))
    # doubling every weight changes nothing; weighting one negative up moves it as if it were repeated
    assert float(weighted_auc(2 * np.ones(10), scores, positive)[0]) == close(auc(scores, positive))
    weights = np.ones(10)
    weights[9] = 3.0
    repeated = scores + [0.8, 0.8]
    assert float(weighted_auc(weights, scores, positive)[0]) == close(auc(repeated, positive + [False, False]))


def test_bootstrap_weights_redraw_clusters_within_strata():
    clusters = ["a", "a", "b", "c", "d", "e"]
    strata = ["x", "x", "x", "y", "y", "y"]
    w = replicate_weights(clusters, strata, {"x": 6, "y": 9}, replicates=200)
    assert w[0].tolist() == [3, 3, 3, 3, 3, 3]  # N_h / n_h: 6 / 2 clusters and 9 / 3
    assert (w[1:, 0] == w[1:, 1]).all()  # items of one cluster move together
    # each replicate redraws n_h clusters in each stratum: the weights of a stratum still add to N_h
    per_stratum_x = w[1:, 0] + w[1:, 2]  # cluster a counted once (its two items share a weight)
    assert np.allclose(per_stratum_x, 6) and np.allclose(w[1:, 3:].sum(axis=1), 9)


def test_krippendorff_alpha_by_hand():
    # coders A: a a b b, B: a b b b. Coincidences: (a,a) 2, (a,b) 1, (b,a) 1, (b,b) 4; n_a 3, n_b 5, n 8.
    # D_o = 2/8; D_e = 2 * 3 * 5 / (8 * 7); alpha = 1 - 0.25 / (30/56) = 0.533333
    people = {"A": {"1": "a", "2": "a", "3": "b", "4": "b"}, "B": {"1": "a", "2": "b", "3": "b", "4": "b"}}
    got = krippendorff_alpha(people, ("a", "b"), replicates=50)
    assert got["alpha"]["value"] == close(1 - 0.25 / (30 / 56))
    assert got["n_items"] == 4
    same = krippendorff_alpha({"A": {"1": "a", "2": "a"}, "B": {"1": "a", "2": "a"}}, ("a", "b"))
    assert same["alpha"] is None and "same label" in same["reason"]
    alone = krippendorff_alpha({"A": {"1": "a"}}, ("a", "b"))
    assert alone["alpha"] is None


def _items(n: int) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "cluster_id": [f"c{k}" for k in range(n)],
                         "stratum": ["s"] * n, "order": range(n), "answer_id": ["a"] * n, "engine": ["E"] * n,
                         "statement_index": range(n), "source_index": [1] * n, "statement": [f"st {k}" for k in range(n)]})


def test_judge_vs_person_leaves_out_abstentions_and_counts_them():
    items = _items(12)
    judge = {f"i{k}": PRED[k] for k in range(10)} | {"i10": "unknown", "i11": "full"}
    human = {f"i{k}": GOLD[k] for k in range(10)} | {"i10": "full", "i11": "cant_tell"}
    got = judge_vs_human(items, judge, human, "support", {"s": 12}, replicates=200)
    assert got["n_items"] == 10 and got["judge_unknown"] == 1 and got["cant_tell"] == 1
    assert got["kappa"]["value"] == close(0.28 / 0.48)
    assert got["kappa"]["low"] <= got["kappa"]["value"] <= got["kappa"]["high"]
    assert got["confusion"]["counts"] == [[3, 0, 1], [0, 0, 0], [1, 0, 5]]
    assert sum(map(sum, got["confusion"]["shares"])) == close(1.0)


def test_the_whole_comparison_lists_disagreements_with_the_majority():
    items = _items(4)
    frame = pd.DataFrame({"cluster_id": [f"c{k}" for k in range(8)], "stratum": ["s"] * 8})
    judge = {"i0": "full", "i1": "none", "i2": "partial", "i3": "full"}
    people = {"Ana": {"i0": "full", "i1": "full", "i2": "none", "i3": "cant_tell"},
              "Bo": {"i0": "full", "i1": "full", "i2": "partial", "i3": "none"},
              "Cy": {"i0": "none", "i1": "full", "i2": "none"}}
    out = audit_agreement(items, frame, judge, people, "support", replicates=100)
    assert [v["annotator"] for v in out["versus_judge"]] == ["Ana", "Bo", "Cy", "majority"]
    assert majority_labels(people) == {"i0": "full", "i1": "full", "i2": "none", "i3": "none"}
    assert list(out["disagreements"]["item_id"]) == ["i1", "i2", "i3"]
    row = out["disagreements"].set_index("item_id").loc["i2"]
    assert (row["judge"], row["people"]) == ("partial", "none") and row["labels"] == {"Ana": "none", "Bo": "partial", "Cy": "none"}
    assert {(p["a"], p["b"]) for p in out["pairs"]} == {("Ana", "Bo"), ("Ana", "Cy"), ("Bo", "Cy")}
    ana_bo = next(p for p in out["pairs"] if (p["a"], p["b"]) == ("Ana", "Bo"))
    assert ana_bo["n_items"] == 3 and ana_bo["agreement"] == close(2 / 3)


@pytest.mark.parametrize("field,classes", [("relevant", ("relevant", "filler")), ("stance", ("agree", "disagree", "neutral"))])
def test_relevance_and_stance_have_no_auc(field, classes):
    items = _items(6)
    judge = {f"i{k}": classes[k % len(classes)] for k in range(6)}
    human = {f"i{k}": classes[(k + 1) % len(classes)] if k < 2 else classes[k % len(classes)] for k in range(6)}
    got = judge_vs_human(items, judge, human, field, {"s": 6}, replicates=50)
    assert got["auc"] is None and got["n_items"] == 6
    assert got["balanced_accuracy"]["value"] == close(balanced_accuracy([judge[f"i{k}"] for k in range(6)],
                                                                         [human[f"i{k}"] for k in range(6)]))


def test_strata_with_one_labelled_cluster_are_redrawn_together_and_few_clusters_give_no_interval():
    # five strata of one labelled cluster each: alone, every bootstrap draw would return the sample itself
    clusters, strata = ["a", "b", "c", "d", "e"], ["h1", "h2", "h3", "h4", "h5"]
    w = replicate_weights(clusters, strata, {h: 4 for h in strata}, replicates=200)
    assert w[0].tolist() == [4.0] * 5  # the weights themselves stay N_h / n_h
    assert np.ptp(w[1:], axis=0).max() > 0  # redrawn together, the replicates differ
    assert np.allclose(w[1:].sum(axis=1), 20.0)  # a draw of five from the pool of five, each weighing 4
    # ten items in three statements: the statistic, but no interval (it would be the same three redrawn)
    items = pd.DataFrame({"item_id": [f"i{k}" for k in range(10)], "cluster_id": [f"c{k % 3}" for k in range(10)],
                          "stratum": ["s"] * 10})
    judge = dict(zip(items["item_id"], PRED))
    human = dict(zip(items["item_id"], GOLD))
    got = judge_vs_human(items, judge, human, "support", {"s": 30}, replicates=200)
    assert got["n_items"] == 10 and got["n_units"] == 3
    assert got["balanced_accuracy"]["value"] == close((3 / 4 + 5 / 6) / 2)
    assert got["balanced_accuracy"]["low"] is None and got["kappa"]["high"] is None
    assert all(x != x for row in got["confusion"]["low"] for x in row)  # no share interval either


def test_too_few_items_or_one_sided_labels_give_no_statistic_only_the_reason():
    # one compared item (the review saw "balanced accuracy 0.000" from it): nothing is measured
    one = judge_vs_human(_items(1), {"i0": "none"}, {"i0": "full"}, "support", {"s": 3}, replicates=20)
    assert one["n_items"] == 1 and one["balanced_accuracy"] is None and one["kappa"] is None and one["auc"] is None
    assert one["reason"] == "only 1 item(s) compared; 5 needed" and one["auc_reason"] == one["reason"]
    assert one["confusion"]["counts"] == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]  # what was compared is still shown
    # six items, all of which the person called "full": no balanced accuracy or kappa can be read from them
    judge = {f"i{k}": ("full" if k < 4 else "none") for k in range(6)}
    same = judge_vs_human(_items(6), judge, {f"i{k}": "full" for k in range(6)}, "support", {"s": 6}, replicates=20)
    assert same["balanced_accuracy"] is None and same["kappa"] is None
    assert same["reason"] == "needs items the people call 'full' and items they do not"
