"""Benchmark rows of the dashboard's pages: f (the scorecard's server time, cold vs warm), n (every page
in a real browser) and t (audits over time: the pipeline and every page at 1k vs 20k answers,
bench/over_time.py and bench/pages_scale.py). What each row measures: bench/run.py's docstring."""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from common import ROOT, environ, timed
from registry import row
from rows import Row, cost_row, skipped

# ------------------------------------------------------------------------------------------------
# f: scorecard render time
# ------------------------------------------------------------------------------------------------


def _metric_rows(root: Path, name: str) -> int:
    import pyarrow.parquet as pq

    from pipeline.storage.store import list_judges, table_path

    rows = 0
    for judge in list_judges(name):
        path = table_path(name, "metrics", judge, root)
        if path.exists():
            rows = max(rows, pq.ParquetFile(path).metadata.num_rows)
    return rows


@row("f", "f. scorecard page server time: cold vs warm")
def bench_scorecard(quick: bool) -> list[Row]:
    name = "f. scorecard page server time: cold vs warm"
    page = ROOT / "pages" / "scorecard.py"
    if not page.is_file():
        return [skipped(name, "pages/scorecard.py does not exist yet")]
    from pipeline.runner import run_dataset
    from pipeline.storage.paths import expertqa_dir

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        with environ(AEE_RESULTS_DIR=str(root), AEE_CACHE_DIR=str(Path(tmp) / "cache")):
            if not quick and expertqa_dir() is not None:
                dataset = "expertqa"
                built, build_s = timed(lambda: run_dataset("expertqa", root=root, progress=False))
                how = f"ExpertQA human labels, {built.answers} answers, built with run_dataset in {build_s:.1f} s"
            else:
                dataset = "demo"
                built, build_s = timed(lambda: run_dataset("demo", root=root, progress=False))
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
    _, cold = timed(at.run)
    if at.exception:
        raise RuntimeError(f"scorecard raised: {at.exception[0].value}")
    picked = at.selectbox(key="scorecard_dataset").value
    if picked != dataset:
        raise RuntimeError(f"scorecard opened {picked!r}, not {dataset!r}")
    warm = []
    for _ in range(runs):
        _, s = timed(at.run)
        warm.append(s)
    return cold, warm


@row("t", "t. audits over time: pipeline and every page, 1k vs 20k answers")
def bench_over_time(quick: bool) -> list[Row]:
    import first_views  # bench/first_views.py: t5, the pages' records (issue 43)
    import over_time  # bench/over_time.py: t1-t3, and t4 via bench/pages_scale.py

    return over_time.bench_over_time(quick, cost_row, Row) + first_views.bench_first_views(quick, cost_row, skipped)


# ------------------------------------------------------------------------------------------------
# n: page times in a real browser
# ------------------------------------------------------------------------------------------------

PAGE_TARGET_S = 2.0


@row("n", "n. page time in a browser (server + render): cold vs warm")
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
    from pipeline.storage.paths import expertqa_dir

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.update({"AEE_RESULTS_DIR": str(Path(tmp) / "results"), "AEE_CACHE_DIR": str(Path(tmp) / "cache"),
                    "AEE_STUDIES_DIR": str(Path(tmp) / "studies"), "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
        with environ(AEE_RESULTS_DIR=env["AEE_RESULTS_DIR"], AEE_CACHE_DIR=env["AEE_CACHE_DIR"]):
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
