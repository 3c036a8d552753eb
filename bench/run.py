"""The project's benchmark: one table of ratios, each measured side by side in the same run.

    .venv/bin/python bench/run.py            # full inputs (what `make bench` runs)
    .venv/bin/python bench/run.py --json     # the same rows as JSON
    .venv/bin/python bench/run.py --quick    # small inputs, for the smoke test
    .venv/bin/python bench/run.py --only a,b # some rows only
    .venv/bin/python bench/run.py --markdown # the table plus the machine, for docs/benchmarks.md

Rows (letters as in docs/benchmarks.md):
  a/b  LLM judge calls and input tokens: PairwiseReferenceJudge (one call per statement x source,
       whole document) vs the batched OpenAIJudge (all statements of an answer against one source,
       selected passages). Support stage only, on ExpertQA domain_test claims x sources with text,
       both against the local fake OpenAI server (pipeline/testing/fake_openai.py) answering from a
       deterministic handler; counted on the server's request log.
  c    Full annotate (relevance, confidence, support) with CachingJudge over the batched judge:
       cold (fresh SQLite cache) vs cached (second run; the server must see zero requests).
  d    Source necessity: exact (integer program) vs greedy, on seeded sparse support matrices, and
       the worst case over dense random ones (the solver stops at 1 s).
  e    Offline judge: pairs/s in embedding mode vs lexical-only mode, and seconds for every
       claim x source pair of the three ExpertQA files once the model is loaded.
  f    Scorecard page server time (Streamlit AppTest), cold caches vs warm, largest dataset.
  g    Peak RSS of `python -m pipeline run --dataset demo`: recorded labels vs the offline judge.
  h    Scale (bench/scale.py): whole runs on resampled ExpertQA corpora (teaching corpus when
       ExpertQA is absent) of 1,000, 5,000 and 20,000 answers with the human judge, on the local
       executor and on Ray (a loopback cluster of 2 CPUs; the labels the data carries then travel
       through the actor pool too), and of 1,000 and 5,000 with the offline judge; wall time, CPU
       time and peak RSS per size, each in a fresh process. Linear time: size ratio / time ratio
       (target 20k/1k time ratio <= 22, i.e. ratio >= 0.91); flat memory: peak RSS small / large
       (target 20k within 1.3x of 1k).
  i    One deep-research answer (200 sources x 140 statements, bench/deep_research.py) judged offline
       end to end: without vs with the judge's first pass, the time against the 10 s target, and
       ExpertQA rand_val agreement without vs with the first pass (unchanged by construction).
  j    `aee collect` wall time for 200 answers (40 with --quick) from the fake engine server
       (pipeline/testing/fake_engines.py, every answer 50 ms late, as a slow provider): --concurrency 1
       vs --concurrency 4, each into a fresh folder; target ratio >= 3.
  k    Prediction-powered scorecards (bench/audit_ppi.py): on ExpertQA, samples of about 100, 200
       and 400 (claim, cited source) pairs with the experts' labels standing in for the annotators;
       interval width of human-only vs PPI estimates of unsupported statements and citation
       accuracy, with the judge-only (offline) error, each estimate's mean error and how often its
       interval covers the value from all expert labels, over 200 draws per size.
  l    The offline judge on all of ExpertQA on Ray: one node with 1 CPU vs two nodes with 1 CPU
       each, both on this machine's loopback (bench/ray_rows.py); the ratio is the speed-up.
  m    An LLM judge on Ray against the fake server at 300 ms per reply: requests in flight vs the
       bound of 8 shared by two workers (bench/ray_rows.py).
  n    Every dashboard page in a real browser (Debian's chromium, bench/page_ready.py), a row per
       page: seconds from navigation until the page's title is shown and its script run is over
       (server + render), each visit in a fresh browser context, warm (median of five visits after
       a first one; target: under 2 s). Baseline: a bare Streamlit app showing one title, visited
       right before each page visit, so the page's own cost reads apart from the machine's load. The
       server reads the default build (`aee build-default`: teaching corpus, ExpertQA with its
       experts' labels, judge agreement and checks); every page opens on ExpertQA.
  o    The largest answer the limits allow (bench/worst_case.py: 92 sources of 108,000 characters,
       ~940 statements, ~87,000 pairs) and the same answer with 1/8, 1/4 and 1/2 of its sources:
       `aee run --judge offline` on each in a fresh process, wall time and peak RSS per size; time
       and memory per unit of input size against the smallest, so a ratio near 1 (or above: the fixed
       part of the cost) means linear.
  p    The offline encoder: texts/s encoding each text alone vs in shared batches, and whether every
       vector is bit for bit the same both ways (a resumed run embeds texts in other batches).
  q    Coverage per cell of the prediction-powered scorecard (bench/ppi_coverage.py): on ExpertQA, the
       experts as annotators, the audit sample drawn 200 times at about 100, 300 and 600 pairs; for
       every engine x metric cell and all engines, how often the 95% interval holds the experts'
       value (goal >= 93%), with the mean width; relevant statements from a statement sample of the
       experts' relevance at the same sizes.
  t    Audits over time (bench/over_time.py): fake-engine corpora of 1,008 and 20,016 answers (9 engines,
       2 repeats, weekly waves; 140,400 with `python bench/over_time.py --sizes 1k,140k`): `aee run`
       with its over-time summaries and those summaries alone, time per answer (1 = linear); the
       Over time page's warm view (AppTest), target under 2 s; t4: every registry page's warm view
       on the same result sets (bench/pages_scale.py), target under 2 s.
  u/v/w The full-size runs of tests that run smaller in `make test` (bench/suite_rows.py): kill -9
       at 20 random moments then rerun; the first 200 ExpertQA answers locally vs on Ray; 20 browser
       users at once with full sessions.

Each row reads "baseline vs ours": `ratio` is how many times better `ours` is than `baseline`
(baseline / ours for costs such as calls, tokens, seconds and MB; ours / baseline for rates such as
pairs/s). A ratio below 1 means the second thing costs more. Everything runs offline: the only
network traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# An LLM endpoint configured in the environment must never be reached from here.
for _var in ("AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL", "AEE_OPENAI_API_KEY", "OPENAI_API_KEY",
             "AEE_OPENAI_MODEL", "AEE_OPENAI_JSON_MODE", "AEE_OPENAI_API_VERSION"):
    os.environ.pop(_var, None)

from llm_server import Server, deterministic_reply, llm_judge, log_totals  # noqa: E402 - bench/ is on sys.path (run as a script)
from rows import COLUMNS, Row, cost_row, rate_row, skipped  # noqa: E402,F401 - bench/rows.py (COLUMNS for callers)


def target(ratio: float | None, goal: float) -> str:
    """'target >= goal: met' or 'NOT met', for a row's note."""
    ok = ratio is not None and ratio >= goal
    return f"target ratio >= {goal:g}: {'met' if ok else 'NOT met'}"


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------

EXPERTQA_FILES = ("domain_test", "domain_val", "rand_val")


def expertqa_answers(split: str, limit: int | None = None) -> list[Any]:
    """ExpertQA answers of one file (sorted by id, like the runner), or RuntimeError when absent."""
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.paths import expertqa_dir

    folder = expertqa_dir()
    if folder is None or not (folder / f"{split}.jsonl").is_file():
        raise RuntimeError("ExpertQA files not found (set EXPERTQA_DIR or place ../shared/data/expertqa)")
    answers = sorted(load_expertqa(folder / f"{split}.jsonl"), key=lambda a: a.answer.answer_id)
    return answers[:limit] if limit else answers


def judged_sources(answer: Any) -> list[Any]:
    """The sources the annotate stage sends to a support judge: with text, not known dead."""
    return [s for s in answer.sources if (s.text or "").strip() and s.fetch_ok is not False]


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
# d: source necessity
# ------------------------------------------------------------------------------------------------


def sparse_support(rng: Any, n_statements: int, n_sources: int) -> Any:
    import numpy as np

    m = np.zeros((n_statements, n_sources), dtype=bool)
    for i in range(n_statements):
        k = int(rng.integers(1, 5))  # 1..4 supporting sources
        m[i, rng.choice(n_sources, size=min(k, n_sources), replace=False)] = True
    return m


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_necessity(quick: bool) -> list[Row]:
    import numpy as np

    from pipeline.metrics.necessity import EXACT_TIME_LIMIT, greedy_cover, solve_cover

    warm = np.random.default_rng(0)
    for _ in range(3):  # import scipy and start HiGHS before timing (the first solve pays ~0.4 s)
        solve_cover(sparse_support(warm, 30, 20))
    rows = []
    trials = 5 if quick else 40
    for n_sources, n_statements in ((20, 30), (200, 150)):
        rng = np.random.default_rng(20240 + n_sources)
        t_exact, t_greedy, smaller, unproven = [], [], 0, 0
        for _ in range(trials):
            m = sparse_support(rng, n_statements, n_sources)
            cover, te = _timed(partial(solve_cover, m))
            greedy, tg = _timed(partial(greedy_cover, m))
            t_exact.append(te)
            t_greedy.append(tg)
            smaller += len(cover.columns) < len(greedy)
            unproven += not cover.proven_optimal
        me, mg = statistics.median(t_exact) * 1000, statistics.median(t_greedy) * 1000
        rows.append(cost_row(
            f"d. necessity time at {n_sources} sources x {n_statements} statements: exact vs greedy", me, mg, "ms",
            f"median of {trials} seeded sparse matrices (each statement backed by 1-4 random sources); exact "
            f"max {max(t_exact) * 1000:.0f} ms; exact cover smaller than greedy in {smaller}/{trials}"
            + (f"; {unproven} not proven optimal" if unproven else "; all proven optimal")))
    # Worst case: dense random matrices, where the integer program may hit its time limit.
    rng = np.random.default_rng(7)
    densities = (0.1, 0.3) if quick else (0.05, 0.1, 0.2, 0.3, 0.5)
    worst = (0.0, 0.0, 0.0, True, 0, 0, 0)
    for p in densities:
        for _ in range(1 if quick else 3):
            m = rng.random((150, 200)) < p
            cover, te = _timed(partial(solve_cover, m))
            greedy, tg = _timed(partial(greedy_cover, m))
            if te > worst[0]:
                worst = (te, tg, p, cover.proven_optimal, len(cover.columns), len(greedy), cover.lower_bound)
    te, tg, p, proven, n_exact, n_greedy, bound = worst
    rows.append(cost_row(
        "d. necessity worst case, dense random 200 x 150: exact vs greedy", te * 1000, tg * 1000, "ms",
        f"slowest of densities {', '.join(f'{d:g}' for d in densities)}: density {p:g}, exact {n_exact} vs greedy "
        f"{n_greedy} sources, " + ("proven optimal" if proven else
                                    f"NOT proven optimal (solver stopped at its {EXACT_TIME_LIMIT:g} s limit; "
                                    f"lower bound {bound}; the metric reports that)")))
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
    lex_pairs, lex_s = _timed(lambda: judge_all_pairs(lexical, answers))
    if encoder is None:
        return [skipped(name_e1, load_note),
                Row(name_e2, OFFLINE_TARGET_S, lex_s, OFFLINE_TARGET_S / lex_s, "s",
                    f"lexical mode only ({load_note}); {lex_pairs} pairs")]
    embed = OfflineJudge()
    assert embed.mode == "embed", embed.mode
    emb_pairs, emb_s = _timed(lambda: judge_all_pairs(embed, answers))
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
# f: scorecard render time
# ------------------------------------------------------------------------------------------------


def _metric_rows(root: Path, name: str) -> int:
    import pyarrow.parquet as pq

    from pipeline.store import list_judges, table_path

    rows = 0
    for judge in list_judges(name):
        path = table_path(name, "metrics", judge, root)
        if path.exists():
            rows = max(rows, pq.ParquetFile(path).metadata.num_rows)
    return rows


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """These environment variables for the block (the pipeline reads its folders from them), then
    back to what they were."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def bench_scorecard(quick: bool) -> list[Row]:
    name = "f. scorecard page server time: cold vs warm"
    page = ROOT / "pages" / "scorecard.py"
    if not page.is_file():
        return [skipped(name, "pages/scorecard.py does not exist yet")]
    from pipeline.paths import expertqa_dir
    from pipeline.runner import run_dataset

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        with _environ(AEE_RESULTS_DIR=str(root), AEE_CACHE_DIR=str(Path(tmp) / "cache")):
            if not quick and expertqa_dir() is not None:
                dataset = "expertqa"
                built, build_s = _timed(lambda: run_dataset("expertqa", root=root, progress=False))
                how = f"ExpertQA human labels, {built.answers} answers, built with run_dataset in {build_s:.1f} s"
            else:
                dataset = "demo"
                built, build_s = _timed(lambda: run_dataset("demo", root=root, progress=False))
                how = f"demo teaching corpus (recorded labels), {built.answers} answers" + (" (--quick)" if quick else "")
            n_rows = _metric_rows(root, dataset)
            cold, warm = _render_times(page, dataset, runs=2 if quick else 5)
    return [cost_row(name, cold, statistics.median(warm), "s",
                     f"{how} ({n_rows} metric rows); AppTest.from_file(pages/scorecard.py); cold = first run "
                     f"after st.cache_data/st.cache_resource.clear(); warm = median of {len(warm)} reruns "
                     f"(max {max(warm):.2f} s)")]


def _render_times(page: Path, dataset: str, runs: int) -> tuple[float, list[float]]:
    import logging

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    for name in ("streamlit.runtime.caching.cache_data_api", "streamlit.runtime.caching.cache_resource_api",
                 "streamlit.runtime.scriptrunner_utils.script_run_context"):
        logging.getLogger(name).setLevel(logging.ERROR)  # "no runtime" notes of the bare-mode clear()
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(page), default_timeout=300)
    at.session_state["shared_dataset"] = dataset
    at.session_state["_router_ran"] = True
    _, cold = _timed(at.run)
    if at.exception:
        raise RuntimeError(f"scorecard raised: {at.exception[0].value}")
    picked = at.selectbox(key="scorecard_dataset").value
    if picked != dataset:
        raise RuntimeError(f"scorecard opened {picked!r}, not {dataset!r}")
    warm = []
    for _ in range(runs):
        _, s = _timed(at.run)
        warm.append(s)
    return cold, warm


# ------------------------------------------------------------------------------------------------
# g: peak memory of a demo run
# ------------------------------------------------------------------------------------------------

def peak_rss(judge: str, tmp: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of `aee run --dataset demo --judge JUDGE` in a fresh process."""
    from scale import measured_run  # bench/scale.py (this folder is on sys.path when run as a script)

    _, wall, peak_mb = measured_run(["run", "--dataset", "demo", "--judge", judge, "--no-progress"], tmp, judge, 900,
                                    f"run --judge {judge}")
    return peak_mb, wall


def bench_memory(quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        (rec_mb, rec_s), (off_mb, off_s) = peak_rss("recorded", Path(tmp)), peak_rss("offline", Path(tmp))
    return [cost_row("g. peak RSS of run --dataset demo: recorded vs offline judge", rec_mb, off_mb, "MB",
                     f"subprocess each, VmHWM (peak RSS) of the child (wall {rec_s:.1f} s vs {off_s:.1f} s); fresh "
                     f"results and cache dirs; ratio < 1 = the offline judge needs more memory (model weights, "
                     f"embeddings)")]


def _scale_rows(label: str, results: list[dict]) -> list[Row]:
    small, large = results[0], results[-1]
    size_ratio = large["size"] / small["size"]
    time_ratio = large["seconds"] / small["seconds"]
    cpu_ratio = large["cpu_seconds"] / small["cpu_seconds"] if small.get("cpu_seconds") else None
    sizes = ", ".join(f"{r['size']:,}: {r['seconds']:.1f} s ({r['cpu_seconds']:.1f} s CPU) / {r['peak_mb']:.0f} MB"
                      for r in results)
    if cpu_ratio is not None:
        sizes += f"; CPU time ratio {cpu_ratio:.1f}" + (" (the driver's)" if small.get("executor") == "ray" else "")
    hits = f"; judge cache hits/misses at the largest size {large['cache_hits']}/{large['cache_misses']}" \
        if large.get("cache_hits") is not None else ""
    limit = 22 / 20 * size_ratio
    return [
        Row(f"h. scale, {label}: time {small['size']:,} vs {large['size']:,} answers", small["seconds"] * size_ratio,
            large["seconds"], size_ratio / time_ratio, "s",
            f"baseline = linear extrapolation of the small run; time ratio {time_ratio:.1f} for a size ratio "
            f"{size_ratio:.0f} (target <= {limit:.0f}: {'met' if time_ratio <= limit else 'NOT met'}); {sizes}{hits}"),
        cost_row(f"h. scale, {label}: peak RSS {small['size']:,} vs {large['size']:,} answers", small["peak_mb"],
                 large["peak_mb"], "MB", "ratio ~1 = flat memory (chunked; nothing holds the whole corpus); target "
                 f"large within 1.3x of small: {'met' if large['peak_mb'] <= 1.3 * small['peak_mb'] else 'NOT met'}"
                 + ("; the driver's memory (the workers hold one chunk each)" if small.get("executor") == "ray" else "")),
    ]


def bench_scale(quick: bool) -> list[Row]:
    from scale import run_sizes  # bench/scale.py (this folder is on sys.path when run as a script)

    from pipeline.testing.ray_cluster import ray_installed

    human = run_sizes([100, 300] if quick else [1000, 5000, 20000], None)
    rows = _scale_rows(f"{human[0]['judge']} judge", human)
    if not quick:
        if ray_installed():
            on_ray = run_sizes([1000, 5000, 20000], None, executor="ray")
            rows += _scale_rows(f"{on_ray[0]['judge']} judge on Ray (2 CPUs)", on_ray)
        else:
            rows.append(skipped("h. scale on Ray", "Ray is not installed (pip install '.[ray]')"))
        rows += _scale_rows("offline judge", run_sizes([1000, 5000], "offline"))
    return rows


# ------------------------------------------------------------------------------------------------
# i: a deep-research answer (bench/deep_research.py)
# ------------------------------------------------------------------------------------------------


def bench_deep_research(quick: bool) -> list[Row]:
    import deep_research  # bench/ is on sys.path when this file runs as a script

    return deep_research.bench_deep_research(quick, cost_row, skipped)


def bench_collect(quick: bool) -> list[Row]:
    from pipeline.collect.client import Backoff
    from pipeline.collect.run import CollectConfig, collect
    from pipeline.testing.fake_engines import FakeEngineServer

    n = 40 if quick else 200
    saved = {k: os.environ.get(k) for k in ("AEE_COLLECT_PERPLEXITY_BASE_URL", "PERPLEXITY_API_KEY")}
    seconds: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeEngineServer(delay=0.05) as server:
        os.environ.update({"AEE_COLLECT_PERPLEXITY_BASE_URL": server.base_url, "PERPLEXITY_API_KEY": "bench-key"})
        try:
            queries = Path(tmp) / "q.jsonl"
            queries.write_text("".join(json.dumps({"query": f"Bench question {k}?"}) + "\n" for k in range(n)))
            for workers in (1, 4):
                config = CollectConfig("perplexity", str(queries), Path(tmp) / f"c{workers}", concurrency=workers,
                                       backoff=Backoff(base=0.01, cap=1.0, attempts=3), progress=False)
                report, seconds[workers] = _timed(partial(collect, config))
                if report.captured != n:
                    raise RuntimeError(f"collected {report.captured} of {n}")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    ratio = seconds[1] / seconds[4]
    return [cost_row(f"j. collect {n} answers: --concurrency 1 vs 4", seconds[1], seconds[4], "s",
                     f"fake provider answering in 50 ms; {target(ratio, 3)}")]
def bench_audit_ppi(quick: bool) -> list[Row]:
    import audit_ppi  # bench/ is on sys.path when this file runs as a script

    return audit_ppi.bench_audit_ppi(quick, cost_row, skipped)


def bench_ppi_coverage(quick: bool) -> list[Row]:
    import ppi_coverage  # bench/ is on sys.path when this file runs as a script

    return ppi_coverage.bench_ppi_coverage(quick, rate_row, skipped)


# ------------------------------------------------------------------------------------------------
# l, m: the annotate stage on Ray (bench/ray_rows.py)
# ------------------------------------------------------------------------------------------------


def bench_two_nodes(quick: bool) -> list[Row]:
    import ray_rows  # bench/ is on sys.path when this file runs as a script

    return ray_rows.bench_two_nodes(quick, cost_row, skipped)


def bench_llm_in_flight(quick: bool) -> list[Row]:
    import ray_rows

    return ray_rows.bench_llm_in_flight(quick, rate_row, skipped)


def bench_over_time(quick: bool) -> list[Row]:
    import over_time  # bench/over_time.py: t1-t3, and t4 via bench/pages_scale.py

    return over_time.bench_over_time(quick, cost_row, Row)


# ------------------------------------------------------------------------------------------------
# n: page times in a real browser
# ------------------------------------------------------------------------------------------------

PAGE_TARGET_S = 2.0


def bench_pages(quick: bool) -> list[Row]:
    title = "n. page time in a browser (server + render): cold vs warm"
    from page_ready import measure, page_slugs, start_floor  # bench/page_ready.py

    from pipeline.testing.app_server import CHROMIUM, free_port, start_app, stop_app

    if not CHROMIUM.exists():
        return [skipped(title, "no /usr/bin/chromium (apt-get install -y chromium)")]
    try:
        import playwright  # noqa: F401
    except ImportError:
        return [skipped(title, "the playwright package is not installed")]
    from pipeline.default_data import build_default
    from pipeline.paths import expertqa_dir

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.update({"AEE_RESULTS_DIR": str(Path(tmp) / "results"), "AEE_CACHE_DIR": str(Path(tmp) / "cache"),
                    "AEE_STUDIES_DIR": str(Path(tmp) / "studies"), "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
        with _environ(AEE_RESULTS_DIR=env["AEE_RESULTS_DIR"], AEE_CACHE_DIR=env["AEE_CACHE_DIR"]):
            if quick:
                from pipeline.runner import run_dataset

                run_dataset("demo", root=Path(env["AEE_RESULTS_DIR"]), progress=False)
                dataset, how = "demo", "teaching corpus only (--quick)"
            else:
                list(build_default(force=True, progress=False))
                dataset = "expertqa" if expertqa_dir() is not None else "demo"
                how = "default build" + ("" if dataset == "expertqa" else " (ExpertQA absent: teaching corpus)")
        slugs = ["scorecard"] if quick else page_slugs()
        port, floor_port = free_port(), free_port()
        proc = start_app(port, root=ROOT, env=env)
        floor = start_floor(Path(tmp), floor_port)
        load_before = os.getloadavg()[0]
        try:
            times, outside = measure(f"http://127.0.0.1:{port}", slugs, f"dataset={dataset}", 1 if quick else 5,
                                     floor_url=f"http://127.0.0.1:{floor_port}")
        finally:
            stop_app(proc)
            stop_app(floor)
        load_after = os.getloadavg()[0]
    rows = []
    for slug in slugs:
        _cold, *warm = times[slug]
        floor_s = times[f"floor:{slug}"]
        mid, base = statistics.median(warm), statistics.median(floor_s)
        own = statistics.median(w - f for w, f in zip(warm, floor_s))
        verdict = "under" if mid < PAGE_TARGET_S else "OVER"
        rows.append(cost_row(f"n. page {slug}: bare app vs page, warm", base, mid, "s",
                             f"{verdict} the {PAGE_TARGET_S:g} s target; the page's own cost over a bare Streamlit app "
                             f"(a title only, visited right before each visit) {own:+.2f} s; warm visits "
                             f"{', '.join(f'{w:.2f}' for w in warm)} s, cold {_cold:.2f} s; ?dataset={dataset}, {how}; "
                             f"load average {load_before:.1f} before, {load_after:.1f} after (2 cores); requests outside "
                             f"127.0.0.1: {len(outside)}"))
    return rows


# ------------------------------------------------------------------------------------------------
# o: the worst-case answer at a few sizes (bench/worst_case.py)
# ------------------------------------------------------------------------------------------------


def bench_worst_case(quick: bool) -> list[Row]:
    import worst_case  # bench/ is on sys.path when this file runs as a script
    from scale import measured_run

    if quick:  # four runs of a 10 MB answer take minutes: the smoke test only sees the row's shape
        return [skipped("o. worst-case answer: time and peak RSS at four sizes",
                        "full run only (minutes): bench/run.py --only o")]
    fractions = (1 / 8, 1 / 4, 1 / 2, 1.0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for fraction in fractions:
            path, shape = worst_case.worst_case(fraction, Path(tmp))
            _, seconds, peak_mb = measured_run(["run", "--dataset", "worst", "--path", str(path), "--judge", "offline",
                                                "--no-progress"], Path(tmp), f"worst-{fraction:g}", 3600,
                                               f"worst case at {fraction:g}")
            results.append({**shape, "fraction": fraction, "seconds": seconds, "peak_mb": peak_mb})
    small, large = results[0], results[-1]
    size_ratio = large["bytes"] / small["bytes"]
    sizes = "; ".join(f"{r['bytes'] / 1e6:.1f} MB ({r['sources']} sources, {r['pairs']:,} pairs): {r['seconds']:.1f} s, "
                      f"{r['peak_mb']:.0f} MB" for r in results)
    per_size = ", ".join(f"{(r['seconds'] / r['bytes']) / (small['seconds'] / small['bytes']):.2f}" for r in results)
    peak_per_mb = ", ".join(f"{r['peak_mb'] / (r['bytes'] / 1e6):.0f}" for r in results)
    what = (f"{large['statements']} statements, sources of {worst_case.SOURCE_CHARS:,} characters"
            f"{' (--quick)' if quick else ''}; `aee run --judge offline`, fresh process each, model load included")
    return [
        Row(f"o. worst-case answer: time, {small['bytes'] / 1e6:.1f} MB vs {large['bytes'] / 1e6:.1f} MB", small["seconds"] * size_ratio,
            large["seconds"], small["seconds"] * size_ratio / large["seconds"], "s",
            f"baseline = the smallest size's time scaled to the largest size (linear); ratio >= 1: at most linear. "
            f"Time per byte against the smallest: {per_size}. {sizes}. {what}"),
        Row(f"o. worst-case answer: peak RSS, {small['bytes'] / 1e6:.1f} MB vs {large['bytes'] / 1e6:.1f} MB",
            small["peak_mb"] * size_ratio, large["peak_mb"], small["peak_mb"] * size_ratio / large["peak_mb"], "MB",
            f"baseline = the smallest size's peak scaled to the largest size; ratio >= 1: memory grows at most linearly "
            f"(peak MB per input MB: {peak_per_mb})"),
    ]


# ------------------------------------------------------------------------------------------------
# p: the encoder, texts alone vs in shared batches
# ------------------------------------------------------------------------------------------------


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
    batched, batched_s = _timed(lambda: encoder.encode(texts))
    cache.clear()
    alone, alone_s = _timed(lambda: [encoder.encode([t])[0] for t in texts])
    cache.clear()
    same = sum(bool((a == b).all()) for a, b in zip(alone, batched))
    return [rate_row(name, len(texts) / alone_s, len(texts) / batched_s, "texts/s",
                     f"{len(texts):,} ExpertQA statements and source passages (first 600 characters); cache emptied "
                     f"before each; {same:,} of {len(texts):,} vectors bit for bit the same alone and batched "
                     f"({'all' if same == len(texts) else 'NOT all'})")]


def _suite_row(fn: str, quick: bool) -> list[Row]:
    import suite_rows  # u, v, w: bench/suite_rows.py (bench/ is on sys.path when this file runs as a script)

    return getattr(suite_rows, fn)(quick, cost_row, skipped)


# ------------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------------

BENCHES: dict[str, tuple[str, Callable[[bool], list[Row]]]] = {
    "a": ("a/b. LLM judge calls and tokens: pairwise vs batched", bench_llm),
    "c": ("c. annotate wall time: cold vs cached", bench_cache),
    "d": ("d. source necessity: exact vs greedy", bench_necessity),
    "e": ("e. offline judge throughput", bench_offline),
    "f": ("f. scorecard page server time: cold vs warm", bench_scorecard),
    "g": ("g. peak RSS of run --dataset demo: recorded vs offline judge", bench_memory),
    "h": ("h. scale: time and memory from 1,000 to 20,000 answers", bench_scale),
    "i": ("i. deep-research answer judged offline", bench_deep_research),
    "j": ("j. aee collect wall time: concurrency 1 vs 4", bench_collect),
    "k": ("k. prediction-powered scorecard on ExpertQA: human-only vs PPI", bench_audit_ppi),
    "l": ("l. offline judge on Ray: one node vs two", bench_two_nodes),
    "m": ("m. LLM judge on Ray: requests in flight vs the bound", bench_llm_in_flight),
    "n": ("n. page time in a browser (server + render): cold vs warm", bench_pages),
    "o": ("o. the worst-case answer at four sizes", bench_worst_case),
    "p": ("p. the offline encoder alone vs batched", bench_encoder),
    "q": ("q. prediction-powered scorecard: coverage per cell on ExpertQA", bench_ppi_coverage),
    "r": ("r. fitted judge on ExpertQA: coverage and width per cell", lambda quick: __import__("fitted_coverage").bench_fitted(quick, rate_row, skipped)),  # noqa: E501 (bench/fitted_coverage.py)
    "t": ("t. audits over time: pipeline and every page, 1k vs 20k answers", lambda q: bench_over_time(q) + __import__("first_views").bench_first_views(q, cost_row, skipped)),  # noqa: E501 - t5: issue 43
    "u": ("u. kill -9 at random moments then rerun", lambda quick: _suite_row("bench_kill_trials", quick)),
    "v": ("v. offline judge, ExpertQA: local vs Ray", lambda quick: _suite_row("bench_ray_vs_local", quick)),
    "w": ("w. 20 browser users at once, full sessions", lambda quick: _suite_row("bench_crowd", quick)),
}


def run_all(quick: bool, only: set[str] | None = None, progress: bool = True) -> list[Row]:
    rows: list[Row] = []
    for key, (title, fn) in BENCHES.items():
        if only and key not in only and not (key == "a" and "b" in only):
            continue
        if progress:
            print(f"[bench] {title} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        try:
            rows.extend(fn(quick))
        except Exception as exc:  # noqa: BLE001 - one broken row must not hide the others
            rows.append(skipped(title, f"{type(exc).__name__}: {exc}"))
        if progress:
            print(f"[bench]   {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    return rows


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.01:
        return f"{value:.3g}"
    return f"{value:.2e}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{_fmt(value)}x"


def text_table(rows: Sequence[Row]) -> str:
    cells = [[r.name, _fmt(r.baseline), _fmt(r.ours), _ratio(r.ratio), r.unit] for r in rows]
    heads = ["name", "baseline", "ours", "ratio", "unit"]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(heads)]
    line = lambda vals: "  ".join(v.ljust(w) if i in (0, 4) else v.rjust(w) for i, (v, w) in enumerate(zip(vals, widths)))  # noqa: E731
    out = [line(heads), line(["-" * w for w in widths])]
    for r, c in zip(rows, cells):
        out.append(line(c))
        out.append("    note: " + r.note)
    out.append("ratio = how many times better 'ours' is (baseline/ours for costs, ours/baseline for pairs/s)")
    return "\n".join(out)


def markdown_table(rows: Sequence[Row]) -> str:
    out = ["| name | baseline | ours | ratio | unit | note |", "|---|---:|---:|---:|---|---|"]
    for r in rows:
        note = r.note.replace("|", "\\|")
        out.append(f"| {r.name} | {_fmt(r.baseline)} | {_fmt(r.ours)} | {_ratio(r.ratio)} | {r.unit} | {note} |")
    return "\n".join(out)


def machine() -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")).split()[1])
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"nproc": str(os.cpu_count()), "cpu": cpu or platform.processor(), "ram": ram,
            "python": platform.python_version(), "os": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M %Z")}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark table: each ratio measured side by side in this run.")
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table with the machine")
    parser.add_argument("--quick", action="store_true", help="small inputs (smoke test)")
    parser.add_argument("--only", help="comma-separated row letters, e.g. a,c,d")
    parser.add_argument("--markdown-out", metavar="FILE", help="also write the markdown table and machine to FILE")
    args = parser.parse_args(argv)
    only = {x.strip().lower() for x in args.only.split(",")} if args.only else None
    started = time.perf_counter()
    rows = run_all(args.quick, only)
    total = time.perf_counter() - started
    m = machine()
    cmd = ".venv/bin/python bench/run.py" + (" --quick" if args.quick else "") + (f" --only {args.only}" if args.only else "")
    markdown = (f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, Python {m['python']}, {m['os']}; "
                f"{m['date']}; whole run {total:.0f} s.\n\nCommand: `{cmd}` (what `make bench` runs)\n\n"
                + markdown_table(rows) + "\n")
    if args.markdown_out:
        Path(args.markdown_out).write_text(markdown, encoding="utf-8")
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    elif args.markdown:
        print(markdown, end="")
    else:
        m = machine()
        print(f"bench/run.py{' --quick' if args.quick else ''}: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, "
              f"Python {m['python']}, {m['date']}, {total:.0f} s")
        print(text_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
