"""`--executor ray`: the annotate stage on a Ray actor pool, with the rows of a local run.

The driver (the process running `aee run`) keeps everything but the judge: it reads the dataset
in chunks, finds the chunks whose labels are already saved, and writes parts, rows and tables
(pipeline/runner.py). The chunks still to label become a Ray Dataset, one row per chunk: a thread
of the driver puts them, in order, into a bounded queue actor that the Dataset's one read task
drains, so at most `window` chunks are anywhere between the importer and the tables, and memory
stays flat whatever the corpus size. `map_batches` hands each chunk to an actor of a fixed pool
(`ChunkAnnotator`, pipeline/cluster/worker.py: one judge per actor, built by the factory), and the
results come back in the order the chunks went in. For each chunk the driver first merges the
cache rows the worker answered into the run's judge cache, then gives the runner the chunk's
labels, and the runner saves them as the chunk's part.

Failures: Ray restarts an actor that dies and gives its chunk to the new one (nothing of that
chunk was written anywhere); a chunk whose judge raises is asked once more before the run fails;
a driver that is killed leaves the parts of finished chunks, which the next run reuses.
"""

from __future__ import annotations

import json
import logging
import threading
import warnings
from collections import deque
from pathlib import Path
from typing import Any, Iterable, Iterator

from pipeline.cluster.cache import CacheServer, KeyIndex, merge_rows
from pipeline.cluster.connect import connected
from pipeline.cluster.gate import EndpointGate, chat_clients, endpoint_key
from pipeline.cluster.worker import CHUNK_SCHEMA, ChunkAnnotator, WorkerSetup, chunk_row, read_labels
from pipeline.executor import ChunkTask, JudgeSpec
from pipeline.judges import Judge
from pipeline.judges.cache import CachingJudge
from pipeline.records import AnnotatedAnswer, Verdict
from pipeline.storage.tables import row_verdict
from pipeline.text.text import statements_for

__all__ = ["RayExecutor"]

log = logging.getLogger(__name__)

LEASE_SECONDS = 600.0  # a gate slot not given back within this is taken back (longer than any request's retries)


def _feed_datasource(queue: Any) -> Any:
    """A Ray Data source with one read task that yields the chunks put into `queue` until None."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class ChunkFeed(Datasource):
        def estimate_inmemory_data_size(self) -> int | None:
            return None

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[ReadTask]:
            def read() -> Iterator[Any]:
                while (block := queue.get(block=True)) is not None:
                    yield block

            meta = BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=None)
            return [ReadTask(read, meta, schema=CHUNK_SCHEMA)]

    return ChunkFeed()


def _rebuild(chunk: list[AnnotatedAnswer], rows: list[dict]) -> list[AnnotatedAnswer]:
    """A chunk's answers with the verdicts a worker sent (rebuilt as a saved part is read back)."""
    by_answer: dict[str, list[Verdict]] = {}
    for row in rows:
        by_answer.setdefault(row["answer_id"], []).append(row_verdict(row))
    return [AnnotatedAnswer(a.answer, statements_for(a), tuple(by_answer.get(a.answer.answer_id, ()))) for a in chunk]


class RayExecutor:
    """Annotates chunks on Ray (module doc). `address`: None starts a Ray instance on this machine
    for the run; "auto" or "HOST:PORT" joins a running cluster from one of its nodes. `workers`:
    actors in the pool (default: the cluster's CPUs), one CPU each. `window`: chunks in flight
    between the driver and the workers (default: two per worker, plus two)."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, window: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        self.address = address
        self.workers = workers
        self.window = window
        self._stats: dict[str, int] = {}
        self.gate_stats: dict[str, dict[str, float]] = {}  # per endpoint, read from the gates at the end

    def cache_stats(self, judge: Judge) -> dict[str, int]:
        return dict(self._stats)

    def annotate(self, tasks: Iterable[ChunkTask], judge: Judge, spec: JudgeSpec | None,
                 dataset: str) -> Iterator[tuple[ChunkTask, list[AnnotatedAnswer]]]:
        if spec is None:
            raise ValueError("the Ray executor builds the judge on each worker from its registry name: "
                             "pass judge_name (and judge_config), not a judge object")
        with connected(self.address, self.workers) as ray:
            yield from self._annotate(ray, tasks, judge, spec, dataset)

    def _annotate(self, ray: Any, tasks: Iterable[ChunkTask], judge: Judge, spec: JudgeSpec,
                  dataset: str) -> Iterator[tuple[ChunkTask, list[AnnotatedAnswer]]]:
        from ray.util.queue import Queue
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # results in the order the chunks went in
        context.enable_progress_bars = False
        # every chunk its own block, passed on as soon as it is read: by default Ray Data gathers a
        # read task's output up to 128 MB before passing it on, which would hold the first chunks
        # until the driver, waiting for their labels, sent more
        context.target_max_block_size = 1
        logging.getLogger("ray.data").setLevel(logging.ERROR)  # its progress lines, every few seconds
        # a corpus of one chunk leaves all but one actor idle, which Ray Data warns about
        warnings.filterwarnings("ignore", message=".*minimum number of concurrent actors.*")

        driver_node = ray.get_runtime_context().get_node_id()
        here = NodeAffinitySchedulingStrategy(node_id=driver_node, soft=False)
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        window = self.window or 2 * workers + 2
        cache_path = judge.path if isinstance(judge, CachingJudge) else None
        gates = {endpoint_key(c): ray.remote(EndpointGate).options(num_cpus=0, scheduling_strategy=here)
                 .remote(c.gate.bound, LEASE_SECONDS) for c in chat_clients(judge)}
        setup = WorkerSetup(
            spec=spec, dataset=dataset, driver_node=driver_node,
            cache_path=str(cache_path) if cache_path is not None else None,
            cache_server=(ray.remote(CacheServer).options(num_cpus=0, scheduling_strategy=here).remote(str(cache_path))
                          if cache_path is not None else None),
            # handed over by reference: an actor holds the object, not its constructor arguments
            cache_index=ray.put(KeyIndex(Path(cache_path))) if cache_path is not None else None,
            gates=gates, bounds={k: c.gate.bound for c in chat_clients(judge) for k in [endpoint_key(c)]})

        queue = Queue(maxsize=window + 1, actor_options={"num_cpus": 0, "scheduling_strategy": here})
        results = (ray.data.read_datasource(_feed_datasource(queue), override_num_blocks=1, num_cpus=0)
                   .map_batches(ChunkAnnotator, fn_constructor_kwargs={"setup": setup}, batch_size=1,
                                batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=1))
        feeder = _Feeder(tasks, queue, window)
        feeder.start()
        rows = (row for batch in results.iter_batches(batch_size=None, batch_format="pyarrow") for row in batch.to_pylist())
        try:
            for task in feeder.tasks():
                if task.saved is not None:
                    yield task, task.saved
                else:
                    row = next(rows, None)
                    if row is None:
                        feeder.raise_error()
                        raise RuntimeError(f"Ray returned no result for chunk {task.seq}")
                    if row["seq"] != task.seq:
                        raise RuntimeError(f"Ray returned chunk {row['seq']} where chunk {task.seq} was due")
                    if cache_path is not None:
                        merge_rows(Path(cache_path), json.loads(row["cache_rows"]))
                    for key, value in json.loads(row["cache_stats"]).items():
                        self._stats[key] = self._stats.get(key, 0) + int(value)
                    yield task, _rebuild(task.chunk, read_labels(row["labels"]).to_pylist())
                feeder.done_one()
            feeder.raise_error()
            if next(rows, None) is not None:
                raise RuntimeError("Ray returned more results than chunks were sent")
            for key, gate in gates.items():
                self.gate_stats[key] = ray.get(gate.stats.remote())
        finally:
            feeder.stop()


class _Feeder:
    """The driver's thread that reads the runner's tasks ahead and puts the chunks to label into the
    Ray queue, at most `window` tasks ahead of the ones the runner has taken back."""

    def __init__(self, tasks: Iterable[ChunkTask], queue: Any, window: int) -> None:
        self._source = iter(tasks)
        self._queue = queue
        self._slots = threading.Semaphore(window)
        self._order: deque[ChunkTask] = deque()
        self._cond = threading.Condition()
        self._finished = False
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="aee-ray-feeder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            for task in self._source:
                while not self._slots.acquire(timeout=0.2):
                    if self._stopping.is_set():
                        return
                if task.saved is None:
                    self._queue.put(chunk_row(task.seq, task.chunk))
                with self._cond:
                    self._order.append(task)
                    self._cond.notify_all()
        except BaseException as exc:  # noqa: BLE001 - handed to the driver's thread, which raises it
            self._error = exc
        finally:
            try:
                self._queue.put(None)  # the end of the feed: the read task returns
            except Exception:  # noqa: BLE001 - Ray is going down already (the run failed)
                pass
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def tasks(self) -> Iterator[ChunkTask]:
        """The tasks in the order they were read."""
        while True:
            with self._cond:
                while not self._order and not self._finished:
                    self._cond.wait()
                if not self._order:
                    return
                task = self._order.popleft()
            yield task

    def done_one(self) -> None:
        self._slots.release()

    def raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=30)
