"""Shared by the two benchmark smoke tests (tests/bench/test_bench_smoke.py, tests/bench/test_bench_smoke_more.py):
run some rows of `bench/run.py --quick --json` and check the shape of what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from timing import guard

ROOT = Path(__file__).resolve().parent.parent
FIELDS = {"name", "baseline", "ours", "ratio", "unit", "note"}


def run_quick_bench(tmp_path_factory, only: str) -> list[dict]:
    """`bench/run.py --quick --json --only ROWS`, its rows as parsed JSON."""
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "AEE_CACHE_DIR": str(tmp_path_factory.mktemp("bench-cache"))})
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--json", "--only", only],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=guard(300))  # a hang guard, not a speed check
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def check_shape(rows: list[dict], letters_expected: set[str]) -> None:
    """Every row has the documented fields and types, and every asked row letter is there."""
    assert isinstance(rows, list) and rows
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
    assert letters_expected <= letters, letters
