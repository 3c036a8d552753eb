"""LLM judge over any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).

Design in short:
- Plain `chat.completions.create`; `response_format={"type": "json_object"}` only when the
  `json_mode` flag says the server supports it (default: on for api.openai.com, off elsewhere;
  see `llm_config` for where the endpoint, key and model come from). Replies are always parsed
  leniently and validated (`llm_output`); one corrective follow-up is sent when a reply is still
  unusable, after which a parse failure becomes a verdict with label None.
- Support is batched: all statements of an answer against one source in one call, and short
  sources share a call. `llm_requests` plans and renders the calls; `passages` cuts long sources
  and picks the passages that best match the statements (BM25).
- Support by several sources taken together (`support_set`, needed by NLI citation recall and
  precision) is one call per set of cited sources, with the `support_set` prompt.
- Calls retry with exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
  honouring Retry-After; a semaphore bounds concurrent requests across threads (`llm_retry`).
- Documents (and the answer for confidence) are fenced as untrusted data (`fencing`).
- The API key never reaches a verdict, a log line, an exception message or a returned dict
  (`llm_config.redact`).
- `cost.estimate_run` estimates calls, tokens and cost of a run from the same planned requests.

This module holds the backend itself: the client, concurrency, and turning replies into verdicts;
the retry loop it shares with `llm_client` is in `llm_retry`.

Verdict conventions: `judge` = "openai:<model>", `prompt_version` = the prompt id that produced it
("support_v1"). A failed call gives label None, `error="call"` and the reason in raw; an unparsable
reply gives label None, `error="parse"` and the reason followed by the model's text in raw.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from pipeline.fetching.outbound import guarded_openai
from pipeline.fetching.redact import redact
from pipeline.judges.backends.fencing import FENCE_ID
from pipeline.judges.backends.llm_config import resolve_endpoint
from pipeline.judges.backends.llm_output import (
    Checked,
    check_confidence,
    check_labels,
    check_pack_labels,
    pack_key,
    parse_and_check,
)
from pipeline.judges.backends.llm_requests import (
    PROMPT_FILES,
    JudgeRequest,
    RequestSettings,
    plan_confidence,
    plan_labels,
    plan_support,
    plan_support_many,
    plan_support_set,
    prompt_parts,
)
from pipeline.judges.backends.llm_retry import RetryingChat
from pipeline.judges.backends.passages import Passage, locate_quote
from pipeline.judges.backends.source_stance_llm import plan_source_stance
from pipeline.judges.base import BaseJudge, JudgeError, text_digest, unchecked_verdicts
from pipeline.prompts import load_prompt
from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["OpenAIJudge", "PairwiseReferenceJudge"]

log = logging.getLogger(__name__)



@dataclass
class _Reply:
    """One chat completion: the model's text, or why the call failed."""

    text: str = ""
    error: str | None = None


@dataclass
class _Outcome:
    """A request's reply (and follow-up) after checking: labels found, and raw text per label."""

    checked: Checked
    raw_by_pos: dict[int, str]
    failure_raw: str  # raw for positions without a usable label
    failure: str = ""  # Verdict.error for those positions: "call" (no reply) or "parse" (reply unusable)


class OpenAIJudge(RetryingChat, BaseJudge):
    """Judge backed by an OpenAI-compatible chat completions endpoint.

    Configuration falls back, in order, to the constructor argument, `AEE_OPENAI_*`, `OPENAI_*`
    environment variables, and the `[openai]` table of `.streamlit/secrets.toml`
    (keys `base_url`, `api_key`, `model`, `json_mode`, `api_version`); see `llm_config`.
    """

    mode = "batched"
    retry_log = log
    call_name = "judge call"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 60,
        max_retries: int = 4,
        concurrency: int = 4,
        max_passage_chars: int = 6000,
        seed: int | None = None,
        temperature: float = 0.0,
        client: Any = None,
        *,
        json_mode: bool | None = None,
        api_version: str | None = None,
        passage_chars: int = 1000,
        max_statements_per_call: int = 20,
        max_sources_per_call: int = 8,
        max_pack_chars: int = 8000,
        max_output_tokens: int | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        secrets_path: Path | str | None = None,
    ) -> None:
        endpoint = resolve_endpoint(base_url=base_url, api_key=api_key, model=model, api_version=api_version,
                                    json_mode=json_mode, secrets_path=secrets_path)
        self.base_url: str | None = endpoint.base_url
        self.model: str = endpoint.model
        self.api_version: str | None = endpoint.api_version
        self.json_mode: bool = endpoint.json_mode
        if client is None and not endpoint.api_key and (endpoint.official or self.api_version):
            raise JudgeError(
                "OpenAI judge has no API key: set AEE_OPENAI_API_KEY (or OPENAI_API_KEY), or "
                "`api_key` under [openai] in .streamlit/secrets.toml; for a local server (Ollama, "
                "vLLM, llama.cpp) set AEE_OPENAI_BASE_URL instead"
            )
        self._secret: str | None = endpoint.api_key
        if client is not None and self._secret is None:
            injected = getattr(client, "api_key", None)
            self._secret = injected if isinstance(injected, str) and injected else None
        self._init_retries(timeout=timeout, max_retries=max_retries, concurrency=concurrency, backoff_base=backoff_base,
                           backoff_max=backoff_max, max_retry_after=max_retry_after)
        self.concurrency = max(1, int(concurrency))
        self.seed = seed
        self.temperature = float(temperature)
        self.max_output_tokens = max_output_tokens
        self.settings = RequestSettings(
            max_passage_chars=int(max_passage_chars),
            passage_chars=int(passage_chars),
            max_statements_per_call=int(max_statements_per_call),
            pairwise=self.mode == "pairwise",
            max_sources_per_call=max(1, int(max_sources_per_call)),
            max_pack_chars=int(max_pack_chars),
        )
        self._client = client
        self._client_lock = threading.Lock()
        self.stats: dict[str, int] = {
            "requests": 0, "retries": 0, "failed_calls": 0, "parse_failures": 0,
            "corrective_retries": 0, "input_tokens": 0, "output_tokens": 0,
        }
        versions = {kind: prompt_parts(kind)[2] for kind in PROMPT_FILES}
        suffixes = {pid.rsplit("_", 1)[1] for pid in versions.values()}
        self.prompt_ids = versions
        self.prompt_version = suffixes.pop() if len(suffixes) == 1 else "+".join(versions[k] for k in PROMPT_FILES)
        prefix = "openai-pairwise" if self.mode == "pairwise" else "openai"
        self.name = f"{prefix}:{self.model}"
        self.cache_fingerprint = self._fingerprint()

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, json_mode={self.json_mode})"

    def _fingerprint(self) -> str:
        parts = {
            "mode": self.mode,
            "prompts": {k: hashlib.sha256(load_prompt(k)[0].encode()).hexdigest() for k in PROMPT_FILES},
            "fence": FENCE_ID,
            "settings": [self.settings.max_passage_chars, self.settings.passage_chars, self.settings.max_statements_per_call,
                         self.settings.max_sources_per_call, self.settings.max_pack_chars],
            "temperature": self.temperature,
            "seed": self.seed,
            "max_output_tokens": self.max_output_tokens,
            "json_mode": self.json_mode,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ client and calls
    def _get_client(self) -> Any:
        if self._client is not None:
            return self._client
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:  # pragma: no cover - openai is a declared dependency
                    raise JudgeError("the `openai` package is not installed") from exc
                key = self._secret or "not-needed"
                if self.api_version:
                    if not self.base_url:
                        raise JudgeError("an Azure OpenAI judge (api_version set) needs its endpoint: set AEE_OPENAI_BASE_URL "
                                         "or `base_url` under [openai] in .streamlit/secrets.toml")
                    self._client = guarded_openai(
                        openai.AzureOpenAI, api_key=key, azure_endpoint=self.base_url, api_version=self.api_version,
                        timeout=self.timeout, max_retries=0,
                    )
                else:
                    self._client = guarded_openai(openai.OpenAI, api_key=key, base_url=self.base_url,
                                                  timeout=self.timeout, max_retries=0)
            return self._client

    def _redact(self, text: str) -> str:
        return redact(text, [self._secret])

    def _call(self, messages: list[dict[str, str]]) -> _Reply:
        """One chat completion with retries (`llm_retry`). Never raises; failures come back as `_Reply.error`."""

        def build_kwargs() -> dict[str, Any]:
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
            if self.seed is not None:
                kwargs["seed"] = self.seed
            if self.max_output_tokens:
                kwargs["max_tokens"] = self.max_output_tokens
            if self.json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            return kwargs

        def read(response: Any) -> _Reply:
            choices = getattr(response, "choices", None) or []
            if not choices:
                return _Reply(error="server returned no choices")
            text = getattr(choices[0].message, "content", None) or ""
            usage = getattr(response, "usage", None)
            if usage is not None:
                self._bump(
                    input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                )
            return _Reply(text=self._redact(text))

        def drop_refused(message: str) -> bool:
            if not (self.json_mode and "response_format" in message.lower()):
                return False
            log.warning("server rejected response_format; continuing without JSON mode")
            self.json_mode = False
            return True

        return self._complete_with_retries(self._get_client(), build_kwargs, read, lambda reason: _Reply(error=reason),
                                           drop_refused)

    def _ask(self, request: JudgeRequest, check: Callable[[Any], Checked], ids: Sequence[int],
             expected: int | None = None) -> _Outcome:
        """Call, parse, validate; one corrective follow-up if the reply is unusable or incomplete.
        `expected`: how many labels a complete reply holds (default: one per id)."""
        reply = self._call(request.messages)
        if reply.error is not None:
            return _Outcome(Checked(), {}, reply.error, "call")
        first = parse_and_check(reply.text, check)
        raw_by_pos = {i: reply.text for i in first.items}
        if not first.problems:
            return _Outcome(first, raw_by_pos, "")
        self._bump(corrective_retries=1)
        follow_up = request.messages + [
            {"role": "assistant", "content": reply.text[:4000]},
            {
                "role": "user",
                "content": "Your previous reply could not be used: "
                + "; ".join(first.problems)[:500]
                + ". Reply again with only the JSON object in the requested shape, covering every id "
                + ", ".join(str(i) for i in ids)
                + (f" for every source S1 to S{len(request.pack)}" if request.pack else "")
                + ", with no other text.",
            },
        ]
        second_reply = self._call(follow_up)
        merged = Checked(dict(first.items), [])
        texts = [reply.text]
        if second_reply.error is None:
            texts.append(second_reply.text)
            second = parse_and_check(second_reply.text, check)
            for pos, item in second.items.items():
                merged.items[pos] = item
                raw_by_pos[pos] = second_reply.text
            merged.problems = second.problems
        else:
            merged.problems = first.problems + [f"follow-up call failed: {second_reply.error}"]
        failure = ""
        if len(merged.items) < (expected if expected is not None else len(ids)):
            self._bump(parse_failures=1)
            failure = (
                "; ".join(merged.problems)[:500] + "\n---- model output ----\n"
                + "\n---- reply to the correction ----\n".join(texts)
            )
        return _Outcome(merged, raw_by_pos, failure, "parse" if failure else "")

    def _verdict(self, answer: Answer, kind: str, prompt_id: str, label: str | None, raw: str, **extra: Any) -> Verdict:
        return Verdict(
            answer_id=answer.answer_id, kind=kind, label=label, judge=self.name,  # type: ignore[arg-type]
            prompt_version=prompt_id, raw=self._redact(raw), **extra,
        )

    def _no_text_verdicts(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        """Support verdicts for a source without text: nothing to judge, so `unknown` with the reason
        (not a failed call: there is nothing to retry until the source has text)."""
        prompt_id = prompt_parts("support")[2]
        return [replace(v, prompt_version=prompt_id) for v in unchecked_verdicts(self, answer, statements, source)]

    # ------------------------------------------------------------------ key material
    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        """A reply depends on the messages sent (the model and its settings are in the cache
        fingerprint), and a verdict on the reply and on the text its quote is looked up in. So the
        material is the planned requests themselves: for support, the requests that hold this source
        (a short source shares a request with the others of its pack, which then matter too) and
        its text; for source stance the same; for the statement-level methods their requests."""
        if method in ("relevance", "stance"):
            return [{"requests": [r.messages for r in plan_labels(method, self.settings, answer, statements)]}]
        if method == "confidence":
            return [{"request": plan_confidence(self.settings, answer).messages, "text": text_digest(answer.text)}]
        if method == "support":
            with_text = [s for s in sources if (s.text or "").strip()]
            plan = plan_support_many(self.settings, answer, statements, with_text) if statements else []
            out = []
            for source in sources:
                covering = [[r.messages, next(k for k, (s, _) in enumerate(r.pack) if s is source) if r.pack else 0]
                            for r in plan if r.source is source or any(s is source for s, _ in r.pack)]
                out.append({"requests": covering, "text": text_digest(source.text), "statements": len(statements)})
            return out
        if method == "source_stance":
            plan = plan_source_stance(self.settings, answer, sources)
            return [{"requests": [[r.messages, r.positions.index(k)] for r in plan if k in r.positions],
                     "text": text_digest(source.text)} for k, source in enumerate(sources)]
        if method == "support_set":
            plan = plan_support_set(self.settings, answer, statements, sources) if statements else []
            return [{"requests": [r.messages for r in plan], "texts": [text_digest(s.text) for s in sources],
                     "statements": len(statements)}]
        return super().cache_material(method, answer, statements, sources)

    # ------------------------------------------------------------------ Judge protocol
    def _label_kind(self, kind: str, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        out: list[Verdict] = []
        for request in plan_labels(kind, self.settings, answer, statements):
            ids = [p + 1 for p in request.positions]
            outcome = self._ask(request, partial(check_labels, kind, ids=ids), ids)
            for p in request.positions:
                item = outcome.checked.items.get(p + 1)
                st = statements[p]
                if item is None:
                    out.append(self._verdict(answer, kind, request.prompt_id, None, outcome.failure_raw, statement_index=st.index,
                                             error=outcome.failure))
                else:
                    out.append(self._verdict(answer, kind, request.prompt_id, item["label"], outcome.raw_by_pos[p + 1], statement_index=st.index))
        return out

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One call for all statements (core -> "relevant", filler -> "filler")."""
        return self._label_kind("relevance", answer, statements)

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One call for all given statements: agree / disagree / neutral towards the query's side."""
        return self._label_kind("stance", answer, statements)

    def confidence(self, answer: Answer) -> Verdict:
        """One call for the answer: label "1".."5"; evidence = a cue phrase found in the answer."""
        request = plan_confidence(self.settings, answer)
        outcome = self._ask(request, check_confidence, [0])
        item = outcome.checked.items.get(0)
        if item is None:
            return self._verdict(answer, "confidence", request.prompt_id, None, outcome.failure_raw, error=outcome.failure)
        evidence = locate_quote(str(item.get("cue", "")), answer.text)
        return self._verdict(answer, "confidence", request.prompt_id, item["label"], outcome.raw_by_pos[0], evidence=evidence)

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        """All statements against one source, in one call (more only beyond
        `max_statements_per_call`). evidence = a quote found in the source, else the passage the
        model named, else ""."""
        if not statements:
            return []
        if not (source.text or "").strip():
            return self._no_text_verdicts(answer, statements, source)
        out: list[Verdict] = []
        for request in plan_support(self.settings, answer, statements, source):
            out.extend(self._run_support(request, answer, statements))
        return out

    def _run_support(self, request: JudgeRequest, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """Ask one support call (single-source or packed) and turn its reply into verdicts."""
        ids = [p + 1 for p in request.positions]
        # (source, its passages, statement id -> the id its label has in the reply)
        targets: list[tuple[Source, list[Passage], Callable[[int], int]]]
        if request.pack:
            n = len(request.pack)
            outcome = self._ask(request, lambda obj: check_pack_labels(obj, ids, n), ids, expected=len(ids) * n)
            targets = [(source, passages, partial(pack_key, source_number=k)) for k, (source, passages) in enumerate(request.pack, start=1)]
        else:
            outcome = self._ask(request, lambda obj: check_labels("support", obj, ids), ids)
            assert request.source is not None
            targets = [(request.source, request.passages, lambda i: i)]
        out: list[Verdict] = []
        for source, passages, key in targets:
            by_pid = {p.pid.lower(): p for p in passages}
            for p in request.positions:
                st = statements[p]
                item = outcome.checked.items.get(key(p + 1))
                if item is None:
                    out.append(self._verdict(answer, "support", request.prompt_id, None, outcome.failure_raw,
                                             statement_index=st.index, source_index=source.index, error=outcome.failure))
                    continue
                evidence = ""
                if item["label"] != "none":
                    evidence = locate_quote(str(item.get("quote") or item.get("evidence") or ""), source.text)
                    if not evidence:
                        passage = by_pid.get(str(item.get("passage") or "").strip().strip("[]").lower())
                        evidence = passage.text if passage else ""
                out.append(self._verdict(answer, "support", request.prompt_id, item["label"], outcome.raw_by_pos[key(p + 1)],
                                         statement_index=st.index, source_index=source.index, evidence=evidence))
        return out

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        """Each source's side on the question (agree / disagree / neutral), several sources per call
        (`source_stance_llm`); evidence = the quote the model gave, found in the source."""
        by_position: dict[int, Verdict] = {}
        for k, source in enumerate(sources):
            if not (source.text or "").strip():
                by_position[k] = self._verdict(answer, "source_stance", prompt_parts("source_stance")[2], None,
                                               f"source {source.index} has no text", source_index=source.index, error="call")
        for request in plan_source_stance(self.settings, answer, sources):
            ids = list(range(1, len(request.positions) + 1))  # S1, S2, ... in the prompt
            outcome = self._ask(request, partial(check_labels, "stance", ids=ids), ids)
            for n, k in enumerate(request.positions, start=1):
                source, item = sources[k], outcome.checked.items.get(n)
                if item is None:
                    by_position[k] = self._verdict(answer, "source_stance", request.prompt_id, None, outcome.failure_raw,
                                                   source_index=source.index, error=outcome.failure)
                else:
                    by_position[k] = self._verdict(answer, "source_stance", request.prompt_id, item["label"], outcome.raw_by_pos[n],
                                                   source_index=source.index, evidence=locate_quote(str(item.get("quote") or ""), source.text))
        return [by_position[k] for k in sorted(by_position)]

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """`support` for several sources. Short sources share a call (up to `max_sources_per_call`
        sources and `max_pack_chars` characters of passages); calls run concurrently, bounded by
        `concurrency`. Verdicts come back grouped by source, in the order of `sources`."""
        if not statements:
            return []
        out: list[Verdict] = []
        with_text = []
        for s in sources:
            if (s.text or "").strip():
                with_text.append(s)
            else:
                out.extend(self._no_text_verdicts(answer, statements, s))
        requests = plan_support_many(self.settings, answer, statements, with_text)

        def run(request: JudgeRequest) -> list[Verdict]:
            return self._run_support(request, answer, statements)

        if len(requests) <= 1 or self.concurrency == 1:
            parts = [run(r) for r in requests]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
                parts = list(pool.map(run, requests))
        verdicts = out + [v for part in parts for v in part]
        order: dict[int | None, int] = {s.index: k for k, s in enumerate(sources)}  # keyed like Verdict.source_index
        return sorted(verdicts, key=lambda v: order.get(v.source_index, len(order)))

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """The statements against all these sources at once, in one call (more only beyond
        `max_statements_per_call`): `source_index` None, `source_set` the sources' indexes.
        evidence = the model's quote, found in one of the sources, else ""."""
        if not statements:
            return []
        members = tuple(sorted({s.index for s in sources}))
        requests = plan_support_set(self.settings, answer, statements, sources)
        if not requests:
            prompt_id = prompt_parts("support_set")[2]
            return [self._verdict(answer, "support", prompt_id, None, "no source of the set has text",
                                  statement_index=st.index, source_set=members, error="call") for st in statements]
        out: list[Verdict] = []
        for request in requests:
            ids = [p + 1 for p in request.positions]
            outcome = self._ask(request, partial(check_labels, "support", ids=ids), ids)
            for p in request.positions:
                st, item = statements[p], outcome.checked.items.get(p + 1)
                if item is None:
                    out.append(self._verdict(answer, "support", request.prompt_id, None, outcome.failure_raw,
                                             statement_index=st.index, source_set=members, error=outcome.failure))
                    continue
                quote = str(item.get("quote") or item.get("evidence") or "")
                evidence = "" if item["label"] == "none" else next(
                    (found for s in sources if (found := locate_quote(quote, s.text or ""))), "")
                out.append(self._verdict(answer, "support", request.prompt_id, item["label"], outcome.raw_by_pos[p + 1],
                                         statement_index=st.index, source_set=members, evidence=evidence))
        return out


class PairwiseReferenceJudge(OpenAIJudge):
    """Reference design for benchmarks only: one support call per (statement, source) pair with
    the whole document (no passage selection). Same prompts, same parsing."""

    mode = "pairwise"
