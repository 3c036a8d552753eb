"""Row q of bench/run.py: does each cell's corrected 95% interval hold the experts' own value?

On ExpertQA (all three shared splits: domain_test, domain_val, rand_val) the offline judge labels
every (claim, cited source) pair and the experts stand in for the annotators. The truth of a support
cell (an engine, or all engines, x unsupported statements / citation accuracy) is what a support
audit estimates: the plain scorecard (strict rules, its unjudged-share rule) of the experts' support
labels under the judge's relevance; `aee scorecard --judge human` (the experts' relevance too, and
their labels on sources with no text here) is reported beside it, with how often the interval holds
it. Relevant statements is corrected from a statement sample carrying the experts' relevance, which
decides everything it reads: its truth is `aee scorecard --judge human` itself.

For each size (about 100, 300 and 600 items, as `aee audit sample --n` counts them) each sample is
drawn DRAWS times by `pipeline.audit.sample.draw`, each draw with its own seed; a drawn statement
carries the experts' labels of its pairs (one the experts left N/A is "can't tell": an undecided
pair, as on the experts' scorecard), a drawn answer the experts' relevance of its statements. Every
cell is then computed by `pipeline.audit.ppi_cells.ppi_rows`, the code behind `aee scorecard --ppi`,
and the row reports per cell: how often it showed an interval (the others say how many more labels
they need), how often that interval held the truth, its mean width and mean error.
A support audit that asks relevance too (`aee audit sample --relevance`) draws whole answers, each
with the experts' relevance of every statement and support of every pair with text here; its cells
(named "relevance asked", sizes of about 100, 200 and 300 answers) have as truth the experts'
relevance and support with a text-less pair unknown, which on an engine whose sources all have text
is `aee scorecard --judge human` itself.
Goal: 95% intervals that hold the truth in >= 93% of the draws that show one.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

METRICS = ("unsupported_statements", "citation_accuracy")
# corrected from a statement sample: the experts' relevance labels (ExpertQA's informativeness), which
# decide everything the metric reads, so its truth is `aee scorecard --judge human` itself
STATEMENT_METRICS = ("relevant_statements",)
SIZES = (100, 300, 600)
# a sample that asks relevance too draws whole answers (about 9.5 items each on ExpertQA): 100, 200,
# 300 and 600 of its 666 answers
RELEVANCE_SIZES = (100, 200, 300, 600)
DRAWS = 200
GOAL = 93.0


def _truth_cells(dataset: str, truth_judge: str, root: Path, masks: dict) -> dict[tuple[str, str], float | None]:
    """(metric, domain) -> the plain scorecard's value under the truth judge (display units), None
    where that scorecard prints n/a: what `aee scorecard --judge human` prints."""
    from pipeline.audit.ppi_cells import cell_rule
    from pipeline.audit.scorecard import judge_values

    values = judge_values(dataset, truth_judge, root)
    out = {}
    for metric in (*METRICS, *STATEMENT_METRICS):
        part = values[values["metric"] == metric]
        for name, mask in masks.items():
            out[(metric, name)] = cell_rule(part[mask(part)], metric)[0]
    return out


def _same_rules_cells(answers: dict, truth: dict, masks: dict, *, relevance: bool = False
                      ) -> dict[tuple[str, str], float | None]:
    """(metric, domain) -> the experts' scorecard under an audit's rules: every answer as the audited
    judge has it, with the experts' support labels in place of the judge's (and, with `relevance`, the
    experts' relevance in place of the judge's), a pair whose source has no text here unknown (as it is
    to every judge), then the plain scorecard's cell (`cell_rule`: strict rules, the unjudged-share
    rule). Without `relevance` this is what a support audit estimates, which differs from `aee
    scorecard --judge human` by whose relevance decides which statements count; with it, what a
    support audit that asks relevance too estimates: on an engine whose sources all have text, `aee
    scorecard --judge human` itself."""
    from pipeline.audit.ppi import STRICT
    from pipeline.audit.ppi_cells import cell_rule
    from pipeline.metrics import METRICS as REGISTRY
    from pipeline.metrics import ScoringContext
    from pipeline.records import AnnotatedAnswer, unreadable_code

    replaced = ("support", "relevance") if relevance else ("support",)
    rows = []
    for aid, a in answers.items():
        readable = {s.index for s in a.answer.sources if not unreadable_code(s)}
        theirs = tuple(v for v in truth[aid].verdicts if (v.kind == "relevance" and relevance) or (
            v.kind == "support" and v.source_index in readable))
        mixed = AnnotatedAnswer(a.answer, a.statements, tuple(v for v in a.verdicts if v.kind not in replaced) + theirs)
        for metric in METRICS:
            r = REGISTRY[metric].fn(ScoringContext(mixed, STRICT))
            rows.append({"answer_id": aid, "engine": a.answer.engine, "query_type": a.answer.query_type,
                         "metric": metric, "value": r.value, "units": r.units, "unknown": r.unknown,
                         "unknown_why": r.unknown_why})
    frame = pd.DataFrame(rows)
    return {(metric, name): cell_rule(frame[(frame["metric"] == metric) & mask(frame)], metric)[0]
            for metric in METRICS for name, mask in masks.items()}


def relevance_census(dataset: str, judge: str, answers: dict, truth: dict) -> tuple[Any, Any, dict]:
    """The answer frame of a support audit that asks relevance too, every answer drawn, and the
    experts' labels of every item (relevance from ExpertQA's informativeness, support of each pair;
    "can't tell" where they gave none)."""
    from pipeline.audit import CANT_TELL
    from pipeline.audit.population import item_asks, pair_frame
    from pipeline.audit.sample import draw
    from pipeline.matrices import label_view
    from pipeline.records import SUPPORT_LABELS

    frame = pair_frame(dataset, answers, "all" if dataset == "demo" else "cited", relevance=True)
    census = draw(frame, int(frame.clusters["n_items"].sum()), 0, dataset=dataset, judge=judge)
    labels = {}
    views = {aid: label_view(a) for aid, a in truth.items()}
    for r in census.items.to_dict("records"):
        view, si = views[r["answer_id"]], int(r["statement_index"])
        if item_asks(r) == "relevant":
            rel = view.relevant.get(si)
            labels[r["item_id"]] = {"relevant": CANT_TELL if rel is None else ("relevant" if rel else "filler")}
        else:
            label = view.support.get((si, int(r["source_index"])))
            labels[r["item_id"]] = {"support": label if label in SUPPORT_LABELS else CANT_TELL}
    return frame, census, labels


def relevance_coverage(dataset: str, judge: str, answers: dict, truth: dict, values: pd.DataFrame, masks: dict,
                       experts: dict, sizes: tuple[int, ...], draws: int,
                       progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Row q's cells for a support audit that asks relevance too: samples of about `size` answers
    (every statement's relevance and every checkable pair of each), the same per-cell counts as
    `coverage_table`, the truth being the experts' relevance and support (`_same_rules_cells`)."""
    from pipeline.audit.ppi import unit_values
    from pipeline.audit.ppi_cells import ppi_rows
    from pipeline.audit.ppi_relevance import relevance_view
    from pipeline.audit.sample import Sample, draw

    frame, census, labels = relevance_census(dataset, judge, answers, truth)
    truths = _same_rules_cells(answers, truth, masks, relevance=True)
    units = {m: unit_values(m, census, answers, labels) for m in METRICS}
    # the same sample's relevance items correct relevant statements too (no statement sample needed);
    # the experts' relevance decides all that metric reads, so its truth is `--judge human` itself
    units["relevant_statements"] = unit_values("relevant_statements", relevance_view(census), answers, labels)
    truths |= {("relevant_statements", name): experts.get(("relevant_statements", name)) for name in masks}
    per_answer = float(frame.clusters["n_items"].mean())
    known: dict = {}
    cells = []
    started = time.perf_counter()
    for n in sizes:
        got: dict[tuple[str, str], list[tuple[bool, bool, float, float]]] = {}
        above: dict[tuple[str, str], int] = {}
        none: dict[tuple[str, str], int] = {}
        items = []
        for k in range(draws):
            s = draw(frame, int(round(n * per_answer)), seed=30_000 * n + k, dataset=dataset, judge=judge)
            drawn = set(s.items["cluster_id"])
            items.append(len(s.items))
            sample = Sample(census.meta, census.items[census.items["cluster_id"].isin(drawn)], census.frame)
            for metric in (*METRICS, "relevant_statements"):
                u = units[metric]
                if isinstance(u, str):
                    continue
                c = u.clusters.copy()
                c["labelled"] = c["labelled"] & c["cluster_id"].isin(drawn)
                on = relevance_view(sample) if metric == "relevant_statements" else sample
                for row in ppi_rows(metric, replace(u, clusters=c), on, values[values["metric"] == metric], masks,
                                    known_cells=known):
                    key = (metric, row.domain)
                    target, raw = truths.get(key), experts.get(key)
                    if row.ppi is None or row.ppi_low is None or row.ppi_high is None:
                        none[key] = none.get(key, 0) + 1
                        continue
                    held = target is not None and row.ppi_low - 1e-9 <= target <= row.ppi_high + 1e-9
                    held_raw = raw is not None and row.ppi_low - 1e-9 <= raw <= row.ppi_high + 1e-9
                    got.setdefault(key, []).append((held, held_raw, row.ppi_high - row.ppi_low,
                                                    row.ppi - target if target is not None else float("nan")))
                    if target is not None and row.ppi_low - 1e-9 > target:
                        above[key] = above.get(key, 0) + 1
            if progress and (k + 1) % 50 == 0:
                progress(f"relevance, {n} answers: {k + 1} draws, {time.perf_counter() - started:.0f} s")
        for metric in (*METRICS, "relevant_statements"):
            for name in masks:
                key = (metric, name)
                hits = got.get(key, [])
                cells.append({"metric": metric + " (relevance asked)", "domain": name, "size": n,
                              "items": float(np.mean(items)), "unit": "answers",
                              "mean_error": float(np.nanmean([e for *_, e in hits])) if hits and truths.get(key) is not None else None,
                              "truth": truths.get(key), "experts": experts.get(key), "draws": draws,
                              "with_interval": len(hits),
                              "coverage": 100 * float(np.mean([h for h, *_ in hits])) if hits and truths.get(key) is not None else None,
                              "coverage_experts": (100 * float(np.mean([h for _, h, *_ in hits]))
                                                   if hits and experts.get(key) is not None else None),
                              "width": float(np.mean([w for _, _, w, _ in hits])) if hits else None,
                              "no_interval": none.get(key, 0), "misses_above": above.get(key, 0),
                              "misses_below": sum(1 for h, *_ in hits if not h) - above.get(key, 0)})
    return cells


def coverage_table(quick: bool, draws: int | None = None, sizes: tuple[int, ...] | None = None,
                   progress: Callable[[str], None] | None = None, results: Path | None = None) -> dict[str, Any]:
    """Per (metric, domain, size): draws with an interval, coverage %, mean width; plus the truths.
    `results`: a results folder that already holds ExpertQA under `human` and `offline` (else they
    are built in a temporary one, the judge cache making that fast)."""
    import audit_ppi  # bench/ is on sys.path when this file runs as a script

    from pipeline.audit.humans import expert_labels
    from pipeline.audit.population import pair_frame, statement_frame
    from pipeline.audit.ppi import unit_values
    from pipeline.audit.ppi_cells import ppi_rows
    from pipeline.audit.sample import Sample, draw
    from pipeline.audit.scorecard import domains, judge_values
    from pipeline.errors import InputError

    sizes = sizes or ((120,) if quick else SIZES)
    draws = draws or (4 if quick else DRAWS)  # --quick: the smoke test checks the rows, not their coverage
    with tempfile.TemporaryDirectory() as tmp:
        root = results or Path(tmp) / "results"
        dataset, judge, truth_judge = ("expertqa", "offline", "human") if results else audit_ppi._build(root, quick)
        values = judge_values(dataset, judge, root)
        engines = sorted(values["engine"].dropna().unique())
        masks = domains(engines)
        experts = _truth_cells(dataset, truth_judge, root, masks)
        census, labels, answers, truth = audit_ppi._census(dataset, judge, truth_judge, root)
    truths = _same_rules_cells(answers, truth, masks)
    scope = "all" if dataset == "demo" else "cited"
    frame = pair_frame(dataset, answers, scope)
    units = {m: unit_values(m, census, answers, labels) for m in METRICS}
    statements = statement_frame(dataset, answers)
    st_census = draw(statements, int(statements.clusters["n_items"].sum()), 0, dataset=dataset, judge=judge)
    st_labels = expert_labels(st_census.items, [v for a in truth.values() for v in a.verdicts])
    for m in STATEMENT_METRICS if dataset == "expertqa" else ():
        units[m] = unit_values(m, st_census, answers, st_labels)
        truths |= {(m, name): experts[(m, name)] for name in masks}  # the experts decide all it reads
    known: dict = {}
    cells: list[dict[str, Any]] = []
    started = time.perf_counter()
    for n in sizes:
        hits: dict[tuple[str, str], list[tuple[bool, bool, float]]] = {}
        above: dict[tuple[str, str], int] = {}  # misses with the whole interval above the truth
        shown_none: dict[tuple[str, str], int] = {}
        errors: dict[tuple[str, str], list[float]] = {}  # estimate - truth, per draw with an interval
        pairs, st_items = [], []
        for k in range(draws):
            s = draw(frame, n, seed=10_000 * n + k, dataset=dataset, judge=judge)
            drawn = set(s.items["cluster_id"])
            pairs.append(len(s.items))
            sample = Sample(census.meta, census.items[census.items["cluster_id"].isin(drawn)], census.frame)
            try:
                st_draw = draw(statements, n, seed=20_000 * n + k, dataset=dataset, judge=judge)
            except InputError:  # too few statements to hold two answers of every stratum: `aee audit sample` refuses too
                st_draw = None
            st_drawn = set() if st_draw is None else set(st_draw.items["cluster_id"])
            st_items.append(0 if st_draw is None else len(st_draw.items))
            st_sample = Sample(st_census.meta, st_census.items[st_census.items["cluster_id"].isin(st_drawn)],
                               st_census.frame)
            for metric in (*METRICS, *STATEMENT_METRICS):
                u = units.get(metric)
                if u is None or isinstance(u, str) or (metric in STATEMENT_METRICS and st_draw is None):
                    continue
                if metric in STATEMENT_METRICS:
                    drawn, sample_m = st_drawn, st_sample
                else:
                    drawn, sample_m = set(s.items["cluster_id"]), sample
                c = u.clusters.copy()
                c["labelled"] = c["labelled"] & c["cluster_id"].isin(drawn)
                per_metric = values[values["metric"] == metric]
                for row in ppi_rows(metric, replace(u, clusters=c), sample_m, per_metric, masks, known_cells=known):
                    key = (metric, row.domain)
                    target = truths.get(key)
                    if row.ppi is None or row.ppi_low is None or row.ppi_high is None:
                        shown_none[key] = shown_none.get(key, 0) + 1
                        continue
                    held = target is not None and row.ppi_low - 1e-9 <= target <= row.ppi_high + 1e-9
                    raw = experts.get(key)
                    held_raw = raw is not None and row.ppi_low - 1e-9 <= raw <= row.ppi_high + 1e-9
                    hits.setdefault(key, []).append((held, held_raw, row.ppi_high - row.ppi_low))
                    if target is not None:
                        errors.setdefault(key, []).append(row.ppi - target)
                    if target is not None and row.ppi_low - 1e-9 > target:
                        above[key] = above.get(key, 0) + 1
            if progress and (k + 1) % 50 == 0:
                progress(f"size {n}: {k + 1} draws, {time.perf_counter() - started:.0f} s")
        for metric in (*METRICS, *(m for m in STATEMENT_METRICS if m in units)):
            for name in masks:
                key = (metric, name)
                got = hits.get(key, [])
                cells.append({"metric": metric, "domain": name, "size": n,
                              "items": float(np.mean(st_items if metric in STATEMENT_METRICS else pairs)),
                              "unit": "statements" if metric in STATEMENT_METRICS else "pairs",
                              "mean_error": float(np.mean(errors[key])) if errors.get(key) else None,
                              "truth": truths.get(key), "experts": experts.get(key), "draws": draws, "with_interval": len(got),
                              "coverage": 100 * float(np.mean([h for h, _, _ in got])) if got and truths.get(key) is not None else None,
                              "coverage_experts": (100 * float(np.mean([h for _, h, _ in got]))
                                                   if got and experts.get(key) is not None else None),
                              "width": float(np.mean([w for _, _, w in got])) if got else None,
                              "no_interval": shown_none.get(key, 0), "misses_above": above.get(key, 0),
                              "misses_below": sum(1 for h, _, _ in got if not h) - above.get(key, 0)})
    if dataset == "expertqa":  # the teaching corpus has too few answers for samples of whole answers
        cells += relevance_coverage(dataset, judge, answers, truth, values, masks, experts,
                                    RELEVANCE_SIZES if not quick else (RELEVANCE_SIZES[-1],), draws, progress)
    return {"dataset": dataset, "judge": judge, "truth_judge": truth_judge, "cells": cells,
            "seconds": time.perf_counter() - started}


def markdown(table: dict[str, Any]) -> str:
    """The per-cell table for docs/benchmarks.md."""
    out = ["| metric | cell | truth (same rules) | `--judge human` | size (items) | draws with an interval | covers truth "
           "| covers `--judge human` | mean width | mean error | misses above / below |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    num = lambda v, fmt="{:.1f}": "n/a" if v is None else fmt.format(v)  # noqa: E731
    for c in table["cells"]:
        out.append(f"| {c['metric'].replace('_', ' ')} | {c['domain']} | {num(c['truth'])} | {num(c['experts'])} | "
                   f"{_size(c)} | {c['with_interval']} of {c['draws']} | "
                   f"{num(c['coverage'], '{:.1f}%')} | {num(c['coverage_experts'], '{:.1f}%')} | {num(c['width'])} | "
                   f"{num(c['mean_error'], '{:+.1f}')} | "
                   f"{c['misses_above']} / {c['misses_below']} |")
    return "\n".join(out)


def _size(cell: dict[str, Any]) -> str:
    if cell["unit"] == "answers":  # a sample with relevance draws whole answers
        return f"~{cell['size']} answers ({cell['items']:.0f} items)"
    return f"~{cell['size']} ({cell['items']:.0f} {cell['unit']})"


def bench_ppi_coverage(quick: bool, rate_row: Callable[..., Any], skipped: Callable[..., Any]) -> list[Any]:
    import sys

    table = coverage_table(quick, progress=lambda m: print(f"[bench]   q: {m}", file=sys.stderr, flush=True))
    print(markdown(table), file=sys.stderr, flush=True)  # the per-cell table of docs/benchmarks.md
    rows = []
    for c in table["cells"]:
        name = f"q. {table['dataset']} {c['metric']} {c['domain']}, ~{c['size']} {c['unit']}: 95% coverage"
        if c["truth"] is None or c["coverage"] is None:
            why = ("the experts' scorecard prints n/a here" if c["truth"] is None else
                   f"no {c['unit'][:-1]} sample of ~{c['size']} items can be drawn (too few to hold two of each stratum)"
                   if not c["items"] else "no draw showed an interval")
            rows.append(skipped(name, f"{why}; {c['no_interval']} of {c['draws']} draws said what to label instead"))
            continue
        met = "meets" if c["coverage"] >= GOAL else "BELOW"
        raw = "n/a" if c["experts"] is None else f"{c['experts']:.1f}"
        raw_cover = "-" if c["coverage_experts"] is None else f"{c['coverage_experts']:.1f}%"
        which = (f"`aee scorecard --judge {table['truth_judge']}` itself: the {table['truth_judge']} labels decide "
                 "all it reads" if c["metric"] in STATEMENT_METRICS else
                 f"the {table['truth_judge']} labels' relevance and support, a pair whose source has no text here "
                 f"unknown; `aee scorecard --judge {table['truth_judge']}` prints {raw}, held in {raw_cover}"
                 if c["unit"] == "answers" else
                 f"the {table['truth_judge']} labels' scorecard under the audit's rules; `aee scorecard --judge "
                 f"{table['truth_judge']}` prints {raw}, held in {raw_cover}")
        error = "" if c.get("mean_error") is None else f", mean error {c['mean_error']:+.1f}"
        rows.append(rate_row(name, GOAL, c["coverage"], "% covered",
                             f"truth {c['truth']:.1f} ({which}); misses above / below {c['misses_above']} / "
                             f"{c['misses_below']}{error}; interval in "
                             f"{c['with_interval']} of {c['draws']} draws (the others: needs more labels), mean width "
                             f"{c['width']:.1f} points; {met} the {GOAL:.0f}% goal (baseline; ratio >= 1 meets it)"))
    return rows


def main() -> None:
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--draws", type=int)
    parser.add_argument("--sizes", help="comma list, e.g. 100,300")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--results", type=Path, help="a results folder already holding expertqa under human and offline")
    args = parser.parse_args()
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else None
    table = coverage_table(args.quick, args.draws, sizes, progress=lambda m: print(m, file=sys.stderr, flush=True),
                           results=args.results)
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2))
    print(markdown(table))
    print(f"\n{table['seconds']:.0f} s")


if __name__ == "__main__":
    sys_path = str(Path(__file__).resolve().parent)
    import sys

    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    main()
