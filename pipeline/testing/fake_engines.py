"""A fake answer-engine API server for tests (stdlib only, 127.0.0.1, random free port).

One server answers every provider `aee collect` knows, each at its own path and in its own response
shape, with an answer made up from the query (two cited sources served by the same server under
/page/..., so `--sources fetch` has pages to fetch):

    POST /chat/completions                      Perplexity Sonar
    POST /v1/responses                          OpenAI Responses API with web search
    POST /v1/messages                           Anthropic Messages with web search
    POST /v1beta/models/<model>:generateContent Gemini with grounding
    POST /v1/answer                             You.com Answer API
    POST /answer                                Exa
    GET  /page/<n>                              a small HTML page

Faults are scripted with `add_fault(...)`: a status (429 with Retry-After, 500...), a delay (to
make the client time out) or both, for the first `times` requests whose query matches. Every
request is logged (path, headers, query, status); `answered(query)` counts the 200 answers a query
got. `expected_key` makes requests without that key fail with 401. `delay` slows every answer.

    with FakeEngineServer() as server:
        server.add_fault(lambda q: q == "slow one", delay=2.0, times=1)
        os.environ["AEE_COLLECT_PERPLEXITY_BASE_URL"] = server.base_url
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Self

from pipeline.testing.fake_variation import Variation, varied_answer
from pipeline.testing.stub_server import StubRequest, StubServer

__all__ = ["FakeEngineServer", "Fault", "Logged", "fake_answer"]


@dataclass
class Fault:
    match: Callable[[str], bool]
    status: int = 200
    delay: float = 0.0
    times: int = 1
    retry_after: str | None = None
    body: Any = None  # a 200 reply with this JSON instead of the made-up answer


@dataclass
class Logged:
    path: str
    headers: dict[str, str]
    query: str
    status: int = 0
    body: Any = field(default=None, repr=False)
    at: float = field(default_factory=time.monotonic)  # when the server read the request


def _query_of(path: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("query"), str):
        return body["query"]
    if isinstance(body.get("input"), str):
        return body["input"]
    for message in body.get("messages") or body.get("contents") or []:
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str):
                return content
            for part in message.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    return part["text"]
    return ""


def fake_answer(path: str, query: str, base: str) -> dict[str, Any]:
    """A response in the shape the path's provider uses, citing two pages of this server."""
    n = zlib.crc32(query.encode()) % 1000
    urls = [f"{base}/page/{n}", f"{base}/page/{n + 1}"]
    first, second = f"Answering “{query[:60]}”: the first claim holds.", "A second claim follows."
    if path.endswith("/chat/completions"):
        return {"id": f"pplx-{n}", "model": "sonar", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": f"{first} [1] {second} [2]"}}],
                "citations": urls, "search_results": [{"title": f"Page {k}", "url": u, "snippet": f"snippet {k}"} for k, u in enumerate(urls, 1)]}
    if path.endswith("/v1/responses"):
        text = f"{first} ([p1]({urls[0]})) {second} ([p2]({urls[1]}))"
        anns = [{"type": "url_citation", "start_index": text.index(f"[p{k}]"), "end_index": text.index(f"[p{k}]") + len(f"[p{k}]({u})"),
                 "url": u, "title": f"Page {k}"} for k, u in enumerate(urls, 1)]
        return {"id": f"resp_{n}", "object": "response", "model": "fake", "output": [
            {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": query}},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": anns}]}]}
    if path.endswith("/v1/messages"):
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "fake", "content": [
            {"type": "web_search_tool_result", "tool_use_id": "t1", "content": [
                {"type": "web_search_result", "url": u, "title": f"Page {k}", "encrypted_content": "xx"} for k, u in enumerate(urls, 1)]},
            {"type": "text", "text": first, "citations": [{"type": "web_search_result_location", "url": urls[0], "title": "Page 1",
                                                          "encrypted_index": "x", "cited_text": "snippet 1"}]},
            {"type": "text", "text": " " + second, "citations": [{"type": "web_search_result_location", "url": urls[1], "title": "Page 2",
                                                                "encrypted_index": "y", "cited_text": "snippet 2"}]}]}
    if ":generateContent" in path:
        text = f"{first} {second}"
        b1 = len(first.encode())
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "groundingMetadata": {
            "groundingChunks": [{"web": {"uri": u, "title": "127.0.0.1"}} for u in urls],
            "groundingSupports": [{"segment": {"endIndex": b1, "text": first}, "groundingChunkIndices": [0]},
                                  {"segment": {"startIndex": b1 + 1, "endIndex": len(text.encode()), "text": second},
                                   "groundingChunkIndices": [1]}]}}], "modelVersion": "fake"}
    if path.endswith("/v1/answer"):
        return {"answer": f"{first} [[1]] {second} [[2]]", "citations": [{"source": u, "excerpts": [f"snippet {k}"]} for k, u in enumerate(urls, 1)],
                "results": {"web": [{"url": u, "title": f"Page {k}", "snippets": []} for k, u in enumerate(urls, 1)]}}
    if path.endswith("/answer"):
        return {"answer": f"{first} {second}", "citations": [{"id": u, "url": u, "title": f"Page {k}", "text": f"snippet {k}"}
                                                            for k, u in enumerate(urls, 1)], "costDollars": {"total": 0.005}}
    raise KeyError(path)


def varied_perplexity(query: str, draw: int, variation: Variation, engine: str = "perplexity") -> dict[str, Any]:
    """A Perplexity response for the `draw`-th asking of `query` under a variation."""
    va = varied_answer(engine, query, draw, variation)
    content = " ".join(f"{s[:-1]} [{k % len(va.urls) + 1}]." for k, s in enumerate(va.statements))
    return {"id": f"pplx-{va.response_id}", "model": "sonar", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "citations": list(va.urls),
            "search_results": [{"title": f"Page {k}", "url": u, "snippet": t} for k, (u, t) in enumerate(zip(va.urls, va.snippets), 1)]}


class FakeEngineServer(StubServer):
    """Threaded stub server; use as a context manager or call start()/stop()."""

    def __init__(self, expected_key: str | None = None, delay: float = 0.0, variation: Variation | None = None) -> None:
        super().__init__()
        self.expected_key, self.delay = expected_key, delay
        # with a variation, each asking of a query is a new draw (fake_variation.py): other sources,
        # reworded statements, at known rates; Perplexity's shape carries all of it
        self.variation = variation
        self._draws: dict[tuple[str, str], int] = {}
        self.log: list[Logged] = []
        self.faults: list[Fault] = []
        self._base = ""

    def add_fault(self, match: Callable[[str], bool], *, status: int = 200, delay: float = 0.0, times: int = 1,
                  retry_after: str | None = None, body: Any = None) -> None:
        with self._lock:
            self.faults.append(Fault(match, status, delay, times, retry_after, body))

    def answered(self, query: str) -> int:
        with self._lock:
            return sum(1 for r in self.log if r.query == query and r.status == 200)

    @property
    def requests(self) -> list[Logged]:
        with self._lock:
            return list(self.log)

    @property
    def base_url(self) -> str:
        assert self._base, "server not started"
        return self._base

    def _fault_for(self, query: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.match(query):
                    fault.times -= 1
                    return fault
        return None

    def start(self) -> Self:
        super().start()
        self._base = f"http://127.0.0.1:{self.port}"
        return self

    def handle_get(self, request: StubRequest) -> None:
        if request.path.startswith("/page/"):
            n = request.path.rsplit("/", 1)[-1]
            html = (f"<html><head><title>Page {n}</title></head><body><article><h1>Page {n}</h1>"
                    f"<p>This page says the first claim holds and a second claim follows, number {n}.</p>"
                    "<p>It is long enough to count as a page of text for the extractor to keep.</p></article></body></html>")
            request.send(200, html.encode(), "text/html; charset=utf-8")
        else:
            request.send(404, b'{"error": {"message": "not found"}}')

    def handle_post(self, request: StubRequest) -> None:
        _, body = request.read_body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        entry = Logged(request.path, headers, _query_of(request.path, body), body=body)
        with self._lock:
            self.log.append(entry)
        if self.expected_key and not any(self.expected_key in v for v in headers.values()):
            entry.status = 401
            # like some real APIs, the error repeats the key it got: the client must redact it
            given = " ".join(v for k, v in headers.items() if k in ("authorization", "x-api-key", "x-goog-api-key"))
            request.send(401, json.dumps({"error": {"message": f"Incorrect API key provided: {given}"}}).encode())
            return
        fault = self._fault_for(entry.query)
        time.sleep(self.delay + (fault.delay if fault else 0.0))
        if fault and fault.status != 200:
            entry.status = fault.status
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            request.send(fault.status, json.dumps({"error": {"message": f"fake {fault.status}"}}).encode(), headers=extra)
            return
        if fault and fault.body is not None:
            entry.status = 200
            request.send(200, json.dumps(fault.body).encode())
            return
        try:
            path = request.path.split("?")[0]
            if self.variation is not None and path.endswith("/chat/completions"):
                with self._lock:
                    draw = self._draws.get((path, entry.query), 0)
                    self._draws[(path, entry.query)] = draw + 1
                payload = json.dumps(varied_perplexity(entry.query, draw, self.variation)).encode()
            else:
                payload = json.dumps(fake_answer(path, entry.query, self.base_url)).encode()
        except KeyError:
            entry.status = 404
            request.send(404, b'{"error": {"message": "no such endpoint"}}')
            return
        entry.status = 200
        request.send(200, payload)


def main(argv: list[str] | None = None) -> None:
    """`python -m pipeline.testing.fake_engines [--delay S] [--429-every N] [--slow-every N --slow S]`:
    serve until killed and print the base URL (for trying `aee collect` by hand and for measuring
    its retries): every Nth request gets a 429 (Retry-After: 0) or answers S seconds late."""
    import argparse
    import itertools

    parser = argparse.ArgumentParser(prog="python -m pipeline.testing.fake_engines")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--429-every", dest="every_429", type=int, default=0, help="every Nth request gets a 429")
    parser.add_argument("--slow-every", type=int, default=0, help="every Nth request answers late")
    parser.add_argument("--slow", type=float, default=5.0, help="how late, in seconds")
    parser.add_argument("--vary", type=int, metavar="SEED", help="every asking a new draw (fake_variation.Variation(seed=SEED)): "
                                                                  "Perplexity answers change between repeats at known rates")
    args = parser.parse_args(argv)
    server = FakeEngineServer(delay=args.delay, variation=None if args.vary is None else Variation(seed=args.vary))
    counter = itertools.count(1)
    lock = threading.Lock()
    state = {"n": 0}

    def nth(every: int) -> Callable[[str], bool]:
        def match(query: str) -> bool:
            return every > 0 and state["n"] % every == 0
        return match

    original = server._fault_for

    def counted(query: str) -> Fault | None:
        with lock:
            state["n"] = next(counter)
        return original(query)

    server._fault_for = counted  # type: ignore[method-assign]
    if args.every_429:
        server.add_fault(nth(args.every_429), status=429, retry_after="0", times=10**9)
    if args.slow_every:
        server.add_fault(nth(args.slow_every), delay=args.slow, times=10**9)
    server.start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
