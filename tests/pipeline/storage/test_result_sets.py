"""A dataset's results change whole or not at all, one run writes a dataset at a time, and what a
killed run leaves behind is swept (pipeline/storage/result_sets.py).

The crash test kills `aee run` with SIGKILL right after each named file operation of its write
path in turn (every table's flush, close and rename, the summary, the manifest, every link of the
other judge's tables into the new set, the checksum list, the pointer switch, every removal of the
sweep), and checks each time that the readers (the store's listings, `aee scorecard`, the tables a
page reads) see the old complete set or the new complete set, never a mix and never an error; then
that the next run finishes the job and leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from timing import guard

from pipeline import cli
from pipeline.runner import run_dataset
from pipeline.storage.result_sets import POINTER, SET_FILE, DatasetBusy, DatasetLock, current_set, is_our_temporary, set_problem, sweep_leftovers
from pipeline.storage.store import JUDGE_TABLES, broken_datasets, list_datasets, list_judges, result_set, table_path

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "data" / "demo" / "answers.jsonl"
DRIVER = ROOT / "tests" / "crash_driver.py"


def _env(results: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "AEE_RESULTS_DIR": str(results), "AEE_CACHE_DIR": str(results.parent / "cache"),
            "AEE_JUDGE_PLUGINS": "", **extra}


def _aee(results: Path, *args: str, log: Path | None = None, kill_at: int = 0, **env: str) -> subprocess.CompletedProcess:
    if log is None:
        cmd = [sys.executable, "-m", "pipeline", *args]
    else:
        cmd = [sys.executable, str(DRIVER), str(log), str(kill_at), "--", *args]
    return subprocess.run(cmd, cwd=ROOT, env=_env(results, **env), capture_output=True, text=True, timeout=guard(300))


# ---- what a reader sees ---------------------------------------------------------------------------


def reader_view(root: Path, dataset: str) -> dict[str, str]:
    """What the readers show of a dataset: its listing, its judges, each table's rows (hashed) and
    the scorecard `aee scorecard` prints."""
    assert broken_datasets(root) == {}, broken_datasets(root)
    assert dataset in list_datasets(root)
    judges = sorted(list_judges(dataset, root))
    view = {"judges": ",".join(judges)}
    base = result_set(dataset, root)  # one resolution: the tables of one set
    for table in ("answers", "sources"):
        view[table] = _digest(table_path(dataset, table, base=base))
    for judge in judges:
        for table in JUDGE_TABLES:
            view[f"{judge}/{table}"] = _digest(table_path(dataset, table, judge, base=base))
        manifest = json.loads(table_path(dataset, "summary", judge, base=base).with_name("manifest.json").read_text())
        view[f"{judge}/limit"] = str(manifest["config"]["limit"])
    saved = os.environ.get("AEE_RESULTS_DIR")
    os.environ["AEE_RESULTS_DIR"] = str(root)
    try:
        out = StringIO()
        with redirect_stdout(out):
            assert cli.main(["scorecard", "--dataset", dataset, "--judge", "recorded"]) == 0
        view["scorecard"] = out.getvalue()
    finally:
        if saved is None:
            os.environ.pop("AEE_RESULTS_DIR", None)
        else:
            os.environ["AEE_RESULTS_DIR"] = saved
    return view


def _digest(path: Path) -> str:
    table = pq.read_table(path)
    return hashlib.sha256(str(table.to_pylist()).encode()).hexdigest()


def leftovers(root: Path, dataset: str) -> list[str]:
    folder = root / dataset
    temporaries = [str(p) for p in folder.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    generations = [p.name for p in folder.iterdir() if p.name.startswith("gen-")]
    return temporaries + (generations if len(generations) > 2 else [])


# ---- the crash test -------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_nine_after_every_file_operation_of_the_final_write(tmp_path):
    # the old set: every answer, two judges; the new run: the hand labels of the first 5 answers only
    # (the case: a complete dataset re-run with --limit and killed in its final write)
    old = tmp_path / "old" / "results"
    for args in (("--judge", "recorded"), ("--judge", "scripted")):
        done = _aee(old, "run", "--dataset", "kt", "--path", str(DEMO), *args, "--no-progress")
        assert done.returncode == 0, done.stderr
    new_run = ("run", "--dataset", "kt", "--path", str(DEMO), "--judge", "recorded", "--limit", "5", "--no-progress")
    old_view = reader_view(old, "kt")

    clean = tmp_path / "clean" / "results"
    shutil.copytree(old, clean)
    points_log = tmp_path / "points.log"
    done = _aee(clean, *new_run, log=points_log)
    assert done.returncode == 0, done.stderr
    new_view = reader_view(clean, "kt")
    assert new_view["recorded/limit"] == "5" and old_view["recorded/limit"] == "None"
    assert new_view["scripted/metrics"] == old_view["scripted/metrics"]  # carried over unchanged
    points = points_log.read_text().split()
    assert len(points) >= 25, points  # 6 tables x 3, summary, manifest, 6 carried files, list, pointer, ...
    switched = points.index("generation:pointer") + 1  # the point right after the pointer's rename

    seen = {"old": 0, "new": 0}
    # each trial in a process forked from a server that imported the pipeline once (see crash_driver)
    from crash_driver import run_in_child

    from pipeline.testing.crash_trials import ForkedRuns

    runs = ForkedRuns(preload=["crash_driver"])
    for k in range(1, len(points) + 1):
        trial = tmp_path / f"kill{k}" / "results"
        shutil.copytree(old, trial)
        child = runs.process(run_in_child, (str(tmp_path / f"kill{k}.log"), k, list(new_run),
                                            {"AEE_RESULTS_DIR": str(trial), "AEE_CACHE_DIR": str(trial.parent / "cache")}))
        child.join(timeout=guard(300))
        assert child.exitcode == -signal.SIGKILL, (k, points[k - 1], child.exitcode)
        view = reader_view(trial, "kt")
        assert view in (old_view, new_view), (k, points[k - 1])  # a whole set, never a mix
        seen["new" if view == new_view else "old"] += 1
        assert view == (new_view if k >= switched else old_view), (k, points[k - 1])
        if k % 5 == 0 or k == len(points):  # the next run completes the job and leaves nothing behind
            out = tmp_path / f"again{k}.log"
            again = runs.run(list(new_run), _env(trial), out, timeout=guard(300))
            assert again == 0, out.read_text()
            assert reader_view(trial, "kt") == new_view
            assert leftovers(trial, "kt") == [], leftovers(trial, "kt")
        shutil.rmtree(trial.parent)
    assert seen["old"] >= 20 and seen["new"] >= 1, seen


# ---- two runs at once -----------------------------------------------------------------------------


def _lock_holder(results: Path, dataset: str, deadline: float | None = None) -> int:
    lock = results / ".locks" / f"{dataset}.lock"
    until = time.monotonic() + (deadline or guard(60))
    while time.monotonic() < until:
        try:
            pid = json.loads(lock.read_text() or "{}").get("pid")
        except (OSError, ValueError):
            pid = None
        if pid:
            return int(pid)
        time.sleep(0.05)
    raise AssertionError("the first run never took the lock")


@pytest.mark.slow
def test_a_second_run_on_the_same_dataset_stops_or_waits(tmp_path):
    results = tmp_path / "results"
    slow = {"SCRIPTED_JUDGE_DELAY": "0.15"}  # the first run lasts ~10 s: long enough to overlap
    first_cmd = [sys.executable, "-m", "pipeline", "run", "--dataset", "race", "--path", str(DEMO), "--judge", "scripted",
                 "--no-progress"]
    first = subprocess.Popen(first_cmd, cwd=ROOT, env=_env(results, **slow), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    holder = _lock_holder(results, "race")
    assert holder == first.pid
    # another input, same name, while the first is writing: stopped at once, the holder named
    second = _aee(results, "run", "--dataset", "race", "--path", str(DEMO), "--judge", "recorded", "--limit", "3",
                  "--no-progress")
    assert second.returncode == 2
    assert f"dataset 'race' is being written by another run (pid {first.pid}" in second.stderr
    assert "--wait" in second.stderr and second.stderr.count("\n") == 1  # one line
    # the same with --wait: it runs once the first has finished, and the tables are all its own or all the first's
    waiting = _aee(results, "run", "--dataset", "race", "--path", str(DEMO), "--judge", "recorded", "--limit", "3",
                   "--no-progress", "--wait", "120")
    out, err = first.communicate(timeout=guard(300))
    assert first.returncode == 0, err
    assert waiting.returncode == 0, waiting.stderr
    assert set_problem(results / "race") is None
    assert sorted(list_judges("race", results)) == ["recorded", "scripted"]
    base = result_set("race", results)
    scripted = pq.read_table(table_path("race", "metrics", "scripted", base=base)).column("answer_id").unique()
    recorded = pq.read_table(table_path("race", "metrics", "recorded", base=base)).column("answer_id").unique()
    assert len(scripted) == 24 and len(recorded) == 3  # each judge's tables from one run, whole


@pytest.mark.slow
def test_two_runs_started_together_never_mix(tmp_path):
    # three trials of the race: both started at the same moment with different inputs
    for trial in range(3):
        results = tmp_path / f"t{trial}" / "results"
        cmds = [("--judge", "recorded", "--limit", "4"), ("--judge", "recorded", "--limit", "9")]
        procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "run", "--dataset", "same", "--path", str(DEMO), *c,
                                   "--no-progress"], cwd=ROOT, env=_env(results), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for c in cmds]
        outcomes = [(p.wait(timeout=guard(300)), p.stderr.read() if p.stderr else "") for p in procs]
        codes = sorted(code for code, _ in outcomes)
        assert codes in ([0, 0], [0, 2]), outcomes  # both in turn, or the second stopped with a message
        for code, err in outcomes:
            if code == 2:
                assert "is being written by another run" in err
        base = result_set("same", results)
        manifest = json.loads((base / "recorded" / "manifest.json").read_text())
        tables = {t: set(pq.read_table(table_path("same", t, "recorded", base=base)).column("answer_id").to_pylist())
                  for t in ("statements", "labels", "pairs", "metrics")}
        answers = {t: len(v) for t, v in tables.items()}
        assert set(answers.values()) == {manifest["config"]["limit"]}, (answers, manifest["config"]["limit"])
        assert set_problem(results / "same") is None


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path, caplog):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    locks = tmp_path / ".locks"
    locks.mkdir(parents=True)
    (locks / "x.lock").write_text(json.dumps({"pid": gone.pid, "started": "earlier", "command": "aee run"}))
    with caplog.at_level("WARNING"), DatasetLock(tmp_path, "x") as lock:
        assert lock.took_over is not None and lock.took_over["pid"] == gone.pid
    assert f"left by pid {gone.pid}" in caplog.text
    with DatasetLock(tmp_path, "x") as again:  # released cleanly: nothing to take over
        assert again.took_over is None


def test_a_live_holder_stops_a_second_lock_in_this_process_too(tmp_path):
    code = ("import sys, time; from pathlib import Path; from pipeline.storage.result_sets import DatasetLock;"
            "l = DatasetLock(Path(sys.argv[1]), 'y').acquire(); print('held', flush=True); time.sleep(3600)")  # killed below
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(DatasetBusy, match=f"pid {holder.pid}"):
            DatasetLock(tmp_path, "y").acquire()
        started = time.monotonic()
        with pytest.raises(DatasetBusy, match="waited 1 s"):
            DatasetLock(tmp_path, "y", wait=1).acquire()
        assert time.monotonic() - started >= 1
    finally:
        holder.kill()
        holder.wait()
    with DatasetLock(tmp_path, "y") as lock:  # the kernel let go when the holder died
        assert lock.took_over is not None and lock.took_over["pid"] == holder.pid


# ---- SIGTERM, leftovers and checks ----------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_stops_a_run_and_leaves_nothing_behind(tmp_path):
    results = tmp_path / "results"
    assert _aee(results, "run", "--dataset", "t", "--path", str(DEMO), "--no-progress").returncode == 0
    before = reader_view(results, "t")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "run", "--dataset", "t", "--path", str(DEMO), "--judge",
                             "scripted", "--no-progress"], cwd=ROOT, env=_env(results, SCRIPTED_JUDGE_DELAY="0.05", AEE_CHUNK_SIZE="3"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _lock_holder(results, "t")
    deadline = time.monotonic() + 60
    while not list((results / "t" / "scripted" / "parts").glob("labels-*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)  # until it has saved a chunk of labels and is writing more
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=guard(60))
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert reader_view(results, "t") == before
    assert leftovers(results, "t") == [] and [p.name for p in (results / "t").iterdir() if p.name.startswith("gen-")] == \
        [current_set(results / "t").name]


def test_sweep_removes_only_what_our_runs_write(tmp_path):
    ds = tmp_path / "d"
    run_dataset("d", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    gen = current_set(ds)
    ours = [ds / ".answers.parquet.a1b2c3d4.tmp", gen / "recorded" / ".labels.parquet.zz_9xk1m.tmp",
            ds / "recorded" / "parts" / ".labels-0123.parquet.abcdefgh.tmp", ds / ".CURRENT.q1w2e3r4.tmp"]
    theirs = [ds / "notes.tmp", ds / ".answers.parquet.tmp", ds / "recorded" / "my.parquet.abcdefgh.tmp", ds / "keep.parquet"]
    unpublished = ds / "gen-000099"
    for path in ours + theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    unpublished.mkdir()
    removed = sweep_leftovers(ds)
    assert all(not p.exists() for p in ours) and all(p.exists() for p in theirs)
    assert not unpublished.exists() and "gen-000099" in removed
    assert all(is_our_temporary(p.name) for p in ours) and not any(is_our_temporary(p.name) for p in theirs)


def test_a_set_that_does_not_match_its_list_is_named_and_never_shown(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path))
    run_dataset("m", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    gen = current_set(tmp_path / "m")
    assert set_problem(tmp_path / "m") is None and (gen / SET_FILE).is_file()
    # the mix: a table from another run in place of this run's
    other = tmp_path / "other"
    run_dataset("m2", DEMO, judge_name="recorded", limit=3, progress=False, root=other)
    shutil.copy(result_set("m2", other) / "recorded" / "metrics.parquet", gen / "recorded" / "metrics.parquet")
    problem = set_problem(tmp_path / "m")
    assert problem == f"recorded/metrics.parquet of result set {gen.name} changed after the run wrote it (its checksum does not match)"
    assert list_datasets(tmp_path) == [] and broken_datasets(tmp_path) == {"m": problem}
    assert list_judges("m", tmp_path) == []
    assert cli.main(["scorecard", "--dataset", "m"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the results of dataset 'm' are not shown: recorded/metrics.parquet") and err.count("\n") == 1
    assert cli.main(["datasets"]) == 0
    assert f"results: m NOT SHOWN: {problem}" in capsys.readouterr().out
    # a missing file, an extra file, a pointer to nothing
    (gen / "recorded" / "metrics.parquet").unlink()
    assert set_problem(tmp_path / "m") == f"recorded/metrics.parquet of result set {gen.name} is missing"
    (tmp_path / "m" / POINTER).write_text("gen-000042\n")
    assert "gen-000042 has no SET.json" in (set_problem(tmp_path / "m") or "")
    # the next run writes a whole set again (keeping nothing from the damaged one)
    run_dataset("m", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    assert set_problem(tmp_path / "m") is None and list_datasets(tmp_path) == ["m"]


def test_results_from_before_generations_are_read_then_moved_into_a_set(tmp_path):
    # the old layout: tables directly in the dataset folder, no pointer
    run_dataset("legacy", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    folder = tmp_path / "legacy"
    gen = current_set(folder)
    for path in sorted(gen.rglob("*")):
        if path.is_file() and path.name != SET_FILE:
            target = folder / path.relative_to(gen)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    shutil.rmtree(gen)
    (folder / POINTER).unlink()
    assert list_datasets(tmp_path) == ["legacy"] and list_judges("legacy", tmp_path) == ["recorded"]
    assert set_problem(folder) is None and current_set(folder) == folder
    run_dataset("legacy", DEMO, judge_name="scripted", progress=False, root=tmp_path)
    assert sorted(list_judges("legacy", tmp_path)) == ["recorded", "scripted"]  # the old judge carried into the set
    assert not (folder / "answers.parquet").exists() and not (folder / "recorded" / "metrics.parquet").exists()
    assert set_problem(folder) is None


def test_the_dashboard_names_a_set_that_does_not_match_and_shows_none_of_it(tmp_path, monkeypatch):
    pytest.importorskip("streamlit.testing.v1")
    from streamlit.testing.v1 import AppTest

    run_dataset("good", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    run_dataset("mixed", DEMO, judge_name="recorded", progress=False, root=tmp_path)
    run_dataset("other", DEMO, judge_name="recorded", limit=3, progress=False, root=tmp_path / "elsewhere")
    gen = current_set(tmp_path / "mixed")
    shutil.copy(result_set("other", tmp_path / "elsewhere") / "recorded" / "summary.parquet", gen / "recorded" / "summary.parquet")
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    from dashboard import data

    assert data.datasets() == ["good"] and set(data.broken_datasets()) == {"mixed"}
    assert data.table("mixed", "summary", "recorded").empty and data.annotated_answers("mixed", "recorded") == {}
    assert not data.table("good", "summary", "recorded").empty
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    errors = [e.body.replace("\\", "") for e in at.sidebar.error]  # as shown: markdown escapes removed
    assert any("Results of **mixed** are not shown: recorded/summary.parquet of result set" in e and
               "aee run --dataset mixed" in e for e in errors), errors
