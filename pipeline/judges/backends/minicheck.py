"""Support by Bespoke-MiniCheck behind an OpenAI-compatible server: `minicheck[:<served model name>]`.

Bespoke-MiniCheck-7B is a fact-checking model: given a grounding document and one sentence, it
answers Yes (the document supports the sentence) or No. Ollama serves it as `bespoke-minicheck`;
any server with an OpenAI-style `/v1/chat/completions` (vLLM, llama.cpp) works the same way.

- Prompt: the documented shape, `Document: ...` then `Claim: ...` as the only user message
  (`pipeline/prompts/minicheck_v1.txt`); no instructions of ours, as the model was tuned on exactly
  this input. Lines of the source that open with `Claim:` or `Document:` are defused (`Claim -`) so
  a source cannot pose a claim of its own.
- Windows: a source longer than `window_chars` is cut into overlapping windows of whole sentences
  (`pipeline.judges.backends.windows`), up to `max_windows` per statement (those sharing the most words with
  it), one call each; the best window decides and is the evidence. A local server's context is
  often far smaller than the model's 32K tokens (Ollama's default context is a few thousand
  tokens), which is why the default window is 6,000 characters.
- Score: when the server returns token log-probabilities, P(Yes) / (P(Yes) + P(No)) at the answer
  token; otherwise Yes = 1 and No = 0. Label by `SupportThresholds` (full from 0.5, partial from 0.2;
  without log-probabilities only full or none).
- Failures: a call that fails after the retries gives label None and `error="call"` (not cached,
  retried next run); a reply that is neither Yes nor No gives `error="parse"` with the reply in
  `raw`. One window answering Yes with a score at or above the full threshold settles the pair even
  when another window failed, since a higher score there could not change the label.
- Endpoint: `AEE_MINICHECK_BASE_URL` (and `AEE_MINICHECK_API_KEY`, `AEE_MINICHECK_MODEL`), else the
  OpenAI judge's settings (`llm_config`) when they point at a server other than api.openai.com,
  which does not serve this model. Retries and backoff: `llm_client.ChatCaller`.
- Relevance, stance and confidence come from the offline judge's rules (`support_only`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from pipeline.judges.backends.llm_client import ChatCaller, ChatReply, TokenChoice
from pipeline.judges.backends.llm_config import resolve_endpoint
from pipeline.judges.backends.support_only import SupportOnlyJudge, SupportThresholds, statement_text
from pipeline.judges.backends.windows import char_windows, rank_windows
from pipeline.judges.base import JudgeError, unchecked_verdicts
from pipeline.prompts import load_prompt, render_prompt, split_prompt
from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["MiniCheckJudge", "read_reply", "DEFAULT_MODEL"]

DEFAULT_MODEL = "bespoke-minicheck"
PROMPT_NAME = "minicheck"
MAX_EVIDENCE_CHARS = 3000
_ANSWER_RE = re.compile(r"[\s*_`\"'(\[]*(yes|no)\b", re.IGNORECASE)
_FIELD_LINE_RE = re.compile(r"(?im)^([ \t]*)(claim|document)([ \t]*):")


def _word(token: str) -> str:
    return re.sub(r"[^a-z]", "", token.lower())


def _p_yes(tokens: Sequence[TokenChoice]) -> float | None:
    """P(Yes) / (P(Yes) + P(No)) at the first token that is a word, from the token and the
    alternatives the server listed; None when there is no such token or it is neither answer."""
    for choice in tokens:
        word = _word(choice.token)
        if not word:
            continue  # white space or markup before the answer
        if word not in ("yes", "no"):
            return None
        alternatives = dict(choice.top)
        alternatives.setdefault(choice.token, choice.logprob)
        p_yes = sum(math.exp(lp) for t, lp in alternatives.items() if _word(t) == "yes")
        p_no = sum(math.exp(lp) for t, lp in alternatives.items() if _word(t) == "no")
        return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None
    return None


def read_reply(reply: ChatReply) -> tuple[float, str] | None:
    """(probability of support, "logprobs" or "text") for a reply that answers Yes or No; None for
    anything else."""
    match = _ANSWER_RE.match(reply.text)
    if not match:
        return None
    p = _p_yes(reply.tokens)
    if p is None:
        return (1.0 if match.group(1).lower() == "yes" else 0.0), "text"
    return p, "logprobs"


class MiniCheckJudge(SupportOnlyJudge):
    """Support from Bespoke-MiniCheck on an OpenAI-compatible server (see the module doc).

    Config: `model` (the server's name for it, default `bespoke-minicheck`), `base_url`, `api_key`,
    `timeout=120`, `max_retries=4`, `concurrency=2`, `window_chars=6000`, `window_overlap=500`,
    `max_windows=4`, `max_source_chars=100_000`, `max_statement_chars=1000`, `logprobs=True`,
    `full_threshold=0.5`, `partial_threshold=0.2`, `backoff_base`, `backoff_max`, `max_retry_after`."""

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = 120.0, max_retries: int = 4, concurrency: int = 2, window_chars: int = 6000,
                 window_overlap: int = 500, max_windows: int = 4, max_source_chars: int = 100_000,
                 max_statement_chars: int = 1000, logprobs: bool = True, full_threshold: float = 0.5,
                 partial_threshold: float = 0.2, backoff_base: float = 1.0, backoff_max: float = 30.0,
                 max_retry_after: float = 60.0, secrets_path: Path | str | None = None, client: Any = None) -> None:
        self.model = model or os.environ.get("AEE_MINICHECK_MODEL") or DEFAULT_MODEL
        own_url = base_url or os.environ.get("AEE_MINICHECK_BASE_URL")
        url: str | None
        if own_url:
            # the OpenAI judge's key is not sent to another server
            url, key = own_url, api_key or os.environ.get("AEE_MINICHECK_API_KEY")
        else:
            endpoint = resolve_endpoint(api_key=api_key, model=self.model, secrets_path=secrets_path)
            if client is None and (endpoint.official or endpoint.api_version):
                raise JudgeError("minicheck needs the server that runs Bespoke-MiniCheck, e.g. Ollama: "
                                 "set AEE_MINICHECK_BASE_URL=http://localhost:11434/v1 (see docs/judges/minicheck.md)")
            url, key = endpoint.base_url, endpoint.api_key
        self.base_url = url
        self.window_chars = max(500, int(window_chars))
        self.window_overlap = max(0, min(int(window_overlap), self.window_chars // 2))
        self.max_windows = max(1, int(max_windows))
        self.max_source_chars = max(1000, int(max_source_chars))
        self.max_statement_chars = max(50, int(max_statement_chars))
        self.logprobs = bool(logprobs)
        self.concurrency = max(1, int(concurrency))
        self.thresholds = SupportThresholds(float(full_threshold), float(partial_threshold))
        self.caller = ChatCaller(base_url=url, api_key=key, model=self.model, timeout=timeout, max_retries=max_retries,
                                 concurrency=self.concurrency, backoff_base=backoff_base, backoff_max=backoff_max,
                                 max_retry_after=max_retry_after, client=client)
        text, version = load_prompt(PROMPT_NAME)
        self._system, self._template = split_prompt(text)
        self.prompt_version = f"{PROMPT_NAME}_{version}"
        self.name = f"minicheck:{self.model}"
        super().__init__()
        self.cache_fingerprint = hashlib.sha256(json.dumps({
            "prompt": text, "server": url, "window": [self.window_chars, self.window_overlap, self.max_windows],
            "bounds": [self.max_source_chars, self.max_statement_chars], "logprobs": self.logprobs,
            "thresholds": [self.thresholds.full, self.thresholds.partial], "rules": self.rules_version,
        }, sort_keys=True).encode()).hexdigest()[:16]

    def __repr__(self) -> str:  # never shows the key
        return f"MiniCheckJudge(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def stats(self) -> dict[str, int]:
        return self.caller.stats

    def support_inputs(self, statements: Sequence[Statement]) -> list[str]:
        """Each statement as it is sent: markers removed, spaces collapsed, cut to `max_statement_chars`."""
        return [" ".join(statement_text(st).split())[: self.max_statement_chars] for st in statements]

    def source_read(self, text: str) -> str:
        return (text or "")[: self.max_source_chars]

    def messages(self, document: str, claim: str) -> list[dict[str, str]]:
        """The chat messages for one (window, statement) check."""
        content = render_prompt(self._template, document=_FIELD_LINE_RE.sub(r"\1\2\3 -", document), claim=claim)
        return ([{"role": "system", "content": self._system}] if self._system else []) + [{"role": "user", "content": content}]

    def _ask(self, document: str, claim: str) -> ChatReply:
        params: dict[str, Any] = {"max_tokens": 5}
        if self.logprobs:
            params.update(logprobs=True, top_logprobs=5)
        return self.caller.complete(self.messages(document, claim), **params)

    # ------------------------------------------------------------------ Judge protocol
    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        return self.support_many(answer, statements, [source])

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """One call per (statement, chosen window), run `concurrency` at a time; verdicts come
        grouped by source, in the order of `sources`."""
        claims = self.support_inputs(statements)
        plans = []
        tasks: dict[tuple[str, str], ChatReply | None] = {}
        for source in sources:
            text = self.source_read(source.text)
            spans = char_windows(text, self.window_chars, self.window_overlap) if text.strip() else []
            texts = [text[s:e] for s, e in spans]
            chosen = [rank_windows(claim, texts, self.max_windows) if claim and spans else [] for claim in claims]
            for claim, js in zip(claims, chosen):
                tasks.update(((texts[j], claim), None) for j in js)
            plans.append((source, text, spans, chosen))
        keys = list(tasks)
        if len(keys) > 1 and self.concurrency > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(keys))) as pool:
                tasks.update(zip(keys, pool.map(lambda k: self._ask(*k), keys)))
        else:
            tasks.update((k, self._ask(*k)) for k in keys)
        out = []
        for source, text, spans, chosen in plans:
            for st, claim, js in zip(statements, claims, chosen):
                replies = [(j, tasks[text[spans[j][0] : spans[j][1]], claim]) for j in js]
                out.append(self._verdict(answer, st, source, text, spans, replies))
        return out

    def _verdict(self, answer: Answer, statement: Statement, source: Source, text: str,
                 spans: list[tuple[int, int]], replies: list[tuple[int, ChatReply | None]]) -> Verdict:
        def verdict(label: str | None, raw: str, **extra: Any) -> Verdict:
            return Verdict(answer.answer_id, "support", label, self.name, self.prompt_version, raw=raw,
                           statement_index=statement.index, source_index=source.index, **extra)

        if not spans:  # a source without text: nothing read, so not checked (never "none")
            return unchecked_verdicts(self, answer, [statement], source)[0]
        if not replies:
            return verdict(self.thresholds.label(0.0), json.dumps({"model": self.model, "note": "statement has no words"}),
                           score=0.0)
        read: list[tuple[float, int, str, str]] = []
        failed: list[str] = []
        unreadable: list[str] = []
        for j, reply in replies:
            assert reply is not None  # every planned task was asked
            if reply.error is not None:
                failed.append(reply.error)
                continue
            got = read_reply(reply)
            if got is None:
                unreadable.append(reply.text)
            else:
                read.append((got[0], j, got[1], reply.text))
        best = max(read, key=lambda r: (r[0], -r[1])) if read else None
        if best is not None and (best[0] >= self.thresholds.full or not (failed or unreadable)):
            p, j, how, reply_text = best
            s, e = spans[j]
            raw: dict[str, Any] = {"model": self.model, "reply": reply_text[:200], "p_support": round(p, 4), "read_from": how,
                                   "window": [s, e], "window_number": j + 1, "windows_in_source": len(spans),
                                   "windows_scored": len(replies),
                                   "thresholds": {"full": self.thresholds.full, "partial": self.thresholds.partial}}
            if len(replies) < len(spans):
                raw["windows_chosen_by"] = "shared words with the statement"
            if failed or unreadable:
                raw["windows_without_answer"] = len(failed) + len(unreadable)
            return verdict(self.thresholds.label(p), json.dumps(raw, sort_keys=True, ensure_ascii=False), score=p,
                           evidence=text[s:e][:MAX_EVIDENCE_CHARS])
        if failed:
            return verdict(None, failed[0], error="call")
        return verdict(None, "reply is neither Yes nor No\n---- model output ----\n" + unreadable[0][:2000], error="parse")
