"""The executor seam (pipeline/executor.py) and the parts of the Ray executor that need no Ray:
the cluster cache's journal and merge (pipeline/cluster/cache.py), the connection helpers
(pipeline/cluster/connect.py), the endpoint gate's lease bookkeeping (pipeline/cluster/gate.py),
and the command line's checks of the executor options. The runs on Ray are in test_ray_executor.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from timing import guard

from pipeline.cluster.cache import CacheServer, ClusterCache, KeyIndex, merge_rows
from pipeline.cluster.connect import forwarded_env, is_loopback
from pipeline.cluster.gate import EndpointGate, chat_clients, endpoint_key
from pipeline.executor import ChunkTask, LocalExecutor, annotate_chunk_answers, answers_in_flight
from pipeline.importers import IMPORTERS
from pipeline.judges import get_judge
from pipeline.judges.cache import CachingJudge
from pipeline.judges.scripted import ScriptedJudge
from pipeline.runner import run_dataset
from pipeline.storage.store import table_path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "answers.jsonl"


def demo_answers(n: int | None = None) -> list:
    answers = list(IMPORTERS["canonical"].iter(DEMO, None))
    return answers[:n] if n else answers


# ---- the seam ----------------------------------------------------------------------------------


def test_local_executor_passes_saved_chunks_through_and_labels_the_others_in_order():
    answers = demo_answers(6)
    judge = ScriptedJudge()
    saved = [a for a in answers[:3]]  # stands for labels read back from a part: returned as they are
    tasks = [ChunkTask(0, answers[:3], saved=saved), ChunkTask(1, answers[3:])]
    out = list(LocalExecutor().annotate(tasks, judge, None, "demo"))
    assert [t.seq for t, _ in out] == [0, 1]
    assert out[0][1] is saved
    assert [a.answer.answer_id for a in out[1][1]] == [a.answer.answer_id for a in answers[3:]]
    assert all(any(v.kind == "support" for v in a.verdicts) for a in out[1][1] if a.answer.sources)
    assert judge.calls > 0


class SlowNetworkJudge(ScriptedJudge):
    """The scripted judge under the registry name of a network judge, recording concurrency."""

    name = "openai:slow"

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.most = 0
        self.lock = threading.Lock()

    def confidence(self, answer):
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        return super().confidence(answer)


def test_a_network_judge_gets_the_answers_of_a_chunk_at_once_and_they_come_back_in_order(monkeypatch):
    monkeypatch.setenv("AEE_ANSWERS_IN_FLIGHT", "4")
    answers = demo_answers(8)
    judge = SlowNetworkJudge()
    assert answers_in_flight(judge, 8) == 4 and answers_in_flight(ScriptedJudge(), 8) == 1
    done = annotate_chunk_answers(answers, judge)
    assert [a.answer.answer_id for a in done] == [a.answer.answer_id for a in answers]
    assert judge.most == 4  # four answers in flight, never more
    monkeypatch.setenv("AEE_ANSWERS_IN_FLIGHT", "1")
    one_by_one = SlowNetworkJudge()
    sequential = annotate_chunk_answers(answers, one_by_one)
    assert one_by_one.most == 1
    assert [a.verdicts for a in done] == [a.verdicts for a in sequential]  # same labels, same order


def test_run_dataset_with_the_default_executor_records_it(results_root):
    result = run_dataset("demo", judge_name="scripted", progress=False, root=results_root)
    assert result.executor == "local" and result.chunks_done == 1
    manifest = json.loads(table_path("demo", "summary", "scripted", results_root).with_name("manifest.json").read_text())
    assert manifest["config"]["executor"] == "local"


def test_the_ray_executor_refuses_a_judge_object(results_root):
    pytest.importorskip("ray")
    from pipeline.cluster.ray_executor import RayExecutor

    with pytest.raises(ValueError, match="registry name"):
        run_dataset("demo", judge=ScriptedJudge(), progress=False, root=results_root, executor=RayExecutor())
    assert not table_path("demo", "metrics", "scripted", results_root).exists()


# ---- one cache for every worker ----------------------------------------------------------------


def test_worker_answers_go_back_to_the_driver_once_and_serve_the_next_run(tmp_path):
    answers = demo_answers(4)
    shared = tmp_path / "judges.sqlite"
    driver = CachingJudge(ScriptedJudge(), path=shared)  # creates the run's cache, as the driver's judge does
    worker = ClusterCache(ScriptedJudge(), shared_path=shared)
    first = annotate_chunk_answers(answers, worker)
    rows = worker.drain()
    # every entry answered once (calls that gave no verdict, the scripted judge's source stance, store
    # nothing); calls whose key material repeats inside the chunk (its confidence reads nothing, its
    # stance only how many statements there are) are hits
    assert rows and len({r[0] for r in rows}) == len(rows) <= worker.stats["misses"]
    assert worker.drain() == []  # handed back once
    assert merge_rows(shared, rows) == len(rows) == len(driver)
    # a fresh worker (another run, another machine's journal) finds everything in the run's cache
    again = ClusterCache(ScriptedJudge(), shared_path=shared)
    second = annotate_chunk_answers(answers, again)
    assert again.stats["hits"] >= len(rows) and again.inner.calls == 0  # the judge is asked nothing
    assert again.drain() == []  # nothing new to hand back
    assert [a.verdicts for a in first] == [a.verdicts for a in second]
    for cache in (driver, worker, again):
        cache.close()


def test_a_worker_on_another_machine_reads_the_cache_through_the_server(tmp_path, monkeypatch):
    answers = demo_answers(2)
    shared = tmp_path / "judges.sqlite"
    seed = ClusterCache(ScriptedJudge(), shared_path=None)
    CachingJudge(ScriptedJudge(), path=shared).close()
    annotate_chunk_answers(answers, seed)
    merge_rows(shared, seed.drain())
    server = CacheServer(str(shared))

    class Handle:  # what a Ray actor handle offers, answered in this process
        class get:
            @staticmethod
            def remote(key):
                return server.get(key)

    import types

    asked: list[str] = []
    real_get = server.get
    server.get = lambda key: asked.append(key) or real_get(key)
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(get=lambda value: value))
    remote = ClusterCache(ScriptedJudge(), server=Handle(), index=KeyIndex(shared))
    annotate_chunk_answers(answers, remote)
    assert remote.stats["hits"] > 0 and remote.inner.calls == 0
    # asked only for keys the cache held, each once (a key met again is in the worker's journal)
    assert asked and len(set(asked)) == len(asked) <= remote.stats["hits"]
    assert all(real_get(key) is not None for key in asked)
    assert server.get("no such key") is None
    # a cold cache: the index holds nothing, and the server is never asked
    asked.clear()
    empty = tmp_path / "empty.sqlite"
    CachingJudge(ScriptedJudge(), path=empty).close()
    cold = ClusterCache(ScriptedJudge(), server=Handle(), index=KeyIndex(empty))
    annotate_chunk_answers(answers, cold)
    assert asked == [] and cold.inner.calls > 0 and len(KeyIndex(empty)) == 0 and len(KeyIndex(shared)) > 0


def test_a_worker_journal_disappears_with_the_worker(tmp_path):
    worker = ClusterCache(ScriptedJudge())
    journal = worker.path
    assert journal.exists()
    worker.close()
    assert not journal.parent.exists()


# ---- connecting --------------------------------------------------------------------------------


@pytest.mark.parametrize("address, loop", [("127.0.0.1:6379", True), ("localhost:10001", True), ("ray://127.0.0.1:10001", True),
                                           ("[::1]:6379", True), ("auto", False), ("10.0.0.5:6379", False),
                                           ("ray://head.example:10001", False), (None, False)])
def test_loopback_addresses(address, loop):
    assert is_loopback(address) is loop


def test_the_judge_settings_travel_to_workers_but_not_the_driver_own_paths():
    env = {"AEE_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k", "HF_HUB_OFFLINE": "1",
           "AEE_RESULTS_DIR": "/tmp/r", "AEE_CHUNK_SIZE": "3", "HOME": "/root", "PATH": "/bin"}
    assert forwarded_env(env) == {"AEE_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "HF_HUB_OFFLINE": "1", "OPENAI_API_KEY": "k"}


# ---- one bound per endpoint --------------------------------------------------------------------


def test_the_gate_admits_its_bound_takes_back_lost_leases_and_holds_off():
    async def scenario() -> dict:
        gate = EndpointGate(2, lease_seconds=0.3)
        a = await gate.acquire()
        await gate.acquire()  # held by a worker that then dies: never released
        waiting = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the bound is full
        await gate.release(a)
        await asyncio.wait_for(waiting, 1)
        third = asyncio.ensure_future(gate.acquire())
        await asyncio.wait_for(third, 2)  # admitted once the dead worker's lease ran out
        stats = await gate.stats()
        assert stats["expired_leases"] >= 1 and stats["max_in_flight"] == 2
        await gate.hold_off(0.3)
        started = time.monotonic()
        for token in list(gate._leases):
            await gate.release(token)
        await gate.acquire()
        assert time.monotonic() - started >= 0.25  # nobody in before the hold-off passed
        return await gate.stats()

    stats = asyncio.run(scenario())
    assert stats["hold_offs"] == 1 and stats["granted"] == 5


def test_chat_clients_are_found_inside_the_cache_and_keyed_by_endpoint(monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_OPENAI_API_KEY", "sk-test")
    judge = get_judge("openai:m", cache=False, base_url="http://127.0.0.1:9/v1", concurrency=3)
    cached = CachingJudge(judge, path=tmp_path / "judges.sqlite")
    clients = list(chat_clients(cached))
    assert clients == [judge] and clients[0].gate.bound == 3
    other = get_judge("openai:m", cache=False, base_url="http://127.0.0.1:10/v1")
    assert endpoint_key(judge) != endpoint_key(other)
    assert endpoint_key(judge) == endpoint_key(get_judge("openai:x", cache=False, base_url="http://127.0.0.1:9/v1/"))


# ---- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--address", "auto"], "--address and --workers go with --executor ray"),
    (["--executor", "ray", "--workers", "0"], "--workers must be at least 1"),
    (["--judge", "offline", "--in-flight", "4"], "--in-flight applies to judges behind an endpoint"),
    (["--executor", "ray", "--address", "ray://127.0.0.1:10001"], "does not work through Ray Client"),
])
def test_executor_options_are_checked_with_one_line(args, message, tmp_path):
    env = {"AEE_RESULTS_DIR": str(tmp_path / "r"), "AEE_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "pipeline", "run", "--dataset", "demo", "--no-progress", *args], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=guard(120))
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("error: ") and message in out.stderr
    assert not (tmp_path / "r").exists()

