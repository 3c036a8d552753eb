"""Agreement statistics (hand-computed cases) and the ExpertQA comparison / Parquet output."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline.judges.agreement import (
    auc,
    balanced_accuracy,
    cohen_kappa,
    confusion,
    evaluate_support,
    precision_recall_f1,
    save_agreement,
)
from pipeline.paths import expertqa_dir
from pipeline.records import Verdict


def test_auc_hand_computed():
    # positives 0.9, 0.4; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.4<0.5, 0.4>0.1) -> 3/4
    assert auc([0.9, 0.4, 0.5, 0.1], [True, True, False, False]) == pytest.approx(0.75)
    assert auc([1, 2, 3], [False, True, True]) == 1.0
    assert auc([3, 2, 1], [False, True, True]) == 0.0
    # a tie between a positive and a negative counts one half: (1 + 0.5) / 2
    assert auc([0.5, 0.8, 0.5], [True, True, False]) == pytest.approx(0.75)
    assert auc([0.1, 0.2], [True, True]) is None


def test_kappa_hand_computed():
    # 10 items: agree on 7. pred yes 5 / no 5, gold yes 6 / no 4.
    pred = ["y"] * 4 + ["n"] * 1 + ["y"] * 1 + ["n"] * 4
    gold = ["y"] * 4 + ["y"] * 1 + ["n"] * 1 + ["n"] * 3 + ["y"]
    # po = (4 + 3) / 10 = 0.7; pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert cohen_kappa(pred, gold) == pytest.approx(0.4)
    assert cohen_kappa(["a", "b"], ["a", "b"]) == pytest.approx(1.0)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # chance agreement 1
    assert cohen_kappa([], []) is None


def test_balanced_accuracy_and_prf():
    pred = [True, True, False, False, True]
    gold = [True, False, False, False, True]
    # recall of True = 2/2, recall of False = 2/3 -> (1 + 2/3) / 2
    assert balanced_accuracy(pred, gold) == pytest.approx(5 / 6)
    prf = precision_recall_f1(pred, gold)
    assert prf["precision"] == pytest.approx(2 / 3) and prf["recall"] == 1.0 and prf["f1"] == pytest.approx(0.8)
    assert balanced_accuracy([], []) is None


def test_confusion_rows_pred_cols_gold():
    m = confusion(["full", "none", "full"], ["Complete", "Complete", "Incomplete"],
                  ("full", "partial", "none"), ("Complete", "Partial", "Incomplete"))
    assert m.tolist() == [[1, 0, 1], [0, 0, 0], [1, 0, 0]]


def test_save_agreement_atomic_parquet(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path))
    report = {"judge": "x", "support": {"n": 3, "auc": 0.5, "confusion": {"matrix": [[1, 2], [3, 4]]}}}
    path = save_agreement(report, "expertqa", "offline")
    assert path.parent == tmp_path / "agreement" and path.suffix == ".parquet"
    t = pq.read_table(path).to_pandas()
    assert set(t.metric) == {"judge", "support.n", "support.auc", "support.confusion.matrix"}
    assert t.set_index("metric").loc["support.auc", "value"] == 0.5
    assert not list((tmp_path / "agreement").glob(".*tmp"))


class _Constant:
    """A fake judge: says full with score 1.0 when the statement mentions the source's first word."""

    name = "const"
    prompt_version = "t"

    def support(self, answer, statements, source):
        return [Verdict(answer.answer_id, "support", "full", self.name, self.prompt_version, statement_index=s.index,
                        source_index=source.index, score=0.9) for s in statements]

    def relevance(self, answer, statements):
        return [Verdict(answer.answer_id, "relevance", "relevant", self.name, self.prompt_version,
                        statement_index=s.index) for s in statements]


@pytest.mark.skipif(expertqa_dir() is None, reason="ExpertQA not found (set EXPERTQA_DIR)")
def test_evaluate_support_on_expertqa_split():
    from pipeline.importers.expertqa import load_expertqa

    answers = load_expertqa(expertqa_dir() / "rand_val.jsonl")
    rep = evaluate_support(_Constant(), answers)
    s = rep["support"]
    assert s["n"] == 803  # rr_* and post_hoc_* pairs with a passage and a Complete/Partial/Incomplete label
    assert s["auc"] == pytest.approx(0.5) and s["balanced_accuracy"] == pytest.approx(0.5)
    assert sum(map(sum, s["confusion"]["matrix"])) == 803
    assert s["confusion"]["matrix"][1:] == [[0, 0, 0], [0, 0, 0]]
    assert rep["relevance"]["balanced_accuracy"] == pytest.approx(0.5)
