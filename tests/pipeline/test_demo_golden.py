"""Golden test: the teaching corpus scored in strict mode equals its hand-checked values."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from pipeline.aggregate import summarize
from pipeline.importers.canonical import load_canonical
from pipeline.metrics import ScoreConfig, score_answer
from pipeline.runner import metric_rows

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "answers.jsonl"
GOLDEN = json.loads((ROOT / "data" / "demo" / "expected_metrics.json").read_text())
METRIC_NAMES = ["one_sided", "overconfident", "relevant_statements", "uncited_sources", "unsupported_statements",
                "source_necessity", "citation_accuracy", "citation_thoroughness", "citation_recall", "citation_precision",
                "pro_source_share", "con_source_share", "source_balance", "answer_balance", "balance_gap", "side_picked",
                "citing_follows_source"]


def _fraction(value) -> Fraction | None:
    if value is None:
        return None
    return Fraction(value) if isinstance(value, str) else Fraction(value).limit_denominator(1000)


@pytest.fixture(scope="module")
def scored():
    answers = {a.answer.answer_id: a for a in load_canonical(DEMO)}
    return {aid: score_answer(a, ScoreConfig("strict", "exact")) for aid, a in answers.items()}


def test_corpus_has_24_answers_from_three_engines(scored):
    assert len(scored) == 24
    engines = {GOLDEN["answers"][aid]["engine"] for aid in scored}
    assert len(engines) == 3


@pytest.mark.parametrize("answer_id", sorted(GOLDEN["answers"]))
def test_answer_matches_golden(scored, answer_id):
    expected = GOLDEN["answers"][answer_id]
    got = scored[answer_id]
    for name in METRIC_NAMES:
        want = _fraction(expected[name])
        have = got[name].value
        if want is None:
            assert have is None, f"{answer_id} {name}: expected null, got {have}"
        else:
            assert have is not None, f"{answer_id} {name}: expected {want}, got null ({got[name].reason})"
            assert Fraction(have).limit_denominator(1000) == want, f"{answer_id} {name}"
    assert got["dangling_citations"].value == expected["n_dangling"]


def test_per_engine_means_match_golden():
    answers = load_canonical(DEMO)
    summary = summarize(pd.DataFrame(metric_rows("demo", "recorded", answers, (ScoreConfig("strict", "exact"),))))
    allq = summary[summary["query_type"] == "all"].set_index(["engine", "metric"])
    for engine, means in GOLDEN["per_engine"].items():
        for name in METRIC_NAMES:
            want = means[name]
            if want is None:
                continue
            assert allq.loc[(engine, name), "value"] == pytest.approx(want * 100, abs=0.01), (engine, name)
