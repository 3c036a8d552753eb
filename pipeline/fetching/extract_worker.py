"""Turning a fetched page into text inside a helper process with a wall-clock deadline.

trafilatura (lxml) and pypdf do their work in C or in long pure-Python loops that no thread can
interrupt: a 4.8 MB page of `<p>word ` repeated once held `fetch_source` for 413 s. So the HTML and
PDF extractors run in a separate Python process (`python -m pipeline.fetching.extract_serve`), and the
fetching thread waits at most `deadline` seconds for its answer; past that the process is killed
(SIGKILL: C code cannot ignore it) and the caller gets `ExtractTimeout`. Input is bounded too: the
HTML handed to trafilatura is at most MAX_TRAFILATURA_CHARS characters (longer pages go to the plain
tag stripper, which is linear), and the fetcher's `max_bytes` bounds everything before that.

Workers are started on first use and kept for the next page (starting one and importing trafilatura
costs about a second), at most MAX_IDLE of them, each used by one thread at a time; a killed worker is
replaced by a fresh one on the next call. Parent and worker exchange pickles over the worker's own
stdin/stdout (both ends are this program; nothing from the page is ever unpickled by the parent
except the strings the worker built).
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["EXTRACT_SECONDS", "ExtractFailed", "ExtractTimeout", "MAX_TRAFILATURA_CHARS", "STRIP_SECONDS", "run_bounded"]

EXTRACT_SECONDS = float(os.environ.get("AEE_EXTRACT_SECONDS", "20"))  # one page, HTML or PDF
# the plain tag stripper, tried when trafilatura ran out of time; linear, about 1 s a MB
STRIP_SECONDS = float(os.environ.get("AEE_STRIP_SECONDS", "30"))
MAX_TRAFILATURA_CHARS = 1_500_000  # beyond this the tag stripper alone (linear) reads the page
MAX_IDLE = 4
STARTUP_SECONDS = 120.0  # a hang guard for starting a worker (imports), not part of a page's deadline
# Tests that patch the extractor in this process set this (pipeline.fetching.fetch_text then calls it here);
# it removes the time bound: never on fetched pages outside a test.
IN_PROCESS = False


class ExtractTimeout(Exception):
    """The extractor did not finish within its deadline; its process was killed."""


class ExtractFailed(Exception):
    """The worker process died or answered nonsense (not the page's fault as far as we know)."""


class _Worker:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(  # noqa: S603 - this interpreter running this module
            [sys.executable, "-m", "pipeline.fetching.extract_serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, close_fds=True)
        # The worker imports its extractors first and then says "ready": a page's deadline counts
        # extraction time only, not the second or so of starting Python and importing trafilatura.
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_SECONDS)
        if not ready or self.proc.stdout.read(1) != b"R":
            self.kill()
            raise ExtractFailed("the extractor process did not start")

    def ask(self, job: tuple[Any, ...], deadline: float) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            pickle.dump(job, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ExtractFailed(f"extractor process gone: {exc}") from None
        left = deadline - time.monotonic()
        ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0.0))
        if not ready:
            raise ExtractTimeout()
        try:
            status, value = pickle.load(self.proc.stdout)  # the worker writes its whole reply at once
        except (EOFError, pickle.UnpicklingError, ValueError, OSError) as exc:
            raise ExtractFailed(f"extractor process gone: {type(exc).__name__}") from None
        if status == "error":
            raise ExtractFailed(str(value))
        return value

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None


_idle: list[_Worker] = []
_all: set[_Worker] = set()
_lock = threading.Lock()


def _take() -> _Worker:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
            _all.discard(worker)
        worker = _Worker()
        _all.add(worker)
        return worker


def _give_back(worker: _Worker) -> None:
    with _lock:
        if worker.alive() and len(_idle) < MAX_IDLE:
            _idle.append(worker)
            return
        _all.discard(worker)
    worker.kill()


def _drop(worker: _Worker) -> None:
    with _lock:
        _all.discard(worker)
    worker.kill()


@atexit.register
def _shutdown() -> None:
    with _lock:
        workers = list(_all)
        _all.clear()
        _idle.clear()
    for worker in workers:
        worker.kill()


def run_bounded(kind: str, payload: Any, url: str, seconds: float | None = None) -> tuple[str, str]:
    """(title, text) of `payload` (HTML text for kind "html", bytes for "pdf", HTML for "strip": the
    tag stripper alone) computed in a worker process within `seconds` (EXTRACT_SECONDS by default).
    ExtractTimeout past the deadline (the worker is killed), ExtractFailed if the worker died, and the
    extractor's own exception types re-raised by name as ExtractFailed."""
    budget = EXTRACT_SECONDS if seconds is None else max(float(seconds), 0.0)
    if budget <= 0:  # no time at all: a warm worker could still answer a tiny page in time, so never ask
        raise ExtractTimeout()
    worker = _take()
    deadline = time.monotonic() + budget
    try:
        result = worker.ask((kind, payload, url), deadline)
    except (ExtractTimeout, ExtractFailed):
        _drop(worker)
        raise
    except BaseException:
        _drop(worker)  # interrupted mid-exchange: the pipe may hold half a message
        raise
    _give_back(worker)
    return result
