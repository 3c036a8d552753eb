"""Crash safety: kill -9 a judge run at random points; every rerun completes with the results of a
clean run, every Parquet file reads back, and no judge call answered before the kill is asked again.

The judge is the deterministic `scripted` judge (pipeline/judges/scripted.py), with a
small delay per support call so a run lasts a few seconds; it is wrapped by the SQLite cache like
any real judge. Chunks of 3 answers make the kill land between and inside chunk writes.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 10

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "AEE_RESULTS_DIR": str(tmp / "results"), "AEE_CACHE_DIR": str(tmp / "cache"),
            "AEE_CHUNK_SIZE": "3", "SCRIPTED_JUDGE_DELAY": "0.02",
            "AEE_JUDGE_PLUGINS": ""}


CMD = [sys.executable, "-m", "pipeline", "run", "--dataset", "demo", "--judge", "scripted", "--no-progress"]


def _metrics(tmp: Path) -> pd.DataFrame:
    frame = pq.read_table(tmp / "results" / "demo" / "scripted" / "metrics.parquet").to_pandas()
    return frame.sort_values(["mode", "necessity", "answer_id", "metric"]).reset_index(drop=True)


def _cache_rows(tmp: Path) -> dict[str, int]:
    db = tmp / "cache" / "judges.sqlite"
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT key, rowid FROM verdicts").fetchall())


def test_kill_nine_then_rerun(tmp_path):
    clean = tmp_path / "clean"
    started = time.perf_counter()
    out = subprocess.run(CMD, cwd=ROOT, env=_env(clean), capture_output=True, text=True, timeout=300)
    duration = time.perf_counter() - started
    assert out.returncode == 0, out.stderr
    reference = _metrics(clean)

    rng = random.Random(20261122)
    outcomes = []
    for trial in range(TRIALS):
        tmp = tmp_path / f"trial{trial}"
        proc = subprocess.Popen(CMD, cwd=ROOT, env=_env(tmp), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, max(0.4, duration * 0.9)))
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        answered = _cache_rows(tmp)

        rerun = subprocess.run(CMD, cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, (trial, rerun.stderr)
        for path in (tmp / "results").rglob("*.parquet"):
            pq.read_table(path)  # every file reads back whole
        pd.testing.assert_frame_equal(_metrics(tmp), reference)
        after = _cache_rows(tmp)
        # a call answered before the kill keeps its cache row: it was not asked (and re-stored) again
        assert all(after.get(key) == rowid for key, rowid in answered.items()), trial
        outcomes.append((killed, len(answered)))

    assert sum(killed for killed, _ in outcomes) >= TRIALS // 2, outcomes  # most trials really were killed
    assert any(n > 0 for _, n in outcomes), outcomes  # and some after the cache had answers
