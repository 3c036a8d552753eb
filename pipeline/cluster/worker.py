"""What runs on a Ray worker: one judge per actor, one chunk per call.

`ChunkAnnotator` is the callable class of the run's `map_batches` actor pool. Each actor builds its
judge once, with the one factory (`pipeline.judges.get_judge`), so a model is loaded once per actor,
not per batch; its cache is a `ClusterCache` (pipeline/cluster/cache.py) and its chat clients go
through the endpoint's shared gate (pipeline/cluster/gate.py). A call labels whole chunks exactly as
the local executor does (`pipeline.executor.annotate_chunk_answers`) and returns, per chunk, its
label rows as an Arrow table in the `labels` schema (the same rows a saved part holds), the cache
rows its judge answered, and its cache counters. Nothing is written here: a worker that dies
mid-chunk leaves no trace, and Ray gives the chunk to a restarted actor.

Rows of the run's Dataset are chunks: `seq` (the chunk's place in the run) and `answers` (the
chunk's records, pickled: the exact objects, gold answers and metadata included).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from pipeline.executor import JudgeSpec, annotate_chunk_answers
from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import to_table
from pipeline.storage.tables import label_rows

__all__ = ["CHUNK_SCHEMA", "RESULT_SCHEMA", "ChunkAnnotator", "WorkerSetup", "chunk_row", "read_labels"]

log = logging.getLogger(__name__)

CHUNK_SCHEMA = pa.schema([("seq", pa.int64()), ("answers", pa.binary())])
RESULT_SCHEMA = pa.schema([("seq", pa.int64()), ("labels", pa.binary()), ("cache_rows", pa.string()),
                           ("cache_stats", pa.string())])
CHUNK_ATTEMPTS = 2  # a chunk whose judge raises is asked once more in the same actor before the run fails


@dataclass(frozen=True)
class WorkerSetup:
    """What every actor of a run is built from (the driver makes it; Ray ships it to each actor)."""

    spec: JudgeSpec
    dataset: str
    driver_node: str  # Ray node id of the driver's machine
    cache_path: str | None  # the run's cache file on the driver's machine (None: no cache)
    cache_server: Any = None  # CacheServer actor handle (for workers on other machines)
    cache_index: Any = None  # KeyIndex of the run's cache at the start (object ref), for those workers
    gates: Any = None  # endpoint key -> EndpointGate actor handle
    bounds: Any = None  # endpoint key -> the bound


def chunk_row(seq: int, chunk: Sequence[AnnotatedAnswer]) -> pa.Table:
    """One chunk as one row of the run's Dataset."""
    return pa.table({"seq": [seq], "answers": [pickle.dumps(list(chunk), protocol=5)]}, schema=CHUNK_SCHEMA)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_labels(blob: bytes) -> pa.Table:
    """A chunk's label rows, as a worker sent them."""
    with pa.ipc.open_stream(pa.py_buffer(blob)) as reader:
        return reader.read_all()


class ChunkAnnotator:
    """The actor: see the module doc."""

    def __init__(self, setup: WorkerSetup) -> None:
        import ray

        from pipeline.cluster.cache import ClusterCache
        from pipeline.cluster.gate import SharedSlot, chat_clients, endpoint_key
        from pipeline.judges import get_judge

        cpus = int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1) or 1)
        os.environ.setdefault("AEE_EMBED_THREADS", str(max(1, cpus)))  # the encoder's threads = this actor's CPUs
        self.setup = setup
        bare = get_judge(setup.spec.name, cache=False, **setup.spec.config)
        if setup.cache_path is not None and not bare.carries_labels:
            same_machine = ray.get_runtime_context().get_node_id() == setup.driver_node
            remote = None if same_machine else setup.cache_server
            index = ray.get(setup.cache_index) if remote is not None and setup.cache_index is not None else None
            self.judge: Any = ClusterCache(bare, shared_path=Path(setup.cache_path) if same_machine else None,
                                           server=remote, index=index)
        else:
            self.judge = bare
        for client in chat_clients(self.judge):
            key = endpoint_key(client)
            if setup.gates and key in setup.gates:
                client.share_gate(SharedSlot(setup.gates[key], setup.bounds[key]))

    def _stats(self) -> dict[str, int]:
        return dict(getattr(self.judge, "stats", {}) or {}) if hasattr(self.judge, "drain") else {}

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = []
        for seq, blob in zip(batch.column("seq").to_pylist(), batch.column("answers").to_pylist()):
            chunk = pickle.loads(blob)
            before = self._stats()
            for attempt in range(1, CHUNK_ATTEMPTS + 1):
                try:
                    annotated = annotate_chunk_answers(chunk, self.judge)
                    break
                except Exception as exc:  # noqa: BLE001 - asked again once; the second failure fails the run
                    if attempt == CHUNK_ATTEMPTS:
                        raise
                    log.warning("chunk %d failed on attempt %d (%s: %s); asking again", seq, attempt,
                                type(exc).__name__, exc)
            after = self._stats()
            drained = self.judge.drain() if hasattr(self.judge, "drain") else []
            rows.append({"seq": seq, "labels": _ipc(to_table("labels", label_rows(self.setup.dataset, annotated))),
                         "cache_rows": json.dumps(drained, ensure_ascii=False),
                         "cache_stats": json.dumps({k: after.get(k, 0) - before.get(k, 0) for k in after})})
        return pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)
