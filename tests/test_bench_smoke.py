"""Smoke test of the benchmark: `bench/run.py --quick --json` runs end to end and prints one JSON
object per row with the documented fields. Only the LLM call and token ratios (rows a and b) are
checked for a direction; no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from timing import guard

ROOT = Path(__file__).resolve().parent.parent
FIELDS = {"name", "baseline", "ours", "ratio", "unit", "note"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "AEE_CACHE_DIR": str(tmp_path_factory.mktemp("bench-cache"))})
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=guard(300))  # a hang guard, not a speed check
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_json_shape(rows):
    assert isinstance(rows, list) and len(rows) >= 7
    for row in rows:
        assert set(row) == FIELDS, row
        assert isinstance(row["name"], str) and row["name"]
        assert isinstance(row["unit"], str) and isinstance(row["note"], str) and row["note"]
        for key in ("baseline", "ours", "ratio"):
            assert row[key] is None or isinstance(row[key], (int, float)), (key, row)
        if row["note"].startswith("SKIPPED"):
            assert row["ratio"] is None
        else:
            assert row["baseline"] is not None and row["ours"] is not None and row["ratio"] is not None, row
    letters = {x for row in rows for x in row["name"].split(".", 1)[0].split("/")}
    assert {"a", "b", "c", "d", "e", "f", "g", "j"} <= letters, letters


def _row(rows: list[dict], prefix: str) -> dict:
    # a skipped pair of rows is one row named by both letters ("a/b. ...")
    letter = prefix.rstrip(".")
    matches = [r for r in rows if r["name"].startswith(prefix) or letter in r["name"].split(".", 1)[0].split("/")]
    assert matches, f"no row {prefix!r}"
    row = matches[0]
    if row["note"].startswith("SKIPPED"):
        from pipeline.paths import expertqa_dir

        if expertqa_dir() is None:
            pytest.skip("ExpertQA files not found: rows a and b need domain_test")
        pytest.fail(f"row {prefix!r} skipped: {row['note']}")
    return row


def test_llm_calls_ratio(rows):
    row = _row(rows, "a.")
    assert row["unit"] == "calls"
    assert row["ratio"] >= 1, row


def test_llm_tokens_ratio(rows):
    row = _row(rows, "b.")
    assert row["unit"] == "tokens"
    assert row["ratio"] >= 1, row
