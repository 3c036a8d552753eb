"""One chat completion at a time against an OpenAI-compatible server, with the retry policy of the
OpenAI judge, for judges that need more of the reply than its text (`pipeline.judges.minicheck`
reads token log-probabilities).

Policy, as in `openai_judge`: retry on 408, 409, 429, 5xx, timeouts and connection errors with
exponential backoff and jitter, honouring `Retry-After` / `retry-after-ms` up to a cap; never retry
other 4xx; a semaphore bounds concurrent requests across threads; the API key never reaches a
reply, a log line or an error text (`llm_config.redact`). A request parameter the server refuses
with a 400 that names it (`logprobs` on a server without them) is dropped for the rest of the run
and the request sent again, which does not count as an attempt.

`ChatCaller.complete` never raises: a failed call comes back as a `ChatReply` with `error` set.
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from pipeline.judges.base import JudgeError
from pipeline.judges.llm_config import redact

__all__ = ["ChatCaller", "ChatReply", "TokenChoice"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenChoice:
    """One generated token, its log-probability, and the most likely alternatives the server listed."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass
class ChatReply:
    """The model's text and token log-probabilities (empty when the server gave none), or why the
    call failed."""

    text: str = ""
    tokens: tuple[TokenChoice, ...] = ()
    error: str | None = None


def _tokens(choice: Any) -> tuple[TokenChoice, ...]:
    """Token log-probabilities of a chat completion choice, read defensively (servers differ)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None) or []
    out = []
    for item in content[:16]:
        token, logprob = getattr(item, "token", None), getattr(item, "logprob", None)
        if not isinstance(token, str) or not isinstance(logprob, (int, float)):
            continue
        top = tuple((t.token, float(t.logprob)) for t in (getattr(item, "top_logprobs", None) or [])[:20]
                    if isinstance(getattr(t, "token", None), str) and isinstance(getattr(t, "logprob", None), (int, float)))
        out.append(TokenChoice(token, float(logprob), top))
    return tuple(out)


class ChatCaller:
    """Sends chat completions with retries; counts requests, retries and failures in `stats`."""

    def __init__(self, *, base_url: str | None, api_key: str | None, model: str, timeout: float = 60,
                 max_retries: int = 4, concurrency: int = 2, backoff_base: float = 1.0, backoff_max: float = 30.0,
                 max_retry_after: float = 60.0, client: Any = None) -> None:
        self.base_url = base_url
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self._secret = api_key
        self._client = client
        self._client_lock = threading.Lock()
        self._semaphore = threading.BoundedSemaphore(max(1, int(concurrency)))
        self._stats_lock = threading.Lock()
        self.dropped: set[str] = set()  # request parameters the server refused
        self.stats: dict[str, int] = {"requests": 0, "retries": 0, "failed_calls": 0}

    def __repr__(self) -> str:  # never shows the key
        return f"ChatCaller(model={self.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:  # pragma: no cover - openai is a declared dependency
                    raise JudgeError("the `openai` package is not installed") from exc
                self._client = openai.OpenAI(api_key=self._secret or "not-needed", base_url=self.base_url,
                                             timeout=self.timeout, max_retries=0)
            return self._client

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

    def complete(self, messages: list[dict[str, str]], **params: Any) -> ChatReply:
        """One chat completion of `self.model` (temperature 0 unless `params` say otherwise)."""
        import openai

        client = self._get_client()
        last_error, attempt = "no attempt made", 0
        while attempt <= self.max_retries:
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0.0, **params}
            for name in self.dropped:
                kwargs.pop(name, None)
            retry_after: float | None = None
            try:
                self._bump(requests=1)
                with self._semaphore:
                    response = client.chat.completions.create(timeout=self.timeout, **kwargs)
                choices = getattr(response, "choices", None) or []
                if not choices:
                    return ChatReply(error="server returned no choices")
                text = getattr(choices[0].message, "content", None) or ""
                return ChatReply(text=redact(text, [self._secret]), tokens=_tokens(choices[0]))
            except openai.APITimeoutError:
                last_error, retryable = f"request timed out after {self.timeout:g}s", True
            except openai.APIConnectionError as exc:
                last_error, retryable = f"connection error ({type(exc).__name__})", True
            except openai.APIStatusError as exc:
                status = int(getattr(exc, "status_code", 0) or 0)
                message = redact(str(getattr(exc, "message", "") or exc), [self._secret])[:300]
                last_error = f"HTTP {status}: {message}"
                refused = [name for name in params if name not in self.dropped and name in message.lower()]
                if status == 400 and refused:
                    log.warning("server refused %s; continuing without", ", ".join(refused))
                    self.dropped.update(refused)
                    continue  # does not count as an attempt
                retryable = status in (408, 409, 429) or status >= 500
                retry_after = self._retry_after(exc)
            except Exception as exc:  # noqa: BLE001 - malformed responses and the like
                last_error, retryable = f"{type(exc).__name__}: {redact(str(exc), [self._secret])[:300]}", False
            if not retryable or attempt == self.max_retries:
                break
            delay = self._delay(attempt, retry_after)
            log.info("call failed (%s); retry %d/%d in %.2fs", last_error, attempt + 1, self.max_retries, delay)
            self._bump(retries=1)
            time.sleep(delay)
            attempt += 1
        self._bump(failed_calls=1)
        reason = f"{last_error} (gave up after {attempt + 1} attempt{'s' if attempt else ''})"
        log.warning("call failed: %s", reason)
        return ChatReply(error=redact(reason, [self._secret]))
