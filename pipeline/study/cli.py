"""`python -m pipeline study ...`: reproduce the paper's tests, simulate a log, analyse a log.

`pipeline.cli` calls `register(subparsers)`; each subcommand sets `func(args) -> int`.
Bad input ends with exit code 2 and a single line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from pipeline import study


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("study", help="usability-study statistics (Tables 2-5 of the paper)")
    sub = parser.add_subparsers(dest="study_command", required=True)

    rep = sub.add_parser("reproduce", help="recompute the published t tests from the printed summary statistics")
    rep.add_argument("--json", action="store_true", help="machine-readable output")
    rep.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01, as in the paper)")
    rep.set_defaults(func=cmd_reproduce)

    sim = sub.add_parser("simulate", help="write a count-level log simulated from the published summary statistics")
    sim.add_argument("--out", required=True, type=Path, help="output .csv or .parquet")
    sim.add_argument("--seed", type=int, default=0)
    sim.set_defaults(func=cmd_simulate)

    ana = sub.add_parser("analyze", help="descriptive tables and tests for a study log (.csv or .parquet)")
    ana.add_argument("log", type=Path)
    ana.add_argument("--json", action="store_true")
    ana.add_argument("--alpha", type=float, default=0.01)
    ana.set_defaults(func=cmd_analyze)
    return parser


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _check_alpha(alpha: float) -> str | None:
    return None if 0 < alpha < 1 else f"--alpha must be between 0 and 1, got {alpha}"


def _clean(value):
    """JSON has no NaN: write null instead (the project's 'not computable' convention)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def cmd_reproduce(args: argparse.Namespace) -> int:
    if (msg := _check_alpha(args.alpha)):
        return _fail(msg)
    try:
        result = study.reproduce(alpha=args.alpha)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps(_clean(result), indent=2))
        return 0
    print(f"Reproduction ({result['label']}); alpha = {result['alpha']}")
    print(f"Method: {result['method']}")
    inf4, inf5 = result["n_inference"]["table4"], result["n_inference"]["table5"]
    print("Inferred sample sizes (queries): " + ", ".join(f"{k} {v}" for k, v in result["inferred_n"].items()))
    print(f"  Table 4: {inf4['constraints_satisfied']}/{inf4['constraints_total']} printed t and p values fit within rounding at this n; "
          f"{inf4['tuples_tied']} candidate(s) on the grid do as well; "
          f"t alone, at Google n = {inf4['n']['Google']}: {inf4['t_alone_ranges_at_inferred_google_n']}")
    print(f"  Table 5: pairs (aligned, disaligned) fitting both p values within rounding: {inf5['pairs_fitting']} "
          f"(aligned {inf5['ranges']['aligned']}, disaligned {inf5['ranges']['disaligned']})")
    print()
    header = (f"{'table':8} {'comparison':30} {'measure':8} {'n1':>4} {'n2':>4} {'t printed':>9} {'t recomp':>9} "
              f"{'p printed':>10} {'p recomp':>10} {'p ratio':>8} {'p Holm':>9} sig")
    print(header)
    for t in result["tests"]:
        tp = "" if t["printed_t"] is None else f"{t['printed_t']:.2f}"
        print(f"{t['table']:8} {t['comparison']:30} {t['measure']:8} {t['n1']:>4} {t['n2']:>4} {tp:>9} {t['recomputed_t']:>9.3f} "
              f"{t['printed_p']:>10.3g} {t['recomputed_p']:>10.3g} {t['p_ratio']:>8.3g} {t['recomputed_p_holm']:>9.3g} "
              f"{'yes' if t['significant_holm'] else 'no'}")
    print()
    print(f"Flags ({len(result['flags'])}):")
    for f in result["flags"]:
        print(f"  [{f['severity']}] {f['table']}: {f['item']}: {f['reason']}")
    for note in result["notes"]:
        print(f"Note: {note}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.out.suffix.lower() not in (".csv", ".parquet", ".pq"):
        return _fail(f"--out must end in .csv or .parquet, got {args.out.name}")
    try:
        frame = study.simulate_counts(seed=args.seed)
        study.write_log(frame, args.out)
    except (FileNotFoundError, OSError, study.StudyLogError) as exc:
        return _fail(str(exc))
    print(f"wrote {len(frame)} rows ({study.SIMULATED_LABEL}, seed {args.seed}) to {args.out}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    if (msg := _check_alpha(args.alpha)):
        return _fail(msg)
    try:
        log = study.load_log(args.log)
    except study.StudyLogError as exc:
        return _fail(f"{args.log}: {exc}")
    counts = log.counts
    desc = study.descriptive_table(counts)
    tests = {c: study.test_table(counts, c, alpha=args.alpha) for c in study.COMPARISONS}
    if args.json:
        out = {
            "log": str(args.log), "level": log.level, "rows": len(counts),
            "descriptive": {f"{m} | {g}": col for (m, g), col in desc.to_dict().items()},
            "sources": {f"{m} | {g}": col for (m, g), col in study.sources_table(counts).to_dict().items()},
            "tests": {c: t.to_dict("records") for c, t in tests.items()},
        }
        print(json.dumps(_clean(out), indent=2))
        return 0
    print(f"{args.log} ({log.level} level, {len(counts)} participant x query rows)")
    print(desc.round(2).to_string())
    for comp, table in tests.items():
        print(f"\n{study.COMPARISONS[comp]} (Holm over {len(table)} tests, alpha {args.alpha})")
        if table.empty:
            print("  no data")
            continue
        cols = ["comparison", "measure", "n1", "n2", "student_t", "student_p", "student_p_holm", "welch_p", "mwu_p", "cohens_d", "significant_holm"]
        print(table[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return 0
