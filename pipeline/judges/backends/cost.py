"""Dry-run estimate of an OpenAI judge run: calls, tokens and cost, without calling anything.

`estimate_run` plans the requests with the same planner the judge uses (`llm_requests`), so the
prompts counted are exactly the prompts that would be sent. Input tokens are counted with tiktoken
when it is installed (it is optional), else as characters / 4; output tokens are a fixed allowance
per statement. Prices are list prices at the time of writing and change: pass your own.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Mapping, Sequence

from pipeline.judges.backends.llm_config import DEFAULT_MODEL
from pipeline.judges.backends.llm_requests import (
    PROMPT_NAMES,
    JudgeRequest,
    RequestSettings,
    plan_confidence,
    plan_labels,
    plan_support_many,
    plan_support_set,
)
from pipeline.judges.backends.openai_judge import OpenAIJudge
from pipeline.judges.backends.source_stance_llm import OUTPUT_TOKENS as SOURCE_STANCE_OUTPUT_TOKENS
from pipeline.judges.backends.source_stance_llm import plan_source_stance
from pipeline.records import Answer
from pipeline.set_support import union_groups

__all__ = ["DEFAULT_PRICES_PER_1M", "estimate_run"]

# USD per 1M tokens (input, output). List prices at the time of writing; they change: pass your own
# table to `estimate_run(..., {"prices": {...}})`. Unknown models fall back to gpt-4o-mini prices.
DEFAULT_PRICES_PER_1M: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}

# Output allowance per call kind: (fixed tokens per call, tokens per statement and source).
_OUTPUT_TOKENS = {"relevance": (10, 12), "stance": (10, 12), "confidence": (25, 0), "support": (12, 45),
                  "support_set": (12, 45),
                  "source_stance": SOURCE_STANCE_OUTPUT_TOKENS}
_MESSAGE_OVERHEAD_TOKENS = 4


def _token_counter(model: str) -> tuple[Callable[[str], int], str]:
    try:
        import tiktoken  # optional; not a dependency

        try:
            enc = tiktoken.encoding_for_model(model)
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
        return (lambda s: len(enc.encode(s))), f"tiktoken:{enc.name}"
    except Exception:  # noqa: BLE001 - not installed or no encoding data offline
        return (lambda s: math.ceil(len(s) / 4)), "chars/4"


def estimate_run(answers: Sequence[Any], judge_config: Mapping[str, Any] | OpenAIJudge | None = None) -> dict[str, Any]:
    """Estimate calls, tokens and cost of annotating `answers` (AnnotatedAnswer records) without
    calling anything. The prompts are rendered exactly as the judge would render them.

    judge_config keys (all optional): model, mode ("batched" | "pairwise"), max_passage_chars,
    passage_chars, max_statements_per_call, prices ({"input": usd_per_1m, "output": usd_per_1m}),
    kinds (subset of relevance/stance/confidence/support/source_stance). An OpenAIJudge can be
    passed instead. Stance and source stance are counted for debate answers only; when an answer
    already carries relevance verdicts, stance and support are counted for its relevant statements
    only, else for all statements.
    Support is counted for sources that have text and no failed fetch (as the annotate stage does),
    plus one `support_set` call per set of two or more such sources that statements cite together.
    """
    if isinstance(judge_config, OpenAIJudge):
        cfg: dict[str, Any] = {
            "model": judge_config.model, "mode": judge_config.mode,
            "max_passage_chars": judge_config.settings.max_passage_chars,
            "passage_chars": judge_config.settings.passage_chars,
            "max_statements_per_call": judge_config.settings.max_statements_per_call,
            "max_sources_per_call": judge_config.settings.max_sources_per_call,
            "max_pack_chars": judge_config.settings.max_pack_chars,
        }
    else:
        cfg = dict(judge_config or {})
    model = str(cfg.get("model") or os.environ.get("AEE_OPENAI_MODEL") or DEFAULT_MODEL)
    mode = str(cfg.get("mode", "batched"))
    settings = RequestSettings(
        max_passage_chars=int(cfg.get("max_passage_chars", 6000)),
        passage_chars=int(cfg.get("passage_chars", 1000)),
        max_statements_per_call=int(cfg.get("max_statements_per_call", 20)),
        pairwise=mode == "pairwise",
        max_sources_per_call=max(1, int(cfg.get("max_sources_per_call", 8))),
        max_pack_chars=int(cfg.get("max_pack_chars", 8000)),
    )
    kinds = tuple(cfg.get("kinds", PROMPT_NAMES))
    if "support" in kinds:  # statements citing several sources are also judged against them together
        kinds = (*kinds, "support_set")
    price_in, price_out = DEFAULT_PRICES_PER_1M.get(model, DEFAULT_PRICES_PER_1M[DEFAULT_MODEL])
    prices = cfg.get("prices") or {}
    price_in = float(prices.get("input", price_in))
    price_out = float(prices.get("output", price_out))
    count, method = _token_counter(model)

    calls = {k: 0 for k in kinds}
    tokens_in = {k: 0 for k in kinds}
    tokens_out = {k: 0 for k in kinds}
    sources_without_text = 0

    def add(request: JudgeRequest) -> None:
        calls[request.kind] += 1
        tokens_in[request.kind] += sum(count(m["content"]) + _MESSAGE_OVERHEAD_TOKENS for m in request.messages)
        fixed, per = _OUTPUT_TOKENS[request.kind]
        # positions: statements of a label or support call, sources of a source_stance call
        tokens_out[request.kind] += fixed + per * len(request.positions) * max(1, len(request.pack))

    for item in answers:
        answer: Answer = item.answer
        statements = list(item.statements)
        relevant = statements
        labels = {v.statement_index: v.label for v in item.verdicts if v.kind == "relevance"}
        if labels:
            relevant = [s for s in statements if labels.get(s.index) != "filler"]
        if "relevance" in kinds and statements:
            for r in plan_labels("relevance", settings, answer, statements):
                add(r)
        if "stance" in kinds and answer.query_type == "debate" and relevant:
            for r in plan_labels("stance", settings, answer, relevant):
                add(r)
        if "source_stance" in kinds and answer.query_type == "debate":
            with_text = [s for s in answer.sources if (s.text or "").strip() and s.fetch_ok is not False]
            for r in plan_source_stance(settings, answer, with_text):
                add(r)
        if "confidence" in kinds:
            add(plan_confidence(settings, answer))
        if "support" in kinds and relevant:
            judged = []
            for source in answer.sources:
                if not (source.text or "").strip() or source.fetch_ok is False:
                    sources_without_text += 1
                    continue
                judged.append(source)
            for r in plan_support_many(settings, answer, relevant, judged):
                add(r)
            for sources, group in union_groups(answer, relevant):
                for r in plan_support_set(settings, answer, group, sources):
                    add(r)

    total_in, total_out = sum(tokens_in.values()), sum(tokens_out.values())
    cost = total_in / 1e6 * price_in + total_out / 1e6 * price_out
    return {
        "estimate": True,
        "judge": f"{'openai-pairwise' if mode == 'pairwise' else 'openai'}:{model}",
        "model": model,
        "mode": mode,
        "answers": len(answers),
        "calls": sum(calls.values()),
        "calls_by_kind": calls,
        "input_tokens": total_in,
        "output_tokens": total_out,
        "input_tokens_by_kind": tokens_in,
        "output_tokens_by_kind": tokens_out,
        "sources_without_text": sources_without_text,
        "prices_per_1m_usd": {"input": price_in, "output": price_out},
        "cost_usd": round(cost, 6),
        "token_method": method,
        "note": "estimate only: input tokens from the rendered prompts, output tokens from a fixed "
                "allowance per statement; corrective follow-ups and retries are not counted, nor the "
                "'all citations but one' sets asked for statements citing three or more sources (they "
                "depend on the labels)",
    }
