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

Pairs the experts left without a support label (N/A or missing evidence) count as "not supported"
on both sides, so the truth is defined on every pair. A support audit keeps the judge's relevance
(it asks about support only), so the truth is the experts' support labels on the claims the offline
judge counts as relevant. With --quick the teaching corpus stands in (scripted judge, hand labels).
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


def _census(dataset: str, judge: str, truth_judge: str, root: Path) -> tuple[Any, dict, dict]:
    """Every cluster of the frame drawn, with the truth labels of every pair."""
    from pipeline.audit.population import pair_frame
    from pipeline.audit.sample import draw
    from pipeline.matrices import label_view
    from pipeline.tables import load_annotated

    answers = load_annotated(dataset, judge, root)
    truth = load_annotated(dataset, truth_judge, root)
    scope = "all" if dataset == "demo" else "cited"  # the teaching corpus's judges label uncited pairs too
    frame = pair_frame(dataset, answers, scope)
    census = draw(frame, int(frame.clusters["n_items"].sum()), 0, dataset=dataset, judge=judge)
    labels = {}
    for r in census.items.to_dict("records"):
        view = label_view(truth[r["answer_id"]])
        label = view.support.get((int(r["statement_index"]), int(r["source_index"])))
        labels[r["item_id"]] = {"support": label if label in ("full", "partial", "none") else "none"}
    return census, labels, answers


def _summary(est: Any, truth: float) -> tuple[float, float, float]:
    """Mean absolute error, mean interval width (points) and coverage (%) over the draws."""
    lo, hi = est.interval()
    lo, hi = np.clip(lo, 0, 1), np.clip(hi, 0, 1)
    err = float(np.mean(np.abs(est.value - truth))) * 100
    width = float(np.mean(hi - lo)) * 100
    cover = float(np.mean((lo <= truth) & (truth <= hi))) * 100
    return err, width, cover


def bench_audit_ppi(quick: bool, cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list[Any]:
    from pipeline.aggregate import bootstrap_ci
    from pipeline.audit.ppi import Stratum, stratified, unit_values
    from pipeline.audit.sample import allocate
    from pipeline.audit.scorecard import judge_values

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        dataset, judge, truth_judge = _build(root, quick)
        census, labels, answers = _census(dataset, judge, truth_judge, root)
        values = judge_values(dataset, judge, root)
    sizes, draws = ((120,), 40) if quick else (SIZES, DRAWS)
    rows = []
    for metric in METRICS:
        units = unit_values(metric, census, answers, labels)
        if isinstance(units, str):
            rows.append(skipped(f"k. {metric}", units))
            continue
        c = units.clusters
        n_answers = len(units.answers)
        truth = (units.answers["human_const"].sum() + c["c"].sum()) / n_answers  # census: every unit labelled
        ppi_truth = (units.answers["judge_const"].sum() + c["y"].sum()) / n_answers
        assert abs(truth - ppi_truth) < 1e-9, (truth, ppi_truth)  # both routes give the experts' value
        per_answer = values[values["metric"] == metric]["value"].dropna().to_numpy(dtype=float)
        judge_only = float(per_answer.mean())
        low, high = bootstrap_ci(per_answer)
        strata_sizes = c.groupby("stratum")["cluster_id"].count().to_dict()
        mean_items = float(c["n_items"].mean())
        for n in sizes:
            alloc = allocate(strata_sizes, max(1, round(n / mean_items)))
            rng = np.random.default_rng(1000 + n)
            ppi_strata, human_strata, items_drawn = [], [], []
            for name, part in c.groupby("stratum", sort=True):
                picks = np.argsort(rng.random((draws, len(part))), axis=1)[:, : alloc[str(name)]]
                inside = part["in_population"].to_numpy(dtype=bool)
                y = np.where(inside, part["y"].to_numpy(dtype=float), 0.0) / n_answers
                yhat = np.where(inside, part["yhat"].to_numpy(dtype=float), 0.0) / n_answers
                h = np.where(inside, part["c"].to_numpy(dtype=float), 0.0) / n_answers
                everyone = np.repeat(yhat[:, None], draws, axis=1)
                ppi_strata.append(Stratum(str(name), len(part), y[picks].T, yhat[picks].T, everyone))
                human_strata.append(Stratum(str(name), len(part), h[picks].T, np.zeros_like(h[picks].T),
                                            np.zeros((len(part), draws))))
                items_drawn.append(part["n_items"].to_numpy()[picks].sum(axis=1))
            const_j = units.answers["judge_const"].sum() / n_answers
            const_h = units.answers["human_const"].sum() / n_answers
            ppi = stratified(ppi_strata, const_j)
            human = stratified(human_strata, const_h, use_predictions=False)
            pairs = float(np.mean(np.sum(items_drawn, axis=0)))

            p_err, p_width, p_cover = _summary(ppi, truth)
            h_err, h_width, h_cover = _summary(human, truth)
            first_lo, first_hi = (float(np.clip(b[0], 0, 1)) * 100 for b in ppi.interval())
            rows.append(cost_row(
                f"k. {dataset} {metric}, ~{n} pairs: 95% interval width, human-only vs PPI",
                h_width, p_width, "points",
                f"truth (all {'expert' if dataset == 'expertqa' else 'hand'} labels) {truth * 100:.1f}; judge-only "
                f"({judge}) {judge_only * 100:.1f}, error {100 * (judge_only - truth):+.1f}, bootstrap interval width "
                f"{100 * (high - low):.1f}; over {draws} draws of {pairs:.0f} pairs on average: PPI mean |error| "
                f"{p_err:.1f}, covers the truth in {p_cover:.0f}% (first draw [{first_lo:.1f}, {first_hi:.1f}]); "
                f"human-only mean |error| {h_err:.1f}, covers {h_cover:.0f}%"))
    return rows
