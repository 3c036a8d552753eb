"""The order in which `pytest -n 4 --dist loadfile` hands out test files: the long ones first.

xdist gives each worker one file at a time, in collection order when `--no-loadscope-reorder` is
set (the Makefile sets it; by default xdist sorts files by how many tests they hold, which put the
long one-test files, twenty browsers at once or every page at every width, at the very end of the
run, where they ran alone while the other workers had nothing left to do). Starting the longest
files first and filling in with the short ones is the classic longest-first schedule: the workers
finish close together.

LONG_FILES lists the files that took the longest in a whole run (`--junitxml` summed per file,
`make test` on 2 cores, 2026-11-29). A file missing from it only runs later than it could: the order
changes how long the run takes, never what it checks.
"""

from __future__ import annotations

import pytest

LONG_FILES: tuple[str, ...] = (  # longest first
    "tests/browser/test_browser_links.py",
    "tests/browser/test_browser_widths.py",
    "tests/pipeline/cluster/test_ray_executor.py",
    "tests/browser/test_concurrency.py",
    "tests/browser/test_browser.py",
    "tests/pipeline/test_kill_resume.py",
    "tests/bench/test_bench_smoke.py",
    "tests/bench/test_bench_smoke_more.py",
    "tests/pipeline/audit/test_compare_judge_error.py",
    "tests/browser/test_browser_narrow.py",
    "tests/browser/test_browser_audit.py",
    "tests/browser/test_browser_classroom.py",
    "tests/browser/test_browser_room.py",
    "tests/pipeline/storage/test_result_sets.py",
    "tests/pipeline/importers/test_support_citation_free.py",
    "tests/browser/test_browser_answers.py",
    "tests/browser/test_browser_audit_flow.py",
)


def long_files_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place: LONG_FILES in their order, then every other file in collection order;
    the tests of one file keep their order."""
    rank = {path: k for k, path in enumerate(LONG_FILES)}
    first_seen: dict[str, int] = {}
    for k, item in enumerate(items):
        first_seen.setdefault(_file(item), k)

    def key(indexed: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        k, item = indexed
        path = _file(item)
        return (rank.get(path, len(rank)), first_seen[path], k)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]  # relative to the rootdir (pytest.ini's folder)
