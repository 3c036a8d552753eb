"""The corrected scorecard's time per new label on a built result set (issue 43): `ppi_scorecard` in
fresh processes, each as the Scorecard page's first computation after a label changes, with the
process's peak resident memory. Optionally compares the rows with a JSON kept from an earlier run
(within 1e-9), which is how a change to the path is shown to give the same numbers.

    python bench/ppi_scorecard_time.py --results DIR --dataset over-time-140k [--cache DIR]
        [--runs 3] [--save rows.json] [--compare rows.json]

The set needs a labelled audit sample (`aee audit sample`, then labels). The first run may compute
the stored population (`pipeline.audit.ppi_population`) when the draw did not; it is reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import json, resource, sys, time
from pipeline.audit.scorecard import ppi_scorecard
t = time.perf_counter()
out = ppi_scorecard(sys.argv[1], sys.argv[2])
took = time.perf_counter() - t
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        json.dump(out, f)
print(json.dumps({"seconds": took, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "corrected": sum(1 for r in out["rows"] if r.get("ppi") is not None)}))
"""


def _differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= 1e-9 * max(1.0, abs(a)) else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="the results folder (AEE_RESULTS_DIR)")
    parser.add_argument("--cache", help="the cache folder (AEE_CACHE_DIR) holding the stored population")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--judge", default="recorded")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--save", help="write the last run's scorecard JSON here")
    parser.add_argument("--compare", help="a scorecard JSON to compare the last run's rows with")
    args = parser.parse_args()
    env = {**os.environ, "AEE_RESULTS_DIR": args.results, "PYTHONPATH": str(ROOT)}
    if args.cache:
        env["AEE_CACHE_DIR"] = args.cache
    rows = Path(args.save) if args.save else Path(args.results) / ".ppi_scorecard_time.json"
    times = []
    for run in range(args.runs):
        proc = subprocess.run([sys.executable, "-c", _CHILD, args.dataset, args.judge, str(rows)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        times.append(got["seconds"])
        print(f"run {run + 1}: {got['seconds']:.2f} s, peak {got['peak_mb']:.0f} MB, {got['corrected']} corrected rows",
              flush=True)
    print(f"fastest {min(times):.2f} s, slowest {max(times):.2f} s over {len(times)} fresh processes")
    if args.compare:
        found = _differences(json.loads(rows.read_text()), json.loads(Path(args.compare).read_text()))
        print(f"rows against {args.compare}: {len(found)} difference(s)")
        for line in found[:20]:
            print("  " + line)
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
