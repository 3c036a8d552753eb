"""One chat completion at a time against an OpenAI-compatible server, with the retry policy of the
OpenAI judge, for judges that need more of the reply than its text (`pipeline.judges.backends.minicheck`
reads token log-probabilities).

Retries follow the OpenAI judge's policy, kept in one place (`llm_retry`). A request parameter the
server refuses with a 400 that names it (`logprobs` on a server without them) is dropped for the
rest of the run and the request sent again, which does not count as an attempt.

`ChatCaller.complete` never raises: a failed call comes back as a `ChatReply` with `error` set.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from pipeline.fetching.outbound import guarded_openai
from pipeline.fetching.redact import redact
from pipeline.judges.backends.llm_retry import RetryingChat
from pipeline.judges.base import JudgeError

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


class ChatCaller(RetryingChat):
    """Sends chat completions with retries (`llm_retry`); counts requests, retries and failures in `stats`."""

    retry_log = log
    call_name = "call"

    def __init__(self, *, base_url: str | None, api_key: str | None, model: str, timeout: float = 60,
                 max_retries: int = 4, concurrency: int = 2, backoff_base: float = 1.0, backoff_max: float = 30.0,
                 max_retry_after: float = 60.0, client: Any = None) -> None:
        self.base_url = base_url
        self.model = model
        self._init_retries(timeout=timeout, max_retries=max_retries, concurrency=concurrency, backoff_base=backoff_base,
                           backoff_max=backoff_max, max_retry_after=max_retry_after)
        self._secret = api_key
        self._client = client
        self._client_lock = threading.Lock()
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
                self._client = guarded_openai(openai.OpenAI, api_key=self._secret or "not-needed",
                                              base_url=self.base_url, timeout=self.timeout, max_retries=0)
            return self._client

    def complete(self, messages: list[dict[str, str]], **params: Any) -> ChatReply:
        """One chat completion of `self.model` (temperature 0 unless `params` say otherwise)."""

        def build_kwargs() -> dict[str, Any]:
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0.0, **params}
            for name in self.dropped:
                kwargs.pop(name, None)
            return kwargs

        def read(response: Any) -> ChatReply:
            choices = getattr(response, "choices", None) or []
            if not choices:
                return ChatReply(error="server returned no choices")
            text = getattr(choices[0].message, "content", None) or ""
            return ChatReply(text=redact(text, [self._secret]), tokens=_tokens(choices[0]))

        def drop_refused(message: str) -> bool:
            refused = [name for name in params if name not in self.dropped and name in message.lower()]
            if refused:
                log.warning("server refused %s; continuing without", ", ".join(refused))
                self.dropped.update(refused)
            return bool(refused)

        return self._complete_with_retries(self._get_client(), build_kwargs, read, lambda reason: ChatReply(error=reason),
                                           drop_refused)
