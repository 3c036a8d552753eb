"""What every fake provider server here shares: a threaded HTTP server on 127.0.0.1 at a free port,
started and stopped by the test (or used as a context manager), quiet, and tolerant of a client
that hangs up (a timeout test). A subclass answers requests in `handle_get` / `handle_post`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["StubRequest", "StubServer"]


class StubRequest(BaseHTTPRequestHandler):
    """One request to a stub server, with helpers to read its JSON body and send a reply."""

    protocol_version = "HTTP/1.1"
    stub: StubServer  # set on the per-server subclass `StubServer.start` makes

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.stub.handle_get(self)

    def do_POST(self) -> None:  # noqa: N802
        self.stub.handle_post(self)

    def read_body(self) -> tuple[str, Any]:
        """(the raw body text, its JSON; None when empty or not JSON)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return raw, body

    def send(self, status: int, payload: bytes, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up (a timeout test)


class StubServer:
    """Threaded stub server; use as a context manager or call start()/stop()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def handle_get(self, request: StubRequest) -> None:
        request.send(404, b'{"error": {"message": "not found"}}')

    def handle_post(self, request: StubRequest) -> None:
        request.send(404, b'{"error": {"message": "not found"}}')

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    def start(self) -> Self:
        handler = type("Handler", (StubRequest,), {"stub": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
