"""Cold and warm views of a few pages under two checkouts of the code, side by side in one run.

For a change to what a page reads at open (issue 43: first views in seconds), the load of a shared
machine moves absolute times by several seconds from minute to minute, so the two versions are timed
interleaved: for each round, size and page, a fresh process runs the page under checkout A, then one
under checkout B, on the same result set (built by bench/first_views.py, which `--keep` keeps). Each
process is a server's first visitor (imports and empty caches) followed by three warm views
(bench/pages_scale.py's page script); the table gives the median over the rounds, with the load average
at the start and end.

    python bench/first_views_ab.py --before /tmp/base --after . --keep /tmp/i43b-corpus \\
        --sizes 1k,20k --pages compare.py,engines.py --rounds 3 [--set with]

`--before` and `--after` are checkouts (folders holding pipeline/, dashboard/ and pages/); each page runs
from its own checkout's pages/ with that checkout first on PYTHONPATH. `--set` names the folder
under <keep>/<size>/ holding the results (first_views.py's `with`: the set with the pages' records).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one(code: Path, page: str, dataset: str, folder: Path) -> dict:
    """One page in a fresh process under `code`: cold, warm (median of three) seconds and peak MB."""
    sys.path.insert(0, str(HERE))
    import over_time_corpus
    import pages_scale

    env = {**over_time_corpus.corpus_env(folder), "PYTHONPATH": str(code), "AEE_STUDIES_DIR": str(folder / "studies"),
           "AEE_USER_DIR": str(folder / "user"), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    out = subprocess.run([sys.executable, "-c", pages_scale._PAGE, str(code / "pages" / page), dataset,
                          str(pages_scale.WARM_RUNS), "-"], cwd=code, env=env, capture_output=True, text=True, timeout=3600)
    line = next((x for x in out.stdout.splitlines() if x.startswith("PAGE ")), None)
    if out.returncode or line is None:
        return {"error": ((out.stdout + out.stderr).strip().splitlines() or ["no output"])[-1][:200]}
    _, _, *times = line.split()
    cold, *warm = (float(x) for x in times)
    mem = next((float(x.split()[1]) for x in out.stdout.splitlines() if x.startswith("MEM ")), float("nan"))
    return {"cold": cold, "warm": statistics.median(warm), "mb": mem}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--keep", required=True, help="bench/first_views.py's --keep folder")
    parser.add_argument("--sizes", default="1k,20k")
    parser.add_argument("--pages", default="compare.py,engines.py")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", default="with")
    args = parser.parse_args()
    codes = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    sizes, pages = args.sizes.split(","), args.pages.split(",")
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    got: dict[tuple, list[dict]] = {}
    for r in range(args.rounds):
        for size in sizes:
            folder = Path(args.keep) / size / args.set
            for page in pages:
                for which, code in codes.items():
                    result = one(code, page, f"over-time-{size}", folder)
                    got.setdefault((size, page, which), []).append(result)
                    print(f"round {r + 1} {size} {page} {which}: {result} (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"load average at the end: {os.getloadavg()}")
    print("\n| page | size | cold before | cold after | warm before | warm after | MB before | MB after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        for page in pages:
            cells = []
            for key, digits in (("cold", 2), ("warm", 2), ("mb", 0)):
                for which in codes:
                    ok = [x[key] for x in got[(size, page, which)] if "error" not in x]
                    cells.append(f"{statistics.median(ok):.{digits}f}" if ok else "failed")
            print(f"| {page} | {size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
