"""`aee compare` (differences that are real, engine vs engine or wave vs wave) and
`aee consistency` (how much each engine changes between repeats), from a dataset's results.

    aee compare --dataset D --engines A,B [--wave W] [--judge J] [--json]
    aee compare --dataset D --waves W1,W2 [--engine A] [--json]
    aee consistency --dataset D [--judge J] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from pipeline.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compare", help="engine vs engine (or wave vs wave): paired differences per metric with "
                                              "intervals over queries and repeats, Holm-adjusted, said in words; "
                                              "corrected for the judge's measured error where an audit has labels")
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="judge id (default: the first with results)")
    p.add_argument("--engines", help="two engines, A,B: compared on the queries both answered")
    p.add_argument("--wave", help="with --engines: the wave compared (default: the latest)")
    p.add_argument("--waves", help="two waves, W1,W2: each engine (or --engine) compared with itself, paired by query")
    p.add_argument("--engine", help="with --waves: only this engine")
    p.add_argument("--samples", type=int, help="no longer used: the p-values are a paired t over the queries, nothing "
                                               "is resampled (accepted with a warning so older scripts still run)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level after Holm's adjustment (default 0.05)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser("consistency", help="how much each engine's answers, sources and metrics change between "
                                                  "repeats of a query (needs collect --repeat or several waves)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="judge id (default: the first with results)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_consistency)


def _base_and_judge(dataset: str, judge: str | None):
    from pipeline.storage.store import check_results, list_judges, result_set

    check_results(dataset)
    judges = list_judges(dataset)
    if not judges:
        raise InputError("no results; run `aee run --dataset NAME` first", record=dataset, field="--dataset")
    if judge is not None and judge not in judges:
        raise InputError(f"no results for judge {judge[:60]!r}; this dataset has {', '.join(judges)}", field="--judge")
    return result_set(dataset), judge or judges[0]


def _pair(text: str | None, flag: str) -> tuple[str, str]:
    parts = [p.strip() for p in (text or "").split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError("give two different names separated by a comma (A,B)", field=flag)
    return parts[0], parts[1]


def _names(values: pd.DataFrame, column: str) -> list[str]:
    return sorted(values[column].unique())


def cmd_compare(args: argparse.Namespace) -> int:
    from pipeline.consistency.captures import model_change_words, reply_models, wave_order
    from pipeline.consistency.differences import JUDGE_NOTE, METHOD, as_json, compare_sides, judge_summary, summary_words
    from pipeline.consistency.judge_error import Audit
    from pipeline.consistency.summary import load_values

    if (args.engines is None) == (args.waves is None):
        raise InputError("give --engines A,B or --waves W1,W2", field="--engines/--waves")
    if args.samples is not None:  # one line, then the comparison as always
        print("warning: --samples is ignored: the p-values are a paired t over the queries, which no number of draws "
              "changes", file=sys.stderr)
    if not 0 < args.alpha < 1:
        raise InputError(f"{args.alpha:g}; give a level between 0 and 1, e.g. 0.05", field="--alpha")
    base, judge = _base_and_judge(args.dataset, args.judge)
    captures, values = load_values(base, judge)
    audit = Audit.load(args.dataset, judge)  # people's labels of the judge's units, where an audit exists
    engines, waves = _names(captures, "engine"), wave_order(captures)
    comparisons: list[tuple[str, list]] = []
    if args.engines:
        a, b = _pair(args.engines, "--engines")
        for name in (a, b):
            if name not in engines:
                raise InputError(f"no engine {name[:60]!r}; this dataset has {', '.join(engines)[:300]}", field="--engines")
        wave = args.wave or waves[-1]
        if wave not in waves:
            raise InputError(f"no wave {wave[:60]!r}; this dataset has {', '.join(waves)[:300]}", field="--wave")
        title = f"{a} vs {b} on their shared queries" + (f", wave {wave}" if len(waves) > 1 else "")
        comparisons.append((title, compare_sides(values, {"engine": a, "wave": wave}, {"engine": b, "wave": wave}, a, b,
                                                 alpha=args.alpha, audit=audit)))
    else:
        w1, w2 = _pair(args.waves, "--waves")
        for name in (w1, w2):
            if name not in waves:
                raise InputError(f"no wave {name[:60]!r}; this dataset has {', '.join(waves)[:300]}", field="--waves")
        chosen = [args.engine] if args.engine else engines
        if args.engine and args.engine not in engines:
            raise InputError(f"no engine {args.engine[:60]!r}; this dataset has {', '.join(engines)[:300]}", field="--engine")
        for engine in chosen:
            comparisons.append((f"{engine}: wave {w2} vs wave {w1}, paired by query",
                                compare_sides(values, {"engine": engine, "wave": w2}, {"engine": engine, "wave": w1},
                                              f"{engine} ({w2})", f"{engine} ({w1})", alpha=args.alpha,
                                              audit=audit)))
    models = reply_models(captures)
    flags: list[dict] = []  # the replies name other models on the two sides of a wave comparison
    if args.waves:
        for engine in chosen:
            before, after = models.get((engine, w1), []), models.get((engine, w2), [])
            if before and after and before != after:
                flags.append({"engine": engine, "from_wave": w1, "to_wave": w2, "from_models": before, "to_models": after})
    overall = (JUDGE_NOTE if audit is None else
               "where the audit has people's labels for a metric, its difference is corrected for the judge's measured "
               "error and the interval includes that estimate's error; per metric, judge_status says which applied")
    if args.json:
        print(json.dumps({"dataset": args.dataset, "judge": judge, "judge_uncertainty": overall,
                          "audit_samples": audit.samples if audit is not None else {},
                          "alpha": args.alpha, "method": METHOD, "model_changes": flags,
                          "comparisons": [{"title": t, "summary": summary_words(d), "judge_uncertainty": judge_summary(d),
                                           "differences": as_json(d)} for t, d in comparisons]}, indent=1, ensure_ascii=False))
        return 0
    for title, diffs in comparisons:
        print(f"{title} ({args.dataset}, judge {judge}; {diffs[0].queries if diffs else 0} queries):")
        print(f"  {summary_words(diffs)}")
        for d in diffs:
            mark = "REAL " if d.real else "     "
            print(f"  {mark}{d.label[:34]:34s} {d.diff:+8.1f} [{d.ci_low:7.1f}, {d.ci_high:7.1f}]  p={_p(d.p)}  Holm p={_p(d.p_holm)}"
                  f"  repeats {d.repeats_a:.1f}/{d.repeats_b:.1f}  judge: {_judge_word(d)}")
        print(f"  {judge_summary(diffs)}")
    for change in flags:
        print(f"model change: {model_change_words(change)}")
    print(f"method: {METHOD}; alpha {args.alpha:g}")
    print(f"note: {overall}")
    return 0


def _p(p: float) -> str:
    """A p-value in the table: small ones in powers of ten rather than 0.000."""
    if p != p:
        return "  n/a"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.0e}"


def _judge_word(d) -> str:
    """The judge-uncertainty column of one row: which applied, in two or three words."""
    if d.judge_status == "corrected":
        return f"corrected ({d.labelled_units} labels; alone {d.judge_diff:+.1f})"
    return {"no_audit": "taken as given", "no_judge": "none enters", "not_audited": "not audited, as given",
            "audit_unusable": "audit unusable, as given", "held_by_audit": "held: audited twin not real",
            "too_few_labels": f"too few labels ({d.labelled_units})"}.get(d.judge_status, d.judge_status)


def cmd_consistency(args: argparse.Namespace) -> int:
    from pipeline.consistency.summary import read_summary
    from pipeline.storage.store import judge_dirname

    base, judge = _base_and_judge(args.dataset, args.judge)
    summary = read_summary(base / judge_dirname(judge))
    if summary is None:
        raise InputError("this dataset has one answer per engine and query: nothing to compare over time; collect with "
                         "`aee collect --repeat K` or add another wave", record=args.dataset, field="--dataset")
    if args.json:
        print(json.dumps(summary, indent=1, ensure_ascii=False))
        return 0
    print(f"{args.dataset} (judge {judge}): {summary['answers']} answers, {summary['queries']} queries, "
          f"waves {', '.join(summary['waves'])}; repeats per query {summary['repeats']['min']}..{summary['repeats']['max']}; "
          f"meaning similarity by the {summary['meaning_method']} method")
    labels = summary["measures"]
    for row in summary["stability"]:
        if row["value"] is None:
            continue
        interval = (f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]" if row.get("ci_low") is not None and row.get("ci_high") is not None
                    else f"no interval ({row.get('note') or 'too few queries'})")
        print(f"  {row['engine'][:24]:24s} {row['wave'][:12]:12s} {labels[row['measure']]:22s} {row['value']:.2f} "
              f"{interval} over {row['queries']} queries")
    return 0
