"""What several benchmark rows share: the project root, ExpertQA answers as the runner reads them,
the sources a support judge is sent, a timer, a scoped environment and a target's verdict."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent


def target(ratio: float | None, goal: float) -> str:
    """'target >= goal: met' or 'NOT met', for a row's note."""
    ok = ratio is not None and ratio >= goal
    return f"target ratio >= {goal:g}: {'met' if ok else 'NOT met'}"



EXPERTQA_FILES = ("domain_test", "domain_val", "rand_val")


def expertqa_answers(split: str, limit: int | None = None) -> list[Any]:
    """ExpertQA answers of one file (sorted by id, like the runner), or RuntimeError when absent."""
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.storage.paths import expertqa_dir

    folder = expertqa_dir()
    if folder is None or not (folder / f"{split}.jsonl").is_file():
        raise RuntimeError("ExpertQA files not found (set EXPERTQA_DIR or place ../shared/data/expertqa)")
    answers = sorted(load_expertqa(folder / f"{split}.jsonl"), key=lambda a: a.answer.answer_id)
    return answers[:limit] if limit else answers


def judged_sources(answer: Any) -> list[Any]:
    """The sources the annotate stage sends to a support judge: with text, not known dead."""
    return [s for s in answer.sources if (s.text or "").strip() and s.fetch_ok is not False]



def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t



@contextlib.contextmanager
def environ(**values: str) -> Iterator[None]:
    """These environment variables for the block (the pipeline reads its folders from them), then
    back to what they were."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
