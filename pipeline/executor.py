"""Where the annotate stage runs: the seam between the runner's chunks and the judge.

The runner (`pipeline/runner.py`) reads a dataset in chunks, works out which chunks already have
their labels saved, and hands the chunks to an executor, which gives back each chunk annotated, in
the order it came. `LocalExecutor` (the default) annotates in this process; `pipeline.cluster`'s
`RayExecutor` sends the chunks to judges in a Ray actor pool. Metrics, rows and Parquet writing
stay with the runner whatever the executor, so a Ray run and a local run write the same rows.

Both executors label a chunk the same way (`annotate_chunk_answers`): a computed judge first sees
the whole chunk (`prefetch`: the offline judge embeds every text of the chunk in a few batches),
then each answer in turn. A judge behind a network endpoint (an LLM) gets the chunk's answers
concurrently, so requests stay in flight across answers and the endpoint's bound stays full (its
own client keeps the number of requests at once within that bound); the answers come back in order.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol, Sequence

from pipeline.annotate import annotate_answer
from pipeline.judges import Judge, registry_entry
from pipeline.records import AnnotatedAnswer

__all__ = ["ChunkTask", "Executor", "JudgeSpec", "LocalExecutor", "annotate_chunk_answers", "answers_in_flight"]

DEFAULT_ANSWERS_IN_FLIGHT = 16  # answers of one chunk annotated at once by a network judge (AEE_ANSWERS_IN_FLIGHT)


@dataclass(frozen=True)
class JudgeSpec:
    """How to build the run's judge again elsewhere (a Ray worker): its registry name, its
    configuration and the cache setting, handed to the one factory `pipeline.judges.get_judge`."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    cache: bool | str | Path = True


@dataclass
class ChunkTask:
    """One chunk of answers on its way through the annotate stage. `saved` holds the chunk's
    labels read back from a saved part (nothing to ask the judge); `part` is where a computed
    judge's labels of this chunk are saved once annotated (None for labels carried by the data)."""

    seq: int
    chunk: list[AnnotatedAnswer]
    saved: list[AnnotatedAnswer] | None = None
    part: Path | None = None


class Executor(Protocol):
    """Annotates chunks, yielding each task with its annotated answers in the order received."""

    name: str

    def annotate(self, tasks: Iterable[ChunkTask], judge: Judge, spec: JudgeSpec | None,
                 dataset: str) -> Iterator[tuple[ChunkTask, list[AnnotatedAnswer]]]: ...

    def cache_stats(self, judge: Judge) -> dict[str, int]: ...


def answers_in_flight(judge: Judge, n_answers: int) -> int:
    """How many answers of a chunk to annotate at once: one for judges that compute locally (the
    offline judge is CPU-bound and its encoder batches a chunk itself), up to
    AEE_ANSWERS_IN_FLIGHT (default 16) for judges behind a network endpoint."""
    info = registry_entry(getattr(judge, "name", "") or "")
    if info is None or not info.needs_network or n_answers <= 1:
        return 1
    try:
        limit = int(os.environ.get("AEE_ANSWERS_IN_FLIGHT", "") or DEFAULT_ANSWERS_IN_FLIGHT)
    except ValueError:
        limit = DEFAULT_ANSWERS_IN_FLIGHT
    return max(1, min(limit, n_answers))


def annotate_chunk_answers(chunk: Sequence[AnnotatedAnswer], judge: Judge) -> list[AnnotatedAnswer]:
    """Every label of one chunk's answers, in the chunk's order (see the module doc)."""
    if judge.carries_labels:
        return [annotate_answer(a, judge) for a in chunk]
    judge.prefetch(chunk)  # judges that batch across answers (the offline encoder) see the chunk first
    workers = answers_in_flight(judge, len(chunk))
    if workers == 1:
        return [annotate_answer(a, judge) for a in chunk]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aee-answer") as pool:
        return list(pool.map(lambda a: annotate_answer(a, judge), chunk))


class LocalExecutor:
    """The annotate stage in this process (the default; needs nothing beyond the judge)."""

    name = "local"

    def annotate(self, tasks: Iterable[ChunkTask], judge: Judge, spec: JudgeSpec | None,
                 dataset: str) -> Iterator[tuple[ChunkTask, list[AnnotatedAnswer]]]:
        for task in tasks:
            yield task, task.saved if task.saved is not None else annotate_chunk_answers(task.chunk, judge)

    def cache_stats(self, judge: Judge) -> dict[str, int]:
        return dict(getattr(judge, "stats", {}) or {})
