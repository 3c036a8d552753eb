"""Kill -9 `aee run` at random moments and run it again: the crash-safety trials of
tests/pipeline/test_kill_resume.py (a few, spread over the run) and of bench row u (many, at random).

Every run is a process forked from one multiprocessing fork server that imported the pipeline
once, so a trial costs the run itself, not Python's start-up and the imports (seconds each on two
busy cores). The kill is a real SIGKILL from outside: nothing in the run gets to clean up.

What a trial checks (`Trial`): the rerun exits 0, every Parquet file of the results reads back, its
metrics equal a clean run's bit for bit, and every judge answer stored in the SQLite cache before
the kill is still the same row afterwards (it was not asked, and stored, again).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import sqlite3
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

PRELOAD = ["pipeline.cli", "pipeline.runner", "pipeline.importers.canonical", "pipeline.testing.crash_trials",
           "pipeline.consistency.summary", "pipeline.metrics.necessity", "networkx.algorithms.bipartite"]


def apply_env(env: Mapping[str, str]) -> None:
    """Set a forked run's environment. The fork server imported the pipeline before any of it was
    set, so what is read at import (the runner's chunk size) is read again here."""
    os.environ.update(env)
    runner = sys.modules.get("pipeline.runner")  # (only the CLI imports the runner: tests/test_layers.py)
    if runner is not None:
        runner.CHUNK_SIZE = int(os.environ.get("AEE_CHUNK_SIZE", "25"))  # type: ignore[attr-defined]


@contextlib.contextmanager
def _no_main_module() -> Iterator[None]:
    """multiprocessing runs the parent's __main__ file again in every child it starts; under pytest
    that may be the page script Streamlit's AppTest ran last. Our children need none of it."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _child(argv: list[str], env: dict[str, str], output: str) -> None:
    """A fork-server child: `aee ARGV` with these environment variables, its output in a file."""
    apply_env(env)
    with open(output, "ab", buffering=0) as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    from pipeline.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _noop() -> None:
    pass


class ForkedRuns:
    """`aee` runs in children of one fork server (the same server for every instance in a process)."""

    def __init__(self, preload: Sequence[str] = ()) -> None:
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload([*PRELOAD, *preload])
        self.process(_noop).join()  # start the server and its imports now, not in the first timed run

    def process(self, target: Callable[..., None], args: tuple = ()) -> Any:
        """A started child running `target(*args)`."""
        proc = self.ctx.Process(target=target, args=args)
        with _no_main_module():
            proc.start()
        return proc

    def start(self, argv: Sequence[str], env: Mapping[str, str], output: Path) -> Any:
        output.parent.mkdir(parents=True, exist_ok=True)
        return self.process(_child, (list(argv), dict(env), str(output)))

    def run(self, argv: Sequence[str], env: Mapping[str, str], output: Path, timeout: float) -> int:
        """Run to the end; the exit code (RuntimeError, killed, when it has not ended in `timeout` s)."""
        proc = self.start(argv, env, output)
        proc.join(timeout)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
            raise RuntimeError(f"aee {' '.join(argv)} did not end within {timeout:g} s (a hang?)")
        return int(proc.exitcode)


def cache_rows(cache_dir: Path) -> dict[str, int]:
    """Every stored judge answer of a cache folder: key -> SQLite rowid (a re-stored answer gets a new one)."""
    db = cache_dir / "judges.sqlite"
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT key, rowid FROM verdicts").fetchall())


@dataclass
class Trial:
    moment: float  # seconds after the start when the kill was sent
    killed: bool  # False: the run had already ended
    answered: int  # judge answers in the cache at the kill
    kept: bool  # every one of them still the same cache row after the rerun
    identical: bool  # the rerun's metrics equal the clean run's, bit for bit
    rerun_s: float = 0.0  # wall seconds of the rerun
    problem: str = ""  # the rerun's failure, or a file that does not read back


def kill_moments(duration: float, trials: int, rng: random.Random, spread: bool) -> list[float]:
    """When to kill: with `spread`, one random moment in each of `trials` equal slices of the run's
    first 90 % (early to late, whatever the draw); else `trials` uniform random moments."""
    start, end = 0.05 * duration, 0.9 * duration
    if not spread:
        return [rng.uniform(start, end) for _ in range(trials)]
    width = (end - start) / trials
    return [rng.uniform(start + k * width, start + (k + 1) * width) for k in range(trials)]


def kill_then_rerun(runs: ForkedRuns, argv: Sequence[str], env_for: Callable[[Path], dict[str, str]], work: Path,
                    trials: int, seed: int, metrics: Callable[[Path], Any], same: Callable[[Any, Any], bool],
                    spread: bool = True, hang_guard: float = 600.0) -> tuple[float, list[Trial]]:
    """A clean run, then `trials` runs each killed at a moment (`kill_moments`) and run again.
    `env_for(folder)` gives a run's environment (its results and cache under `folder`); `metrics(folder)`
    reads what a run wrote, `same(a, b)` compares two of those. Returns the clean run's seconds and the trials."""
    import pyarrow.parquet as pq

    clean = work / "clean"
    started = time.perf_counter()
    code = runs.run(argv, env_for(clean), clean / "out.log", hang_guard)
    duration = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"the clean run failed ({code}): {(clean / 'out.log').read_text(errors='replace')[-2000:]}")
    reference = metrics(clean)
    out = []
    for k, moment in enumerate(kill_moments(duration, trials, random.Random(seed), spread)):
        folder = work / f"trial{k}"
        proc = runs.start(argv, env_for(folder), folder / "killed.log")
        time.sleep(moment)
        killed = proc.is_alive()
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(hang_guard)
        answered = cache_rows(folder / "cache")
        again = time.perf_counter()
        code = runs.run(argv, env_for(folder), folder / "rerun.log", hang_guard)
        rerun_s = time.perf_counter() - again
        problem = "" if code == 0 else f"rerun exit {code}: {(folder / 'rerun.log').read_text(errors='replace')[-1500:]}"
        identical = False
        if not problem:
            for path in (folder / "results").rglob("*.parquet"):
                try:
                    pq.read_table(path)
                except Exception as exc:  # noqa: BLE001 - reported, not raised: the trial's finding
                    problem = f"{path} does not read back: {exc}"
            identical = not problem and same(metrics(folder), reference)
        after = cache_rows(folder / "cache")
        kept = all(after.get(key) == rowid for key, rowid in answered.items())
        out.append(Trial(round(moment, 2), killed, len(answered), kept, identical, round(rerun_s, 2), problem))
    return duration, out
