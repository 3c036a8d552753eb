"""Asking the model one probe question and reading its yes/no, with a SQLite cache of replies.

The request asks for one short reply at temperature 0 and, unless switched off, for the
log-probabilities of the first tokens (`logprobs=True, top_logprobs=10`). When the server gives
them, the answer is the likelier of "yes" and "no" among the first token's alternatives and
`p_yes` = P(yes) / (P(yes) + P(no)); otherwise the reply's first word is parsed. A server that
rejects `logprobs` is asked again without it, and the probe stops asking for it.

Replies are cached by a sha256 over the endpoint, model, settings and messages (never the key), so
a rerun or a resumed run calls only what is missing; failed calls are not cached. A reply cached
by a run without log-probabilities is reused by one that asks for them (it then has no `p_yes`);
point `--cache` elsewhere to ask afresh.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline.fetching.outbound import EndpointLatch, RedirectRefused, guarded_openai, refusal_in
from pipeline.fetching.redact import redact
from pipeline.prompts import load_prompt, render_prompt, split_prompt

PROMPT_NAME = "conflict_probe"
TOP_LOGPROBS = 10
MAX_TOKENS = 3
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class ProbeReply:
    """What one call gave: the yes/no answer (None when unreadable), how it was read, the raw text."""

    answer: str | None  # "yes" | "no" | None
    p_yes: float | None  # from log-probabilities; None when the server gave none
    method: str  # "logprobs" | "word" | "unparsed" | "error"
    raw: str = ""
    error: str = ""


def prompt() -> tuple[str, str, str]:
    """(system, user template, prompt id) of the probe prompt."""
    text, version = load_prompt(PROMPT_NAME)
    system, user = split_prompt(text)
    return system, user, f"{PROMPT_NAME}_{version}"


def messages(question: str, first: str, second: str) -> list[dict[str, str]]:
    system, user, _ = prompt()
    return [{"role": "system", "content": system},
            {"role": "user", "content": render_prompt(user, first=first.strip(), second=second.strip(), question=question.strip())}]


def _norm(token: str) -> str:
    found = _WORD.findall(token.lower())
    return found[0] if found else ""


def read_reply(content: str, logprobs: Any) -> ProbeReply:
    """The answer from a chat completion's content and its `logprobs` field (object or dict)."""
    content = content or ""
    entries = _get(logprobs, "content") or []
    for entry in entries[:MAX_TOKENS]:
        p_yes = p_no = 0.0
        for alt in _get(entry, "top_logprobs") or [entry]:
            word, lp = _norm(str(_get(alt, "token") or "")), _get(alt, "logprob")
            if lp is None or not math.isfinite(float(lp)):
                continue
            if word == "yes":
                p_yes += math.exp(float(lp))
            elif word == "no":
                p_no += math.exp(float(lp))
        if p_yes + p_no > 0:
            share = p_yes / (p_yes + p_no)
            return ProbeReply("yes" if share >= 0.5 else "no", share, "logprobs", content[:200])
        if _norm(str(_get(entry, "token") or "")):
            break  # the first word-bearing token is neither: fall back to the text
    word = _norm(content)
    if word in ("yes", "no"):
        return ProbeReply(word, None, "word", content[:200])
    return ProbeReply(None, None, "unparsed", content[:200])


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


class ProbeCache:
    """SQLite store of replies keyed by request; WAL, one connection per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._db()

    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, payload TEXT NOT NULL, "
                         "created TEXT NOT NULL DEFAULT (datetime('now')))")
            conn.commit()
            self._local.conn = conn
        return conn

    def get(self, key: str) -> ProbeReply | None:
        row = self._db().execute("SELECT payload FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return ProbeReply(**json.loads(row[0]))
        except (ValueError, TypeError):
            return None  # a damaged row is a miss and gets overwritten

    def put(self, key: str, reply: ProbeReply) -> None:
        conn = self._db()
        with conn:
            conn.execute("INSERT OR REPLACE INTO replies (key, payload) VALUES (?, ?)", (key, json.dumps(asdict(reply))))


def request_key(base_url: str | None, model: str, msgs: list[dict[str, str]]) -> str:
    """Cache key of one question. Whether log-probabilities were asked is left out on purpose: a
    server that refuses them mid-run must not make a resumed run ask everything again."""
    blob = json.dumps({"base_url": base_url or "", "model": model, "messages": msgs, "temperature": 0.0,
                       "max_tokens": MAX_TOKENS}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Asker:
    """Sends probe questions to one OpenAI-compatible endpoint (the `openai` client's own retries
    handle 429s, 5xx and timeouts)."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None, *, logprobs: bool = True,
                 timeout: float = 60.0, max_retries: int = 3) -> None:
        import openai

        self.model, self.base_url = model, base_url
        self._secret = api_key
        self.logprobs = logprobs
        self._lock = threading.Lock()
        # a refused redirect is a configuration error: remembered, and no later call is sent; until
        # one call has come back, calls go one at a time, so only one is refused
        self._endpoint = EndpointLatch()
        self.client = guarded_openai(openai.OpenAI, api_key=api_key or "not-needed", base_url=base_url, timeout=timeout,
                                     max_retries=max_retries)

    def ask(self, msgs: list[dict[str, str]]) -> ProbeReply:
        """One call; never raises (a failure comes back as method "error"). After a refused
        redirect (`self.refused`) nothing more is sent."""
        with self._endpoint.turn():
            if self.refused is not None:
                return ProbeReply(None, None, "error", error=f"not sent: {self.refused}")
            reply = self._ask(msgs)
            if reply.method != "error":
                self._endpoint.answered()
            return reply

    @property
    def refused(self) -> str | None:
        """Why the endpoint was refused (a redirect elsewhere), or None."""
        return self._endpoint.refused

    def _refuse(self, reason: str) -> ProbeReply:
        self._endpoint.refuse(self._redact(reason)[:500])
        return ProbeReply(None, None, "error", error=self._redact(reason)[:500])

    def _ask(self, msgs: list[dict[str, str]]) -> ProbeReply:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": msgs, "temperature": 0.0, "max_tokens": MAX_TOKENS}
        for _ in range(2):
            use_logprobs = self.logprobs
            if use_logprobs:
                kwargs.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
            else:
                kwargs.pop("logprobs", None)
                kwargs.pop("top_logprobs", None)
            try:
                response = self.client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if use_logprobs and "logprob" in str(exc).lower():
                    with self._lock:
                        self.logprobs = False  # this server does not give them: stop asking
                    continue
                return ProbeReply(None, None, "error", error=self._redact(f"HTTP 400: {exc}")[:300])
            except RedirectRefused as exc:
                return self._refuse(exc.reason)
            except openai.OpenAIError as exc:
                refused = refusal_in(exc)
                if refused:
                    return self._refuse(refused)
                return ProbeReply(None, None, "error", error=self._redact(f"{type(exc).__name__}: {exc}")[:500])
            choices = getattr(response, "choices", None) or []
            if not choices:
                return ProbeReply(None, None, "error", error="server returned no choices")
            choice = choices[0]
            reply = read_reply(getattr(choice.message, "content", "") or "", getattr(choice, "logprobs", None))
            return ProbeReply(reply.answer, reply.p_yes, reply.method, self._redact(reply.raw))
        return ProbeReply(None, None, "error", error="the server rejected the request with and without logprobs")

    def _redact(self, text: str) -> str:
        return redact(text, [self._secret])

    def endpoint(self) -> str:
        """The base URL for reports, with anything key-like taken out."""
        return self._redact(self.base_url or "https://api.openai.com/v1")
