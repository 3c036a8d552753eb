"""Where a call made with the user's API key may go: the endpoint the user configured, and nowhere else.

The safe fetcher (`pipeline.fetching.fetch`) treats every cited URL as hostile: it checks each hop's host,
address and port before connecting. API calls (`aee collect`, the LLM judges, the conflict probe)
carry a key, so a server that answers `302 Location: <somewhere else>` must not make us send that key
to somewhere else. The rule here is the fetcher's port-aware allowlist reduced to one entry: the
scheme, host and port of the endpoint the user configured (its origin) is the only place a keyed
request may reach. A redirect within that origin is followed; a redirect to any other origin (another
host, another port of the same machine, https downgraded to http) is refused before any connection
is made, and the refusal says so. The key is therefore never sent anywhere the user did not name.

The configured endpoint itself is the user's own choice (a local model server on 127.0.0.1 is a
normal setup), so it is not subject to the fetcher's public-address rule; it must still be an http(s)
URL with a host and no control characters.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

from pipeline.fetching.fetch import _parse
from pipeline.fetching.fetch_text import _Stop

__all__ = ["Deadline", "EndpointLatch", "RedirectRefused", "check_endpoint", "guarded_opener", "guarded_openai", "origin_of",
           "refusal_in"]


class RedirectRefused(Exception):
    """A keyed request was redirected away from the configured endpoint and was not followed."""

    def __init__(self, source: str, target: str, why: str) -> None:
        self.reason = (f"redirect refused: the endpoint {_short(source)} sent the request on to {_short(target)} "
                       f"({why}); a request carrying the API key only goes to the endpoint you configured, "
                       "so it was not sent there")
        super().__init__(self.reason)


def _short(url: str) -> str:
    text = str(url)
    return text if len(text) <= 120 else text[:117] + "..."


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL, normalised the way the fetcher does (IDNA host, default
    ports). ValueError with the fetcher's reason for anything it would refuse to parse."""
    try:
        target = _parse(url)
    except _Stop as stop:
        raise ValueError(stop.reason) from None
    return target.scheme, target.host, target.port


def check_endpoint(url: str) -> None:
    """ValueError when a configured API endpoint is not a usable http(s) URL."""
    origin_of(url)


def hop_problem(endpoint: str, target: str) -> str | None:
    """Why a keyed request to `endpoint` must not go on to `target` (None when it may: same origin)."""
    try:
        start = origin_of(endpoint)
    except ValueError as exc:
        return f"the endpoint itself is not usable: {exc}"
    try:
        hop = origin_of(target)
    except ValueError as exc:
        return str(exc)
    if hop == start:
        return None
    if hop[1] != start[1]:
        return f"another host: {hop[1]}"
    if hop[0] != start[0]:
        return f"another scheme: {hop[0]} instead of {start[0]}"
    return f"another port: {hop[2]} instead of {start[2]}"


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handler, but a hop to another origin raises RedirectRefused instead."""

    def __init__(self, endpoint: str) -> None:
        super().__init__()
        self.endpoint = endpoint

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        why = hop_problem(self.endpoint, newurl)
        if why is not None:
            raise RedirectRefused(self.endpoint, newurl, why)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class EndpointLatch:
    """One configured endpoint as the threads of one client see it: until a call has come back, calls
    go one at a time (a misconfigured endpoint, one that redirects elsewhere, is then refused once,
    not once per worker already waiting), and after a refusal nothing is sent there again. Shared by
    the LLM judges' retrying caller and the conflict probe."""

    def __init__(self) -> None:
        self._first = threading.Lock()
        self._state = threading.Lock()
        self._answered = False
        self.refused: str | None = None

    def turn(self) -> Any:
        """The context a call is sent in: the one-at-a-time lock until a call has come back."""
        return contextlib.nullcontext() if self._answered else self._first

    def answered(self) -> None:
        self._answered = True

    def refuse(self, reason: str) -> bool:
        """Remember the first refusal's reason; True when this call made it."""
        with self._state:
            if self.refused is not None:
                return False
            self.refused = reason
            return True


class Deadline:
    """A total time budget for one request and its reply: when it ends, every socket the request
    opened is shut down, so a server trickling a byte a second (each read well within the socket
    timeout) is cut at the deadline instead of holding the worker forever. `fired` tells afterwards
    that the cut, not the server, ended the reply."""

    def __init__(self, seconds: float) -> None:
        self.seconds = max(float(seconds), 0.0)
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            late = self.fired
        if late:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _watched(base: type[http.client.HTTPConnection], deadline: Deadline) -> Any:
    """`base` (an http.client connection class) whose sockets are handed to `deadline` once open."""

    def connect(self: Any) -> None:
        base.connect(self)
        deadline.watch(self.sock)

    return type(f"Deadline{base.__name__}", (base,), {"connect": connect})


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._cls = _watched(http.client.HTTPConnection, deadline)

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self._cls, req)


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._cls = _watched(http.client.HTTPSConnection, deadline)

    def https_open(self, req: urllib.request.Request) -> Any:
        extra = {"check_hostname": self._check_hostname} if hasattr(self, "_check_hostname") else {}
        return self.do_open(self._cls, req, context=getattr(self, "_context", None), **extra)


def guarded_opener(endpoint: str, deadline: Deadline | None = None) -> urllib.request.OpenerDirector:
    """A urllib opener whose redirects stay on `endpoint`'s origin (RedirectRefused otherwise) and,
    with a `deadline`, whose connections are cut when it ends."""
    handlers: list[Any] = [_SameOriginRedirects(endpoint)]
    if deadline is not None:
        handlers += [_DeadlineHTTP(deadline), _DeadlineHTTPS(deadline)]
    return urllib.request.build_opener(*handlers)


def refusal_in(exc: BaseException | None) -> str | None:
    """The reason of a RedirectRefused anywhere in an exception's cause/context chain, else None
    (client libraries wrap what a hook raised)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, RedirectRefused):
            return exc.reason
        if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, RedirectRefused):
            return exc.reason.reason
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


class _RequestGuard:
    """An httpx request hook: every request (redirect hops included: httpx runs request hooks for each
    one) must stay on the endpoint's origin. Raises RedirectRefused, which the OpenAI client lets
    through unwrapped and without retrying."""

    def __init__(self) -> None:
        self.endpoint = ""

    def __call__(self, request: Any) -> None:
        if not self.endpoint:
            return
        target = str(request.url)
        why = hop_problem(self.endpoint, target)
        if why is not None:
            raise RedirectRefused(self.endpoint, target, why)


def guarded_openai(factory: Any, **kwargs: Any) -> Any:
    """`factory(**kwargs, http_client=...)` (openai.OpenAI or openai.AzureOpenAI) whose requests may
    only reach the client's own base URL: a redirect elsewhere raises RedirectRefused before any
    connection, so the key (`Authorization` or Azure's `api-key`) goes nowhere else."""
    import openai

    guard = _RequestGuard()
    client = factory(**kwargs, http_client=openai.DefaultHttpxClient(event_hooks={"request": [guard]}))
    guard.endpoint = str(client.base_url)
    return client
