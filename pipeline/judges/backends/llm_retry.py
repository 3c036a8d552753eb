"""The retry policy shared by every client of an OpenAI-compatible chat endpoint (the OpenAI judge,
`llm_client.ChatCaller` for MiniCheck): one place decides what is retried, how long to wait and
what a failed call says.

Policy: stop the client at the first 401 or 403 (a rejected key fails every call alike); retry on
408, 409, 429, 5xx, timeouts and connection errors with exponential backoff and
jitter, honouring `Retry-After` / `retry-after-ms` up to a cap; never retry other 4xx or a reply
that cannot be read; a gate bounds concurrent requests across threads (and, shared through
`share_gate`, across the processes of a Ray run: pipeline.cluster.gate), and a Retry-After holds
off every request through that gate, not only the one refused; the API key never
reaches a reply, a log line or an error text (`llm_config.redact`). A 400 that names a request
parameter the caller can do without is sent again without it, which does not count as an attempt.
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from typing import Any, Callable, ClassVar, TypeVar

from pipeline.fetching.outbound import EndpointLatch, RedirectRefused, refusal_in
from pipeline.fetching.redact import redact, redact_clip
from pipeline.judges.base import JudgeError

__all__ = ["EndpointRefused", "Gate", "RetryingChat"]


class EndpointRefused(JudgeError):
    """The chat endpoint redirected a call somewhere the key may not go, or rejected the key (401,
    403): stop, do not call it again."""


# A 401 or 403 says the key (or its rights) is wrong; every other call would get the same answer,
# so the first one stops the judge instead of labelling a whole run "not scorable".
_REJECTED_KEY = (401, 403)
_HINTS = {"redirect": "check the base URL the judge is configured with",
          "key": "check the API key the judge is configured with (AEE_OPENAI_API_KEY, OPENAI_API_KEY or "
                 "[openai] api_key in .streamlit/secrets.toml) and its rights on this model"}

R = TypeVar("R")


class Gate:
    """At most `bound` requests at once through `with gate:`, and none until a hold-off set by
    `hold_off(seconds)` (a server's Retry-After) has passed. Thread-safe; one per client by default."""

    def __init__(self, bound: int) -> None:
        self.bound = max(1, int(bound))
        self._cond = threading.Condition()
        self._held = 0
        self._resume_at = 0.0  # time.monotonic() before which nobody enters

    def __enter__(self) -> "Gate":
        with self._cond:
            while True:
                wait = self._resume_at - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                elif self._held < self.bound:
                    self._held += 1
                    return self
                else:
                    self._cond.wait()

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._held -= 1
            self._cond.notify_all()  # a waiter may be sitting out a hold-off: wake every one to re-check

    def hold_off(self, seconds: float) -> None:
        """Let no request in for `seconds` (extends, never shortens, a hold-off already set)."""
        with self._cond:
            self._resume_at = max(self._resume_at, time.monotonic() + max(0.0, seconds))


class RetryingChat:
    """Mixin: chat completions with retries, and counters of requests, retries and failed calls in
    `stats`. A class sets `retry_log` (its module's logger) and `call_name` (how its log lines name a
    call), and calls `_init_retries` from its constructor."""

    retry_log: ClassVar[logging.Logger]
    call_name: ClassVar[str] = "call"
    stats: dict[str, int]
    _secret: str | None

    def _init_retries(self, *, timeout: float, max_retries: int, concurrency: int, backoff_base: float,
                      backoff_max: float, max_retry_after: float) -> None:
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self._gate: Any = Gate(concurrency)
        self._stats_lock = threading.Lock()
        self._endpoint = EndpointLatch()  # one call at a time until one comes back; nothing after a refusal

    @property
    def gate(self) -> Any:
        """The bound this client's requests go through (`Gate`, or a shared one set by `share_gate`)."""
        return self._gate

    def share_gate(self, gate: Any) -> None:
        """Send requests through `gate` instead of this client's own: any context manager that
        admits one request, with a `bound` and a `hold_off(seconds)` (pipeline.cluster.gate holds one
        bound per endpoint for every worker of a Ray run)."""
        self._gate = gate

    def _refuse(self, reason: str, why: str = "redirect") -> None:
        """Remember the refusal (every later call raises at once, sending nothing) and raise it.
        `why`: "redirect" (the endpoint sent us elsewhere) or "key" (it rejected the key)."""
        if self._endpoint.refuse(redact(reason, [self._secret])):
            self._refusal_hint = _HINTS[why]
            self._bump(refused_calls=1)
            self.retry_log.info("%s refused: %s", self.call_name, self._endpoint.refused)
        self._raise_if_refused()

    def _raise_if_refused(self) -> None:
        refused = self._endpoint.refused
        if refused is not None:
            hint = getattr(self, "_refusal_hint", _HINTS["redirect"])
            raise EndpointRefused(f"the judge stopped at its first refused call and sent no more: {refused}; {hint}")

    def _bump(self, **counts: int) -> None:
        with self._stats_lock:
            for k, v in counts.items():
                self.stats[k] = self.stats.get(k, 0) + v

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return min(self.backoff_max, self.backoff_base * (2 ** attempt)) * random.uniform(0.5, 1.0)

    @staticmethod
    def _retry_after(exc: Any) -> float | None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        if not headers:
            return None
        try:
            if headers.get("retry-after-ms"):
                return float(headers["retry-after-ms"]) / 1000.0
            value = headers.get("retry-after")
            if not value:
                return None
            try:
                return float(value)
            except ValueError:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None

    def _complete_with_retries(self, client: Any, build_kwargs: Callable[[], dict[str, Any]],
                               read: Callable[[Any], R], failed: Callable[[str], R],
                               drop_refused: Callable[[str], bool]) -> R:
        """`client.chat.completions.create(**build_kwargs())`, retried under the policy. `read`
        turns a response into the result (an exception there is a failure not retried); `failed`
        makes the result of a call that gave up, from the redacted reason; `drop_refused(message)`
        is asked on a 400 and returns True when it dropped the parameter the message names, so the
        request is rebuilt and sent again. Never raises for a failed call."""
        import openai

        last_error, attempt = "no attempt made", 0
        while attempt <= self.max_retries:
            kwargs = build_kwargs()
            retry_after: float | None = None
            try:
                with self._endpoint.turn(), self._gate:
                    self._raise_if_refused()  # checked inside the gate: a call that waited sends nothing
                    self._bump(requests=1)
                    response = client.chat.completions.create(timeout=self.timeout, **kwargs)
                    self._endpoint.answered()
                return read(response)
            except EndpointRefused:  # an earlier call was refused: this one sent nothing
                raise
            except RedirectRefused as exc:  # the server sent us elsewhere: no retry will change that
                self._refuse(exc.reason)
            except openai.APITimeoutError:
                last_error, retryable = f"request timed out after {self.timeout:g}s", True
            except openai.APIConnectionError as exc:
                refused = refusal_in(exc)
                if refused:
                    self._refuse(refused)
                last_error, retryable = f"connection error ({type(exc).__name__})", True
            except openai.APIStatusError as exc:
                status = int(getattr(exc, "status_code", 0) or 0)
                message = redact_clip(str(getattr(exc, "message", "") or exc), [self._secret])
                last_error = f"HTTP {status}: {message}"
                if status == 400 and drop_refused(message):
                    continue  # does not count as an attempt
                if status in _REJECTED_KEY:
                    self._refuse(last_error, "key")
                retryable = status in (408, 409, 429) or status >= 500
                retry_after = self._retry_after(exc)
            except Exception as exc:  # noqa: BLE001 - malformed responses and the like
                last_error, retryable = f"{type(exc).__name__}: {redact_clip(str(exc), [self._secret])}", False
            if not retryable or attempt == self.max_retries:
                break
            delay = self._delay(attempt, retry_after)
            if retry_after is not None:
                self._gate.hold_off(delay)  # the server asked everyone to wait, not only this request
            self.retry_log.info("%s failed (%s); retry %d/%d in %.2fs", self.call_name, last_error, attempt + 1,
                                self.max_retries, delay)
            self._bump(retries=1)
            time.sleep(delay)
            attempt += 1
        self._bump(failed_calls=1)
        reason = f"{last_error} (gave up after {attempt + 1} attempt{'s' if attempt else ''})"
        self.retry_log.warning("%s failed: %s", self.call_name, reason)
        return failed(redact(reason, [self._secret]))
