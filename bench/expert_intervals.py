"""Does a judge's scorecard interval hold what ExpertQA's experts found? Cell by cell, on one split.

    .venv/bin/python bench/expert_intervals.py [--judge offline] [--split rand_val] [--json]

Runs the split twice through the pipeline (`run_dataset`), once with the experts' labels (the
`human` judge) and once with the judge, into a temporary results folder (the judge cache makes a
rerun fast), and compares, for every engine, the two metrics the experts' labels define
(unsupported statements, citation accuracy; strict rules, all queries): does the judge-only 95%
bootstrap interval hold the experts' value? A cell the judge cannot score (n/a with its judged
share, e.g. sources without text) is reported as such, not counted as a hit or a miss.
The numbers and what they say: docs/metrics/unknown.md, docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

METRICS = ("unsupported_statements", "citation_accuracy")


def cells(split_file: Path, judge: str, results: Path) -> list[dict[str, Any]]:
    """One row per (metric, engine): the experts' value, the judge's value and interval, whether
    the interval holds the experts' value (None when either side has no value), and why not."""
    from pipeline.runner import run_dataset

    summaries = {}
    for who in ("human", judge):
        result = run_dataset("expert-intervals", split_file, importer="expertqa", judge_name=who, progress=False,
                             root=results)
        part = result.summary
        summaries[who] = part[(part["mode"] == "strict") & (part["necessity"] == "exact") & (part["query_type"] == "all")]
    rows = []
    for metric in METRICS:
        experts = summaries["human"][summaries["human"]["metric"] == metric].set_index("engine")
        ours = summaries[judge][summaries[judge]["metric"] == metric].set_index("engine")
        for engine in experts.index:
            truth, got = _num(experts.at[engine, "value"]), ours.loc[engine] if engine in ours.index else None
            value = _num(got["value"]) if got is not None else None
            low, high = (_num(got["ci_low"]), _num(got["ci_high"])) if got is not None else (None, None)
            holds = None if truth is None or value is None or low is None or high is None else low - 1e-9 <= truth <= high + 1e-9
            why = ""
            if value is None and got is not None:
                why = str(got.get("reason") or "") or "no value"
            rows.append({"metric": metric, "engine": engine, "experts": truth, "judge": value, "ci_low": low,
                         "ci_high": high, "judged_share": _num(got.get("judged_share")) if got is not None else None,
                         "holds": holds, "why_no_value": why})
    return rows


def _num(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="offline")
    parser.add_argument("--split", default="rand_val", help="ExpertQA split (rand_val is the held-out one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from pipeline.storage.paths import expertqa_dir

    folder = expertqa_dir()
    split_file = folder / f"{args.split}.jsonl" if folder else None
    if split_file is None or not split_file.is_file():
        raise SystemExit(f"error: ExpertQA's {args.split}.jsonl not found (set EXPERTQA_DIR; see docs/data/expertqa.md)")
    with tempfile.TemporaryDirectory(prefix="aee-expert-intervals-") as tmp:
        rows = cells(split_file, args.judge, Path(tmp))
    scored = [r for r in rows if r["holds"] is not None]
    held = sum(1 for r in scored if r["holds"])
    if args.json:
        print(json.dumps({"judge": args.judge, "split": args.split, "cells": rows, "held": held, "scored": len(scored),
                          "not_scorable": len(rows) - len(scored)}, indent=2))
        return
    fmt = lambda x: "n/a" if x is None else f"{x:6.2f}"  # noqa: E731
    print(f"judge {args.judge} vs ExpertQA's experts, {args.split}, strict rules, all queries (percent)")
    for r in rows:
        interval = f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]" if r["judge"] is not None else ""
        verdict = {True: "holds", False: "misses", None: "n/a: " + (r["why_no_value"] or "experts have no value")}[r["holds"]]
        share = f"judged {r['judged_share']:.0%}" if r["judged_share"] is not None else ""
        print(f"  {r['metric']:<24} {r['engine']:<22} experts {fmt(r['experts'])}  judge {fmt(r['judge'])} "
              f"{interval:<18} {share:<12} {verdict}")
    print(f"the judge-only interval holds the experts' value in {held} of {len(scored)} scorable cells; "
          f"{len(rows) - len(scored)} cell(s) not scorable")


if __name__ == "__main__":
    main()
