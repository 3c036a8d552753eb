"""One bound on requests in flight per LLM endpoint, across every worker of a Ray run.

Locally, each chat client holds its own `Gate` (pipeline/judges/backends/llm_retry.py): at most
`concurrency` requests at once, and a server's Retry-After holds every request of the process off.
On Ray, N workers each with their own gate would send N times the bound, so the driver starts one
`EndpointGate` actor per endpoint (keyed by its base URL) with the judge's bound, and every worker
swaps its clients' gates for a `SharedSlot` that asks that actor for a slot before each request.
A Retry-After seen by one worker holds off every worker.

A slot is a lease: a worker that dies while holding one cannot shrink the bound for good, because
the gate takes back a lease that was not returned within `lease_seconds` (longer than any request
is allowed to take).

The gate also measures what it admits: the most requests ever held at once, and the mean number
held over the time at least one was (the bench reads these to show the bound stays full).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from typing import Any, Iterator

__all__ = ["EndpointGate", "SharedSlot", "chat_clients", "endpoint_key"]


def chat_clients(judge: Any) -> Iterator[Any]:
    """Every chat client (`RetryingChat`) inside a judge: the judge itself, the judge a cache
    wraps, a client the judge holds (MiniCheck's `caller`)."""
    from pipeline.judges.backends.llm_retry import RetryingChat

    seen: set[int] = set()
    todo = [judge]
    while todo:
        obj = todo.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, RetryingChat):
            yield obj
        attrs = getattr(obj, "__dict__", {})  # not getattr: CachingJudge passes unknown names on
        todo.extend(attrs.get(name) for name in ("inner", "caller"))


def endpoint_key(client: Any) -> str:
    """A name for the endpoint a client talks to (its base URL, hashed; '' = the provider's default)."""
    url = str(getattr(client, "base_url", None) or "default").rstrip("/")
    return hashlib.sha256(url.encode()).hexdigest()[:16]


class EndpointGate:
    """The bound of one endpoint (an asyncio Ray actor on the driver's machine)."""

    def __init__(self, bound: int, lease_seconds: float) -> None:
        self.bound = max(1, int(bound))
        self.lease_seconds = float(lease_seconds)
        self._leases: dict[int, float] = {}  # token -> monotonic deadline
        self._tokens = itertools.count(1)
        self._resume_at = 0.0
        self._changed: asyncio.Condition | None = None
        # measurements
        self._max_held = 0
        self._busy_since: float | None = None
        self._busy_seconds = 0.0
        self._slot_seconds = 0.0  # integral of slots held over time
        self._last = time.monotonic()
        self._granted = 0
        self._hold_offs = 0
        self._expired = 0

    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _account(self) -> None:
        now = time.monotonic()
        held = len(self._leases)
        self._slot_seconds += held * (now - self._last)
        if held:
            self._busy_seconds += now - self._last
        self._last = now

    def _reclaim(self, now: float) -> None:
        for token in [t for t, deadline in self._leases.items() if deadline <= now]:
            del self._leases[token]
            self._expired += 1

    async def acquire(self) -> int:
        """Wait for a slot (and for any hold-off to pass); returns the lease's token."""
        cond = self._cond()
        async with cond:
            while True:
                now = time.monotonic()
                self._account()
                self._reclaim(now)
                if now < self._resume_at:
                    timeout = self._resume_at - now
                elif len(self._leases) < self.bound:
                    token = next(self._tokens)
                    self._leases[token] = now + self.lease_seconds
                    self._granted += 1
                    self._max_held = max(self._max_held, len(self._leases))
                    return token
                else:
                    timeout = max(0.01, min(self._leases.values()) - now)
                try:
                    await asyncio.wait_for(cond.wait(), timeout)
                except asyncio.TimeoutError:
                    pass

    async def release(self, token: int) -> None:
        cond = self._cond()
        async with cond:
            self._account()
            self._leases.pop(token, None)
            cond.notify_all()

    async def hold_off(self, seconds: float) -> None:
        cond = self._cond()
        async with cond:
            self._hold_offs += 1
            self._resume_at = max(self._resume_at, time.monotonic() + max(0.0, float(seconds)))
            cond.notify_all()

    async def stats(self) -> dict[str, float]:
        self._account()
        busy = self._busy_seconds
        return {"bound": self.bound, "granted": self._granted, "max_in_flight": self._max_held,
                "mean_in_flight_while_busy": self._slot_seconds / busy if busy else 0.0,
                "busy_seconds": busy, "hold_offs": self._hold_offs, "expired_leases": self._expired}


class SharedSlot:
    """What a worker's chat client enters around each request instead of its own `Gate`: one slot
    of the endpoint's `EndpointGate` actor (module doc). Usable from many threads at once."""

    def __init__(self, gate: Any, bound: int) -> None:
        import threading

        self.gate = gate
        self.bound = bound
        self._tokens = threading.local()

    def __enter__(self) -> "SharedSlot":
        import ray

        stack = getattr(self._tokens, "stack", None)
        if stack is None:
            stack = self._tokens.stack = []
        stack.append(ray.get(self.gate.acquire.remote()))
        return self

    def __exit__(self, *exc: object) -> None:
        self.gate.release.remote(self._tokens.stack.pop())  # no need to wait for the gate's answer

    def hold_off(self, seconds: float) -> None:
        self.gate.hold_off.remote(seconds)
