"""The behavioural check runner (pipeline.judges.measure.checks.py) on a handful of cases with the scripted judge,
whose rules are known, so every pass and failure below is hand-checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.judges import get_judge
from pipeline.judges.measure.checks import load_cases, run_checks, save_checks, summarize_checks

MINI = Path(__file__).resolve().parents[2] / "fixtures" / "checks_mini.jsonl"


def test_scripted_judge_on_the_mini_suite(tmp_path):
    cases = load_cases([MINI])
    assert [c.kind for c in cases] == ["support", "support", "relevance", "relevance", "stance", "confidence"]
    results = run_checks(get_judge("scripted", cache=False), cases).set_index("id")
    # scripted rules: support by word share (>= 0.6 full), filler by a phrase list, stance always
    # agree, confidence always 4
    assert results.loc["s-verbatim", "label"] == "full" and results.loc["s-verbatim", "passed"]
    assert results.loc["s-unrelated", "label"] == "none" and results.loc["s-unrelated", "passed"]
    assert results.loc["r-greeting", "label"] == "relevant" and not results.loc["r-greeting", "passed"]
    assert results.loc["r-fact", "passed"] and results.loc["st-agree", "passed"] and results.loc["c-booster", "passed"]
    summary = summarize_checks(results.reset_index()).set_index(["kind", "capability"])
    assert summary.loc[("relevance", "(all)"), "pass_rate"] == pytest.approx(0.5)
    assert summary.loc[("support", "(all)"), "n"] == 2
    saved = save_checks(results.reset_index(), tmp_path)
    assert saved.name == "scripted.parquet" and saved.exists()


def test_bad_case_lines_name_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "kind": "support", "capability": "c", "query": "q", "statement": "s",
                               "expect": "full"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl:1.*source"):
        load_cases([bad])
    dup = tmp_path / "dup.jsonl"
    dup.write_text(MINI.read_text().splitlines()[0] + "\n" + MINI.read_text().splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="duplicate"):
        load_cases([dup])
