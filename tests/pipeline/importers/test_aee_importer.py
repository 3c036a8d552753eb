"""The AEE release format: a hand-written fixture whose paper-parity aggregate is computed by hand.

Fixture (two engines, four answers):
- 1:YouCom  debate. S1, S2 fetched, S3 failed ("Error ..."). Statements: filler; A [1] agree;
  B [2][3] agree; C [5] neutral (5 is dangling). Support: A-1 full, B-2 full, C-2 partial, rest none.
  Confidence "Strongly confident".
  parity: relevant 3/4, one-sided 1, overconfident 1, uncited slots 1..5 with 4 uncited -> 1/5,
  C = {A-1, B-2} (S3 unusable), unsupported 1/3, necessity 2/2, accuracy 2/2,
  thoroughness 2/(2+1e-6), sources 2, statements 3, citations/statement 2/3, agreement 2/2.
- 2:YouCom  expertise. S1 fetched. X [1] full, Y [1] none. Confidence "Confident".
  parity: relevant 1, uncited 0/1, unsupported 1/2, necessity 1/1, accuracy 1/2, thoroughness 1/(1+1e-6).
- 3:Perplexity debate. S1, S2 fetched. P [1] agree (full by S1), Q [2] disagree (none).
  parity: one-sided 0, relevant 1, uncited 0, unsupported 1/2, necessity 1/2, accuracy 1/2,
  thoroughness 1/(1+1e-6). Confidence "Strongly confident".
- 4:Perplexity expertise: only a filler statement -> skipped by parity everywhere but confidence
  ("Neutral" = 3).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from timing import guard

from pipeline.aggregate import summarize
from pipeline.importers.aee import load_aee
from pipeline.metrics import ScoreConfig
from pipeline.runner import metric_rows
from pipeline.storage.store import result_set

ROOT = Path(__file__).resolve().parents[3]
EPS = 1e-6


def _obj(id_, engine, question, charged, output, sources, confidence, statements):
    obj = {"id": id_, "Question": question, "Output": output, "answer_engine": engine,
           "is_charged": charged, "is_expertise": not charged, "confidence_score": confidence,
           "core_statements": statements}
    for k in range(1, 11):
        url, content = sources.get(k, ("", None))
        obj[f"S{k}"] = url
        if content is not None:
            obj[f"S{k}_content"] = content
    return obj


def _st(id_, sentence, core, citations, balance="neutral"):
    return {"id": id_, "sentence": sentence, "core": core, "citations": citations,
            "supporting_sources": [], "opinion_balance": balance}


@pytest.fixture
def aee_release(tmp_path) -> Path:
    q_debate = "Why should homework be banned?"
    q_expert = "How do heat pumps work?"
    page = lambda t: f"Title: {t}\n\nURL Source: https://x\n\nMarkdown Content:\nbody"  # noqa: E731
    data = [
        _obj(1, "YouCom", q_debate, True, "Good question. A [1]. B [2][3]. C [5].",
             {1: ("https://a.example/1", page("A")), 2: ("https://a.example/2", page("B")),
              3: ("https://a.example/3", "Error: 403 Forbidden")},
             "Strongly confident",
             [_st(0, "Good question.", "0", []), _st(1, "A [1].", "1", [1], "agree"),
              _st(2, "B [2][3].", "1", [2, 3], "agree"), _st(3, "C [5].", "1", [5], "neutral")]),
        _obj(2, "YouCom", q_expert, False, "X [1]. Y [1].", {1: ("https://b.example/1", page("X"))},
             "Confident", [_st(0, "X [1].", "1", [1]), _st(1, "Y [1].", "1", [1])]),
        _obj(3, "Perplexity", q_debate, True, "P [1]. Q [2].",
             {1: ("https://c.example/1", page("P")), 2: ("https://c.example/2", page("Q"))},
             "Strongly confident", [_st(0, "P [1].", "1", [1], "agree"), _st(1, "Q [2].", "1", [2], "disagree")]),
        _obj(4, "Perplexity", q_expert, False, "Nothing useful here.", {1: ("https://d.example/1", page("D"))},
             "Neutral", [_st(0, "Nothing useful here.", "0", [])]),
    ]
    support = [
        (1, 1, 1, "full"), (1, 1, 2, "none"), (1, 2, 1, "none"), (1, 2, 2, "full"), (1, 3, 1, "none"), (1, 3, 2, "partial"),
        (2, 0, 1, "full"), (2, 1, 1, "none"),
        (3, 0, 1, "full"), (3, 0, 2, "none"), (3, 1, 1, "none"), (3, 1, 2, "none"),
    ]
    path = tmp_path / "ans_eng_eval_0.1.json"
    path.write_text(json.dumps(data))
    lines = [json.dumps({"fn": "x", "verif_id": k, "sample_id": s, "source_idx": src, "core_statement_id": st,
                         "support": lab}) for k, (s, st, src, lab) in enumerate(support)]
    (tmp_path / "ans_eng_eval_0.1_support_results.jsonl").write_text("\n".join(lines) + "\n")
    return path


EXPECTED_PARITY = {
    "YouCom": {"one_sided": 100, "overconfident": 100, "relevant_statements": (75 + 100) / 2,
               "uncited_sources": (20 + 0) / 2, "unsupported_statements": (100 / 3 + 50) / 2,
               "source_necessity": 100, "citation_accuracy": (100 + 50) / 2,
               "citation_thoroughness": (2 / (2 + EPS) + 1 / (1 + EPS)) / 2 * 100,
               "n_sources": 1.5, "n_statements": 2.5, "citations_per_statement": (2 / 3 + 1) / 2,
               "statement_agreement": 100, "confidence": 4.5},
    "Perplexity": {"one_sided": 0, "overconfident": 0, "relevant_statements": 100, "uncited_sources": 0,
                   "unsupported_statements": 50, "source_necessity": 50, "citation_accuracy": 50,
                   "citation_thoroughness": 1 / (1 + EPS) * 100, "n_sources": 2, "n_statements": 2,
                   "statement_agreement": 50, "confidence": 4.0},
}


def test_import_reads_labels_and_fetch_status(aee_release):
    answers = {a.answer.answer_id: a for a in load_aee(aee_release)}
    assert sorted(answers) == ["1:YouCom", "2:YouCom", "3:Perplexity", "4:Perplexity"]
    first = answers["1:YouCom"]
    assert [s.fetch_ok for s in first.answer.sources] == [True, True, False]
    assert first.answer.query_type == "debate"
    assert [s.citations for s in first.statements] == [(), (1,), (2, 3), ()]
    assert first.statements[3].dangling == (5,)
    conf = [v for v in first.verdicts if v.kind == "confidence"]
    assert conf[0].label == "5" and conf[0].judge == "recorded"


def test_parity_aggregate_matches_hand_computation(aee_release):
    answers = load_aee(aee_release)
    summary = summarize(pd.DataFrame(metric_rows("aee", "recorded", answers, (ScoreConfig("parity", "greedy"),))))
    allq = summary[summary["query_type"] == "all"].set_index(["engine", "metric"])
    for engine, expected in EXPECTED_PARITY.items():
        for name, value in expected.items():
            assert allq.loc[(engine, name), "value"] == pytest.approx(value, abs=1e-9), (engine, name)
    # parity skips the filler-only answer everywhere except confidence
    assert allq.loc[("Perplexity", "relevant_statements"), "n_answers"] == 1
    assert allq.loc[("Perplexity", "confidence"), "n_answers"] == 2


def test_strict_mode_differs_where_the_spec_says(aee_release):
    answers = load_aee(aee_release)
    rows = pd.DataFrame(metric_rows("aee", "recorded", answers, (ScoreConfig("strict", "exact"),)))
    one = rows[rows["answer_id"] == "1:YouCom"].set_index("metric")
    # the citation to dead S3 was never judged: unknown, left out (2 of the 3 citations decided, both full)
    assert one.loc["citation_accuracy", "value"] == pytest.approx(1.0)
    assert (one.loc["citation_accuracy", "units"], one.loc["citation_accuracy", "unknown"]) == (3, 1)
    assert "1 of 3 citations left out" in one.loc["citation_accuracy", "reason"]
    # A and B are supported; C has no full pair but its pair with dead S3 is unknown: undecided
    assert one.loc["unsupported_statements", "value"] == pytest.approx(0.0)
    assert one.loc["unsupported_statements", "n"] == 2
    one = one["value"]
    assert one["uncited_sources"] == 0  # listed 1..3 all cited; the dangling [5] does not add a slot
    assert one["source_necessity"] == pytest.approx(2 / 3)  # 3 of 9 pairs unknown: below the threshold
    four = rows[rows["answer_id"] == "4:Perplexity"].set_index("metric")["value"]
    assert four["relevant_statements"] == 0 and pd.isna(four["citation_accuracy"])


def test_cli_import_prints_parity_scorecard(aee_release, results_root):
    out = subprocess.run([sys.executable, "-m", "pipeline", "import", "aee", str(aee_release), "--no-progress"],
                         cwd=ROOT, capture_output=True, text=True, timeout=guard(120),
                         env={**__import__("os").environ, "AEE_RESULTS_DIR": str(results_root)})
    assert out.returncode == 0, out.stderr
    assert "parity" in out.stdout and "YouCom" in out.stdout and "87.50" in out.stdout
    assert (result_set("aee", results_root) / "recorded" / "summary.parquet").exists()


def test_bad_release_gives_clear_error(tmp_path):
    bad = tmp_path / "ans_eng_eval_0.1.json"
    bad.write_text(json.dumps([{"id": 1, "Question": "q"}]))
    from pipeline.errors import InputError

    with pytest.raises(InputError, match="answer_engine"):
        load_aee(bad)
