"""The extractor process of `pipeline.fetching.extract_worker`: reads (kind, payload, url) pickles on stdin,
answers ("ok", (title, text)) or ("error", reason) pickles on its own copy of stdout. Started as
`python -m pipeline.fetching.extract_serve` by the fetching process, which kills it at the deadline."""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any

from pipeline.fetching.extract_worker import ExtractFailed
from pipeline.fetching.fetch_text import _html_to_text_inline, _load_pdf_reader, _pdf_to_text_inline, _Stop, _strip_tags


def _run_job(kind: str, payload: Any, url: str) -> tuple[str, str]:
    if kind == "html":
        return _html_to_text_inline(payload, url)
    if kind == "strip":
        return _strip_tags(payload)
    if kind == "pdf":
        return _pdf_to_text_inline(payload, 200)
    raise ExtractFailed(f"unknown job {kind!r}")


def _serve() -> None:
    try:  # import the extractors now, so the first page's deadline is not spent on imports
        import trafilatura  # noqa: F401
    except ImportError:
        pass
    _load_pdf_reader()
    source = sys.stdin.buffer
    sink = os.fdopen(os.dup(1), "wb")  # the reply pipe, on a descriptor of its own
    os.dup2(2, 1)  # anything a library prints (Python or C) goes where stderr goes, not into a reply
    sys.stdout = sys.stderr
    sink.write(b"R")
    sink.flush()
    while True:
        try:
            kind, payload, url = pickle.load(source)
        except (EOFError, OSError):
            return  # the parent closed the pipe or exited
        try:
            reply: tuple[str, Any] = ("ok", _run_job(kind, payload, url))
        except _Stop as stop:  # "bad pdf: ...": the page's fault, said as the fetcher says it
            reply = ("error", stop.reason)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
            reply = ("error", f"{type(exc).__name__}: {exc}"[:300])
        pickle.dump(reply, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    _serve()
