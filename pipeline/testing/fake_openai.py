"""A small OpenAI-compatible HTTP server for tests (stdlib only, 127.0.0.1, random free port).

It answers POST /v1/chat/completions (and GET /v1/models) from a script:
- a queue of `FakeResponse`s, consumed in order (`server.enqueue(...)`), then
- a handler function `handler(request) -> FakeResponse | str | dict` (`server.handler = ...`),
  then a default reply of `{"results": []}`.
A `str` becomes the assistant message content; a `dict` is sent as the whole JSON body.
Every request is logged in `server.requests` as a `LoggedRequest(path, headers, body)`.

    with FakeOpenAIServer() as server:
        server.enqueue(FakeResponse(status=429, headers={"Retry-After": "0"}))
        server.enqueue('{"results": [{"id": 1, "label": "full"}]}')
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

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


class FakeOpenAIServer:
    """Threaded stub server; use as a context manager or call start()/stop()."""

    def __init__(self) -> None:
        self.requests: list[LoggedRequest] = []
        self.queue: deque[FakeResponse] = deque()
        self.handler: Callable[[LoggedRequest], Any] | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client gave up (timeout test)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "test"}]}
                    self._send(200, json.dumps(body).encode(), {})
                else:
                    self._send(404, b'{"error": {"message": "not found"}}', {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                logged = LoggedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    with server._lock:
                        server.requests.append(logged)
                    self._send(404, b'{"error": {"message": "not found"}}', {})
                    return
                response = server._next(logged)
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
                self._send(response.status, payload.encode("utf-8"), response.headers)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
