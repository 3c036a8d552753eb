"""Shared fixtures: paths to the project, to ../shared data, a temporary results root, and the
browser the browser tests drive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Re-score and `aee score` fetch missing source text by default; no test may reach for the web
# (tests that check the fetch turn it back on against a stub server on 127.0.0.1)
os.environ.setdefault("AEE_FETCH", "off")
if os.environ.get("PYTEST_XDIST_WORKER") and "AEE_CACHE_DIR" not in os.environ:
    # `pytest -n 4` (make test): each worker process keeps its own judge cache, so two workers never
    # write one SQLite file or fill each other's cache in the middle of a cold-vs-warm comparison.
    # Removed when the worker ends: left behind, four a run (~8 MB each) piled up in /tmp.
    import atexit
    import shutil
    import tempfile

    _worker_cache = tempfile.mkdtemp(prefix=f"aee-cache-{os.environ['PYTEST_XDIST_WORKER']}-")
    os.environ["AEE_CACHE_DIR"] = _worker_cache
    atexit.register(shutil.rmtree, _worker_cache, True)


@pytest.hookimpl(trylast=True)  # after pytest-timeout has read --timeout
def pytest_configure(config):
    """pytest-timeout's limit is a hang guard: scaled by how loaded the machine is (tests/timing.py)."""
    from timing import SLOWDOWN

    if getattr(config, "_env_timeout", None):
        config._env_timeout = round(config._env_timeout * SLOWDOWN)


def pytest_collection_modifyitems(config, items):
    """Group markers (browser, ray, nli, slow) by what each test uses (tests/markers.py)."""
    from markers import apply_markers

    apply_markers(items)


@pytest.fixture
def results_root(tmp_path, monkeypatch) -> Path:
    """An empty results folder the pipeline writes into for one test."""
    root = tmp_path / "results"
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    return root


@pytest.fixture
def expertqa_path() -> Path:
    """The ExpertQA folder, or skip with the reason when it is not on this machine."""
    from pipeline.storage.paths import expertqa_dir

    path = expertqa_dir()
    if path is None:
        pytest.skip("ExpertQA files not found: set EXPERTQA_DIR or place ../shared/data/expertqa beside the project")
    return path


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright, one per test module (never `playwright install`).
    Browser test modules skip themselves first when chromium or Playwright is missing."""
    from playwright.sync_api import sync_playwright

    from pipeline.testing.app_server import CHROMIUM, CHROMIUM_ARGS

    (ROOT / "tests" / "artifacts").mkdir(parents=True, exist_ok=True)  # screenshots (gitignored)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
