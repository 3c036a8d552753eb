"""One JSON POST with retries: backoff on 429, 5xx and timeouts, Retry-After honoured (bounded), and
every message passed through `redact` so the key never reaches an error or a log."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from pipeline.fetching.outbound import Deadline, RedirectRefused, guarded_opener
from pipeline.fetching.redact import redact, redact_clip

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
FATAL_STATUSES = frozenset({401, 403})  # the key is missing, wrong or not allowed: stop the whole run
MAX_RESPONSE_BYTES = 20_000_000


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: base * 2**attempt seconds, at most `cap`."""

    base: float = 2.0
    cap: float = 60.0
    attempts: int = 6  # tries in all, the first one included

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap)
        return min(self.cap, self.base * 2 ** attempt) * (0.5 + random.random() / 2)


class RateGate:
    """One provider's rate limit, shared by every worker of a run: request starts spaced at least
    60 / per_minute seconds apart, and, when the provider answers 429 (Retry-After honoured), no
    worker starts a request until the pause is over. The concurrency bound itself is the pool's."""

    def __init__(self, per_minute: float | None = None, cap: float = 60.0) -> None:
        self.interval = 60.0 / per_minute if per_minute and per_minute > 0 else 0.0
        self.cap = cap
        self.pauses = 0  # how many times a 429 paused every worker
        self._lock = threading.Lock()
        self._next = 0.0
        self._paused_until = 0.0

    def wait(self, stop: threading.Event | None = None) -> bool:
        """Block until this worker may start a request; False when the run was stopped meanwhile."""
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next, self._paused_until)
            self._next = slot + self.interval
        delay = slot - now
        if delay <= 0:
            return True
        if stop is not None:
            return not stop.wait(delay)
        time.sleep(delay)
        return True

    def pause(self, seconds: float) -> None:
        """Nobody starts a request for `seconds` (at most `cap`)."""
        with self._lock:
            until = time.monotonic() + min(max(seconds, 0.0), self.cap)
            if until > self._paused_until:
                self._paused_until = until
                self.pauses += 1


@dataclass
class CallResult:
    """What one question cost: the parsed body when it succeeded, else why not (redacted)."""

    ok: bool
    status: int | None = None
    body: Any = None
    attempts: int = 0
    retries: dict[str, int] = field(default_factory=dict)  # cause -> count ("429", "5xx", "timeout", "network")
    seconds: float = 0.0
    error: str = ""
    fatal: bool = False
    stopped: bool = False  # the run was interrupted while this question waited to be retried
    # a 200 whose body cannot be read for a reason the provider would give again (an integer too
    # long to read, nesting too deep): kept as `text` and rejected once, never asked again
    unusable: bool = False
    text: str = ""


class _TooLong(ValueError):
    """An integer in a reply with more digits than Python reads (sys.get_int_max_str_digits)."""


def _read_int(digits: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(digits.lstrip("-")) > limit:
        raise _TooLong(f"the reply holds an integer of {len(digits.lstrip('-')):,} digits, more than can be read")
    return int(digits)


def read_reply(raw: bytes) -> Any:
    """A provider's reply body as JSON. A UTF-8 byte-order mark in front is dropped (the JSON after it
    is the same). Raises UnicodeDecodeError / ValueError for what is not JSON, `_TooLong` for an
    integer too long to read, RecursionError for nesting too deep."""
    text = raw.decode("utf-8")
    return json.loads(text[1:] if text.startswith("\ufeff") else text, parse_int=_read_int)


def post_json(url: str, headers: dict[str, str], body: dict, *, timeout: float, backoff: Backoff,
              stop: threading.Event | None = None, secret: str | None = None, gate: RateGate | None = None) -> CallResult:
    """POST body as JSON; retry what can succeed later; never raise for HTTP or network trouble.
    With a gate, every attempt waits for its turn and a 429 pauses every worker sharing the gate."""
    started = time.monotonic()
    result = CallResult(ok=False)
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    for attempt in range(backoff.attempts):
        if gate is not None and not gate.wait(stop):
            result.error = f"{result.error}; stopped before retrying" if result.error else "stopped before sending"
            result.stopped = True
            break
        result.attempts = attempt + 1
        retry_after: float | None = None
        cause = ""
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/json", "Accept": "application/json",
                                                  "User-Agent": "aee-collect/0.1", **headers})
        # `timeout` bounds the whole reply, not each read: a server sending a byte a second is cut
        # at the deadline. Redirects stay on the endpoint's origin: the key goes nowhere else.
        deadline = Deadline(timeout)
        try:
            with guarded_opener(url, deadline).open(request, timeout=timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
                result.status = response.status
            if deadline.fired:  # the cut looks like an early end of the body to the reader
                raise TimeoutError("deadline")
            if len(raw) > MAX_RESPONSE_BYTES:
                result.error = f"response larger than {MAX_RESPONSE_BYTES:,} bytes"
                break
            try:
                result.body = read_reply(raw)
            except _TooLong as exc:  # the same question gets the same reply: rejected once, not retried
                result.error, result.unusable = f"HTTP {result.status}: {exc}", True
                result.text = raw.decode("utf-8", "replace")
                break
            except RecursionError:
                result.error, result.unusable = f"HTTP {result.status}: the reply is nested too deeply to read", True
                result.text = raw.decode("utf-8", "replace")
                break
            except (UnicodeDecodeError, ValueError):  # a proxy's error page, a cut reply: asked again next run
                result.error = f"HTTP {result.status}: the reply is not JSON"
                break
            result.ok = True
            break
        except RedirectRefused as exc:  # every later question would be sent on the same way: stop the run
            result.error, result.fatal = redact(exc.reason, [secret]), True
            break
        except urllib.error.HTTPError as exc:
            result.status = exc.code
            detail = _error_detail(exc, secret)
            result.error = redact(f"HTTP {exc.code}: {detail}", [secret])
            if exc.code in FATAL_STATUSES:
                result.fatal = True
                break
            if exc.code not in RETRY_STATUSES:
                break
            cause = "429" if exc.code == 429 else "5xx" if exc.code >= 500 else str(exc.code)
            retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        except (TimeoutError, socket.timeout) as exc:
            cause, result.error = "timeout", (f"no full reply within {timeout:g} s" if deadline.fired
                                              else f"timed out after {timeout:g} s ({type(exc).__name__})")
        except urllib.error.URLError as exc:
            timed_out = deadline.fired or isinstance(exc.reason, (TimeoutError, socket.timeout))
            cause = "timeout" if timed_out else "network"
            result.error = redact(f"{'timed out' if timed_out else 'network error'}: {exc.reason}", [secret])
        except (ConnectionError, OSError, http.client.HTTPException) as exc:  # reset, refused, cut short
            if deadline.fired:
                cause, result.error = "timeout", f"no full reply within {timeout:g} s"
            else:
                cause, result.error = "network", redact(f"network error: {type(exc).__name__}: {exc}", [secret])
        finally:
            deadline.cancel()  # after the handlers too: an error body is read under the same deadline
        if attempt + 1 >= backoff.attempts:
            break
        result.retries[cause] = result.retries.get(cause, 0) + 1
        wait = backoff.delay(attempt, retry_after)
        if gate is not None and cause == "429":
            gate.pause(wait)  # the provider's limit holds for every worker, not only this one
            continue
        if stop is not None:
            if stop.wait(wait):  # interrupted while waiting: give the question up for this run
                result.error = f"{result.error}; stopped before retrying"
                result.stopped = True
                break
        else:
            time.sleep(wait)
    result.seconds = time.monotonic() - started
    return result


def _error_detail(exc: urllib.error.HTTPError, secret: str | None) -> str:
    """The provider's error message, the key masked before it is cut (masking a cut text would miss
    a key the cut went through)."""
    try:
        raw = exc.read(4_000).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - an unreadable error body leaves the reason phrase
        return redact_clip(str(exc.reason), [secret])
    try:
        parsed = json.loads(raw)
        err = parsed.get("error") if isinstance(parsed, dict) else None
        message = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
        if isinstance(message, str):
            return redact_clip(" ".join(message.split()), [secret])
    except ValueError:
        pass
    return redact_clip(" ".join(raw.split()), [secret]) or str(exc.reason)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
