"""Server-side render time of the Scorecard page on the largest results on disk.

Runs pages/scorecard.py under Streamlit's AppTest (the real script, no browser), once to warm
the caches, then several times per interaction, and prints the median and worst time per run.
Also times the uncached field-filter recompute (pipeline.aggregate.summarize) and the exports.

    .venv/bin/python bench/dashboard_timing.py [--dataset NAME] [--runs 5]

Target: under 1 s per rerun after warm-up for the full ExpertQA results.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _largest_dataset() -> str | None:
    from pipeline.storage.store import list_datasets, list_judges, table_path

    best, size = None, -1
    for name in list_datasets():
        judges = list_judges(name)
        if not judges:
            continue
        path = table_path(name, "metrics", judges[0])
        rows = 0
        if path.exists():
            import pyarrow.parquet as pq

            rows = pq.ParquetFile(path).metadata.num_rows
        if rows > size:
            best, size = name, rows
    return best


def _time(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _report(label: str, times: list[float]) -> None:
    print(f"{label:<52} median {statistics.median(times) * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms   (n={len(times)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="dataset to render (default: the one with the most metric rows)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from streamlit.testing.v1 import AppTest

    dataset = args.dataset or _largest_dataset()
    if dataset is None:
        print("no results on disk: run `python -m pipeline run --dataset demo` (or expertqa) first")
        return 1
    from pipeline.storage.store import list_judges, read_table, table_path

    judge = list_judges(dataset)[0]
    metrics = read_table(table_path(dataset, "metrics", judge))
    print(f"dataset {dataset}, judge {judge}: {metrics['answer_id'].nunique()} answers, "
          f"{metrics['engine'].nunique()} engines, {len(metrics)} metric rows")

    at = AppTest.from_file(str(ROOT / "pages" / "scorecard.py"), default_timeout=120)
    at.session_state["shared_dataset"] = dataset
    t = time.perf_counter()
    at.run()
    cold = time.perf_counter() - t
    assert not at.exception, at.exception
    assert at.selectbox(key="scorecard_dataset").value == dataset
    print(f"{'first run (cold caches, imports done)':<52} {cold * 1000:7.1f} ms")

    _report("rerun, default view", _time(at.run, args.runs))

    def flip() -> None:
        radio = at.radio(key="scorecard_mode")
        radio.set_value("parity" if radio.value == "strict" else "strict").run()

    _report("switch strict <-> parity", _time(flip, args.runs))
    at.radio(key="scorecard_mode").set_value("strict").run()

    fields = at.multiselect(key="scorecard_fields").options
    if fields:
        first = [fields[0]]
        t = time.perf_counter()
        at.multiselect(key="scorecard_fields").set_value(first).run()
        print(f"{'field filter, first time (summarize, uncached)':<52} {(time.perf_counter() - t) * 1000:7.1f} ms")
        _report("field filter, rerun (cached)", _time(at.run, args.runs))
        at.multiselect(key="scorecard_fields").set_value([]).run()

    at.toggle(key="scorecard_published").set_value(True).run()
    _report("rerun with published comparison", _time(at.run, args.runs))
    at.toggle(key="scorecard_published").set_value(False).run()

    # exports are generated on click; time them directly
    from dashboard import charts, data
    from dashboard.render import scorecard_cells

    summary = data.summary(dataset, judge, "strict", "exact")
    cells = scorecard_cells(summary, "all")
    _report("export SVG", _time(lambda: charts.scorecard_svg(cells, "t"), args.runs))
    _report("export PNG", _time(lambda: charts.scorecard_png(cells, "t"), args.runs))
    _report("export LaTeX", _time(lambda: charts.scorecard_latex(cells, "t"), args.runs))
    _report("export Parquet", _time(lambda: charts.parquet_bytes(cells), args.runs))
    from pipeline.aggregate import summarize

    part = metrics[(metrics["mode"] == "strict") & (metrics["necessity"] == "exact")]
    _report("summarize() on all answers, one configuration", _time(lambda: summarize(part), 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
