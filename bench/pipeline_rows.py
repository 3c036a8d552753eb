"""Benchmark rows of whole runs and their parts: d (source necessity, exact vs greedy), g (peak memory
of a demo run), h (scale from 1,000 to 20,000 answers), j (`aee collect` at concurrency 1 vs 4) and o
(the worst-case answer at four sizes). What each row measures: bench/run.py's docstring."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from common import target, timed
from registry import row
from rows import Row, cost_row, skipped

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


@row("d", "d. source necessity: exact vs greedy")
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
            cover, te = timed(partial(solve_cover, m))
            greedy, tg = timed(partial(greedy_cover, m))
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
            cover, te = timed(partial(solve_cover, m))
            greedy, tg = timed(partial(greedy_cover, m))
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
# g: peak memory of a demo run
# ------------------------------------------------------------------------------------------------

def peak_rss(judge: str, tmp: Path) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of `aee run --dataset demo --judge JUDGE` in a fresh process."""
    from scale import measured_run  # bench/scale.py (this folder is on sys.path when run as a script)

    _, wall, peak_mb = measured_run(["run", "--dataset", "demo", "--judge", judge, "--no-progress"], tmp, judge, 900,
                                    f"run --judge {judge}")
    return peak_mb, wall


@row("g", "g. peak RSS of run --dataset demo: recorded vs offline judge")
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


@row("h", "h. scale: time and memory from 1,000 to 20,000 answers")
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
# j: aee collect at concurrency 1 vs 4
# ------------------------------------------------------------------------------------------------


@row("j", "j. aee collect wall time: concurrency 1 vs 4")
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
                report, seconds[workers] = timed(partial(collect, config))
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


# ------------------------------------------------------------------------------------------------
# o: the worst-case answer at a few sizes (bench/worst_case.py)
# ------------------------------------------------------------------------------------------------


@row("o", "o. the worst-case answer at four sizes")
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
