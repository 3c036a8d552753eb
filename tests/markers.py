"""Which tests need what: the markers `make test-quick` leaves out (`-m "not (browser or ray or nli or slow)"`).

conftest.py applies them at collection, by what a test uses, so a new test is grouped without
remembering a decorator:

- `browser`: a test in tests/test_browser*.py or tests/test_concurrency.py, or one that takes the
  `browser` fixture (Debian's chromium through Playwright);
- `ray`: a test in tests/test_ray_executor.py, one that takes the loopback `cluster` fixture, or one
  whose name says ray (it imports Ray, seconds on its own);
- `nli`: a test in tests/test_nli_judge.py or one whose name says nli (torch and transformers);
- `slow`: the tests that took more than ~5 s in a quiet two-worker run (SLOW below), besides those
  marked `slow` in their files.

The markers are registered in pytest.ini; `make test` runs every test whatever its markers.
"""

from __future__ import annotations

import re
from typing import Iterable

import pytest

BROWSER_FILES = ("test_concurrency.py",)
RAY_FILES = ("test_ray_executor.py",)
NLI_FILES = ("test_nli_judge.py",)

# Whole files whose every test takes seconds (apps run through Streamlit's AppTest, subprocess runs
# of the pipeline), and single tests, "file.py::name" (without parameters). Measured from
# `pytest --durations` of a whole run; a test over ~5 s goes here.
SLOW_FILES: frozenset[str] = frozenset({
    "test_kill_resume.py",
    "test_bench_smoke.py",
    "test_determinism.py",
})
SLOW_TESTS: frozenset[str] = frozenset()


def _word(name: str, word: str) -> bool:
    return re.search(rf"(^|_){word}(_|$)", name) is not None


def markers_for(file: str, name: str, fixtures: Iterable[str]) -> set[str]:
    """The group markers a test gets from its file name, its function name and its fixtures."""
    fixtures = set(fixtures)
    base = name.split("[", 1)[0]
    out: set[str] = set()
    if file.startswith("test_browser") or file in BROWSER_FILES or "browser" in fixtures:
        out.add("browser")
    if file in RAY_FILES or "cluster" in fixtures or _word(base, "ray"):
        out.add("ray")
    if file in NLI_FILES or _word(base, "nli"):
        out.add("nli")
    if file in SLOW_FILES or f"{file}::{base}" in SLOW_TESTS:
        out.add("slow")
    return out


def apply_markers(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in markers_for(item.path.name, item.name, getattr(item, "fixturenames", ())):
            item.add_marker(marker)
