"""Row j of bench/run.py: prediction-powered scorecards on ExpertQA, the experts' labels standing in
for the annotators.

The offline judge labels every (claim, cited source) pair of ExpertQA; the experts' labels of the
same pairs are the truth. Samples of about 100, 200 and 400 pairs are drawn as `aee audit sample`
draws them (statements of the judge's relevant claims, stratified by engine x the judge's label, at
least two per stratum), many times over, and for each draw we compute the human-only estimate and
the PPI estimate of unsupported statements and citation accuracy (strict rules, all engines), with
their 95% intervals. Against the value from all expert labels we report the judge-only error (its
scorecard value, which no sample changes), and for human-only and PPI: the mean absolute error, the
mean interval width and how often the interval covers the truth.

Pairs the experts left without a support label (N/A: they could not open the page; or no label at
all) are unknown, never "not supported" (issue 23 item 0): in a draw they are an annotator's "can't
tell", so a statement holding one is drawn but not labelled, as the audit treats it. The truth is
then what both estimators estimate: the experts' value over the statements they could judge, each
stratum's unjudged statements taken to be like its judged ones (the census of every judgeable unit;
the human-only and the PPI census give it two ways, both printed). The note also prints the value as
the scorecard computes it from the expert labels (undecided statements left out per answer, then
the mean over answers), which weighs answers differently. A support audit keeps the judge's
relevance (it asks about support only), so every truth is over the claims the offline judge counts
as relevant. With --quick the teaching corpus stands in (scripted judge, hand labels).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

METRICS = ("unsupported_statements", "citation_accuracy")
SIZES = (100, 200, 400)
DRAWS = 200


def _build(root: Path, quick: bool) -> tuple[str, str, str]:
    """Results to audit: (dataset, audited judge, judge whose labels are the truth)."""
    from pipeline.importers import known_datasets
    from pipeline.runner import run_dataset

    if quick:
        run_dataset("demo", progress=False, root=root)
        run_dataset("demo", judge_name="scripted", progress=False, root=root, use_cache=False)
        return "demo", "scripted", "recorded"
    if known_datasets()["expertqa"].path is None:
        raise RuntimeError("ExpertQA files not found (set EXPERTQA_DIR or place ../shared/data/expertqa)")
    run_dataset("expertqa", progress=False, root=root)  # the experts' labels: the `human` judge
    run_dataset("expertqa", judge_name="offline", progress=False, root=root)  # uses the judge cache
    return "expertqa", "offline", "human"


def _census(dataset: str, judge: str, truth_judge: str, root: Path) -> tuple[Any, dict, dict, dict]:
    """Every cluster of the frame drawn, with the truth labels of every pair ("can't tell" where the
    truth judge decided nothing) and the truth judge's own verdicts per answer."""
    from pipeline.audit import CANT_TELL
    from pipeline.audit.population import pair_frame
    from pipeline.audit.sample import draw
    from pipeline.matrices import label_view
    from pipeline.records import SUPPORT_LABELS
    from pipeline.storage.tables import load_annotated

    answers = load_annotated(dataset, judge, root)
    truth = load_annotated(dataset, truth_judge, root)
    scope = "all" if dataset == "demo" else "cited"  # the teaching corpus's judges label uncited pairs too
    frame = pair_frame(dataset, answers, scope)
    census = draw(frame, int(frame.clusters["n_items"].sum()), 0, dataset=dataset, judge=judge)
    labels = {}
    for r in census.items.to_dict("records"):
        view = label_view(truth[r["answer_id"]])
        label = view.support.get((int(r["statement_index"]), int(r["source_index"])))
        labels[r["item_id"]] = {"support": label if label in SUPPORT_LABELS else CANT_TELL}
    return census, labels, answers, truth


def _scorecard_truth(metric: str, census: Any, answers: dict, labels: dict) -> float:
    """The truth labels' value as the scorecard computes it (strict rules): per answer, the metric on
    the judge's relevance with the truth's support labels on the frame pairs (undecided pairs
    `unknown`), then the mean over the answers where it is defined."""
    from pipeline.audit.ppi import STRICT
    from pipeline.metrics import METRICS, ScoringContext
    from pipeline.records import AnnotatedAnswer, Verdict

    by_answer: dict[str, dict[tuple[int, int], str]] = {}
    for r in census.items.to_dict("records"):
        label = labels[r["item_id"]]["support"]
        by_answer.setdefault(r["answer_id"], {})[(int(r["statement_index"]), int(r["source_index"]))] = (
            label if label in ("full", "partial", "none") else "unknown")
    values = []
    for aid, a in answers.items():
        pairs = by_answer.get(aid, {})
        kept = tuple(v for v in a.verdicts if not (v.kind == "support" and (v.statement_index, v.source_index) in pairs))
        relabel = tuple(Verdict(aid, "support", label, "truth", "bench", statement_index=si, source_index=src)
                        for (si, src), label in pairs.items())
        value = METRICS[metric].fn(ScoringContext(AnnotatedAnswer(a.answer, a.statements, kept + relabel), STRICT)).value
        if value is not None:
            values.append(value)
    return float(np.mean(values))


def _summary(estimates: list[Any], truth: float) -> tuple[float, float, float, int]:
    """Mean absolute error, mean interval width (points) and coverage (%) over the draws with an
    estimate, and how many draws had none (a stratum without two labelled units)."""
    got = [e for e in estimates if e.value is not None]
    if not got:
        return float("nan"), float("nan"), float("nan"), len(estimates)
    value = np.array([float(e.value[0]) for e in got])
    lo = np.clip(np.array([float(e.interval()[0][0]) for e in got]), 0, 1)
    hi = np.clip(np.array([float(e.interval()[1][0]) for e in got]), 0, 1)
    err = float(np.mean(np.abs(value - truth))) * 100
    width = float(np.mean(hi - lo)) * 100
    cover = float(np.mean((lo <= truth) & (truth <= hi))) * 100
    return err, width, cover, len(estimates) - len(got)


def _strata(parts: list[tuple[str, Any]], n_answers: int, keep: dict[str, np.ndarray]) -> tuple[list[Any], list[Any]]:
    """PPI and human-only strata in which the units at positions `keep[name]` are labelled."""
    from pipeline.audit.ppi import Stratum

    ppi, human = [], []
    for name, part in parts:
        inside = part["in_population"].to_numpy(dtype=bool)
        y = np.where(inside, part["y"].to_numpy(dtype=float), 0.0) / n_answers
        yhat = np.where(inside, part["yhat"].to_numpy(dtype=float), 0.0) / n_answers
        h = np.where(inside, part["c"].to_numpy(dtype=float), 0.0) / n_answers
        k = keep[name]
        ppi.append(Stratum(name, len(part), y[k], yhat[k], yhat))
        human.append(Stratum(name, len(part), h[k], np.zeros(len(k)), np.zeros(len(part))))
    return ppi, human


def bench_audit_ppi(quick: bool, cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list[Any]:
    from pipeline.aggregate import bootstrap_ci
    from pipeline.audit.ppi import stratified, unit_values
    from pipeline.audit.sample import allocate
    from pipeline.audit.scorecard import judge_values

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        dataset, judge, truth_judge = _build(root, quick)
        census, labels, answers, _ = _census(dataset, judge, truth_judge, root)
        values = judge_values(dataset, judge, root)
    sizes, draws = ((120,), 40) if quick else (SIZES, DRAWS)
    who = "expert" if dataset == "expertqa" else "hand"
    rows = []
    for metric in METRICS:
        units = unit_values(metric, census, answers, labels)
        if isinstance(units, str):
            rows.append(skipped(f"k. {metric}", units))
            continue
        c = units.clusters
        n_answers = len(units.answers)
        judged = c["labelled"].to_numpy(dtype=bool)
        parts = [(str(name), part) for name, part in c.groupby("stratum", sort=True)]
        const_j = units.answers["judge_const"].sum() / n_answers
        const_h = units.answers["human_const"].sum() / n_answers
        # the census of every unit the truth labels decide: the estimand, by both routes
        census_ppi, census_human = _strata(parts, n_answers, {name: np.flatnonzero(part["labelled"].to_numpy(dtype=bool))
                                                              for name, part in parts})
        truth_human = stratified(census_human, const_h, use_predictions=False, floor=False)
        truth_ppi = stratified(census_ppi, const_j, floor=False)
        if truth_human.value is None or truth_ppi.value is None:
            rows.append(skipped(f"k. {metric}", truth_human.reason or truth_ppi.reason))
            continue
        truth = float(truth_human.value[0])
        scorecard = _scorecard_truth(metric, census, answers, labels)
        per_answer = values[values["metric"] == metric]["value"].dropna().to_numpy(dtype=float)
        judge_only = float(per_answer.mean())
        low, high = bootstrap_ci(per_answer)
        strata_sizes = c.groupby("stratum")["cluster_id"].count().to_dict()
        mean_items = float(c["n_items"].mean())
        for n in sizes:
            alloc = allocate(strata_sizes, max(1, round(n / mean_items)))
            rng = np.random.default_rng(1000 + n)
            ppi_runs, human_runs, pairs, kept = [], [], [], []
            for _ in range(draws):
                # a draw as `aee audit sample` makes it; the statements the experts could not judge are drawn
                # and come back "can't tell", so they are not labelled
                picks = {name: np.sort(rng.choice(len(part), size=alloc[name], replace=False)) for name, part in parts}
                ppi_s, human_s = _strata(parts, n_answers, {name: picks[name][part["labelled"].to_numpy(dtype=bool)[picks[name]]]
                                                            for name, part in parts})
                ppi_runs.append(stratified(ppi_s, const_j))
                human_runs.append(stratified(human_s, const_h, use_predictions=False))
                pairs.append(sum(int(part["n_items"].to_numpy()[picks[name]].sum()) for name, part in parts))
                kept.append(sum(len(s.y) for s in ppi_s))
            p_err, p_width, p_cover, p_none = _summary(ppi_runs, truth)
            h_err, h_width, h_cover, h_none = _summary(human_runs, truth)
            first = next((r for r in ppi_runs if r.value is not None), None)
            first_text = ("" if first is None else
                          " (first draw [{:.1f}, {:.1f}])".format(*(float(np.clip(b[0], 0, 1)) * 100 for b in first.interval())))
            missing = f"; {p_none} draw(s) without a PPI estimate, {h_none} without a human-only one" if p_none or h_none else ""
            pooled = sum(1 for r in ppi_runs if r.pooled)
            if pooled:  # some stratum had under two labelled statements: a first estimate (strata pooled)
                missing += f"; {pooled} draw(s) pooled strata with under two labelled statements"
            rows.append(cost_row(
                f"k. {dataset} {metric}, ~{n} pairs: 95% interval width, human-only vs PPI",
                h_width, p_width, "points",
                f"truth (all {who} labels it decides, {int(judged.sum())} of {len(c)} statements) {truth * 100:.1f} "
                f"(PPI census {float(truth_ppi.value[0]) * 100:.1f}; as the scorecard averages them {scorecard * 100:.1f}); "
                f"judge-only ({judge}) {judge_only * 100:.1f}, error {100 * (judge_only - truth):+.1f}, bootstrap interval "
                f"width {100 * (high - low):.1f}; over {draws} draws of {np.mean(pairs):.0f} pairs ({np.mean(kept):.0f} "
                f"statements labelled) on average: PPI mean |error| {p_err:.1f}, covers the truth in {p_cover:.0f}%"
                f"{first_text}; human-only mean |error| {h_err:.1f}, covers {h_cover:.0f}%{missing}"))
    return rows
