"""Agreement statistics (hand-computed cases) and the ExpertQA comparison / Parquet output."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from tolerances import close

from pipeline.judges.base import BaseJudge
from pipeline.judges.measure.agreement import (
    auc,
    balanced_accuracy,
    cohen_kappa,
    confusion,
    evaluate_support,
    precision_recall_f1,
    question_fingerprint,
    save_agreement,
)
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.storage.paths import expertqa_dir


def test_auc_hand_computed():
    # positives 0.9, 0.4; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.4<0.5, 0.4>0.1) -> 3/4
    assert auc([0.9, 0.4, 0.5, 0.1], [True, True, False, False]) == pytest.approx(0.75)
    assert auc([1, 2, 3], [False, True, True]) == close(1.0)
    assert auc([3, 2, 1], [False, True, True]) == close(0.0)
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
    assert t.set_index("metric").loc["support.auc", "value"] == close(0.5)
    assert not list((tmp_path / "agreement").glob(".*tmp"))


class _Constant(BaseJudge):
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


def test_question_fingerprint_ignores_case_and_spacing():
    fp = question_fingerprint("What is  the capital of France?")
    assert fp == question_fingerprint("  what is the CAPITAL of\tfrance? ")
    assert fp != question_fingerprint("What is the capital of Spain?")
    assert len(fp) == 16 and int(fp, 16) >= 0


def _expert_answer(aid: str, question: str, labels: list[str]) -> AnnotatedAnswer:
    """One rr_* answer (so it carries passages), one source, one claim per expert label."""
    src = Source(1, "https://example.org", "", "A passage the experts read.", True)
    stmts = tuple(Statement(aid, i, f"claim {i} [1].", citations=(1,)) for i in range(len(labels)))
    verdicts = tuple(Verdict(aid, "support", {"Complete": "full", "Partial": "partial", "Incomplete": "none"}[g],
                             "human:expertqa", "expertqa-v1", raw=g, statement_index=i, source_index=1)
                     for i, g in enumerate(labels))
    return AnnotatedAnswer(Answer(aid, "rr_gs_gpt4", question, "expertise", " ".join(s.text for s in stmts), (src,)),
                           stmts, verdicts)


class _Fitted(BaseJudge):
    """A fake fitted judge: scores claim i with SCORES[i]; calibrated on the first question only."""

    name = "fitted"
    prompt_version = "t"
    SCORES = (0.9, 0.2, 0.6)

    def __init__(self, fitted_question: str) -> None:
        self.calibration_questions = frozenset({question_fingerprint(fitted_question)})
        self.calibration = {"fit_pairs": 3, "cv_auc": 0.61}

    def support(self, answer, statements, source):
        return [Verdict(answer.answer_id, "support", "full" if self.SCORES[s.index] >= 0.5 else "none", self.name,
                        self.prompt_version, statement_index=s.index, source_index=source.index,
                        score=self.SCORES[s.index]) for s in statements]


def test_evaluate_support_separates_pairs_from_calibration_questions():
    seen = _expert_answer("a", "Seen question?", ["Complete", "Incomplete", "Incomplete"])
    new = _expert_answer("b", "New question?", ["Incomplete", "Complete", "Partial"])
    rep = evaluate_support(_Fitted("seen QUESTION?"), [seen, new], relevance=False)
    assert rep["support"]["n"] == 6 and rep["support"]["in_calibration"] == 3
    # unseen pairs only: scores 0.9 (Incomplete), 0.2 (Complete), 0.6 (Partial). One positive (0.2)
    # ranked below both negatives -> AUC 0; predictions full/none/full vs gold no/yes/no -> all wrong
    u = rep["support_unseen"]
    assert u["n"] == 3 and u["auc"] == close(0.0) and u["balanced_accuracy"] == close(0.0)
    # all six: positives 0.9, 0.2 vs negatives 0.2, 0.6, 0.9, 0.6 -> (1+1+0.5+1 + 0.5+0+0+0) / 8
    assert rep["support"]["auc"] == pytest.approx(4 / 8)
    assert rep["calibration"] == close({"fit_pairs": 3, "cv_auc": 0.61})


def test_evaluate_support_without_calibration_has_no_unseen_block():
    rep = evaluate_support(_Constant(), [_expert_answer("b", "New question?", ["Complete", "Incomplete"])],
                           relevance=False)
    assert rep["support"]["in_calibration"] == 0
    assert "support_unseen" not in rep and "calibration" not in rep
