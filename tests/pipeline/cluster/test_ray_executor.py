"""`aee run --executor ray` (pipeline/cluster/) writes the rows of a local run, survives a worker
that dies or a batch that raises, resumes after a killed driver from the saved parts, serves a
second run from the judge cache, and keeps an LLM endpoint's bound across workers.

One loopback Ray cluster with 2 CPUs (pipeline/testing/ray_cluster.py: every node on 127.0.0.1, no
dashboard, no usage statistics) serves the module and is stopped at its end, failures included.
Every run is `aee run` in a process of its own, with its own results and cache folders.

"Identical rows": every table of the dataset (answers, sources, statements, labels, pairs, metrics,
summary) has the same rows in the same order; labels, ids, texts, counts and every other non-float
value are equal exactly, floats within tests/tolerances.py's ENCODER (the offline judge's float32
embeddings move by ~1e-7 with the other texts of their batch, and a Ray worker embeds a text with
the texts of its own chunks only, where the local run may have embedded it earlier).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from timing import guard
from tolerances import ENCODER

from pipeline.storage.store import JUDGE_TABLES, result_set, table_path
from pipeline.testing.faulty_judge import fired
from pipeline.testing.ray_cluster import LoopbackCluster, ray_installed

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not ray_installed(), reason="Ray is not installed (pip install '.[ray]'; make test does)")]


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(head_cpus=2) as running:
        yield running


def aee_run(cluster: LoopbackCluster, where: Path, *args: str, ray: bool = True, env: dict | None = None,
            wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    """`aee run ARGS` with results and cache under `where` (on the cluster with `ray`)."""
    environ = cluster.env()
    environ.update({"AEE_RESULTS_DIR": str(where / "results"), "AEE_CACHE_DIR": str(where / "cache"),
                    "OMP_NUM_THREADS": "1", "AEE_JUDGE_PLUGINS": "", **(env or {})})
    cmd = [sys.executable, "-m", "pipeline", "run", *args, "--no-progress"]
    if ray:
        cmd += ["--executor", "ray", "--address", cluster.address, "--workers", "2"]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=guard(600))
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def tables(where: Path, dataset: str, judge: str) -> dict[str, pd.DataFrame]:
    base = result_set(dataset, where / "results")
    paths = {t: base / f"{t}.parquet" for t in ("answers", "sources")}
    paths.update({t: base / judge / f"{t}.parquet" for t in JUDGE_TABLES})
    return {name: pq.read_table(path).to_pandas() for name, path in paths.items()}


def assert_same_rows(local: dict[str, pd.DataFrame], remote: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Every table's rows equal (module doc); returns counts of the floats compared and of those
    that differ at all."""
    floats = differing = 0
    for name, want in local.items():
        got = remote[name]
        assert list(got.columns) == list(want.columns), name
        assert len(got) == len(want), (name, len(got), len(want))
        for column in want.columns:
            a, b = want[column], got[column]
            if pd.api.types.is_float_dtype(a.dtype):
                x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
                assert np.array_equal(np.isnan(x), np.isnan(y)), (name, column)  # null stays null
                ok = ~np.isnan(x)
                assert np.allclose(x[ok], y[ok], rtol=ENCODER, atol=ENCODER), (name, column)
                floats += int(ok.sum())
                differing += int((x[ok] != y[ok]).sum())
            else:
                unequal = [i for i, (p, q) in enumerate(zip(a.tolist(), b.tolist())) if not _same(p, q)]
                assert not unequal, (name, column, unequal[:3], a.iloc[unequal[0]], b.iloc[unequal[0]])
    return {"floats": floats, "differing": differing}


def _same(p: object, q: object) -> bool:
    if isinstance(p, np.ndarray) or isinstance(q, np.ndarray):
        return list(np.asarray(p)) == list(np.asarray(q))
    if p is None or q is None or (isinstance(p, float) and p != p):
        return (p is None or p != p) and (q is None or q != q)  # type: ignore[comparison-overlap]
    return p == q


def _summary_line(out: subprocess.CompletedProcess) -> tuple[int, int]:
    """(chunks annotated, chunks reused) from the run's report line."""
    match = re.search(r"(\d+) chunks annotated, (\d+) reused", out.stdout)
    assert match, out.stdout
    return int(match.group(1)), int(match.group(2))


def _cache_line(out: subprocess.CompletedProcess) -> tuple[int, int]:
    match = re.search(r"judge cache: (\d+) hits, (\d+) misses", out.stdout)
    assert match, out.stdout
    return int(match.group(1)), int(match.group(2))


@pytest.fixture(scope="module")
def demo_runs(cluster, tmp_path_factory) -> dict[str, Path]:
    """The teaching corpus with the offline judge, locally and on Ray."""
    where = {"local": tmp_path_factory.mktemp("demo-local"), "ray": tmp_path_factory.mktemp("demo-ray")}
    aee_run(cluster, where["local"], "--dataset", "demo", "--judge", "offline", ray=False)
    out = aee_run(cluster, where["ray"], "--dataset", "demo", "--judge", "offline")
    assert "judge offline on ray" in out.stdout
    return where


def test_teaching_corpus_rows_are_those_of_a_local_run(demo_runs):
    local, remote = tables(demo_runs["local"], "demo", "offline"), tables(demo_runs["ray"], "demo", "offline")
    assert len(local["answers"]) == 24 and len(local["labels"]) > 200
    counts = assert_same_rows(local, remote)
    assert counts["floats"] > 500, counts
    manifests = [json.loads((result_set("demo", demo_runs[k] / "results") / "offline" / "manifest.json").read_text())
                 for k in ("local", "ray")]
    assert manifests[0]["prompt_versions"] == manifests[1]["prompt_versions"]
    assert [m["config"]["executor"] for m in manifests] == ["local", "ray"]


def test_a_second_run_of_the_same_job_is_served_from_the_cache(cluster, demo_runs, tmp_path):
    # fresh results (no saved parts to reuse), the first Ray run's cache
    again = tmp_path / "again"
    (again / "cache").parent.mkdir(parents=True, exist_ok=True)
    os.symlink(demo_runs["ray"] / "cache", again / "cache")
    out = aee_run(cluster, again, "--dataset", "demo", "--judge", "offline")
    hits, misses = _cache_line(out)
    assert misses == 0 and hits > 100, (hits, misses)
    assert_same_rows(tables(demo_runs["ray"], "demo", "offline"), tables(again, "demo", "offline"))


# ExpertQA lines (domain_test) whose offline labels together hold every kind a run writes: each
# stage, every support label, support of cited source sets, relevance filler, confidence 2 to 5
# (picked by a greedy cover of the labels of the first 200 answers), plus the first seven lines.
# The first 200 answers, local vs Ray, are bench/run.py row v.
EXPERTQA_SAMPLE = (1, 2, 3, 4, 5, 6, 7, 58, 101, 118, 171, 206)


def test_expertqa_sample_rows_are_those_of_a_local_run(cluster, expertqa_path, tmp_path):
    source = expertqa_path / "domain_test.jsonl" if expertqa_path.is_dir() else expertqa_path
    lines = source.read_text(encoding="utf-8").splitlines()
    sample = tmp_path / "sample"
    sample.mkdir()
    (sample / "domain_test.jsonl").write_text("\n".join(lines[n - 1] for n in EXPERTQA_SAMPLE) + "\n", encoding="utf-8")
    args = ("--dataset", "eqsample", "--path", str(sample), "--format", "expertqa", "--judge", "offline")
    where = {k: tmp_path / k for k in ("local", "ray")}
    chunks = {"AEE_CHUNK_SIZE": "3"}  # 12 answers in 4 chunks for the two workers
    aee_run(cluster, where["local"], *args, ray=False, env=chunks)
    out = aee_run(cluster, where["ray"], *args, env=chunks)
    assert _summary_line(out) == (4, 0)  # all asked on Ray
    local, remote = tables(where["local"], "eqsample", "offline"), tables(where["ray"], "eqsample", "offline")
    assert len(local["answers"]) == len(EXPERTQA_SAMPLE)
    labels = local["labels"]
    assert set(labels["kind"]) == {"relevance", "confidence", "support"}
    assert {"full", "partial", "none", "unknown"} <= set(labels.loc[labels["kind"] == "support", "label"])
    assert labels["source_set"].map(lambda v: v is not None and len(v) > 0).any()  # support of cited sets
    assert_same_rows(local, remote)


DEMO_IDS = [json.loads(line)["answer_id"] for line in (ROOT / "data" / "demo" / "answers.jsonl").read_text().splitlines() if line.strip()]
FAULTY = {"AEE_JUDGE_PLUGINS": "faulty=pipeline.testing.faulty_judge:FaultyJudge", "AEE_CHUNK_SIZE": "3"}


@pytest.fixture(scope="module")
def scripted_reference(cluster, tmp_path_factory) -> Path:
    """The teaching corpus with the scripted judge, locally, in chunks of 3."""
    where = tmp_path_factory.mktemp("scripted-local")
    aee_run(cluster, where, "--dataset", "demo", "--judge", "scripted", ray=False, env={"AEE_CHUNK_SIZE": "3"})
    return where


def test_a_dead_worker_and_a_raising_batch_are_retried_and_rows_complete(cluster, scripted_reference, tmp_path):
    faults = tmp_path / "faults"
    faults.mkdir()
    # answer 4 is in chunk 2, answer 14 in chunk 5: the worker asking about the first ends at once,
    # the chunk of the second raises once
    env = {**FAULTY, "AEE_FAULT_DIR": str(faults), "AEE_FAULT_EXIT_ANSWER": DEMO_IDS[4],
           "AEE_FAULT_RAISE_ANSWER": DEMO_IDS[14]}
    out = aee_run(cluster, tmp_path / "ray", "--dataset", "demo", "--judge", "faulty", env=env)
    assert fired(faults) == sorted([f"exit-{DEMO_IDS[4]}", f"raise-{DEMO_IDS[14]}"])
    assert _summary_line(out) == (8, 0)
    assert_same_rows(tables(scripted_reference, "demo", "scripted"), tables(tmp_path / "ray", "demo", "scripted"))


def test_a_killed_driver_resumes_from_the_chunks_already_written(cluster, scripted_reference, tmp_path):
    env = {"AEE_CHUNK_SIZE": "3", "SCRIPTED_JUDGE_DELAY": "0.1"}
    parts = tmp_path / "ray" / "results" / "demo" / "scripted" / "parts"
    proc = aee_run(cluster, tmp_path / "ray", "--dataset", "demo", "--judge", "scripted", env=env, wait=False)
    try:
        deadline = time.monotonic() + guard(300)
        while len(list(parts.glob("labels-*.parquet"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        written = len(list(parts.glob("labels-*.parquet")))
        assert proc.poll() is None and 2 <= written < 8, (written, proc.poll())
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=guard(60))
    assert not table_path("demo", "metrics", "scripted", tmp_path / "ray" / "results").exists()
    out = aee_run(cluster, tmp_path / "ray", "--dataset", "demo", "--judge", "scripted", env={"AEE_CHUNK_SIZE": "3"})
    annotated, reused = _summary_line(out)
    assert reused >= written and annotated + reused == 8, (annotated, reused, written)
    assert_same_rows(tables(scripted_reference, "demo", "scripted"), tables(tmp_path / "ray", "demo", "scripted"))


def test_an_llm_endpoint_keeps_one_bound_across_workers(cluster, tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    from llm_server import deterministic_reply

    from pipeline.testing.fake_openai import FakeOpenAIServer, FakeResponse

    arrivals: list[float] = []
    refused: list[float] = []

    def reply(request):
        arrivals.append(time.monotonic())
        if not refused:  # the first request is refused with Retry-After: 1 s; every other one takes 0.2 s
            refused.append(arrivals[-1])
            return FakeResponse(status=429, headers={"Retry-After": "1"}, content="slow down")
        return FakeResponse(content=deterministic_reply(request), delay=0.2)

    with FakeOpenAIServer() as server:
        server.handler = reply
        env = {"AEE_OPENAI_BASE_URL": server.base_url, "AEE_OPENAI_API_KEY": "sk-test", "AEE_CHUNK_SIZE": "6"}
        out = aee_run(cluster, tmp_path / "ray", "--dataset", "demo", "--judge", "openai:fake-model", "--in-flight", "3",
                      env=env)
        stats = server.in_flight_stats()
        requests = len(server.chat_requests)
    assert "judge openai:fake-model on ray" in out.stdout
    assert _summary_line(out) == (4, 0)  # four chunks of 6 answers for two workers
    assert stats["max"] == 3, stats  # two workers, one bound of 3: never more, and it was reached
    assert stats["mean"] > 2.0, stats  # requests from many answers at once keep the bound nearly full
    assert requests > 40, requests
    # Retry-After held off every worker: after the refusal the requests arrive about every 0.07 s
    # without a hold (three in flight, 0.2 s each); with it, a pause of nearly the whole second follows
    # the few already admitted. How late those few arrive depends on how busy the machine is (one came
    # 0.45 s after the refusal in a loaded run), so the check is the pause, not a fixed window.
    after = sorted(t - refused[0] for t in arrivals if 0 < t - refused[0] < 5.0)
    points = [0.0, *after]
    longest = max(b - a for a, b in zip(points, points[1:]))
    assert longest >= 0.5, [round(t, 2) for t in points[:15]]
