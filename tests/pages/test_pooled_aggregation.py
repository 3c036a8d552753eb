"""Per-answer means (AEE) and values pooled over units (Liu et al., ALCE, ExpertQA), side by side.

A hand-made corpus whose answers have different numbers of statements, so the two aggregations
differ, checked by hand. Each answer lists one source and every statement cites it, so every pair
a metric reads is a cited pair with a recorded label (nothing rests on a pair nobody judged).

    answer  statements  supported by [1]   accuracy  unsupported
    a1      4           s1 s2 s3 (not s4)  3/4       1/4
    a2      1           none               0/1       1/1
    a3      2           s1 s2              2/2       0/2

Citation accuracy: mean over answers (3/4 + 0 + 1) / 3 = 58.33; pooled over citations
(3 + 0 + 2) / (4 + 1 + 2) = 5/7 = 71.43. Unsupported statements: mean (1/4 + 1 + 0) / 3 = 41.67;
pooled (1 + 1 + 0) / 7 = 28.57. Liu's citation recall and precision equal accuracy here (one
citation per statement, full or none), and Citations / statement is 1 either way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tolerances import close

from pipeline.aggregate import bootstrap_ratio_ci, summarize, with_aggregation
from pipeline.metrics import METRICS
from pipeline.metrics.registry import POOL_UNITS, aggregation_text

ROOT = Path(__file__).resolve().parents[2]
SOURCE = [{"index": 1, "url": "https://example.org/one", "title": "One", "text": "A page about the facts."}]


def _answer(answer_id: str, supported: list[bool]) -> dict:
    words = ["Alpha", "Bravo", "Charlie", "Delta", "Echo"]
    sentences = [f"{words[k]} holds the fact number {k + 1} [1]." for k in range(len(supported))]
    return {"answer_id": answer_id, "engine": "Engine", "query": "What holds?", "query_type": "expertise",
            "answer": " ".join(sentences), "sources": SOURCE,
            "labels": {"statements": [{"text": t, "relevant": True, "supported_by": [1] if ok else []}
                                      for t, ok in zip(sentences, supported)]}}


CORPUS = [_answer("a1", [True, True, True, False]), _answer("a2", [False]), _answer("a3", [True, True])]
EXPECTED = {  # metric: (mean over answers, pooled over units), display units
    "citation_accuracy": (100 * (0.75 + 0 + 1) / 3, 100 * 5 / 7),
    "unsupported_statements": (100 * (0.25 + 1 + 0) / 3, 100 * 2 / 7),
    "citation_recall": (100 * (0.75 + 0 + 1) / 3, 100 * 5 / 7),
    "citation_precision": (100 * (0.75 + 0 + 1) / 3, 100 * 5 / 7),
    "citations_per_statement": (1.0, 1.0),
    "relevant_statements": (100.0, 100.0),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    tmp = tmp_path_factory.mktemp("pooled")
    path = tmp / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in CORPUS) + "\n")
    root = tmp / "results"
    run_dataset("pooled", path, root=root, progress=False)
    return root


@pytest.fixture(scope="module")
def summary(results: Path) -> pd.DataFrame:
    from pipeline.storage.store import read_table, table_path

    full = read_table(table_path("pooled", "summary", "recorded", results))
    return full[(full["mode"] == "strict") & (full["necessity"] == "exact") & (full["query_type"] == "all")]


def test_every_metric_declares_a_unit_it_can_be_pooled_over():
    for name, info in METRICS.items():
        assert info.pool_unit in POOL_UNITS, name
    # the families the literature pools are declared with their units, not left per answer
    assert METRICS["citation_accuracy"].pool_unit == "citation"
    assert METRICS["citation_precision"].pool_unit == "citation"
    assert METRICS["citation_recall"].pool_unit == "worthy statement"
    assert METRICS["unsupported_statements"].pool_unit == "statement"
    assert METRICS["one_sided"].pool_unit == "answer"


@pytest.mark.parametrize("metric", sorted(EXPECTED))
def test_hand_checked_values_under_both_aggregations(summary: pd.DataFrame, metric: str):
    row = summary[summary["metric"] == metric].iloc[0]
    mean, pooled = EXPECTED[metric]
    assert row["value"] == close(mean)
    assert row["pooled_value"] == close(pooled)


def test_pooled_counts_its_units_and_both_intervals_resample_answers(summary: pd.DataFrame):
    row = summary[summary["metric"] == "citation_accuracy"].iloc[0]
    assert row["pooled_units"] == 7  # 4 + 1 + 2 citations
    assert row["n_answers"] == 3
    assert row["pooled_ci_low"] <= row["pooled_value"] <= row["pooled_ci_high"]
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    # every draw of three answers pools between 0/1 (a2 thrice) and 2/2 (a3 thrice)
    assert 0 <= row["pooled_ci_low"] < row["pooled_ci_high"] <= 100


def test_with_aggregation_names_every_value(summary: pd.DataFrame):
    pooled = with_aggregation(summary, "pooled").set_index("metric")
    assert pooled.loc["citation_accuracy", "value"] == close(100 * 5 / 7)
    assert pooled.loc["citation_accuracy", "aggregated_as"] == "pooled over citations"
    assert pooled.loc["one_sided", "aggregated_as"] == "mean over answers"
    assert pooled.loc["citation_accuracy", "aggregation"] == "pooled"
    # a pooled value is rated on the same published bands as a mean: 71.43 citation accuracy is
    # below the acceptable line
    assert pooled.loc["citation_accuracy", "rating"] == METRICS["citation_accuracy"].rate(100 * 5 / 7)
    per_answer = with_aggregation(summary, "answer").set_index("metric")
    assert per_answer.loc["citation_accuracy", "aggregated_as"] == "mean over answers"
    assert per_answer.loc["citation_accuracy", "value"] == close(100 * 1.75 / 3)
    with pytest.raises(ValueError):
        with_aggregation(summary, "median")


def test_f1_is_the_harmonic_mean_of_the_pooled_precision_and_recall(summary: pd.DataFrame):
    row = summary[summary["metric"] == "citation_f1"].iloc[0]
    assert row["pooled_value"] == close(100 * 5 / 7)  # p = r = 5/7
    assert "each pooled" in aggregation_text(METRICS["citation_f1"], "pooled")


def test_results_written_before_pooling_read_as_null_with_the_reason(summary: pd.DataFrame):
    old = summary.drop(columns=["pooled_value", "pooled_ci_low", "pooled_ci_high", "pooled_units"])
    out = with_aggregation(old, "pooled")
    assert out["value"].isna().all()
    assert (out["reason"] == "written before pooled values were kept: run the dataset again").all()


def test_an_answer_with_no_unit_adds_nothing_to_the_pool():
    # parity scores an answer with no citation as accuracy 1.0 over 0 citations: in a pool of
    # citations it weighs nothing
    frame = pd.DataFrame([
        {"engine": "E", "answer_id": "x", "query_type": "expertise", "metric": "citation_accuracy", "value": 1.0, "n": 0},
        {"engine": "E", "answer_id": "y", "query_type": "expertise", "metric": "citation_accuracy", "value": 0.5, "n": 4},
    ])
    row = summarize(frame).set_index(["query_type", "metric"]).loc[("all", "citation_accuracy")]
    assert row["value"] == close(75.0)
    assert row["pooled_value"] == close(50.0)
    assert row["pooled_units"] == 4


def test_ratio_bootstrap_is_seeded_and_brackets_the_pooled_value():
    num = np.array([3.0, 0.0, 2.0, 5.0, 1.0])
    den = np.array([4.0, 1.0, 2.0, 9.0, 3.0])
    low, high = bootstrap_ratio_ci(num, den)
    assert (low, high) == bootstrap_ratio_ci(num, den)
    assert low < num.sum() / den.sum() < high
    assert bootstrap_ratio_ci(np.array([2.0]), np.array([4.0])) == close((0.5, 0.5))


def test_cli_prints_and_exports_the_chosen_aggregation(results: Path):
    env = {"AEE_RESULTS_DIR": str(results), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    base = [sys.executable, "-m", "pipeline", "scorecard", "--dataset", "pooled"]
    out = subprocess.run([*base, "--aggregation", "pooled", "--json"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = {r["metric"]: r for r in json.loads(out.stdout)}
    assert rows["citation_accuracy"]["value"] == close(100 * 5 / 7)
    assert rows["citation_accuracy"]["aggregated_as"] == "pooled over citations"
    text = subprocess.run([*base, "--aggregation", "pooled"], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600)
    assert text.returncode == 0, text.stderr
    assert "pooled over each metric's units" in text.stdout
    assert "71.43" in text.stdout
    plain = subprocess.run(base, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert "mean over answers" in plain.stdout and "58.33" in plain.stdout


def test_scorecard_page_shows_the_pooled_values_named_and_keeps_the_choice_in_the_address(results, monkeypatch, tmp_path):
    import html

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "scorecard.py"), default_timeout=60)
    at.query_params["dataset"] = "pooled"
    at.run()
    assert not at.exception, at.exception
    grid = " ".join(html.unescape(e.proto.body) for e in at.get("html"))
    assert "58.33" in grid and "71.43" not in grid  # means over answers by default
    assert any("means over answers" in m.value for m in at.markdown)
    at.radio(key="scorecard_aggregation").set_value("pooled").run()
    assert not at.exception, at.exception
    grid = " ".join(html.unescape(e.proto.body) for e in at.get("html"))
    assert "71.43" in grid and "28.57" in grid
    assert "value is the pooled over citations (7)" in grid  # the hover names how the value was formed
    assert any("pooled over each metric\\'s units" in m.value for m in at.markdown)
    assert at.query_params["agg"] == "pooled"
    at.radio(key="scorecard_aggregation").set_value("answer").run()
    assert "agg" not in at.query_params
