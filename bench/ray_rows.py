"""Ray rows of the benchmark (`--executor ray`, pipeline/cluster/), each on clusters started on this
machine's loopback for the row and stopped after it, failures included
(pipeline/testing/ray_cluster.py: every node on 127.0.0.1, no dashboard, no usage statistics).

- l: the offline judge on all of ExpertQA (`aee run --dataset expertqa --judge offline`: relevance,
  confidence, support of every claim against every source with text, support by cited sets), on
  one node with 1 CPU (one worker) vs a two-node cluster (`ray start --head` and a second
  `ray start --address`, each with 1 CPU; two workers). Wall time of the whole run, each with fresh
  results and cache folders; the ratio is the speed-up. The row also checks that both
  wrote the same rows (labels exactly; floats within 1e-6).
- m: an LLM judge (`openai:fake-model`) against the fake OpenAI server answering every request in
  300 ms (bench/llm_server.py's deterministic replies), on Ray with two workers and a bound of 8
  requests in flight (`--in-flight 8`): the mean number of requests the server was serving at once,
  over the time it served any, vs the bound (the ratio says how full the bound stays; the most at
  once must never exceed it).

    .venv/bin/python bench/run.py --only l,m
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from registry import row
from rows import cost_row, rate_row, skipped

ROOT = Path(__file__).resolve().parent.parent
LLM_LATENCY_S = 0.3
LLM_BOUND = 8


def _aee_run(cluster: Any, where: Path, args: list[str], workers: int, extra_env: dict[str, str] | None = None,
             timeout: float = 7200) -> tuple[str, float]:
    env = cluster.env()
    env.update({"AEE_RESULTS_DIR": str(where / "results"), "AEE_CACHE_DIR": str(where / "cache"), "HF_HUB_OFFLINE": "1",
                **(extra_env or {})})
    cmd = [sys.executable, "-m", "pipeline", "run", *args, "--no-progress", "--executor", "ray",
           "--address", cluster.address, "--workers", str(workers)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"aee run on Ray exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return proc.stdout, seconds


def _same_labels(a: Path, b: Path, dataset: str, judge: str) -> str:
    """Whether two runs wrote the same label and metric rows (labels exactly, floats within 1e-6)."""
    import numpy as np
    import pyarrow.parquet as pq

    from pipeline.storage.store import table_path  # a run's tables live in its dataset's current result set

    notes = []
    for table in ("labels", "metrics"):
        x = pq.read_table(table_path(dataset, table, judge, a / "results")).to_pandas()
        y = pq.read_table(table_path(dataset, table, judge, b / "results")).to_pandas()
        if len(x) != len(y):
            return f"{table}: {len(x)} vs {len(y)} rows DIFFER"
        text = [c for c in x.columns if x[c].dtype == object and c != "source_set"]
        if not x[text].fillna("").equals(y[text].fillna("")):
            return f"{table}: labels DIFFER"
        for c in (c for c in x.columns if x[c].dtype.kind == "f"):
            u, v = x[c].to_numpy(float), y[c].to_numpy(float)
            if not np.allclose(u, v, rtol=1e-6, atol=1e-6, equal_nan=True):
                return f"{table}.{c}: values DIFFER"
        notes.append(f"{len(x)} {table} rows")
    return "same rows (" + ", ".join(notes) + ")"


def bench_two_nodes(quick: bool, cost_row: Callable, skipped: Callable) -> list:
    name = "l. offline judge on all ExpertQA: one node (1 CPU) vs two nodes (1 CPU each)"
    from pipeline.storage.paths import expertqa_dir
    from pipeline.testing.ray_cluster import LoopbackCluster, ray_installed

    if not ray_installed():
        return [skipped(name, "Ray is not installed (pip install '.[ray]')")]
    if quick:
        return [skipped(name, "--quick: starts two Ray clusters and judges thousands of answers")]
    if expertqa_dir() is None:
        return [skipped(name, "ExpertQA files not found (set EXPERTQA_DIR or place ../shared/data/expertqa)")]
    args = ["--dataset", "expertqa", "--judge", "offline"]
    with tempfile.TemporaryDirectory() as tmp:
        with LoopbackCluster(head_cpus=1) as one:
            out_one, one_s = _aee_run(one, Path(tmp) / "one", args, workers=1)
        with LoopbackCluster(head_cpus=1, worker_nodes=[1]) as two:
            out_two, two_s = _aee_run(two, Path(tmp) / "two", args, workers=2)
        same = _same_labels(Path(tmp) / "one", Path(tmp) / "two", "expertqa", "offline")
    answers = re.search(r"(\d+) answers", out_two)
    return [cost_row(name, one_s, two_s, "s",
                     f"`aee run --dataset expertqa --judge offline --executor ray` over {answers.group(1) if answers else '?'} "
                     f"answers, whole run (connect, actors, model load per actor, annotate, rows, tables); one "
                     f"`ray start --head --num-cpus 1` with --workers 1 vs that head plus `ray start --address` "
                     f"(--num-cpus 1) with --workers 2, all on 127.0.0.1; the ratio is the speed-up (2 would be "
                     f"perfect; the driver's own work and the model load per worker do not shrink); {same}")]


def bench_llm_in_flight(quick: bool, rate_row: Callable, skipped: Callable) -> list:
    name = f"m. LLM judge on Ray, {LLM_LATENCY_S * 1000:.0f} ms per reply: requests in flight vs the bound"
    from pipeline.storage.paths import expertqa_dir
    from pipeline.testing.fake_openai import FakeResponse
    from pipeline.testing.ray_cluster import LoopbackCluster, ray_installed

    if not ray_installed():
        return [skipped(name, "Ray is not installed (pip install '.[ray]')")]
    if quick:
        return [skipped(name, "--quick: starts a Ray cluster")]
    from llm_server import deterministic_reply, fake_server  # bench/ is on sys.path (run as a script)

    if expertqa_dir() is not None:
        args, scope = ["--dataset", "expertqa", "--limit", "100"], "the first 100 ExpertQA answers by id"
    else:
        args, scope = ["--dataset", "demo"], "the teaching corpus (ExpertQA not found)"
    server = fake_server()
    try:
        server.handler = lambda request: FakeResponse(content=deterministic_reply(request), delay=LLM_LATENCY_S)
        env = {"AEE_OPENAI_BASE_URL": server.base_url, "AEE_OPENAI_API_KEY": "sk-bench"}
        with tempfile.TemporaryDirectory() as tmp, LoopbackCluster(head_cpus=2) as cluster:
            out, seconds = _aee_run(cluster, Path(tmp), [*args, "--judge", "openai:fake-model",
                                                         "--in-flight", str(LLM_BOUND)], workers=2, extra_env=env)
        stats = server.in_flight_stats()
        requests = len(server.chat_requests)
    finally:
        server.stop()
    ideal = requests * LLM_LATENCY_S / LLM_BOUND
    return [rate_row(name, LLM_BOUND, stats["mean"], "requests",
                     f"{scope}, judge openai:fake-model against the local fake server (every reply after "
                     f"{LLM_LATENCY_S:g} s), `--executor ray --workers 2 --in-flight {LLM_BOUND}`, chunks of 25 "
                     f"answers: {requests} requests; ours = mean requests in flight at the server while it served any "
                     f"({stats['busy_seconds']:.1f} s), most at once {stats['max']:.0f} "
                     f"({'within' if stats['max'] <= LLM_BOUND else 'ABOVE'} the bound); whole run {seconds:.1f} s, of "
                     f"which {ideal:.1f} s is the least the requests take at {LLM_BOUND} at once; ratio 1 = the bound "
                     f"always full")]


@row("l", "l. offline judge on Ray: one node vs two")
def row_two_nodes(quick: bool) -> list:
    return bench_two_nodes(quick, cost_row, skipped)


@row("m", "m. LLM judge on Ray: requests in flight vs the bound")
def row_llm_in_flight(quick: bool) -> list:
    return bench_llm_in_flight(quick, rate_row, skipped)
