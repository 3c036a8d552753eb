"""How long the answer inspector takes to switch answers (server-side script time).

Runs pages/inspector.py under streamlit's AppTest against the results in AEE_RESULTS_DIR (default
data/results), opens each dataset (the first open pays for loading its Parquet), then switches
between answers and toggles the scoring options, and prints the timings. The target is < 0.5 s
per answer switch once the dataset is loaded.

    .venv/bin/python bench/inspector_timing.py [--answers 20] [--dataset NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard import data

ROOT = Path(__file__).resolve().parent.parent

PAGE = str(ROOT / "pages" / "inspector.py")
TARGET = 0.5


def _run(at: AppTest) -> tuple[float, float]:
    """(wall time of the AppTest run, time measured inside the page script)."""
    start = time.perf_counter()
    at.run()
    wall = time.perf_counter() - start
    if at.exception:
        raise SystemExit(f"the page raised: {at.exception[0].message}")
    return wall, float(at.session_state["ins_server_seconds"])


def _summary(label: str, samples: list[tuple[float, float]]) -> str:
    wall = [w for w, _ in samples]
    script = [s for _, s in samples]
    return (f"  {label:<28} n={len(samples):>3}  script median {statistics.median(script):.3f} s, "
            f"max {max(script):.3f} s | AppTest round trip median {statistics.median(wall):.3f} s, max {max(wall):.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20, help="answers to switch through per dataset")
    parser.add_argument("--dataset", action="append", help="dataset(s) to time (default: all with results)")
    args = parser.parse_args(argv)

    datasets = args.dataset or data.datasets()
    if not datasets:
        print(f"no results under {data.results_root()}; run `python -m pipeline run --dataset demo` first")
        return 1
    print(f"results: {data.results_root()}")
    worst = 0.0
    at = AppTest.from_file(PAGE, default_timeout=120)
    first = _run(at)
    print(f"first page run (imports, first dataset load): script {first[1]:.3f} s, round trip {first[0]:.3f} s")
    for dataset in datasets:
        for judge in data.judges(dataset):
            at.selectbox(key="ins_dataset").set_value(dataset)
            open_time = _run(at)
            at.selectbox(key="ins_judge").set_value(judge)
            open_judge = _run(at)
            index = data.answer_index(dataset, judge)
            print(f"{dataset} / {judge}: {len(index)} answers; open dataset: script {open_time[1]:.3f} s, "
                  f"open judge: script {open_judge[1]:.3f} s")
            pairs = index[["query", "engine"]].drop_duplicates().head(args.answers).itertuples(index=False)
            switches = []
            for query, engine in pairs:
                at.selectbox(key="ins_query").set_value(query)
                at.run()  # the engine list depends on the query
                if engine in at.selectbox(key="ins_engine").options:
                    at.selectbox(key="ins_engine").set_value(engine)
                switches.append(_run(at))
            revisit = []
            for query, engine in index[["query", "engine"]].drop_duplicates().head(args.answers).itertuples(index=False):
                at.selectbox(key="ins_query").set_value(query)
                at.run()
                if engine in at.selectbox(key="ins_engine").options:
                    at.selectbox(key="ins_engine").set_value(engine)
                revisit.append(_run(at))
            toggles = []
            for mode, necessity in (("strict", "greedy"), ("strict", "bipartite"), ("parity", None), ("strict", "exact")):
                if at.radio(key="ins_mode").value != mode:
                    at.radio(key="ins_mode").set_value(mode)
                    toggles.append(_run(at))
                if necessity is not None:
                    at.radio(key="ins_necessity").set_value(necessity)
                    toggles.append(_run(at))
            print(_summary("switch answer (first visit)", switches))
            print(_summary("switch answer (revisit)", revisit))
            print(_summary("toggle rules / necessity", toggles))
            worst = max(worst, *(s for _, s in switches + revisit + toggles))
    verdict = "OK" if worst < TARGET else "SLOW"
    print(f"worst script time after load: {worst:.3f} s (target < {TARGET} s): {verdict}")
    return 0 if worst < TARGET else 2


if __name__ == "__main__":
    raise SystemExit(main())
