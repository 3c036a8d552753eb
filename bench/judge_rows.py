"""Benchmark rows of the judges: a/b (LLM judge calls and tokens, pairwise vs batched), c (annotate
cold vs cached), e (offline judge throughput), i (a deep-research answer judged offline) and p (the
offline encoder, texts alone vs in shared batches). What each row measures: bench/run.py's docstring."""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from common import EXPERTQA_FILES, expertqa_answers, judged_sources, target, timed
from llm_server import Server, deterministic_reply, llm_judge, log_totals
from registry import row
from rows import Row, cost_row, rate_row, skipped

# ------------------------------------------------------------------------------------------------
# a, b: LLM judge calls and input tokens
# ------------------------------------------------------------------------------------------------


def support_stage(judge: Any, answers: Sequence[Any], workers: int = 4) -> int:
    """Every claim of every answer against every judged source; returns the number of pairs."""
    def one(a: Any) -> int:
        sources = judged_sources(a.answer)
        if not a.statements or not sources:
            return 0
        verdicts = judge.support_many(a.answer, a.statements, sources)  # as the annotate stage asks
        failed = [v for v in verdicts if v.label is None]
        if failed:
            raise RuntimeError(f"judge call failed: {failed[0].raw[:200]}")
        return len(verdicts)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(one, answers))


@row("a", "a/b. LLM judge calls and tokens: pairwise vs batched")
def bench_llm(quick: bool) -> list[Row]:
    from pipeline.judges.backends.openai_judge import OpenAIJudge, PairwiseReferenceJudge

    answers = expertqa_answers("domain_test", 12 if quick else None)
    scope = f"ExpertQA domain_test{' (first 12 answers, --quick)' if quick else ''}"
    with tempfile.TemporaryDirectory() as tmp, Server() as server:
        counts = {}
        for label, cls in (("pairwise", PairwiseReferenceJudge), ("batched", OpenAIJudge)):
            server.reset()
            server.handler = deterministic_reply
            t = time.perf_counter()
            pairs = support_stage(llm_judge(cls, server, Path(tmp)), answers)
            counts[label] = (*log_totals(server), pairs, time.perf_counter() - t)
    (pc, pt, pairs, ps), (bc, bt, bpairs, bs) = counts["pairwise"], counts["batched"]
    assert pairs == bpairs, (pairs, bpairs)
    where = (f"support stage only; {scope}: {len(answers)} answers, {pairs} claim x source pairs; "
             f"local fake server, deterministic handler; counted on its request log")
    per_call = (pt / pc, bt / bc) if pc and bc else (0, 0)
    return [
        cost_row("a. LLM judge calls: pairwise vs batched", pc, bc, "calls",
                 f"{where} (wall {ps:.1f} s vs {bs:.1f} s); {target(pc / bc if bc else None, 5)}"),
        cost_row("b. LLM judge input tokens: pairwise vs batched", pt, bt, "tokens",
                 f"chars/4 of the messages the server received; same {pairs} pairs; {per_call[0]:.0f} vs "
                 f"{per_call[1]:.0f} tokens per call (ExpertQA sources are short passages, so the fixed "
                 f"instructions dominate a pairwise call); {target(pt / bt if bt else None, 10)}"),
    ]


# ------------------------------------------------------------------------------------------------
# c: annotate cold vs cached
# ------------------------------------------------------------------------------------------------


SIMULATED_LATENCY_S = 0.3  # row c2: what the fake server waits per reply, standing in for a model


def _annotate_twice(answers: Sequence[Any], latency: float) -> tuple[list[float], list[int], list[dict]]:
    """Annotate the answers twice through one fresh SQLite cache; (times, server requests, stats)."""
    from pipeline.annotate import annotate_answer
    from pipeline.judges.backends.openai_judge import OpenAIJudge
    from pipeline.judges.cache import CachingJudge
    from pipeline.testing.fake_openai import FakeResponse

    def slow_reply(request: Any) -> Any:
        text = deterministic_reply(request)
        return FakeResponse(content=text, delay=latency) if latency else text

    with tempfile.TemporaryDirectory() as tmp, Server() as server:
        server.handler = slow_reply
        db = Path(tmp) / "judges.sqlite"
        times, requests, stats = [], [], []
        for _ in range(2):
            before = len(server.chat_requests)
            with CachingJudge(llm_judge(OpenAIJudge, server, Path(tmp)), path=db) as judge:
                t = time.perf_counter()
                done = [annotate_answer(a, judge) for a in answers]
                times.append(time.perf_counter() - t)
                stats.append(dict(judge.stats))
            requests.append(len(server.chat_requests) - before)
            assert all(v.label is not None for a in done for v in a.verdicts), "a judge call failed"
    assert requests[0] > 0, "the cold run sent no request"
    assert requests[1] == 0, f"the cached run sent {requests[1]} requests to the server"
    assert stats[1]["misses"] == 0, stats[1]
    return times, requests, stats


@row("c", "c. annotate wall time: cold vs cached")
def bench_cache(quick: bool) -> list[Row]:
    answers = expertqa_answers("domain_test", 12 if quick else None)
    times, requests, stats = _annotate_twice(answers, 0.0)
    rows = [cost_row(
        "c. annotate wall time: cold vs cached (3 ms server)", times[0], times[1], "s",
        f"full annotate (relevance, confidence, support) of {len(answers)} ExpertQA domain_test answers"
        f"{' (--quick)' if quick else ''}; CachingJudge over the batched judge, fresh SQLite cache; cold: "
        f"{requests[0]} server requests, {stats[0]['misses']} misses; cached: {stats[1]['hits']} hits, "
        f"0 requests (asserted); the fake server answers in ~3 ms, far faster than any model, so the "
        f"cold side here is mostly our own code; {target(times[0] / times[1] if times[1] else None, 100)}")]
    few = answers[: 6 if quick else 40]
    times, requests, stats = _annotate_twice(few, SIMULATED_LATENCY_S)
    rows.append(cost_row(
        f"c2. annotate wall time: cold vs cached ({SIMULATED_LATENCY_S * 1000:.0f} ms server)", times[0], times[1], "s",
        f"same as c on the first {len(few)} answers, but the fake server waits {SIMULATED_LATENCY_S:g} s before "
        f"each reply (a stand-in for a model; hosted models usually take longer than that for a support call); "
        f"cold: {requests[0]} requests (up to 4 at once); cached: {stats[1]['hits']} hits, 0 requests (asserted); "
        f"{target(times[0] / times[1] if times[1] else None, 100)}"))
    return rows


# ------------------------------------------------------------------------------------------------
# e: offline judge throughput
# ------------------------------------------------------------------------------------------------

OFFLINE_TARGET_S = 60.0


def judge_all_pairs(judge: Any, answers: Sequence[Any], chunk: int = 25) -> int:
    """Every claim x judged source, the way the runner does it: prefetch a chunk, then support."""
    pairs = 0
    for start in range(0, len(answers), chunk):
        part = answers[start : start + chunk]
        judge.prefetch(part)
        for a in part:
            for s in judged_sources(a.answer):
                if a.statements:
                    pairs += len(judge.support(a.answer, a.statements, s))
    return pairs


@row("e", "e. offline judge throughput")
def bench_offline(quick: bool) -> list[Row]:
    name_e1 = "e. offline judge throughput: embedding vs lexical-only"
    name_e2 = "e. offline judge, all ExpertQA claim x source pairs"
    try:
        from pipeline.judges.offline import embedding
        from pipeline.judges.offline.judge import OfflineJudge
    except ImportError as exc:
        return [skipped(name_e1, f"offline judge not importable ({exc})"),
                skipped(name_e2, f"offline judge not importable ({exc})")]
    limit = 6 if quick else None
    answers = [a for split in EXPERTQA_FILES for a in expertqa_answers(split, limit)]
    t = time.perf_counter()
    try:
        encoder = embedding.get_encoder()
    except embedding.ModelUnavailable as exc:
        encoder = None
        load_note = f"embedding model unavailable ({exc})"
    load_s = time.perf_counter() - t
    cache = getattr(encoder, "_cache", None)
    if isinstance(cache, dict):
        cache.clear()  # embed every text again: this run pays for all its own embeddings

    lexical = OfflineJudge(use_embeddings=False)
    lex_pairs, lex_s = timed(lambda: judge_all_pairs(lexical, answers))
    if encoder is None:
        return [skipped(name_e1, load_note),
                Row(name_e2, OFFLINE_TARGET_S, lex_s, OFFLINE_TARGET_S / lex_s, "s",
                    f"lexical mode only ({load_note}); {lex_pairs} pairs")]
    embed = OfflineJudge()
    assert embed.mode == "embed", embed.mode
    emb_pairs, emb_s = timed(lambda: judge_all_pairs(embed, answers))
    assert emb_pairs == lex_pairs
    scope = (f"{len(answers)} answers of {', '.join(EXPERTQA_FILES)}"
             + (f" (first {limit} of each, --quick)" if quick else "") + f", {emb_pairs} claim x source pairs")
    return [
        rate_row(name_e1, emb_pairs / emb_s, lex_pairs / lex_s, "pairs/s",
                 f"{scope}; runner's path (prefetch per 25-answer chunk, then support per source); "
                 f"embedding cache emptied first; the ratio is what the embeddings cost"),
        cost_row(name_e2, OFFLINE_TARGET_S, emb_s, "s",
                 f"embedding mode, after model load ({load_s:.1f} s, not counted); baseline is the "
                 f"{OFFLINE_TARGET_S:g} s target budget, so ratio >= 1 means within it: "
                 f"{'met' if emb_s <= OFFLINE_TARGET_S else 'NOT met'}; lexical-only mode takes {lex_s:.1f} s; {scope}"),
    ]


# ------------------------------------------------------------------------------------------------
# i: a deep-research answer (bench/deep_research.py)
# ------------------------------------------------------------------------------------------------


@row("i", "i. deep-research answer judged offline")
def bench_deep_research(quick: bool) -> list[Row]:
    import deep_research  # bench/ is on sys.path when this file runs as a script

    return deep_research.bench_deep_research(quick, cost_row, skipped)


# ------------------------------------------------------------------------------------------------
# p: the encoder, texts alone vs in shared batches
# ------------------------------------------------------------------------------------------------


@row("p", "p. the offline encoder alone vs batched")
def bench_encoder(quick: bool) -> list[Row]:
    from pipeline.judges.offline import embedding

    name = "p. offline encoder: each text alone vs texts in shared batches"
    try:
        encoder = embedding.get_encoder()
    except embedding.ModelUnavailable as exc:
        return [skipped(name, f"embedding model unavailable ({exc})")]
    answers = expertqa_answers("rand_val", 20 if quick else 200)
    texts = list(dict.fromkeys(t for a in answers for t in [*(s.text for s in a.statements),
                                                            *(s.text[:600] for s in a.answer.sources)] if t.strip()))
    texts = texts[: 60 if quick else 2000]
    cache = encoder._cache
    cache.clear()
    batched, batched_s = timed(lambda: encoder.encode(texts))
    cache.clear()
    alone, alone_s = timed(lambda: [encoder.encode([t])[0] for t in texts])
    cache.clear()
    same = sum(bool((a == b).all()) for a, b in zip(alone, batched))
    return [rate_row(name, len(texts) / alone_s, len(texts) / batched_s, "texts/s",
                     f"{len(texts):,} ExpertQA statements and source passages (first 600 characters); cache emptied "
                     f"before each; {same:,} of {len(texts):,} vectors bit for bit the same alone and batched "
                     f"({'all' if same == len(texts) else 'NOT all'})")]
