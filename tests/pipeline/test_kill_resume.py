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
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from timing import guard

from pipeline.storage.store import read_arrow, table_path
from pipeline.testing.crash_trials import ForkedRuns, kill_then_rerun

TRIALS = 5  # one kill in each fifth of the run; bench row u kills 20 runs at uniform random moments

pytestmark = pytest.mark.slow


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "AEE_RESULTS_DIR": str(tmp / "results"), "AEE_CACHE_DIR": str(tmp / "cache"),
            "AEE_CHUNK_SIZE": "3", "SCRIPTED_JUDGE_DELAY": "0.02",
            "AEE_JUDGE_PLUGINS": ""}


ARGV = ["run", "--dataset", "demo", "--judge", "scripted", "--no-progress"]


def _metrics(tmp: Path, judge: str = "scripted") -> pd.DataFrame:
    frame = pq.read_table(table_path("demo", "metrics", judge, tmp / "results")).to_pandas()
    return frame.sort_values(["mode", "necessity", "answer_id", "metric"]).reset_index(drop=True)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    pd.testing.assert_frame_equal(a, b, check_exact=True)  # raises with the first difference
    return True


def test_kill_nine_then_rerun(tmp_path):
    # the runs are forked from one server that imported the pipeline (pipeline/testing/crash_trials.py)
    _, trials = kill_then_rerun(ForkedRuns(), ARGV, _env, tmp_path, TRIALS, seed=20261122, metrics=_metrics,
                                same=_same, hang_guard=guard(300))
    for k, trial in enumerate(trials):
        assert not trial.problem, (k, trial.problem)  # the rerun ended well and every file reads back
        assert trial.identical, (k, trial)  # the metrics of a clean run, bit for bit
        # a call answered before the kill keeps its cache row: it was not asked (and re-stored) again
        assert trial.kept, (k, trial)
    assert sum(t.killed for t in trials) >= TRIALS // 2, trials  # most trials really were killed
    assert any(t.answered > 0 for t in trials), trials  # and some after the cache had answers


def _tables(tmp: Path, judge: str) -> dict[str, object]:
    return {t: read_arrow(table_path("demo", t, judge, tmp / "results")) for t in ("labels", "pairs", "metrics", "summary")}


def test_offline_judge_resumed_after_kill_nine_is_bit_identical(tmp_path):
    from crash_driver import run_in_child

    argv = ["run", "--dataset", "demo", "--judge", "offline", "--no-progress"]
    runs = ForkedRuns(preload=["pipeline.judges.offline", "crash_driver"])

    def driven(where: Path, log: Path, kill_at: int) -> int:
        """The run with the crash hook (tests/crash_driver.py): each named write point goes to
        `log`, and SIGKILL comes right after the `kill_at`-th (0: never)."""
        proc = runs.process(run_in_child, (str(log), kill_at, argv, _env(where)))
        proc.join(guard(600))
        assert proc.exitcode is not None, "the run hung"
        return proc.exitcode

    # the clean run, counting the write points as it goes
    log = tmp_path / "points.log"
    started = time.perf_counter()
    assert driven(tmp_path / "clean", log, 0) == 0
    duration = time.perf_counter() - started
    reference = _tables(tmp_path / "clean", "offline")
    saved = [k for k, name in enumerate(log.read_text().split(), start=1) if name.startswith("write:labels-") and name.endswith(":renamed")]
    assert len(saved) >= 3, saved

    # once right after the second saved chunk of labels, once at a random moment
    at_second = tmp_path / "second"
    assert driven(at_second, tmp_path / "k.log", saved[1]) == -signal.SIGKILL
    at_random = tmp_path / "random"
    proc = runs.start(argv, _env(at_random), at_random / "killed.log")
    time.sleep(random.Random(27).uniform(0.4, 0.8) * duration)
    proc.kill()
    proc.join(guard(60))
    for tmp in (at_second, at_random):
        assert runs.run(argv, _env(tmp), tmp / "rerun.log", guard(600)) == 0, (tmp / "rerun.log").read_text()[-3000:]
        resumed = _tables(tmp, "offline")
        for table, expected in reference.items():
            assert resumed[table].equals(expected), f"{tmp.name}: {table} differs from the clean run"
