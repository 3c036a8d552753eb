"""`python -m pipeline judges ...`: list judges, measure a judge against expert labels.

    judges list
    judges evaluate --dataset expertqa|hagrid [--path DIR] --judge NAME [--split rand_val] [--json] [--no-save]

`register(subparsers)` adds the `judges` command to the main argparse parser; the handler is stored
as `func` on the parsed namespace and returns an exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.judges import JUDGES, JudgeError, get_judge

DATASETS = ("expertqa", "hagrid")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add `judges list` and `judges evaluate` to an argparse subparsers object."""
    p = subparsers.add_parser("judges", help="list judges; measure a judge against expert labels")
    sub = p.add_subparsers(dest="judges_command", required=True)
    lp = sub.add_parser("list", help="registered judges")
    lp.set_defaults(func=cmd_list)
    ep = sub.add_parser("evaluate", help="agreement of a judge with the human support labels of ExpertQA or HAGRID")
    ep.add_argument("--dataset", choices=DATASETS, default="expertqa")
    ep.add_argument("--path", type=Path, default=None,
                    help="folder or file (default: EXPERTQA_DIR / ../shared for expertqa; HAGRID_DIR / the download cache for hagrid)")
    ep.add_argument("--judge", required=True, help="registered judge name, e.g. offline")
    ep.add_argument("--split", default=None, help="only answers of this split (file stem), e.g. rand_val or dev")
    ep.add_argument("--json", action="store_true", help="print the report as JSON")
    ep.add_argument("--no-save", action="store_true", help="do not write the Parquet report")
    ep.set_defaults(func=cmd_evaluate)
    kp = sub.add_parser("check", help="run the behavioural check suite (data/judge_checks) against a judge")
    kp.add_argument("--judge", required=True, help="registered judge name, e.g. offline")
    kp.add_argument("--cases", type=Path, nargs="*", default=None, help="case files (default: every bundled file)")
    kp.add_argument("--kind", choices=("support", "relevance", "stance", "confidence"), help="only cases of this kind")
    kp.add_argument("--json", action="store_true", help="print the per-capability summary and failures as JSON")
    kp.add_argument("--no-save", action="store_true", help="do not write the results for the Judges page")
    kp.set_defaults(func=cmd_check)
    cp = sub.add_parser("calibrate", add_help=False,
                        help="refit the offline judge's support model on ExpertQA (see `judges calibrate --help`)")
    cp.set_defaults(func=cmd_calibrate, pass_through=True, rest=[])
    return p


def cmd_check(args: argparse.Namespace) -> int:
    from pipeline.judges.measure.checks import iter_failures, load_cases, run_checks, save_checks, summarize_checks

    cases = load_cases(args.cases)
    if args.kind:
        cases = [c for c in cases if c.kind == args.kind]
    if not cases:
        raise InputError("no check cases found", field="--cases")
    judge = get_judge(args.judge)
    t0 = time.perf_counter()
    results = run_checks(judge, cases)
    seconds = round(time.perf_counter() - t0, 2)
    summary = summarize_checks(results)
    saved = None if args.no_save else save_checks(results)
    if args.json:
        print(json.dumps({"judge": judge.name, "prompt_version": judge.prompt_version, "cases": len(results),
                          "seconds": seconds, "summary": summary.to_dict("records"),
                          "failures": list(iter_failures(results, limit=1000)),
                          "saved_to": str(saved) if saved else None}, indent=1, default=str))
        return 0
    print(f"judge {judge.name} ({judge.prompt_version}): {len(results)} cases in {seconds}s")
    for rec in summary.to_dict("records"):
        name = f"{rec['kind']} / {rec['capability']}"
        print(f"  {name:48s} {rec['passed']:4d}/{rec['n']:<4d} {rec['pass_rate']:6.1%}  abstained {rec['abstained']}")
    failures = list(iter_failures(results))
    if failures:
        print("first failures:")
        for f in failures:
            print(f"  {f['id']}: expected {f['expected']}, got {f['label']}")
    if saved:
        print(f"saved {saved}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pipeline.judges.measure.calibration import main

    return main(args.rest)


def cmd_list(args: argparse.Namespace) -> int:
    for info in JUDGES.values():
        net = " (network)" if info.needs_network else ""
        print(f"{info.name:10s} {info.description}{net}")
    return 0


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.importers.hagrid import load_hagrid
    from pipeline.judges.measure.agreement import evaluate_support, save_agreement
    from pipeline.judges.measure.agreement_hagrid import evaluate_hagrid
    from pipeline.storage.paths import expertqa_dir, hagrid_dir

    hagrid = args.dataset == "hagrid"
    path = args.path or (hagrid_dir() if hagrid else expertqa_dir())
    if path is None:
        where = ("set HAGRID_DIR, or run `aee import hagrid https://huggingface.co/datasets/miracl/hagrid`"
                 if hagrid else "set EXPERTQA_DIR")
        print(f"error: {'HAGRID' if hagrid else 'ExpertQA'} not found; pass --path or {where}", file=sys.stderr)
        return 2
    try:
        answers = load_hagrid(path) if hagrid else load_expertqa(path)
        judge = get_judge(args.judge)
    except (InputError, JudgeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.split:
        answers = [a for a in answers if a.answer.meta.get("split") == args.split]
        if not answers:
            print(f"error: no answers in split {args.split!r}", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    report = evaluate_hagrid(judge, answers) if hagrid else evaluate_support(judge, answers)
    report["dataset"] = args.dataset
    report["split"] = args.split or "all"
    report["seconds"] = round(time.perf_counter() - t0, 2)
    if not args.no_save:
        name = f"{args.dataset}-{args.split}" if args.split else args.dataset
        report["saved_to"] = str(save_agreement(report, name, getattr(judge, "name", args.judge)))
    if args.json:
        print(json.dumps(report, indent=1, default=str))
        return 0
    s, r = report["support"], report.get("relevance", {})
    print(f"judge {report['judge']} ({report['prompt_version']}) on {args.dataset} [{report['split']}], {report['seconds']}s")
    print(f"support  n={s['n']} AUC={_fmt(s['auc'])} bal.acc={_fmt(s['balanced_accuracy'])} kappa={_fmt(s['kappa'])} "
          f"P={_fmt(s['precision'])} R={_fmt(s['recall'])} F1={_fmt(s['f1'])}"
          + (f" kappa3={_fmt(s['kappa_3way'])}" if "kappa_3way" in s else ""))
    for part, title in (("support_single", "one cited quote"), ("support_multi", "several cited quotes, judged together")):
        if part in report:
            p = report[part]
            print(f"  {title}: n={p['n']} AUC={_fmt(p['auc'])} bal.acc={_fmt(p['balanced_accuracy'])} kappa={_fmt(p['kappa'])}")
    cal = report.get("calibration") or {}
    if s.get("in_calibration"):
        u = report.get("support_unseen") or {}
        print(f"  not held out: {s['in_calibration']} of {s['n']} pairs come from questions the judge was calibrated on; "
              f"on the other {u.get('n', 0)}: AUC={_fmt(u.get('auc'))} bal.acc={_fmt(u.get('balanced_accuracy'))}")
    elif cal:
        print(f"  held out: none of the {s['n']} pairs comes from a question the judge was calibrated on")
    if cal:
        print(f"  calibration: {cal.get('fit_pairs')} pairs of {cal.get('dataset')} {cal.get('fit_splits')}; "
              f"grouped cross-validation AUC={_fmt(cal.get('cv_auc'))} bal.acc={_fmt(cal.get('cv_balanced_accuracy'))}")
    print(f"  judge \\ {'human' if hagrid else 'expert'}   " + "  ".join(f"{c:>10s}" for c in s["confusion"]["cols"]))
    for row, vals in zip(s["confusion"]["rows"], s["confusion"]["matrix"]):
        print(f"  {row:16s} " + "  ".join(f"{v:10d}" for v in vals))
    if r:
        print(f"relevance n={r['n']} bal.acc={_fmt(r['balanced_accuracy'])} kappa={_fmt(r['kappa'])}")
        for row, vals in zip(r["confusion"]["rows"], r["confusion"]["matrix"]):
            print(f"  {row:16s} " + "  ".join(f"{v:10d}" for v in vals))
    if report.get("saved_to"):
        print(f"saved {report['saved_to']}")
    return 0
