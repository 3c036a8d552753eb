"""Crash safety: kill -9 a judge run at random points; every rerun completes with the results of a
clean run, bit for bit, every Parquet file reads back, and no judge call answered before the kill is
asked again.

The judge is the deterministic `scripted` judge (pipeline/judges/scripted.py), with a
small delay per support call so a run lasts a few seconds; it is wrapped by the SQLite cache like
any real judge. Chunks of 3 answers make the kill land between and inside chunk writes. The offline
judge is killed too, once right after it saved its second chunk of labels and once at a random
moment: its resumed run embeds the remaining texts in other batches than a clean run does, and its
scores must still be the same to the last bit.
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

from pipeline.store import read_arrow, table_path

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 10

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "AEE_RESULTS_DIR": str(tmp / "results"), "AEE_CACHE_DIR": str(tmp / "cache"),
            "AEE_CHUNK_SIZE": "3", "SCRIPTED_JUDGE_DELAY": "0.02",
            "AEE_JUDGE_PLUGINS": ""}


CMD = [sys.executable, "-m", "pipeline", "run", "--dataset", "demo", "--judge", "scripted", "--no-progress"]


def _metrics(tmp: Path, judge: str = "scripted") -> pd.DataFrame:
    frame = pq.read_table(table_path("demo", "metrics", judge, tmp / "results")).to_pandas()
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
        pd.testing.assert_frame_equal(_metrics(tmp), reference, check_exact=True)
        after = _cache_rows(tmp)
        # a call answered before the kill keeps its cache row: it was not asked (and re-stored) again
        assert all(after.get(key) == rowid for key, rowid in answered.items()), trial
        outcomes.append((killed, len(answered)))

    assert sum(killed for killed, _ in outcomes) >= TRIALS // 2, outcomes  # most trials really were killed
    assert any(n > 0 for _, n in outcomes), outcomes  # and some after the cache had answers


def _tables(tmp: Path, judge: str) -> dict[str, object]:
    return {t: read_arrow(table_path("demo", t, judge, tmp / "results")) for t in ("labels", "pairs", "metrics", "summary")}


def test_offline_judge_resumed_after_kill_nine_is_bit_identical(tmp_path):
    cmd = [sys.executable, "-m", "pipeline", "run", "--dataset", "demo", "--judge", "offline", "--no-progress"]
    clean = tmp_path / "clean"
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=_env(clean), capture_output=True, text=True, timeout=600)
    duration = time.perf_counter() - started
    assert out.returncode == 0, out.stderr
    reference = _tables(clean, "offline")

    # once right after the second saved chunk of labels, once at a random moment
    driver = [sys.executable, str(ROOT / "tests" / "crash_driver.py")]
    log = tmp_path / "points.log"
    subprocess.run(driver + [str(log), "0", "--", *cmd[3:]], cwd=ROOT, env=_env(tmp_path / "count"), capture_output=True,
                   timeout=600, check=True)
    saved = [k for k, name in enumerate(log.read_text().split(), start=1) if name.startswith("write:labels-") and name.endswith(":renamed")]
    assert len(saved) >= 3, saved
    at_second = tmp_path / "second"
    killed = subprocess.run(driver + [str(tmp_path / "k.log"), str(saved[1]), "--", *cmd[3:]], cwd=ROOT,
                            env=_env(at_second), capture_output=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL
    at_random = tmp_path / "random"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(at_random), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.Random(27).uniform(0.4, 0.8) * duration)
    proc.kill()
    proc.wait(timeout=60)
    for tmp in (at_second, at_random):
        rerun = subprocess.run(cmd, cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr
        resumed = _tables(tmp, "offline")
        for table, expected in reference.items():
            assert resumed[table].equals(expected), f"{tmp.name}: {table} differs from the clean run"
