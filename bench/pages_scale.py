"""Every registry page's warm view on the over-time corpora (row t4, issue 35 item 5).

The corpora are bench/over_time_corpus.py's (the fake engines' controlled randomness, 9 engines x Q queries
x 2 repeats x W weekly waves, canonical records carrying their labels) run through `aee run --judge
recorded` in a fresh process. Each page of dashboard/pages_registry.PAGES is then run with
Streamlit's AppTest in its own fresh process, with the address asking for that size's dataset and
judge (`?dataset=over-time-<size>&judge=recorded`, the parameters every page reads): one cold run
(imports and empty caches included), then three warm runs in the same session; the row gives the
median warm server time. Pages that have nothing to show for this dataset (the study page's logs,
the conflicting-evidence probes) are timed as they render. Target: under 2 s warm at every size.

    python bench/pages_scale.py --sizes 1k,20k [--keep DIR]   # DIR keeps the built result sets;
                                                             # a size already built there is reused
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
PAGE_TARGET_S = 2.0
WARM_RUNS = 3

_PAGE = """
import sys, time
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=900)
at.query_params["dataset"] = sys.argv[2]
at.query_params["judge"] = "recorded"
times = []
for visit in range(1 + int(sys.argv[3])):
    t = time.perf_counter()
    at.run()
    times.append(time.perf_counter() - t)
    if at.exception:
        raise SystemExit("EXCEPTION " + str(at.exception[0].message)[:300])
try:
    shown = at.selectbox(key=sys.argv[4]).value if sys.argv[4] != "-" else "-"
except KeyError:
    shown = "(no-dataset-box)"
print("PAGE", shown, " ".join(str(x) for x in times))
import resource
print("MEM", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

# the dataset selectbox of each page that has one, to check the page opened the large dataset
DATASET_KEYS = {"scorecard.py": "scorecard_dataset", "inspector.py": "ins_dataset", "confidence.py": "confidence_dataset",
                "compare.py": "cmp_dataset", "audit.py": "audit_dataset", "conflict.py": "cf_dataset",
                "over_time.py": "over_time_dataset"}


def build(label: str, folder: Path) -> dict:
    """The over-time corpus of `label` through `aee run` in a fresh process, results under
    `folder`; reused (not rebuilt) when `folder` already holds a finished run of it."""
    import over_time_corpus  # bench/over_time_corpus.py (this folder is on sys.path)

    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "built.txt"
    if done.is_file():
        count, seconds = done.read_text().split()
        return {"label": label, "answers": int(count), "run_s": float(seconds), "reused": True}
    path, n = over_time_corpus.make_corpus(label, folder)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "run", "--dataset", f"over-time-{label}", "--path", str(path),
                    "--judge", "recorded", "--no-progress"], cwd=ROOT, env=env(folder), check=True, capture_output=True,
                   timeout=4 * 3600)
    run_s = time.perf_counter() - t
    done.write_text(f"{n} {run_s}\n")
    return {"label": label, "answers": n, "run_s": run_s, "reused": False}


def env(folder: Path) -> dict[str, str]:
    import over_time_corpus

    return {**over_time_corpus.corpus_env(folder), "AEE_STUDIES_DIR": str(folder / "studies"), "AEE_USER_DIR": str(folder / "user"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def time_page(script: str, dataset: str, folder: Path) -> dict:
    """One page in a fresh process: cold seconds, warm seconds (WARM_RUNS of them), or the error."""
    from dashboard.pages_registry import PAGES_DIR

    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", _PAGE, str(PAGES_DIR / script), dataset, str(WARM_RUNS),
                          DATASET_KEYS.get(script, "-")], cwd=ROOT, env=env(folder), capture_output=True, text=True,
                         timeout=3600)
    line = next((x for x in out.stdout.splitlines() if x.startswith("PAGE ")), None)
    if out.returncode or line is None:
        tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0][:300], "load": load}
    _, shown, *times = line.split()
    cold, *warm = (float(x) for x in times)
    mem = next((float(x.split()[1]) for x in out.stdout.splitlines() if x.startswith("MEM ")), float("nan"))
    return {"cold": cold, "warm": statistics.median(warm), "warm_all": warm, "shown": shown, "load": load, "rss_mb": mem}


def measure_pages(label: str, folder: Path) -> dict[str, dict]:
    """{page script: times} for every registry page on the built corpus of `label`."""
    from dashboard.pages_registry import PAGES

    return {p.script: time_page(p.script, f"over-time-{label}", folder) for p in PAGES}


def rows(sizes: tuple[str, ...], built: dict[str, dict], pages: dict[str, dict[str, dict]],
         cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list:
    """Rows t4.<page>: the first size's warm view vs the last size's, per page."""
    from dashboard.pages_registry import PAGES

    small, large = sizes[0], sizes[-1]
    out = []
    for p in PAGES:
        name = f"t4. page {p.url_path} warm view: {small} vs {large} answers"
        a, b = pages[small][p.script], pages[large][p.script]
        if "error" in a or "error" in b:
            out.append(skipped(name, f"the page failed: {a.get('error') or b.get('error')}"))
            continue
        over = [s for s, r in ((small, a), (large, b)) if r["warm"] >= PAGE_TARGET_S]
        verdict = (f"OVER the {PAGE_TARGET_S:g} s target at {' and '.join(dict.fromkeys(over))}" if over
                   else f"under the {PAGE_TARGET_S:g} s target at both sizes")
        out.append(cost_row(name, a["warm"], b["warm"], "s",
                            f"{verdict}; AppTest server time, median of "
                            f"{WARM_RUNS} warm runs after a cold one ({a['cold']:.2f} s and {b['cold']:.2f} s cold); "
                            f"?dataset=over-time-<size>&judge=recorded, {built[small]['answers']:,} vs "
                            f"{built[large]['answers']:,} answers; load average {a['load']:.1f} and {b['load']:.1f}"))
    return out


def bench_pages_scale(quick: bool, cost_row: Callable[..., Any], skipped: Callable[..., Any],
                      sizes: tuple[str, ...] | None = None, keep: Path | None = None) -> list:
    """Rows t4.<page> (module docstring). --quick: one skipped row (13 pages x 2 fresh processes
    take minutes on a loaded 2-core machine; the pages' own tests run them on small results)."""
    if quick and sizes is None:
        return [skipped("t4. every page's warm view on the over-time corpora",
                        "full sizes only (python bench/pages_scale.py --sizes tiny,1k for a small run)")]
    sizes = sizes or ("1k", "20k")
    with tempfile.TemporaryDirectory(prefix="aee-pages-scale-") as tmp:
        base = keep or Path(tmp)
        built, pages = {}, {}
        for label in dict.fromkeys(sizes):
            built[label] = build(label, base / label)
            pages[label] = measure_pages(label, base / label)
    return rows(sizes, built, pages, cost_row, skipped)


def table(sizes: tuple[str, ...], built: dict[str, dict], pages: dict[str, dict[str, dict]]) -> str:
    """Markdown: one line per page, cold and warm seconds at every size."""
    from dashboard.pages_registry import PAGES

    head = "| page | " + " | ".join(f"{s} cold | {s} warm" for s in sizes) + " | under 2 s warm | dataset box shows |"
    lines = [head, "|---|" + "---:|---:|" * len(sizes) + "---|---|"]
    for p in PAGES:
        cells, ok = [], True
        for s in sizes:
            r = pages[s][p.script]
            if "error" in r:
                cells += ["failed", r["error"][:80].replace("|", "/")]
                ok = False
            else:
                cells += [f"{r['cold']:.2f}", f"{r['warm']:.2f}"]
                ok = ok and r["warm"] < PAGE_TARGET_S
        shown = ", ".join(sorted({pages[s][p.script].get("shown", "?") for s in sizes}))
        lines.append(f"| {p.title} (`{p.url_path}`) | " + " | ".join(cells) + f" | {'yes' if ok else 'NO'} | {shown} |")
    runs = ", ".join(f"{s}: {built[s]['answers']:,} answers, aee run {built[s]['run_s']:.0f} s"
                     + (" (reused)" if built[s]["reused"] else "") for s in sizes)
    return "\n".join(lines) + f"\n\n{runs}\n"


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description="every page's warm view on the over-time corpora")
    parser.add_argument("--sizes", default="1k,20k", help="comma-separated: tiny, 1k, 20k, 140k (first = baseline)")
    parser.add_argument("--keep", help="folder that keeps (and reuses) the built result sets")
    parser.add_argument("--build-only", action="store_true", help="build the sizes, time no page")
    args = parser.parse_args()
    chosen = tuple(s.strip() for s in args.sizes.split(","))
    from rows import cost_row, skipped
    from table import text_table

    keep_dir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="aee-pages-scale-"))
    built_sizes, timed = {}, {}
    for size in dict.fromkeys(chosen):
        built_sizes[size] = build(size, keep_dir / size)
        print(f"built {size}: {built_sizes[size]}", flush=True)
        if not args.build_only:
            timed[size] = measure_pages(size, keep_dir / size)
            for script, r in timed[size].items():
                print(f"  {size} {script}: {r}", flush=True)
    if not args.build_only:
        print(text_table(rows(chosen, built_sizes, timed, cost_row, skipped)))
        print(table(chosen, built_sizes, timed))
