"""Row r of bench/run.py: the fitted judge on ExpertQA, the experts as annotators (issue 41).

Like row q (bench/ppi_coverage.py): the offline judge labels every (claim, cited source) pair of
ExpertQA, a pair sample of about 300, 600 and 1,200 items is drawn as `aee audit sample` draws it,
each drawn pair carries the experts' support label, and every cell (engine or all engines x
unsupported statements / citation accuracy) is computed by `pipeline.audit.ppi_cells.ppi_rows`.
For each draw, two corrected values of every cell from the same labels:

* today's: the offline judge's labels as the prediction (row q's intervals);
* the fitted judge's: K = 5 logistic models fitted to the draw's labelled pairs
  (`pipeline.audit.fitted_run.fit`, cross-fitted by answer), their labels as the prediction, the
  labelled answers predicted out of fold (`fitted_labels`, `fitted_answers`), the units recomputed
  from those answers (`pipeline.audit.ppi.unit_values`).

The truth is row q's: the experts' support labels under the judge's relevance, the scorecard's rules
(the fitted judge keeps the offline judge's relevance, so both estimate the same thing). Reported per
cell and size: coverage of both (goal >= 93%), mean width of both and how much narrower the fitted
judge's is (goal >= 25%), and the agreement (Cohen's kappa, full vs not) of the fitted judge and of
the offline judge with the experts' labels, out of fold on the draw's labelled pairs and on every
pair the draw did not label (held out twice over). A draw whose labels the guard rails refuse
(`fitted_judge.check_fit`) is counted and left out of the fitted columns.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

METRICS = ("unsupported_statements", "citation_accuracy")
SIZES = (300, 600, 1200)
DRAWS = 20
GOAL_COVERAGE = 93.0
GOAL_NARROWER = 25.0


def _setup(quick: bool, results: Path | None, tmp: str) -> dict[str, Any]:
    import audit_ppi  # bench/ is on sys.path when this file runs as a script
    import ppi_coverage

    from pipeline.audit.fitted_run import pair_table
    from pipeline.audit.population import pair_frame
    from pipeline.audit.ppi import unit_values
    from pipeline.audit.scorecard import domains, judge_values

    root = results or Path(tmp) / "results"
    dataset, judge, truth_judge = ("expertqa", "offline", "human") if results else audit_ppi._build(root, quick)
    values = judge_values(dataset, judge, root)
    masks = domains(sorted(values["engine"].dropna().unique()))
    census, labels, answers, truth = audit_ppi._census(dataset, judge, truth_judge, root)
    truths = ppi_coverage._same_rules_cells(answers, truth, masks)
    scope = "all" if dataset == "demo" else "cited"
    table = pair_table(answers)
    expert = {}
    for r in census.items.to_dict("records"):
        got = labels[r["item_id"]]["support"]
        if got in ("full", "partial", "none"):
            expert[(str(r["answer_id"]), int(r["statement_index"]), int(r["source_index"]))] = 1.0 if got == "full" else 0.0
    return {"dataset": dataset, "judge": judge, "values": values, "masks": masks, "census": census, "labels": labels,
            "answers": answers, "truths": truths, "frame": pair_frame(dataset, answers, scope), "table": table,
            "expert": expert, "units": {m: unit_values(m, census, answers, labels) for m in METRICS}}


def _kappas(ctx: dict[str, Any], model: Any, lab: dict, fitted: Any) -> tuple[float | None, float | None]:
    """Agreement with the experts on the pairs this draw did not label: (fitted, offline)."""
    from pipeline.audit.fitted_judge import kappa

    keys = list(zip(fitted["answer_id"].astype(str), fitted["statement_index"].astype(int),
                    fitted["source_index"].astype(int)))
    rest = [i for i, k in enumerate(keys) if k in ctx["expert"] and k not in lab]
    y = np.array([ctx["expert"][keys[i]] for i in rest])
    ours = (fitted["label"].to_numpy()[rest] == "full").astype(float)
    theirs = (fitted["base_label"].to_numpy()[rest] == "full").astype(float)
    return kappa(y, ours), kappa(y, theirs)


def one_draw(ctx: dict[str, Any], n: int, seed: int, hard: bool = False) -> dict[str, Any]:
    """Both corrected values of every cell for one draw, and the fit's agreement figures; with `hard`
    a third, the fitted judge's thresholded labels as the prediction (the first version's)."""
    from pipeline.audit.fitted_run import fit, fitted_answers, fitted_labels, sample_strata, support_targets
    from pipeline.audit.ppi import unit_values
    from pipeline.audit.ppi_cells import ppi_rows
    from pipeline.audit.sample import Sample, draw

    census, values, masks = ctx["census"], ctx["values"], ctx["masks"]
    s = draw(ctx["frame"], n, seed=seed, dataset=ctx["dataset"], judge=ctx["judge"])
    drawn = set(s.items["cluster_id"])
    sample = Sample(census.meta, census.items[census.items["cluster_id"].isin(drawn)], census.frame)
    targets = support_targets(sample.items, ctx["labels"])
    model = fit(ctx["table"], targets, sample_strata(sample), dataset=ctx["dataset"], base_judge=ctx["judge"],
                sample_id=f"draw-{seed}", people="the experts", seed=seed)
    out: dict[str, Any] = {"items": len(s.items), "labels": len(targets), "ok": model.check.ok,
                           "reasons": model.check.reasons, "cells": {}, "c_values": list(model.c_values)}
    fitted_units, hard_units = {}, {}
    if model.check.ok:
        labelled = fitted_labels(ctx["table"], model)
        out["kappa_oof"], out["kappa_judge_oof"] = model.kappa_fitted, model.kappa_judge
        out["kappa_rest"], out["kappa_judge_rest"] = _kappas(ctx, model, targets, labelled)
        answers_f = fitted_answers(ctx["answers"], labelled)
        # the drawn items only: every unit's prediction, and the people's value where a unit was drawn (the
        # same numbers as on the census for those, without computing the undrawn units' human values)
        fitted_units = {m: unit_values(m, sample, answers_f, ctx["labels"]) for m in METRICS}
        if hard:
            hard_units = {m: unit_values(m, sample, answers_f, ctx["labels"], soft=False) for m in METRICS}
    for metric in METRICS:
        per_metric = values[values["metric"] == metric]
        for kind, units in (("judge", ctx["units"][metric]), ("fitted", fitted_units.get(metric)),
                            ("hard", hard_units.get(metric))):
            if units is None or isinstance(units, str):
                continue
            c = units.clusters.copy()
            c["labelled"] = c["labelled"] & c["cluster_id"].isin(drawn)
            for row in ppi_rows(metric, replace(units, clusters=c), sample, per_metric, masks):
                if row.ppi_low is not None and row.ppi_high is not None:
                    out["cells"][(kind, metric, row.domain)] = (row.ppi_low, row.ppi_high)
    return out


def fitted_table(quick: bool = False, draws: int | None = None, sizes: tuple[int, ...] | None = None,
                 results: Path | None = None, progress: Callable[[str], None] | None = None,
                 hard: bool = True) -> dict[str, Any]:
    sizes = sizes or ((300,) if quick else SIZES)
    draws = draws or (2 if quick else DRAWS)  # --quick: the smoke test checks the rows, not their coverage
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = _setup(quick, results, tmp)
    cells, fits = [], []
    for n in sizes:
        runs = []
        for k in range(draws):
            runs.append(one_draw(ctx, n, 50_000 * n + k, hard=hard))
            if progress and (k + 1) % 5 == 0:
                progress(f"r: {n} items, {k + 1} draws, {time.perf_counter() - started:.0f} s")
        ok = [r for r in runs if r["ok"]]
        fits.append({"size": n, "items": float(np.mean([r["items"] for r in runs])), "draws": draws, "fitted": len(ok),
                     "c_median": _median([c for r in ok for c in r.get("c_values", [])]),
                     "refused": sorted({x for r in runs for x in r["reasons"]})[:3],
                     **{key: _mean([r.get(key) for r in ok]) for key in
                        ("kappa_oof", "kappa_judge_oof", "kappa_rest", "kappa_judge_rest")}})
        for metric in METRICS:
            for name in ctx["masks"]:
                truth = ctx["truths"].get((metric, name))
                row: dict[str, Any] = {"metric": metric, "domain": name, "size": n, "truth": truth, "draws": draws}
                for kind in ("judge", "fitted", "hard"):
                    got = [r["cells"][(kind, metric, name)] for r in runs if (kind, metric, name) in r["cells"]]
                    row[f"{kind}_shown"] = len(got)
                    row[f"{kind}_coverage"] = (100 * float(np.mean([lo - 1e-9 <= truth <= hi + 1e-9 for lo, hi in got]))
                                               if got and truth is not None else None)
                    row[f"{kind}_width"] = float(np.mean([hi - lo for lo, hi in got])) if got else None
                both = [(r["cells"][("fitted", metric, name)], r["cells"][("judge", metric, name)]) for r in runs
                        if ("fitted", metric, name) in r["cells"] and ("judge", metric, name) in r["cells"]]
                row["narrower"] = (100 * (1 - np.mean([f[1] - f[0] for f, _ in both]) / np.mean([j[1] - j[0] for _, j in both]))
                                   if both and np.mean([j[1] - j[0] for _, j in both]) > 0 else None)
                both = [(r["cells"][("hard", metric, name)], r["cells"][("judge", metric, name)]) for r in runs
                        if ("hard", metric, name) in r["cells"] and ("judge", metric, name) in r["cells"]]
                row["hard_narrower"] = (100 * (1 - np.mean([f[1] - f[0] for f, _ in both]) / np.mean([j[1] - j[0] for _, j in both]))
                                        if both and np.mean([j[1] - j[0] for _, j in both]) > 0 else None)
                cells.append(row)
    return {"dataset": ctx["dataset"], "judge": ctx["judge"], "cells": cells, "fits": fits,
            "seconds": time.perf_counter() - started}


def _median(values: list[Any]) -> float | None:
    return float(np.median(values)) if values else None


def _mean(values: list[Any]) -> float | None:
    got = [float(v) for v in values if v is not None]
    return float(np.mean(got)) if got else None


def markdown(table: dict[str, Any]) -> str:
    num = lambda v, fmt="{:.1f}": "n/a" if v is None else fmt.format(v)  # noqa: E731
    out = ["| size (items) | draws fitted | median C | kappa fitted, out of fold | kappa offline, same pairs | kappa fitted, "
           "unlabelled pairs | kappa offline, unlabelled pairs |", "|---|---:|---:|---:|---:|---:|---:|"]
    for f in table["fits"]:
        out.append(f"| ~{f['size']} ({f['items']:.0f}) | {f['fitted']} of {f['draws']} | {num(f.get('c_median'), '{:g}')} | "
                   f"{num(f['kappa_oof'], '{:.2f}')} | {num(f['kappa_judge_oof'], '{:.2f}')} | {num(f['kappa_rest'], '{:.2f}')} | "
                   f"{num(f['kappa_judge_rest'], '{:.2f}')} |")
    out += ["", "| metric | cell | size | truth | coverage today | coverage fitted p | coverage fitted 0/1 | width today | "
            "width fitted p | width fitted 0/1 | narrower, p | narrower, 0/1 |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in table["cells"]:
        out.append(f"| {c['metric'].replace('_', ' ')} | {c['domain']} | ~{c['size']} | {num(c['truth'])} | "
                   f"{num(c['judge_coverage'], '{:.0f}%')} ({c['judge_shown']}) | "
                   f"{num(c['fitted_coverage'], '{:.0f}%')} ({c['fitted_shown']}) | "
                   f"{num(c.get('hard_coverage'), '{:.0f}%')} | {num(c['judge_width'])} | "
                   f"{num(c['fitted_width'])} | {num(c.get('hard_width'))} | {num(c['narrower'], '{:+.0f}%')} | "
                   f"{num(c.get('hard_narrower'), '{:+.0f}%')} |")
    return "\n".join(out)


def bench_fitted(quick: bool, rate_row: Callable[..., Any], skipped: Callable[..., Any]) -> list[Any]:
    table = fitted_table(quick, progress=lambda m: print(f"[bench]   {m}", file=sys.stderr, flush=True))
    print(markdown(table), file=sys.stderr, flush=True)
    rows = []
    for c in table["cells"]:
        name = f"r. {table['dataset']} {c['metric']} {c['domain']}, ~{c['size']} items: fitted judge, coverage"
        if c["fitted_coverage"] is None or c["judge_width"] is None or c["fitted_width"] is None:
            rows.append(skipped(name, f"no draw showed a fitted interval ({c['fitted_shown']} of {c['draws']})"))
            continue
        met = "meets" if c["fitted_coverage"] >= GOAL_COVERAGE else "BELOW"
        narrow = "meets" if (c["narrower"] or 0) >= GOAL_NARROWER else "misses"
        rows.append(rate_row(name, GOAL_COVERAGE, c["fitted_coverage"], "% covered",
                             f"truth {c['truth']:.1f}; today's corrected interval covers {c['judge_coverage']:.0f}%, "
                             f"width {c['judge_width']:.1f} vs fitted {c['fitted_width']:.1f} points "
                             f"({c['narrower']:+.0f}% narrower: {narrow} the {GOAL_NARROWER:.0f}% goal); {met} the "
                             f"{GOAL_COVERAGE:.0f}% coverage goal; {c['fitted_shown']} of {c['draws']} draws"))
    for f in table["fits"]:
        name = f"r. {table['dataset']} ~{f['size']} items: agreement with held-out labels, {table['judge']} vs fitted"
        if not f["kappa_rest"] or not f["kappa_judge_rest"]:
            rows.append(skipped(name, f"{f['fitted']} of {f['draws']} draws fitted (the others: too few labels for the "
                                      f"folds, e.g. {'; '.join(f['refused'][:1]) or 'none'}); no kappa to compare"))
            continue
        oof = ", ".join("n/a" if v is None else f"{v:.2f}" for v in (f["kappa_oof"], f["kappa_judge_oof"]))
        rows.append(rate_row(name, f["kappa_judge_rest"], f["kappa_rest"], "kappa",
                             f"kappa on the pairs each draw did not label; {f['fitted']} of {f['draws']} draws fitted; "
                             f"out of fold on the labelled pairs (fitted, {table['judge']}): {oof}"))
    return rows


def main() -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--draws", type=int)
    parser.add_argument("--sizes", help="comma list, e.g. 300,600")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--results", type=Path, help="a results folder already holding expertqa under human and offline")
    parser.add_argument("--no-hard", action="store_true", help="skip the fitted judge's 0/1 labels as a third prediction")
    args = parser.parse_args()
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else None
    table = fitted_table(args.quick, args.draws, sizes, args.results, progress=lambda m: print(m, file=sys.stderr, flush=True),
                         hard=not args.no_hard)
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2, default=str))
    print(markdown(table))
    print(f"\n{table['seconds']:.0f} s")


if __name__ == "__main__":
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    main()
