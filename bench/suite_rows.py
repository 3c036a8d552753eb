"""Rows u, v, w: the full-size runs of three tests that run smaller in `make test` (issue 33).

- u: kill -9 at 20 uniform random moments of `aee run --dataset demo --judge scripted` (chunks of
  3, 20 ms per support call), then run again (pipeline/testing/crash_trials.py). The test
  (tests/pipeline/test_kill_resume.py) kills 5 runs, one in each fifth of the run. Clean run seconds vs the
  median rerun after a kill; the note counts reruns identical to the clean run, bit for bit, and
  cache rows kept.
- v: the offline judge on the first 200 ExpertQA answers, locally vs on a loopback Ray cluster with
  2 CPUs and 2 workers; the same rows both ways. The test (tests/pipeline/cluster/test_ray_executor.py) runs 12
  answers whose labels hold every kind.
- w: 20 people at once in a real browser, full sessions (Scorecard, Answer inspector, Re-score and
  a score): tests/browser/test_concurrency.py run with AEE_CROWD_SESSION=full, its page-ready figures read
  back from tests/artifacts/concurrency.json. The test opens Re-score straight away.

    .venv/bin/python bench/run.py --only u,v,w
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from registry import row
from rows import cost_row, skipped

ROOT = Path(__file__).resolve().parent.parent
KILL_TRIALS = 20
RAY_ANSWERS = 200


def bench_kill_trials(quick: bool, cost_row: Callable, skipped: Callable) -> list:
    trials = 2 if quick else KILL_TRIALS
    name = f"u. kill -9 at {trials} random moments then rerun: clean run vs rerun"
    import pandas as pd
    import pyarrow.parquet as pq

    from pipeline.storage.store import table_path
    from pipeline.testing.crash_trials import ForkedRuns, kill_then_rerun

    def env_for(where: Path) -> dict[str, str]:
        return {**os.environ, "AEE_RESULTS_DIR": str(where / "results"), "AEE_CACHE_DIR": str(where / "cache"),
                "AEE_CHUNK_SIZE": "3", "SCRIPTED_JUDGE_DELAY": "0.02", "AEE_JUDGE_PLUGINS": ""}

    def metrics(where: Path) -> pd.DataFrame:
        frame = pq.read_table(table_path("demo", "metrics", "scripted", where / "results")).to_pandas()
        return frame.sort_values(["mode", "necessity", "answer_id", "metric"]).reset_index(drop=True)

    def same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
        return a.equals(b)

    argv = ["run", "--dataset", "demo", "--judge", "scripted", "--no-progress"]
    with tempfile.TemporaryDirectory() as tmp:
        clean_s, out = kill_then_rerun(ForkedRuns(), argv, env_for, Path(tmp), trials, seed=20261122, metrics=metrics,
                                       same=same, spread=False)
    identical = sum(t.identical for t in out)
    kept = sum(t.kept for t in out)
    problems = [t.problem.splitlines()[0] for t in out if t.problem][:2]
    answered = [t.answered for t in out]
    return [cost_row(name, clean_s, statistics.median(t.rerun_s for t in out), "s",
                     f"`aee run --dataset demo --judge scripted` (chunks of 3, 20 ms per support call), each run "
                     f"forked from a pre-imported server; {sum(t.killed for t in out)} of {trials} killed before the "
                     f"end; judge answers in the cache at the kill {min(answered)}-{max(answered)}; reruns identical "
                     f"to the clean run, bit for bit: {identical}/{trials}"
                     f"{'' if identical == trials else ' (NOT all)'}; answers kept in their cache rows: {kept}/{trials}"
                     f"{'' if kept == trials else ' (NOT all)'}{'; ' + '; '.join(problems) if problems else ''}; "
                     f"the test kills 5 runs, one per fifth of the run")]


def bench_ray_vs_local(quick: bool, cost_row: Callable, skipped: Callable) -> list:
    name = f"v. offline judge on the first {RAY_ANSWERS} ExpertQA answers: local vs Ray"
    from pipeline.storage.paths import expertqa_dir
    from pipeline.testing.ray_cluster import LoopbackCluster, ray_installed

    if not ray_installed():
        return [skipped(name, "Ray is not installed (pip install '.[ray]')")]
    if quick:
        return [skipped(name, "--quick: starts a Ray cluster (the test compares 12 answers)")]
    if expertqa_dir() is None:
        return [skipped(name, "ExpertQA files not found (set EXPERTQA_DIR or place ../shared/data/expertqa)")]
    from ray_rows import _aee_run, _same_labels  # bench/ is on sys.path when run.py runs as a script

    args = ["--dataset", "expertqa", "--judge", "offline", "--limit", str(RAY_ANSWERS)]
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "local"
        env = {**os.environ, "AEE_RESULTS_DIR": str(local / "results"), "AEE_CACHE_DIR": str(local / "cache"),
               "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "AEE_JUDGE_PLUGINS": ""}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pipeline", "run", *args, "--no-progress"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=7200)
        local_s = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"the local run exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
        with LoopbackCluster(head_cpus=2) as cluster:
            _, ray_s = _aee_run(cluster, Path(tmp) / "ray", args, workers=2,
                                extra_env={"OMP_NUM_THREADS": "1", "AEE_JUDGE_PLUGINS": ""})
        same = _same_labels(local, Path(tmp) / "ray", "expertqa", "offline")
    return [cost_row(name, local_s, ray_s, "s",
                     f"`aee run {' '.join(args)}`, whole run each, fresh results and cache; Ray: a loopback cluster "
                     f"with 2 CPUs (started before the timed run), --workers 2; {same}; the test compares 12 answers "
                     f"whose labels hold every kind")]


def bench_crowd(quick: bool, cost_row: Callable, skipped: Callable) -> list:
    name = "w. 20 people at once, full sessions: one user alone vs p50 of the 20 (page ready)"
    if quick:
        return [skipped(name, "--quick: 20 browser sessions (the test runs short ones)")]
    if not Path("/usr/bin/chromium").exists():
        return [skipped(name, "no /usr/bin/chromium")]
    env = {**os.environ, "AEE_CROWD_SESSION": "full"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-n", "0",
                           "tests/browser/test_concurrency.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=7200)
    report_path = ROOT / "tests" / "artifacts" / "concurrency.json"
    if proc.returncode != 0 or not report_path.exists():
        return [skipped(name, f"the test failed (exit {proc.returncode}): {proc.stdout.strip()[-300:]}")]
    report = json.loads(report_path.read_text())
    if report.get("session") != "full":
        return [skipped(name, "the test did not run full sessions")]
    alone = sum(report["warmup_seconds"].values())
    pages = "; ".join(f"{page} p50 {s['p50']:.1f} s, p95 {s['p95']:.1f} s, max {s['max']:.1f} s"
                      for page, s in report["pages"].items())
    return [cost_row(name, alone / len(report["warmup_seconds"]), report["all"]["p50"], "s",
                     f"tests/browser/test_concurrency.py with AEE_CROWD_SESSION=full: each of 20 browser contexts opens the "
                     f"Scorecard, the Answer inspector, Re-score, and scores its own answer; all 20 succeeded, none saw "
                     f"another's text; baseline = the warm-up user's mean page-ready alone; {pages}; crowd wall "
                     f"{report['crowd_wall_seconds']:.0f} s, server CPU {report['server_cpu_seconds']} s on "
                     f"{report['cores']} cores")]


@row("u", "u. kill -9 at random moments then rerun")
def row_kill_trials(quick: bool) -> list:
    return bench_kill_trials(quick, cost_row, skipped)


@row("v", "v. offline judge, ExpertQA: local vs Ray")
def row_ray_vs_local(quick: bool) -> list:
    return bench_ray_vs_local(quick, cost_row, skipped)


@row("w", "w. 20 browser users at once, full sessions")
def row_crowd(quick: bool) -> list:
    return bench_crowd(quick, cost_row, skipped)
