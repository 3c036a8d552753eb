"""Build the results the app opens on: the teaching corpus always, ExpertQA when it is found."""

from __future__ import annotations

from typing import Iterator

from pipeline.importers import known_datasets
from pipeline.store import list_judges


def build_default(force: bool = False, progress: bool = True) -> Iterator[str]:
    """Run the default datasets whose results are missing; yields one line per step."""
    from pipeline.runner import run_dataset

    datasets = known_datasets()
    plan = [("demo", "recorded"), ("demo", "offline"), ("expertqa", "human")]
    for name, judge in plan:
        info = datasets[name]
        if info.path is None:
            yield f"skip {name}: not found here ({info.how_to_get})"
            continue
        have = list_judges(name)
        if not force and any(j == judge or j.startswith(judge) for j in have):
            yield f"ok   {name} ({judge}): results already built"
            continue
        try:
            result = run_dataset(name, judge_name=judge, progress=progress)
        except Exception as exc:  # noqa: BLE001 - one dataset failing must not stop the app from starting
            yield f"fail {name} ({judge}): {type(exc).__name__}: {str(exc)[:200]}"
            continue
        yield f"built {name} ({result.judge}): {result.answers} answers in {result.seconds:.1f} s"
