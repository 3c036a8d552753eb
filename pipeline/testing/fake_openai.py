"""A small OpenAI-compatible HTTP server for tests (stdlib only, 127.0.0.1, random free port).

It answers POST /v1/chat/completions (and GET /v1/models) from a script:
- a queue of `FakeResponse`s, consumed in order (`server.enqueue(...)`), then
- a handler function `handler(request) -> FakeResponse | str | dict` (`server.handler = ...`),
  then a default reply of `{"results": []}`.
A `str` becomes the assistant message content; a `dict` is sent as the whole JSON body.
Every request is logged in `server.requests` as a `LoggedRequest(path, headers, body)`, and the
server measures how many chat requests it was serving at once (`in_flight_stats()`: the most at any
moment, and the mean over the time it was serving at least one).

    with FakeOpenAIServer() as server:
        server.enqueue(FakeResponse(status=429, headers={"Retry-After": "0"}))
        server.enqueue('{"results": [{"id": 1, "label": "full"}]}')
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from pipeline.testing.stub_server import StubRequest, StubServer

__all__ = ["FakeOpenAIServer", "FakeResponse", "LoggedRequest", "chat_completion"]


@dataclass
class FakeResponse:
    """What the server sends for one request."""

    content: str | None = None  # assistant message content (wrapped into a chat completion)
    status: int = 200
    body: Any = None  # full JSON body (dict/list) or raw str; overrides `content`
    delay: float = 0.0  # seconds to sleep before answering (simulates a timeout)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class LoggedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    raw: str = ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages", []) if isinstance(self.body, dict) else []

    @property
    def prompt_text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages)


def chat_completion(content: str, model: str = "fake-model", prompt_tokens: int = 0, completion_tokens: int = 0) -> dict[str, Any]:
    """A minimal but valid chat.completion body."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FakeOpenAIServer(StubServer):
    """Threaded stub server; use as a context manager or call start()/stop()."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[LoggedRequest] = []
        self.queue: deque[FakeResponse] = deque()
        self.handler: Callable[[LoggedRequest], Any] | None = None
        self._in_flight = 0
        self._max_in_flight = 0
        self._busy_seconds = 0.0
        self._request_seconds = 0.0  # integral of requests in flight over time
        self._last_change = time.monotonic()

    # ---------------------------------------------------------------- script
    def enqueue(self, *responses: FakeResponse | str) -> None:
        with self._lock:
            for r in responses:
                self.queue.append(FakeResponse(content=r) if isinstance(r, str) else r)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.queue.clear()
            self.handler = None
            self._max_in_flight = 0
            self._busy_seconds = self._request_seconds = 0.0
            self._last_change = time.monotonic()

    def _count(self, change: int) -> None:
        with self._lock:
            now = time.monotonic()
            if self._in_flight:
                self._busy_seconds += now - self._last_change
                self._request_seconds += self._in_flight * (now - self._last_change)
            self._last_change = now
            self._in_flight += change
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def in_flight_stats(self) -> dict[str, float]:
        """Chat requests served at once: `max`, and `mean` over the time at least one was in flight."""
        self._count(0)
        with self._lock:
            busy = self._busy_seconds
            return {"max": self._max_in_flight, "mean": self._request_seconds / busy if busy else 0.0, "busy_seconds": busy}

    @property
    def chat_requests(self) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _next(self, request: LoggedRequest) -> FakeResponse:
        with self._lock:
            self.requests.append(request)
            if self.queue:
                return self.queue.popleft()
            handler = self.handler
        if handler is None:
            return FakeResponse(content='{"results": []}')
        result = handler(request)
        if isinstance(result, FakeResponse):
            return result
        if isinstance(result, str):
            return FakeResponse(content=result)
        return FakeResponse(body=result)

    # ---------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---------------------------------------------------------------- requests
    def handle_get(self, request: StubRequest) -> None:
        if request.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "test"}]}
            request.send(200, json.dumps(body).encode())
        else:
            request.send(404, b'{"error": {"message": "not found"}}')

    def handle_post(self, request: StubRequest) -> None:
        raw, body = request.read_body()
        logged = LoggedRequest(request.path, {k.lower(): v for k, v in request.headers.items()}, body, raw)
        if not request.path.rstrip("/").endswith("/chat/completions"):
            with self._lock:
                self.requests.append(logged)
            request.send(404, b'{"error": {"message": "not found"}}')
            return
        self._count(+1)
        try:
            status, payload, headers = self._answer(body, raw, self._next(logged))
        finally:
            # counted out before the reply goes: a client that has its reply may send its next
            # request at once, and must never find its previous one still counted
            self._count(-1)
        request.send(status, payload, headers=headers)

    def _answer(self, body: Any, raw: str, response: FakeResponse) -> tuple[int, bytes, dict[str, str]]:
        if response.delay:
            time.sleep(response.delay)
        if response.body is not None:
            payload = response.body if isinstance(response.body, str) else json.dumps(response.body)
        elif response.status >= 400:
            message = response.content or f"fake error {response.status}"
            payload = json.dumps({"error": {"message": message, "type": "fake", "code": response.status}})
        else:
            model = body.get("model", "fake-model") if isinstance(body, dict) else "fake-model"
            payload = json.dumps(chat_completion(response.content or "", model, len(raw) // 4, len(response.content or "") // 4))
        return response.status, payload.encode("utf-8"), response.headers
