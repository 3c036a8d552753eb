"""Bench rows for audits over time (pipeline/consistency/, pages/over_time.py).

Corpora come from the fake engines' controlled randomness (pipeline/testing/fake_variation.py): 9
engines with their own source pools, rewording rates and citation accuracies answer Q queries twice
(two repeats, an hour apart) in W weekly waves, as canonical records carrying their labels (the
`recorded` judge), so the judge costs nothing and the rows measure the pipeline and the page:

    1k   = 9 engines x  28 queries x 2 repeats x  2 waves =   1,008 answers
    20k  = 9 engines x 139 queries x 2 repeats x  8 waves =  20,016 answers
    140k = 9 engines x 300 queries x 2 repeats x 26 waves = 140,400 answers (half a year of weekly audits
           asked twice, or a year asked once: the same count)

Rows:
  t1  `aee run --judge recorded` (import, score, tables, summary and the over-time summaries) in a
      fresh process, small vs large: time per answer, so 1.0 = linear.
  t2  the over-time summaries alone (pipeline.consistency.summary.build on the finished result set),
      small vs large, time per answer.
  t3  the Over time page's warm view (Streamlit AppTest, server time of a second run in the same
      session), small vs large; target under 2 s at every size.
  t4  every page of the registry the same way on the same result sets (bench/pages_scale.py).

`python bench/over_time.py --replicated` (rows t2r, t3r): the 1k corpus through `aee run`, its tables
copied to 144,144 answers in a result set, then the summaries and the page timed at that size.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from over_time_corpus import ENGINES, REPEATS, ROOT, SHAPES, engines, make_corpus  # noqa: F401 - bench/over_time_corpus.py
from over_time_corpus import corpus_env as _env

_PAGE = """
import sys, time
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=600)
at.query_params["dataset"] = sys.argv[2]
times = []
for visit in range(4):
    t = time.perf_counter()
    at.run()
    times.append(time.perf_counter() - t)
    if at.exception:
        raise SystemExit(str(at.exception))
print("PAGE", times[0], sorted(times[1:])[1])
"""

_BUILD = """
import sys, time
from pipeline.consistency.summary import build
from pipeline.storage.store import result_set
t = time.perf_counter()
build(result_set(sys.argv[1]), "recorded", meaning="lexical")
print("BUILD", time.perf_counter() - t)
"""


def measure(label: str, tmp: Path, page: bool = True) -> dict:
    """One size: corpus, whole run, summaries alone, page cold and warm (unless `page` is False)."""
    path, n = make_corpus(label, tmp)
    env = _env(tmp)
    name = f"over-time-{label}"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "run", "--dataset", name, "--path", str(path), "--judge", "recorded",
                    "--no-progress"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=4 * 3600)
    run_s = time.perf_counter() - t
    out = subprocess.run([sys.executable, "-c", _BUILD, name], cwd=ROOT, env=env, check=True, capture_output=True, text=True,
                         timeout=3600).stdout
    build_s = float(out.split("BUILD")[1].split()[0])
    cold = warm = float("nan")
    if page:
        out = subprocess.run([sys.executable, "-c", _PAGE, str(ROOT / "pages" / "over_time.py"), name], cwd=ROOT, env=env,
                             check=True, capture_output=True, text=True, timeout=3600).stdout
        cold, warm = (float(x) for x in out.split("PAGE")[1].split()[:2])
    return {"label": label, "answers": n, "run_s": run_s, "build_s": build_s, "page_cold_s": cold, "page_warm_s": warm}


def bench_over_time(quick: bool, cost_row: Callable[..., Any], Row: Callable[..., Any], sizes: tuple[str, ...] | None = None) -> list:
    """Rows t1..t4 (see the module docstring); `cost_row` is run.py's. --quick: one skipped row."""
    if quick and sizes is None:
        # three fresh processes take half a minute on a loaded 2-core machine, too much of the quick
        # run's budget; the code path is tested by tests/pipeline/consistency/test_compare_over_time.py and the page tests
        return [Row("t. audits over time", None, None, None, "", "SKIPPED: full sizes only (bench/over_time.py; "
                    "python bench/over_time.py --sizes tiny,1k for a small run)")]
    sizes = sizes or ("1k", "20k")
    import pages_scale  # bench/pages_scale.py: rows t4, every registry page on the same corpora

    with tempfile.TemporaryDirectory(prefix="aee-over-time-") as tmp:
        results: dict[str, dict] = {}
        pages: dict[str, dict[str, dict]] = {}
        for label in dict.fromkeys(sizes):
            folder = Path(tmp) / label
            folder.mkdir()
            results[label] = measure(label, folder, page=label != "tiny")
            if label != "tiny":  # every other page on the same result set (bench/pages_scale.py, rows t4)
                pages[label] = pages_scale.measure_pages(label, folder)
    small, large = results[sizes[0]], results[sizes[-1]]
    scale = large["answers"] / small["answers"]
    rows = []
    for key, what in (("run_s", "t1. aee run with over-time summaries"), ("build_s", "t2. over-time summaries alone")):
        per_small, per_large = small[key] / small["answers"] * 1000, large[key] / large["answers"] * 1000
        rows.append(cost_row(f"{what}: {sizes[0]} vs {sizes[-1]} answers", per_small, per_large, "s per 1k answers",
                             f"{small[key]:.1f} s for {small['answers']:,} answers vs {large[key]:.1f} s for {large['answers']:,} "
                             f"({scale:.1f}x the answers, {large[key] / small[key]:.1f}x the time); ratio 1 = linear, "
                             "above 1 = cheaper per answer at the larger size"))
    if "tiny" in sizes:
        return rows
    ok = all(r["page_warm_s"] < 2.0 for r in results.values())
    rows.append(cost_row(f"t3. Over time page, warm view: {sizes[0]} vs {sizes[-1]} answers", small["page_warm_s"],
                         large["page_warm_s"], "s",
                         f"AppTest server time, median of 3 warm runs after a cold one ({small['page_cold_s']:.2f} s and "
                         f"{large['page_cold_s']:.2f} s cold); target under 2 s warm at every size: {'met' if ok else 'NOT met'}"))
    built = {label: {"answers": r["answers"], "run_s": r["run_s"], "reused": False} for label, r in results.items()}
    return rows + pages_scale.rows(sizes, built, pages, cost_row, lambda name, why: Row(name, None, None, None, "", f"SKIPPED: {why}"))


# ---- 140k by replication: the summaries and the page at 140k answers without a 140k pipeline run ----

_REPLICATE = """
import json, sys, time
from datetime import datetime, timedelta
from pathlib import Path
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
from pipeline.consistency import summary as ot
from pipeline.storage.result_sets import NewGeneration
from pipeline.storage.store import dataset_dir, judge_dirname, result_set

src, name, q_copies, w_copies = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
base = result_set(src)
judge = "recorded"
jd = judge_dirname(judge)
answers = pq.read_table(base / "answers.parquet")
tables = {"sources.parquet": pq.read_table(base / "sources.parquet"),
          f"{jd}/statements.parquet": pq.read_table(base / jd / "statements.parquet"),
          f"{jd}/metrics.parquet": pq.read_table(base / jd / "metrics.parquet")}
metas = [json.loads(m) for m in answers["meta"].to_pylist()]
out = dataset_dir(name)
out.mkdir(parents=True, exist_ok=True)
gen = NewGeneration(out)
(gen.path / jd).mkdir(parents=True, exist_ok=True)
writers = {}
def put(rel, table):
    if rel not in writers:
        writers[rel] = pq.ParquetWriter(gen.path / rel, table.schema, compression="zstd")
    writers[rel].write_table(table)
n = 0
for qc in range(q_copies):
    for wc in range(w_copies):
        tag = pa.scalar(f"~{qc}~{wc}")
        new_meta = []
        for m in metas:
            m = dict(m)
            day = datetime.fromisoformat(m["wave"]) + timedelta(days=14 * wc)
            m["wave"] = day.date().isoformat()
            m["captured_at"] = (datetime.fromisoformat(m["captured_at"]) + timedelta(days=14 * wc)).isoformat()
            new_meta.append(json.dumps(m))
        a = answers.set_column(answers.schema.get_field_index("answer_id"), "answer_id",
                               pc.binary_join_element_wise(answers["answer_id"], tag, ""))
        a = a.set_column(a.schema.get_field_index("query"), "query",
                         pc.binary_join_element_wise(a["query"], pa.scalar(f" (set {qc})"), ""))
        a = a.set_column(a.schema.get_field_index("meta"), "meta", pa.array(new_meta, pa.string()))
        put("answers.parquet", a)
        n += len(a)
        for rel, t in tables.items():
            put(rel, t.set_column(t.schema.get_field_index("answer_id"), "answer_id",
                                  pc.binary_join_element_wise(t["answer_id"], tag, "")))
for w in writers.values():
    w.close()
for rel in (f"{jd}/summary.parquet", f"{jd}/manifest.json"):
    (gen.path / rel).write_bytes((base / rel).read_bytes())
t = time.perf_counter()
ot.write(gen.path, judge, "lexical")
build = time.perf_counter() - t
gen.publish()
print("REPLICATED", n, build)
"""


def replicated(tmp: Path, q_copies: int = 11, w_copies: int = 13) -> dict:
    """The 1k corpus through `aee run`, then its tables copied 11 x 13 times (queries renamed, waves
    shifted two weeks per copy: 308 queries x 26 waves x 9 engines x 2 repeats = 144,144 answers)
    into a result set; the over-time summaries built on it (timed) and the page measured. The
    pipeline itself is not run at this size: this measures the summaries and the page only."""
    small = measure("1k", tmp, page=True)
    env = _env(tmp)
    out = subprocess.run([sys.executable, "-c", _REPLICATE, "over-time-1k", "over-time-rep", str(q_copies), str(w_copies)],
                         cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=4 * 3600).stdout
    n, build_s = out.split("REPLICATED")[1].split()[:2]
    out = subprocess.run([sys.executable, "-c", _PAGE, str(ROOT / "pages" / "over_time.py"), "over-time-rep"], cwd=ROOT,
                         env=env, check=True, capture_output=True, text=True, timeout=3600).stdout
    cold, warm = (float(x) for x in out.split("PAGE")[1].split()[:2])
    return {"small": small, "answers": int(n), "build_s": float(build_s), "page_cold_s": cold, "page_warm_s": warm}


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description="over-time bench rows at chosen sizes")
    parser.add_argument("--sizes", default="1k,20k", help="comma-separated: 1k, 20k, 140k (first = baseline)")
    parser.add_argument("--replicated", action="store_true",
                        help="instead: 1k through the pipeline, its tables copied to 144,144 answers; summaries and page only")
    args = parser.parse_args()
    chosen = tuple(s.strip() for s in args.sizes.split(","))
    from rows import Row, cost_row
    from table import text_table

    if args.replicated:
        with tempfile.TemporaryDirectory(prefix="aee-over-time-rep-") as tmp:
            r = replicated(Path(tmp))
        small = r["small"]
        print(text_table([
            cost_row(f"t2r. over-time summaries alone: 1k vs {r['answers']:,} answers (replicated tables)",
                     small["build_s"] / small["answers"] * 1000, r["build_s"] / r["answers"] * 1000, "s per 1k answers",
                     f"{small['build_s']:.1f} s vs {r['build_s']:.1f} s ({r['answers'] / small['answers']:.0f}x the answers, "
                     f"{r['build_s'] / small['build_s']:.1f}x the time); the large set is the 1k run's tables copied"),
            cost_row(f"t3r. Over time page, warm view: 1k vs {r['answers']:,} answers (replicated tables)", small["page_warm_s"],
                     r["page_warm_s"], "s", f"AppTest, median of 3 warm runs ({small['page_cold_s']:.2f} s and "
                     f"{r['page_cold_s']:.2f} s cold); target under 2 s: {'met' if r['page_warm_s'] < 2 else 'NOT met'}")]))
    else:
        print(text_table(bench_over_time(False, cost_row, Row, chosen)))
