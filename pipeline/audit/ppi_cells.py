"""The rows of the prediction-powered scorecard: one per metric and domain (all engines, or one
engine), with the rules that decide when a cell may show a number at all (docs/audit.md, "When a
cell shows a number"):

* the judge-only column is the plain scorecard's cell, computed by the same code
  (`pipeline.aggregate.summarize`): null with the judged share and the reason when too few of its
  units were judged;
* the same unjudged-share rule applies to what the corrected values estimate: units that stay
  unknown under any labels (a source without text here) are counted per answer by the estimator,
  and a cell where they are too many is n/a on the corrected side too;
* a cell with nothing a person could label, or with no labelled unit, is n/a and says what to label;
* below MIN_LABELLED_UNITS labelled units (and short of a census) the cell says how many more it
  needs instead of an interval, and gives no verdict on the judge;
* "judge biased" only when the 95% interval on the judge's error excludes 0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.audit.ppi import Estimate, Stratum, UnitValues, halving_labels, pool_short, stratified
from pipeline.audit.sample import Sample
from pipeline.metrics import METRICS

# Labelled units (statements for support, answers for relevance and stance) a cell needs before it
# shows an interval. Why 20 (docs/audit.md): below it the cell's units spread over its strata two or
# three at a time, each stratum's variance rests on one or two degrees of freedom, and a single
# disagreement moves the estimate by more than the interval's half-width; bench row q measures the
# coverage of the cells that pass.
MIN_LABELLED_UNITS = 20
# What a corrected value estimates, by the unit of the sample behind it, stated beside every number
# (CLI, JSON, page). A support audit asks about support only: which statements count (relevance)
# stays the judge's, so its corrected value is not the scorecard of everything the people would say
# (on ExpertQA, `aee scorecard --judge human` also takes the experts' relevance: 3-9 points apart
# per engine, bench row q).
# A support audit drawn with --relevance ("pair+relevance", answer clusters) asks both, and estimates
# the people's scorecard itself (pipeline.audit.ppi_relevance).
ESTIMANDS = {"pair": "the people's support labels, the judge's relevance",
             "pair+relevance": "the people's relevance and support labels",
             "statement": "the people's labels on every statement the metric reads"}
# relevant statements from the relevance items of a pair sample asking relevance (no statement sample)
RELEVANCE_ITEMS = "pair+relevance:relevance"
ESTIMANDS[RELEVANCE_ITEMS] = ESTIMANDS["statement"]
ESTIMAND_NOTES = {
    "pair": ("the scorecard with the people's support labels on the pairs a person can check (sources in the "
             "sample's scope with text here) and the judge's relevance: the judge still decides which statements "
             "count (a support audit asks nothing about relevance; draw one with --relevance to correct that too)"),
    "pair+relevance": ("the scorecard with the people's relevance of every statement and their support labels on the "
                       "pairs a person can check (sources in the sample's scope with text here): what `aee scorecard "
                       "--judge human` gives from the people's labels, a pair whose source has no text staying unknown"),
    "statement": ("the scorecard with the people's relevance, stance and confidence labels on every statement of "
                  "each answer"),
    RELEVANCE_ITEMS: "the scorecard with the people's relevance of every statement of each answer",
}
KIND_WORDS = {"pair": "a pair sample", "pair+relevance": "a pair sample asking relevance too",
              "statement": "a statement sample", RELEVANCE_ITEMS: "the relevance items of a pair sample asking relevance"}
UNIT_WORDS = {"pair": ("statement", "statements", "every cited source of each"),
              "pair+relevance": ("answer", "answers", "every statement's relevance and every cited source of each"),
              RELEVANCE_ITEMS: ("answer", "answers", "every statement's relevance and every cited source of each"),
              "statement": ("answer", "answers", "every statement of each")}


@dataclass(frozen=True)
class PPIRow:
    """One metric in one domain (an engine or all of them): judge-only, PPI and human-only."""

    metric: str
    domain: str
    judge_only: float | None
    judge_answers: int
    ppi: float | None
    ppi_low: float | None
    ppi_high: float | None
    human: float | None
    human_low: float | None
    human_high: float | None
    labelled_units: int
    labelled_items: int
    population_units: int
    population_answers: int
    biased: bool | None
    more_to_halve: int | None
    reason: str
    note: str = ""  # how the estimate was made when it is not the plain stratified one (strata pooled)
    pooled_strata: tuple[str, ...] = ()  # the strata estimated together
    judged_share: float | None = None  # the judge-only cell's judged share (the plain scorecard's)
    judge_reason: str = ""  # why the judge-only cell is n/a, in the plain scorecard's words
    more_needed: int | None = None  # labelled units still missing before the cell shows an interval
    min_labelled: int = MIN_LABELLED_UNITS
    bias: float | None = None  # the judge-only value shown minus the corrected one (display units)
    bias_low: float | None = None
    bias_high: float | None = None
    estimand: str = ""  # what the corrected and people-only values estimate (ESTIMANDS)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def pooled_note(pooled: Sequence[str]) -> str:
    """What a row says when strata were estimated together ("" when none were; the row's
    `pooled_strata` names them)."""
    if not pooled:
        return ""
    return (f"a first estimate: {len(pooled)} strata with under two labelled units pooled; label more for the "
            "stratified one")


def _scaled(metric: str, value: float | None) -> float | None:
    return None if value is None else METRICS[metric].scale(value)


def cell_rule(rows: pd.DataFrame, metric: str) -> tuple[float | None, float | None, str, int]:
    """A cell of the plain scorecard from per-answer rows of one metric (answer_id, query_type, value
    and, where kept, units, unknown, unknown_why): (value in display units or None, judged share,
    why it is None, answers averaged). Computed by `pipeline.aggregate.summarize`, so the
    unjudged-share rule is the scorecard's own code, not a copy of it."""
    from pipeline.aggregate import SummaryAccumulator, summarize

    if rows.empty:
        return None, None, "", 0
    keep = [c for c in ("answer_id", "query_type", "value", "units", "unknown", "unknown_why") if c in rows.columns]
    frame = rows[keep].assign(metric=metric, dataset="cell")  # one group: the cell
    if not METRICS[metric].harmonic_of:
        # the cell's value alone: `summarize` would also bootstrap an interval nobody reads here
        acc = SummaryAccumulator(["dataset"])
        acc.add_frame(frame, query_types=("all",))
        value, share, why, n = acc.cell(("cell",), "all", metric)
        return value, share, why or "", n
    out = summarize(frame, group_keys=())
    cell = out[(out["query_type"] == "all") & (out["metric"] == metric)]
    if cell.empty:
        return None, None, "", 0
    r = cell.iloc[0]
    value = None if r["value"] is None or r["value"] != r["value"] else float(r["value"])
    share = None if r["judged_share"] is None or r["judged_share"] != r["judged_share"] else float(r["judged_share"])
    return value, share, str(r["reason"] or ""), int(r["n_answers"])


@dataclass(frozen=True)
class DomainEstimate:
    estimate: Estimate
    strata: list[Stratum]
    answers: int
    judge_value: float | None  # the judge's own value on the estimand's units (no label): the bias is measured from it


def domain_estimates(metric: str, units: UnitValues, sample: Sample, domain: Callable[[pd.DataFrame], pd.Series],
                     *, use_predictions: bool = True) -> DomainEstimate:
    """The estimate for the answers a domain mask keeps (zero outside: domain estimation keeps the
    design's strata), as a share of those answers; and the strata used; and the answer count."""
    c = units.clusters
    keep = domain(c) & c["in_population"].astype(bool)
    answers = units.answers[domain(units.answers)] if not units.answers.empty else units.answers
    n_answers = int(answers["answer_id"].nunique()) if not answers.empty else 0
    if n_answers == 0:
        return DomainEstimate(Estimate(None, None, reason="no answer here where the metric is defined"), [], 0, None)
    const = float(answers["judge_const" if use_predictions else "human_const"].sum())
    strata = []
    judge_total = float(answers["judge_const"].sum()) / n_answers
    # the strata by row positions over plain arrays: iterating the groups of the frame copied every
    # column of each part (Arrow strings included; 2-3 s at 140k answers, 561,600 clusters)
    inside_all = keep.to_numpy(dtype=bool)
    labelled_all = c["labelled"].to_numpy(dtype=bool)
    truth_all = c["y" if use_predictions else "c"].to_numpy(dtype=float)
    pred_all = c["yhat"].to_numpy(dtype=float)
    for name, rows in sorted(c.groupby("stratum", sort=True).indices.items()):
        inside = inside_all[rows]
        if not inside.any():
            continue  # no unit of this stratum is in the domain: it adds exactly 0 and needs no label
        labelled = labelled_all[rows]
        truth = np.where(inside, truth_all[rows], 0.0)
        pred = np.where(inside, pred_all[rows], 0.0)
        judge_total += float(pred.sum()) / n_answers
        # the people-only estimate uses no prediction (lam = 0: `yhat_all` then only tells the variance
        # floor how large one unit can be, should every labelled unit read the same)
        labelled_pred = pred[labelled] if use_predictions else np.zeros(int(labelled.sum()))
        strata.append(Stratum(str(name), len(rows), truth[labelled] / n_answers, labelled_pred / n_answers,
                              pred / n_answers))
    strata, pooled = pool_short(strata)  # the same pool for the PPI and the people-only estimate
    estimate = stratified(strata, const / n_answers, use_predictions=use_predictions, pool=False)
    return DomainEstimate(replace(estimate, pooled=pooled), strata, n_answers, judge_total)


def settle_undecided(metric: str, units: UnitValues, sample: Sample,
                     groups: Mapping[str, Callable[[pd.DataFrame], pd.Series]] | None = None,
                     slopes: dict[str, tuple[float, float]] | None = None) -> UnitValues:
    """The unit values with every "can't tell" unit completed (`pipeline.audit.ppi`, "Undecided
    units"): y_u + fill_u * b_e, where b_e is the judge's mean error per answer on the unit's engine
    (the corrected value minus the judge's, over the answers that hold audited units), and likewise
    c_u + fill_c_u * (the people-only value minus the label-free baseline's). b_e depends on the
    units through the estimate, which is linear in them (a stratified mean), so b_e = g(b_e) has the
    closed form g(0) / (1 - (g(1) - g(0))) from two evaluations; engines do not interact (each
    engine's estimate reads its own units only). An engine whose estimate cannot be made yet keeps
    b_e = 0 (the judge's own value for the rest of the answer). `groups` (name -> mask, disjoint)
    replaces the engines: an answer that drops out of a domain's mean takes that domain's mean
    (`pipeline.audit.ppi_relevance`), so each domain is settled as one group. `slopes`, when given,
    receives each group's fixed-point slopes (corrected, people-only): see `widened`."""
    c = units.clusters
    if "fill" not in c.columns:
        return units
    touched = c["labelled"].astype(bool) & ((c["fill"] > 0) | (c["fill_c"] > 0))
    if not touched.any():
        return units
    if groups is None:
        groups = {e: _engine_mask(e) for e in sorted(set(c.loc[touched, "engine"]))}

    def completed(errors: Mapping[str, tuple[float, float]]) -> UnitValues:
        out = c.copy()
        for g, mask in groups.items():
            on = mask(out)
            out.loc[on, "y"] = c.loc[on, "y"] + c.loc[on, "fill"] * errors[g][0]
            out.loc[on, "c"] = c.loc[on, "c"] + c.loc[on, "fill_c"] * errors[g][1]
        return replace(units, clusters=out)

    at0 = completed({g: (0.0, 0.0) for g in groups})
    at1 = completed({g: (1.0, 1.0) for g in groups})
    solved = {}
    for g, mask in groups.items():
        (y0, c0, made0), (y1, c1, made1) = (_engine_errors(metric, at, sample, mask) for at in (at0, at1))
        solved[g] = (_fixed_point(y0, y1), _fixed_point(c0, c1)) if made0 and made1 else (0.0, 0.0)
        if slopes is not None:
            slopes[g] = (y1 - y0, c1 - c0) if made0 and made1 else (0.0, 0.0)
    return completed(solved)


def widened(estimate: Estimate, slope: float) -> Estimate:
    """The estimate's spread divided by 1 - slope, the slope of its settled units' fixed point (the
    estimated share of the domain that dropped out or was left undecided). Settled, the estimate is
    a ratio A / B with B = 1 - slope; the rectifiers it sums are the linearised residuals of that
    ratio, whose variance the delta method divides by B^2. Left out, the intervals of a domain where
    a fifth of the answers drop out missed in 10.5% of draws, evenly on both sides (bench row q)."""
    if estimate.value is None or estimate.se is None or not 0 < slope < 1 - 1e-9:
        return estimate
    k = 1 / (1 - slope)
    return replace(estimate, se=estimate.se * k, variances={h: v * k**2 for h, v in estimate.variances.items()},
                   shift=None if estimate.shift is None else estimate.shift * k)


def _engine_mask(engine: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda frame: frame["engine"] == engine


def _domain_base(units: UnitValues, mask: Callable[[pd.DataFrame], pd.Series]) -> UnitValues:
    """The unit values with each answer that drops out of the people's mean (`drop_out`, a share of
    the people labelling it) given the domain's judge mean as the base of its value: settled with
    the domain's error, it then takes the domain's corrected mean (`pipeline.audit.ppi_relevance`)."""
    c = units.clusters
    if "drop_out" not in c.columns or not (c["drop_out"] > 0).any():
        return units
    inside = mask(c) & c["in_population"].astype(bool)
    n = int(units.answers[mask(units.answers)]["answer_id"].nunique()) if not units.answers.empty else 0
    if not inside.any() or n == 0:
        return units
    judge_mean = (float(c.loc[inside, "yhat"].sum()) + float(units.answers[mask(units.answers)]["judge_const"].sum())) / n
    out = c.copy()
    out["y"] = c["y"] + c["drop_out"] * judge_mean
    return replace(units, clusters=out)


def _fixed_point(at0: float, at1: float) -> float:
    """The b with b = g(b) for a linear g known at 0 and 1 (0 when the slope leaves no solution)."""
    slope = at1 - at0
    return at0 / (1 - slope) if 1 - slope > 1e-9 else 0.0


def _engine_errors(metric: str, units: UnitValues, sample: Sample,
                   mask: Callable[[pd.DataFrame], pd.Series]) -> tuple[float, float, bool]:
    """(corrected - judge, people-only - label-free baseline) per answer of one group (an engine)
    that holds audited units, and whether both estimates could be made (0 where not)."""
    c = units.clusters
    audited = int(c.loc[mask(c) & c["in_population"].astype(bool), "answer_id"].nunique())
    out, made = [], True
    for use_predictions in (True, False):
        d = domain_estimates(metric, units, sample, mask, use_predictions=use_predictions)
        answers = units.answers[mask(units.answers)]
        reference = d.judge_value if use_predictions else (
            float(answers["human_const"].sum()) / d.answers if d.answers else None)
        if d.estimate.value is None or audited == 0 or reference is None:
            out.append(0.0)
            made = False
            continue
        out.append((float(d.estimate.value[0]) - reference) * d.answers / audited)
    return out[0], out[1], made


def _bounds(estimate: Estimate, lo: float, hi: float) -> tuple[float | None, float | None, float | None]:
    if estimate.value is None:
        return None, None, None
    low, high = estimate.interval()  # type: ignore[misc]
    return (float(np.clip(estimate.value[0], lo, hi)), float(np.clip(low[0], lo, hi)), float(np.clip(high[0], lo, hi)))


def sample_kind(sample: Sample) -> str:
    """The key of ESTIMANDS and UNIT_WORDS for a sample: its unit, "pair+relevance" for a pair
    sample that asks relevance too."""
    if sample.meta.get("relevance_of"):
        return RELEVANCE_ITEMS
    return "pair+relevance" if sample.unit == "pair" and sample.meta.get("relevance") else sample.unit


def short_cells(sample: Sample, minimum: int = MIN_LABELLED_UNITS) -> list[str]:
    """What a freshly drawn sample cannot give even when every item of it is labelled: per engine,
    fewer drawn units than a cell needs before it shows a corrected value (the minimum, or all of
    the engine's units when it has fewer), with how many more to draw. Said when the sample is drawn
    (`aee audit sample`, the Audit page), not after the labelling."""
    frame = sample.frame
    if frame.empty or "engine" not in frame.columns:
        return []
    one, many, _ = UNIT_WORDS.get(sample_kind(sample), ("unit", "units", ""))
    drawn = set(sample.items["cluster_id"])
    out = []
    per_item = float(frame["n_items"].mean()) if "n_items" in frame.columns and len(frame) else 1.0
    for engine, part in frame.groupby("engine", sort=True):
        need = min(minimum, len(part))
        got = int(part["cluster_id"].isin(drawn).sum())
        if got < need:
            out.append(f"{engine}: {got} of its {len(part)} {many} drawn; its corrected values need {need} labelled "
                       f"{many if need > 1 else one} (draw about {int(round((need - got) * per_item))} items more, or "
                       "read its row as the judge's only)")
    return out


def items_for_corrected_values(frame, seed: int = 0, *, dataset: str, judge: str, step: int = 10,
                               minimum: int = MIN_LABELLED_UNITS) -> int | None:
    """The fewest items (a multiple of `step`) whose draw from `frame` leaves no engine short of the
    units its corrected values need (`short_cells` empty), found by bisection over the draw itself;
    the whole population when no smaller draw does. None when nothing can be drawn. What the Audit
    page drafts, so a sample drawn as offered can give every engine a corrected value."""
    from pipeline.audit.sample import MAX_ITEMS, draw
    from pipeline.errors import InputError

    clusters = frame.clusters
    if clusters.empty:
        return None
    total = int(clusters["n_items"].sum())
    top = min(MAX_ITEMS, -(-total // step) * step)

    counts = _per_stratum(clusters)

    def enough(n: int) -> bool:
        if counts is not None:  # what the draw would leave short depends on its allocation alone
            return _allocation_enough(clusters, counts, n, minimum)
        try:
            return not short_cells(draw(frame, n, seed, dataset=dataset, judge=judge), minimum)
        except InputError:  # too few items to hold every stratum's minimum
            return False

    if not enough(top):
        return top
    low, high = 0, top // step  # enough(high * step) holds
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid * step):
            high = mid
        else:
            low = mid
    return high * step


def _per_stratum(clusters) -> dict[str, tuple[str, int]] | None:
    """{stratum: (its engine, its clusters)} when every stratum lies within one engine (as the audit
    frames' strata do: engine · what the judge said), else None."""
    engines = clusters.groupby("stratum", sort=False)["engine"].agg(["nunique", "first", "size"])
    if (engines["nunique"] > 1).any():
        return None
    return {str(h): (str(row["first"]), int(row["size"])) for h, row in engines.iterrows()}


def _allocation_enough(clusters, counts: dict[str, tuple[str, int]], n: int, minimum: int) -> bool:
    """`not short_cells(draw(frame, n, ...))` without drawing: a draw takes `allocate`'s number of
    clusters from each stratum, all distinct, so an engine gets the sum over its strata whatever
    the seed (tests/pages/test_page_records.py checks it against the draw itself)."""
    from pipeline.audit.sample import MAX_ITEMS, MIN_PER_STRATUM, allocate
    from pipeline.errors import InputError

    if n < 1 or n > MAX_ITEMS:
        return False
    wanted = max(1, round(n / float(clusters["n_items"].mean())))
    sizes = {h: size for h, (_, size) in counts.items()}
    if wanted < sum(min(size, MIN_PER_STRATUM) for size in sizes.values()) and wanted < len(clusters):
        return False
    try:
        alloc = allocate(sizes, wanted, MIN_PER_STRATUM)
    except InputError:
        return False
    drawn: dict[str, int] = {}
    population: dict[str, int] = {}
    for h, (engine, size) in counts.items():
        drawn[engine] = drawn.get(engine, 0) + alloc.get(h, 0)
        population[engine] = population.get(engine, 0) + size
    return all(drawn[e] >= min(minimum, population[e]) for e in population)


def what_to_label(unit: str, domain: str, labelled: int, population: int, minimum: int = MIN_LABELLED_UNITS,
                  scope: str = "cited") -> str:
    """Why a cell shows no corrected value yet, and what to label ("" when it may show one); `scope`
    is the pair sample's (`all`: every listed source, not only the cited ones)."""
    one, many, scope_words = UNIT_WORDS.get(unit, ("unit", "units", "all of each"))
    if scope == "all":
        scope_words = scope_words.replace("every cited source", "every listed source")
    where = "across all engines" if domain == "all engines" else f"of {domain}"
    if population == 0:
        return (f"nothing here a person could label: no {one} {where} has a source with text here, so no label can "
                "check the judge-only value")
    if labelled >= population or labelled >= minimum:
        return ""
    need = min(minimum, population) - labelled
    if labelled == 0:
        return f"no labelled {one} here yet: label {need} {many} {where} ({scope_words}) for a corrected value"
    return (f"needs {need} more labelled {many if need > 1 else one} {where} ({scope_words}): a cell shows a corrected "
            f"value from {min(minimum, population)} on (has {labelled})")


def ppi_rows(metric: str, units: UnitValues, sample: Sample, judge_values: pd.DataFrame,
             domains: Mapping[str, Callable[[pd.DataFrame], pd.Series]], *,
             minimum: int = MIN_LABELLED_UNITS, known_cells: dict | None = None) -> list[PPIRow]:
    """The scorecard rows of one metric: for each domain, the judge-only value (the plain scorecard's
    cell from the per-answer values in `judge_values`: answer_id, engine, query_type, value and the
    unit counts), the PPI estimate and the human-only one with 95% intervals, n and the verdict on
    bias, each shown only where the rules of the module doc allow. `known_cells` (a dict the caller
    keeps) holds the label-free cell rules between calls on the same results, which only the
    labelled units differ between (bench row q redraws a sample hundreds of times)."""
    cells = {} if known_cells is None else known_cells
    per_domain = sample_kind(sample) == "pair+relevance"  # answers dropping out take their domain's mean
    raw_units = units
    if not per_domain:
        units = settle_undecided(metric, units, sample)
    out = []
    info = METRICS[metric]
    lo_bound, hi_bound = (0.0, 1.0) if info.unit == "percent" else (-np.inf, np.inf)
    items_per_unit = units.clusters.groupby("stratum")["n_items"].mean().to_dict()
    labelled_items = sample.items["cluster_id"].value_counts().to_dict()
    drawn = set(sample.items["cluster_id"])
    c = units.clusters
    for name, mask in domains.items():
        slopes: dict[str, tuple[float, float]] = {}
        if per_domain:
            units = settle_undecided(metric, _domain_base(raw_units, mask), sample, {name: mask}, slopes)
        if ("judge", metric, name) not in cells:
            cells[("judge", metric, name)] = cell_rule(judge_values[mask(judge_values)], metric)
        judge_only, judged_share, judge_reason, judge_answers = cells[("judge", metric, name)]
        inside = mask(c) & c["in_population"].astype(bool)
        lab = inside & c["labelled"].astype(bool) & c["cluster_id"].isin(drawn)
        n_lab, n_pop = int(lab.sum()), int(inside.sum())
        if ("estimand", metric, name) not in cells:
            cells[("estimand", metric, name)] = "" if units.judged.empty else cell_rule(units.judged[mask(units.judged)], metric)[2]
        estimand_reason = cells[("estimand", metric, name)]
        reason = what_to_label(sample_kind(sample), name, n_lab, n_pop, minimum, scope=str(sample.meta.get("scope", "cited")))
        if estimand_reason and (not reason or n_pop > 0):
            # n/a whatever is labelled (sources without text): say so before asking for labels that cannot help
            reason = f"n/a as on the scorecard: {estimand_reason}, whoever labels the rest"
        if not reason and per_domain and n_lab and bool((c.loc[lab, "drop_out"] >= 1 - 1e-12).all()):
            # nothing to take a mean of: every labelled answer left without a value by the people
            reason = ("the people's labels leave no labelled answer here with a value (every statement filler, or "
                      "too little decided): label more answers")
        ppi = domain_estimates(metric, units, sample, mask, use_predictions=True)
        human = domain_estimates(metric, units, sample, mask, use_predictions=False)
        if name in slopes:
            ppi = replace(ppi, estimate=widened(ppi.estimate, slopes[name][0]))
            human = replace(human, estimate=widened(human.estimate, slopes[name][1]))
        p_val = p_lo = p_hi = h_val = h_lo = h_hi = bias = b_lo = b_hi = None
        biased = None
        if not reason:
            p_val, p_lo, p_hi = _bounds(ppi.estimate, lo_bound, hi_bound)
            h_val, h_lo, h_hi = _bounds(human.estimate, lo_bound, hi_bound)
            reason = ppi.estimate.reason
            # the judge's error is read against the judge-only value the row shows (the plain scorecard's,
            # which may also count labels the audit never asks about, uncited pairs for one): "judge
            # biased" then says that the printed judge value lies outside the printed corrected interval
            reference = judge_only if judge_only is not None else _scaled(metric, ppi.judge_value)
            if p_val is not None and p_lo is not None and p_hi is not None and reference is not None:
                shown_val, shown_lo, shown_hi = (float(_scaled(metric, v)) for v in (p_val, p_lo, p_hi))  # type: ignore[arg-type]
                bias, b_lo, b_hi = reference - shown_val, reference - shown_hi, reference - shown_lo
                biased = bool(b_lo > 1e-9 or b_hi < -1e-9)  # the interval on the judge's error excludes 0
        shown = p_val is not None
        out.append(PPIRow(
            metric=metric, domain=name, judge_only=judge_only, judge_answers=judge_answers,
            ppi=_scaled(metric, p_val), ppi_low=_scaled(metric, p_lo), ppi_high=_scaled(metric, p_hi),
            human=_scaled(metric, h_val), human_low=_scaled(metric, h_lo), human_high=_scaled(metric, h_hi),
            labelled_units=n_lab, labelled_items=int(sum(labelled_items.get(cid, 0) for cid in c.loc[lab, "cluster_id"])),
            population_units=n_pop, population_answers=ppi.answers, biased=biased,
            more_to_halve=halving_labels(ppi.strata, ppi.estimate, items_per_unit) if shown else None,
            reason=reason, note=pooled_note(ppi.estimate.pooled) if shown else "",
            pooled_strata=ppi.estimate.pooled if shown else (), judged_share=judged_share, judge_reason=judge_reason,
            more_needed=(min(minimum, n_pop) - n_lab) if 0 < n_pop and n_lab < min(minimum, n_pop) else None,
            min_labelled=minimum, bias=bias, bias_low=b_lo, bias_high=b_hi, estimand=ESTIMANDS.get(sample_kind(sample), ""),
        ))
    return out
