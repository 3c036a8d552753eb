"""The spec's worked example (Figure 7 of the AEE paper), through the Python API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from timing import guard

from pipeline.importers.canonical import load_canonical
from pipeline.metrics import ScoreConfig, score_answer

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "tests" / "fixtures" / "worked_example.json"

EXPECTED = {
    "one_sided": Fraction(0),
    "overconfident": Fraction(0),
    "relevant_statements": Fraction(6, 7),
    "uncited_sources": Fraction(0, 5),
    "unsupported_statements": Fraction(1, 6),
    "source_necessity": Fraction(3, 5),
    "citation_accuracy": Fraction(4, 7),
    "citation_thoroughness": Fraction(4, 10),
}
EXPECTED_N = {"relevant_statements": 7, "uncited_sources": 5, "unsupported_statements": 6,
              "source_necessity": 5, "citation_accuracy": 7, "citation_thoroughness": 10}


@pytest.mark.parametrize("config", [ScoreConfig("strict", "exact"), ScoreConfig("strict", "greedy"),
                                    ScoreConfig("strict", "bipartite"), ScoreConfig("parity", "greedy")],
                         ids=lambda c: f"{c.mode}-{c.necessity}")
def test_worked_example_api(config):
    (answer,) = load_canonical(EXAMPLE)
    results = score_answer(answer, config)
    for name, fraction in EXPECTED.items():
        got = results[name].value
        assert got is not None, name
        # Parity thoroughness divides by sum(F) + 1e-6, so allow that much.
        assert Fraction(got).limit_denominator(100) == fraction, (name, got)
        if name in EXPECTED_N:
            assert results[name].n == EXPECTED_N[name], name


def test_worked_example_parity_thoroughness_epsilon():
    (answer,) = load_canonical(EXAMPLE)
    value = score_answer(answer, ScoreConfig("parity", "greedy"))["citation_thoroughness"].value
    assert value == pytest.approx(4 / (10 + 1e-6), abs=1e-12)
    assert value < 0.4


def test_worked_example_statements_and_citations():
    (answer,) = load_canonical(EXAMPLE)
    assert [s.citations for s in answer.statements] == [(1,), (2,), (1, 3), (2,), (5,), (4,), ()]
    text = answer.answer.text
    assert all(text[s.start:s.end] == s.text for s in answer.statements)


def test_worked_example_cli_json():
    out = subprocess.run([sys.executable, "-m", "pipeline", "score", str(EXAMPLE), "--json", "--judge", "recorded",
                          "--mode", "strict", "--necessity", "exact"], cwd=ROOT, capture_output=True, text=True, timeout=guard(120))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    metrics = report["metrics"]
    for name, fraction in EXPECTED.items():
        assert Fraction(metrics[name]["value"]).limit_denominator(100) == fraction, name
    assert report["citation_matrix"]["values"] == [
        [1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]]
    assert report["support_matrix"]["values"] == [
        [1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [0, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 0, 1], [0, 1, 1, 0, 0]]
    assert len(report["necessary_sources"]) == 3
    assert metrics["source_necessity"]["rating"] == "borderline"  # 60% is in [60, 80)
    assert metrics["citation_accuracy"]["rating"] == "borderline"  # 57.1% is in [50, 90)


def test_worked_example_cli_text_output():
    out = subprocess.run([sys.executable, "-m", "pipeline", "score", str(EXAMPLE)], cwd=ROOT,
                         capture_output=True, text=True, timeout=guard(120))
    assert out.returncode == 0, out.stderr
    assert "Citation accuracy" in out.stdout and "57.14" in out.stdout
    assert "Source necessity" in out.stdout and "60.00" in out.stdout
