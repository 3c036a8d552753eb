"""Prediction-powered scorecard: the judge's labels on everything, corrected by human labels on a
probability sample (Angelopoulos et al., 2023; the `ppi-python` package by the same authors).

The estimand is the scorecard's own number computed with human labels: a macro mean over answers
of a per-answer metric (strict rules). Every sampling unit u (a statement for support, an answer
for relevance and stance) carries
  * a prediction yhat_u: its share of the answer's value under the judge's labels,
  * where a person labelled all of it, the value y_u the same share takes with their labels
    (y_u = yhat_u + the change in the answer's value when only u's labels are replaced),
  * for the human-only estimate, c_u: the change from a label-free baseline (every pair "none"),
so that summing y_u over an answer's units gives the answer's value with human labels (the metrics
used here are sums over units; `additivity_gap` checks it on real answers). The metric functions
of the registry compute every one of these numbers: nothing here restates a metric.

Estimate = sum over strata h of N_h * (PPI mean of stratum h), the PPI mean being
`ppi_mean_pointestimate` with lam=1 (classical PPI; within a stratum drawn by the judge's label the
prediction barely varies, so power tuning has nothing to gain and its estimate would be noise).
`ppi_mean_ci` treats labelled units as independent draws from an infinite population; our sample is
drawn without replacement within strata from a finite population whose judge labels are all known.
So its interval is read per stratum as a standard error, the part due to the judge's labels (which
are known for every unit, `ppi_mean_ci` on a zero rectifier) is taken out, and the rectifier's
variance is corrected for sampling without replacement (n_h/(n_h - 1) for the unbiased sample
variance, 1 - n_h/N_h for the finite population), then strata are added up (they are independent).
The human-only estimate is the same stratified estimator without predictions (lam=0, the classical
interval). Intervals are Student t 95% intervals on the Welch-Satterthwaite degrees of freedom of the
sum over strata, clipped to the metric's range, and no stratum's variance is taken below a floor:
the Wilson score bound for a stratum where no disagreement with the judge was seen, times the typical
size of a disagreement in the cell (`stratum_total`, docs/audit.md "Small samples"), so that a few
agreeing labels never print a 0-wide or 4-point interval. When a cell may show a number at all is
decided in `pipeline.audit.ppi_cells`.

Skewed rectifiers (a judge usually close, now and then far off): the interval applies Hall's (1992)
transformation of the studentized estimate, `pipeline.audit.ppi_skew` says why.

Judge abstentions (`unknown`, no verdict, an error) are never predictions: such a pair counts as "no
support" inside the prediction, a constant, which the rectifier then corrects from human labels
(they sit in their own "judge: unknown" strata).

Undecided units. An annotator's "can't tell" on a pair is not a label, but it is an answer: the pair
is undecided, exactly as on the scorecard of the people's labels, where a statement (or citation)
with no decided label leaves its answer's denominator. So a unit the person answered in full, "can't
tell" included, is labelled. Leaving a unit out of a ratio is the same as giving it the ratio's own
value: with D decided units in the answer, of which the unit takes out a share f, its exact y_u is
yhat_u + (answer with it undecided - answer, under the judge) + f * e, e the judge's error on the
rest of the answer (its value there under the people's labels minus the judge's). Without e this is
exact only when the rest of the answer keeps the judge's labels; a judge that errs on the rest moves
the answer's other units by 1/D each where the scorecard moves them by 1/(D - fD). e is unknown where
the rest of the answer was not labelled; its estimate is the judge's mean error per answer on the
same engine, which is what the audit estimates (`ppi_cells.settle_undecided` solves the two
together). Units store the part without e (`y`, `c`) and f (`fill`, `fill_c`). Before, such units were left out and assumed to
be like their stratum: 0.6 points below the scorecard it estimates on ExpertQA's rr_sphere_gpt4,
whose interval then missed on one side (bench row q). A unit a person skipped is still not labelled.

A pair whose source has no text here (or could not be fetched) is unknown to every judge and to the
metrics (docs/metrics/unknown.md), and nobody is asked about it (`population.audited_sources`): it
stays unknown in the prediction, in the label-free baseline and under the people's labels, so the
estimand is the scorecard a judge agreeing with the people on every readable pair would give, with
the same statements and answers left out as in the judge-only value. An answer whose value is null
that way (too few readable pairs) is outside the metric's population, as it is on the scorecard.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.audit import CANT_TELL, definite
from pipeline.audit.humans import audit_judge_id, human_verdicts
from pipeline.audit.population import audited_sources, pair_cluster_ids
from pipeline.audit.ppi_relevance import relevance_units
from pipeline.audit.ppi_skew import skewed_interval
from pipeline.audit.ppi_soft import expected_change, pair_probabilities
from pipeline.audit.ppi_units import (  # noqa: F401 (re-exported: callers import them from here)
    NO_PREDICTION_JUDGE,
    STRICT,
    Piece,
    Population,
    UnitValues,
    _const,
    _finish,
    _outside,
    _support,
    in_scope,
    out_of_date,
    prediction_view,
    with_verdicts,
)
from pipeline.audit.sample import Sample
from pipeline.metrics import METRICS, ScoringContext
from pipeline.records import AnnotatedAnswer, unreadable_code

ALPHA = 0.05
Z = NormalDist().inv_cdf(1 - ALPHA / 2)

# metric -> the audit unit whose labels it needs; None: the metric reads no judge label at all
PPI_METRICS: dict[str, str | None] = {
    "unsupported_statements": "pair",
    "citation_accuracy": "pair",
    "relevant_statements": "statement",
    "one_sided": "statement",
    "overconfident": "statement",
    "uncited_sources": None,
}
# statement-unit metrics and the human fields each needs on every statement of an answer
ANSWER_FIELDS: dict[str, tuple[str, ...]] = {"relevant_statements": ("relevant",), "one_sided": ("relevant", "stance"),
                                             "overconfident": ("relevant", "stance", "confidence")}


def _ppi():
    """The `ppi_py` package (the `audit` extra), imported on first use: it takes seconds to load."""
    try:
        import ppi_py
    except ImportError as exc:  # pragma: no cover - exercised where the extra is missing
        raise ImportError("prediction-powered estimates need the `ppi-python` package: "
                          "pip install 'answer-engine-audit[audit]' (or `make setup`)") from exc
    return ppi_py


# ---- the stratified estimator --------------------------------------------------------------------


@dataclass(frozen=True)
class Stratum:
    """One stratum's units: `y`/`yhat` for the labelled ones (n x d), `yhat_all` for all N of them."""

    name: str
    size: int
    y: np.ndarray
    yhat: np.ndarray
    yhat_all: np.ndarray
    # sampling weight of each labelled unit, for a stratum pooled from several (`pool_short`); None: equal
    w: np.ndarray | None = None


@dataclass(frozen=True)
class Estimate:
    """A total over strata (plus a known constant) with its standard error and 95% interval; arrays
    of length d (one per column of the inputs). `reason` says why it is missing (value None);
    `pooled` names the strata that had too few labelled units and were estimated together; `df` the
    degrees of freedom of the Student t quantile the interval uses (Welch-Satterthwaite over the
    strata; None: the normal quantile, as for a census)."""

    value: np.ndarray | None
    se: np.ndarray | None
    variances: dict[str, np.ndarray] = field(default_factory=dict)  # per stratum: variance of its total
    reason: str = ""
    pooled: tuple[str, ...] = ()
    df: np.ndarray | None = None
    # Johnson's first-order skewness correction (third cumulant / 6 variance, at most one se): how far
    # the centre of the sampling distribution sits from the estimate (`aee compare`'s draws use it)
    shift: np.ndarray | None = None
    # the estimate's standardized skewness (third cumulant / variance^1.5): the interval applies Hall's
    # transformation with it (`ppi_skew.skewed_interval`); None: a symmetric interval around value + shift
    skewness: np.ndarray | None = None

    def quantile(self) -> np.ndarray | float:
        """The two-sided 95% quantile: Student's t on `df` degrees of freedom, or the normal's."""
        if self.df is None:
            return Z
        from scipy.stats import t as student_t

        return np.asarray(student_t.ppf(1 - ALPHA / 2, np.maximum(self.df, 1.0)), dtype=np.float64)

    def interval(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.value is None or self.se is None:
            return None
        q = self.quantile()
        if self.skewness is not None:
            return skewed_interval(self.value, self.se, self.skewness, q)
        centre = self.value if self.shift is None else self.value + self.shift
        return centre - q * self.se, centre + q * self.se



def _as2d(values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    return arr.reshape(-1, 1) if arr.ndim == 1 else arr


def _se_from_interval(low: Any, high: Any) -> np.ndarray:
    return (np.asarray(high, dtype=np.float64).reshape(-1) - np.asarray(low, dtype=np.float64).reshape(-1)) / (2 * Z)


def stratum_total(s: Stratum, *, use_predictions: bool = True, floor_scale: np.ndarray | None = None,
                  student: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(N_h times the stratum mean, its variance) from `ppi_py` with the design corrections of the
    module doc. A census (every unit labelled) is exact. With `floor_scale`, the rectifier's
    standard error is never taken below scale * z / (n + z^2): n labelled units without one
    disagreement still allow a disagreement rate up to z^2 / (n + z^2) (Wilson's score bound), each
    disagreement of about `floor_scale`. A handful of agreeing labels shows no spread, which is not
    certainty; where disagreements were seen their own variance is almost always larger. `student`
    widens the stratum alone to Student's t on n - 1 degrees of freedom (kept for callers that
    read one stratum; `stratified` applies t to the whole sum instead)."""
    ppi = _ppi()
    y, yhat, yhat_all = _as2d(s.y), _as2d(s.yhat), _as2d(s.yhat_all)
    n, big_n = y.shape[0], s.size
    if n >= big_n:
        return big_n * y.mean(axis=0), np.zeros(y.shape[1])
    lam = 1 if use_predictions else 0
    w = s.w
    mean = np.asarray(ppi.ppi_mean_pointestimate(y, yhat, yhat_all, lam=lam, w=w), dtype=np.float64).reshape(-1)
    low, high = ppi.ppi_mean_ci(y, yhat, yhat_all, alpha=ALPHA, lam=lam, w=w)
    se_all = _se_from_interval(low, high)
    if use_predictions:  # the judge part: ppi's interval around a zero rectifier
        low0, high0 = ppi.ppi_mean_ci(yhat, yhat, yhat_all, alpha=ALPHA, lam=1, w=w)
        se_judge = _se_from_interval(low0, high0)
    else:
        se_judge = np.zeros_like(se_all)
    rectifier = np.maximum(se_all**2 - se_judge**2, 0.0) * n / (n - 1)  # s_h^2 / n_h
    if floor_scale is not None:
        rectifier = np.maximum(rectifier, _rare_error_floor(y - lam * yhat, floor_scale))
    variance = rectifier * (1 - n / big_n)
    if student:
        from scipy.stats import t as student_t

        variance = variance * (float(student_t.ppf(1 - ALPHA / 2, n - 1)) / Z) ** 2
    return big_n * mean, big_n**2 * variance


def _rare_error_floor(r: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The least variance of the mean of n rectifiers `r` (n x d) that we accept, treating a
    disagreement with the judge as a rare event of rate p: the larger of
      * Wilson's bound when none was seen: p may still be z^2 / (n + z^2), each of size `scale`;
      * Agresti-Coull when k were seen: p~ = (k + z^2/2) / (n + z^2), variance
        m2 p~ (1 - p~) / (n + z^2), m2 the mean square of the disagreements seen.
    A judge that rarely errs gives rectifiers that are mostly 0 and sometimes large: a sample then
    usually sees fewer errors than there are, its variance and its estimate are low together, and a
    plain t interval misses on one side (measured on ExpertQA, bench row q)."""
    n = r.shape[0]
    wilson = (scale * Z / (n + Z**2)) ** 2
    nonzero = np.abs(r) > 1e-15
    k = nonzero.sum(axis=0)
    m2 = np.where(k > 0, (np.where(nonzero, r, 0.0) ** 2).sum(axis=0) / np.maximum(k, 1), scale**2)
    p = (k + Z**2 / 2) / (n + Z**2)
    return np.maximum(wilson, m2 * p * (1 - p) / (n + Z**2))


def satterthwaite(variances: Mapping[str, np.ndarray], dfs: Mapping[str, int]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of stratum variances, each estimated on
    dfs[h] = n_h - 1 degrees of freedom: (sum v_h)^2 / sum(v_h^2 / df_h). A few strata with two or
    three labelled units then give a t quantile near theirs, not the normal's."""
    names = [h for h in variances if dfs.get(h, 0) >= 1]
    if not names:
        return np.full_like(next(iter(variances.values()), np.zeros(1)), np.inf, dtype=np.float64)
    total = sum(variances[h] for h in names)
    denom = sum(variances[h] ** 2 / dfs[h] for h in names)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, total**2 / np.where(denom > 0, denom, 1.0), np.inf)


def _floor_scales(strata: Sequence[Stratum], use_predictions: bool) -> dict[str, np.ndarray]:
    """Per stratum, how far an unseen unit could plausibly sit from the labelled ones: the median
    size of the disagreements seen among all labelled units of the strata given (a cell's); when
    the labels show none at all, the largest prediction of the stratum."""
    labelled = [(_as2d(s.y) - (_as2d(s.yhat) if use_predictions else 0.0)) for s in strata if len(s.y)]
    width = max((_as2d(s.yhat_all).shape[1] for s in strata), default=1)
    if labelled:
        stacked = np.vstack(labelled)
        # the typical size of a disagreement: the median of the rectifiers that are not 0 (with
        # predictions) or of the distances from the median label (without); the largest one, used
        # before, is one unusual answer's and made the all-engines interval 40% wider than needed
        mag = np.abs(stacked - (0.0 if use_predictions else np.median(stacked, axis=0)))
        seen = np.array([np.median(col[col > 1e-15]) if (col > 1e-15).any() else 0.0 for col in mag.T])
        if not use_predictions:
            seen = np.where(seen > 0, seen, np.abs(stacked).max(axis=0))
    else:
        seen = np.zeros(width)
    out = {}
    for s in strata:
        own = np.abs(_as2d(s.yhat_all)).max(axis=0) if s.size else np.zeros(width)
        out[s.name] = np.where(seen > 0, seen, own)
    return out


def _short(s: Stratum) -> bool:
    """A stratum that cannot be estimated alone: none of several units labelled, or one (no variance)."""
    return s.size > 0 and (len(s.y) == 0 or (len(s.y) == 1 and s.size > 1))


def pool_short(strata: Sequence[Stratum]) -> tuple[list[Stratum], tuple[str, ...]]:
    """Strata that cannot be estimated alone, estimated together (collapsed strata): every short
    stratum goes into one pool, and while the pool has fewer than two labelled units the stratum
    with the most labelled units joins it. Inside the pool each labelled unit keeps its own stratum's
    sampling weight (N_h / n_h), so the pool's rectifier is their weighted mean; a short stratum with
    no labelled unit is taken to be like the rest of the pool, which is the pooled estimate's
    assumption and why the page calls it a first estimate. A pool holds few labelled units; its
    n - 1 degrees of freedom enter the t quantile of the sum (`stratified`). Returns the strata with the pool (or
    the strata unchanged when nothing is short or there is no way to reach two labelled units) and
    the names pooled."""
    short = [s for s in strata if _short(s)]
    if not short:
        return list(strata), ()
    rest = sorted((s for s in strata if not _short(s) and s.size > 0), key=lambda s: (-len(s.y), s.name))
    pool = list(short)
    while sum(len(s.y) for s in pool) < 2 and rest:
        pool.append(rest.pop(0))
    if sum(len(s.y) for s in pool) < 2:
        return list(strata), ()
    weights = [np.full(len(s.y), s.size / len(s.y)) for s in pool if len(s.y)]
    merged = Stratum("pooled: " + ", ".join(s.name for s in pool), sum(s.size for s in pool),
                     np.concatenate([_as2d(s.y) for s in pool if len(s.y)]),
                     np.concatenate([_as2d(s.yhat) for s in pool if len(s.y)]),
                     np.concatenate([_as2d(s.yhat_all) for s in pool if s.size]), np.concatenate(weights))
    names = {s.name for s in pool}
    return [s for s in strata if s.name not in names] + [merged], tuple(s.name for s in pool)


def stratified(strata: Sequence[Stratum], constant: np.ndarray | float = 0.0, *, use_predictions: bool = True,
               floor: bool = True, pool: bool = True) -> Estimate:
    """Constant + the sum of every stratum's estimated total. Strata that cannot be estimated alone
    (no labelled unit, or one of several: no variance) are estimated together (`pool_short`; the
    estimate names them); None with the reason when even that cannot reach two labelled units, or
    with `pool=False`. Each sampled stratum's variance has the floor `stratum_total` describes
    (`floor=False` turns it off), and the interval is Student's t on the Welch-Satterthwaite degrees
    of freedom of the sum, through Hall's transformation with the sum's skewness (`ppi_skew`;
    docs/audit.md, "Small samples")."""
    pooled: tuple[str, ...] = ()
    if pool:
        strata, pooled = pool_short(strata)
    short = [s for s in strata if _short(s)]
    if short:
        names = ", ".join(f"'{s.name}' ({len(s.y)} of {s.size})" for s in short[:4])
        return Estimate(None, None, reason=f"too few labelled units in {len(short)} stratum(s): {names}"
                                            + ("…" if len(short) > 4 else "") + "; label at least two in every stratum")
    width = max((_as2d(s.yhat_all).shape[1] for s in strata), default=1)
    total = np.zeros(width) + np.asarray(constant, dtype=np.float64)
    var = np.zeros(width)
    parts: dict[str, np.ndarray] = {}
    dfs: dict[str, int] = {}
    scales = _floor_scales(strata, use_predictions) if floor else {}
    third = np.zeros(width)
    for s in strata:
        if s.size == 0:
            continue
        sampled = 0 < len(s.y) < s.size
        t, v = stratum_total(s, use_predictions=use_predictions, floor_scale=scales.get(s.name) if sampled else None)
        total, var, parts[s.name] = total + t, var + v, v
        if sampled:
            dfs[s.name] = len(s.y) - 1
            third = third + _third_cumulant(s, use_predictions)
    df = satterthwaite(parts, dfs) if dfs else None
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(var > 0, third / (6 * np.where(var > 0, var, 1.0)), 0.0)
    se = np.sqrt(var)
    shift = np.clip(shift, -se, se)  # a correction, never a new estimate: the estimate stays inside
    with np.errstate(divide="ignore", invalid="ignore"):
        skewness = np.where(var > 0, third / np.where(var > 0, var, 1.0) ** 1.5, 0.0)
    return Estimate(total, se, parts, pooled=pooled, df=df, shift=shift if dfs else None,
                    skewness=skewness if dfs else None)


def _third_cumulant(s: Stratum, use_predictions: bool) -> np.ndarray:
    """The third cumulant of a sampled stratum's estimated total (Johnson 1978, for the skewness
    correction): N^3 m3 / n^2 times (1 - f)(1 - 2f) for sampling a fraction f without replacement,
    m3 the third central moment of the labelled units' rectifiers. Rectifiers are skewed where the
    judge rarely errs (most 0, a few large): a sample usually sees fewer errors than there are, and
    a symmetric interval then misses on that side far more often than on the other. 0 for a pool
    (its units carry unequal weights)."""
    if s.w is not None:
        return np.zeros(_as2d(s.yhat_all).shape[1])
    r = _as2d(s.y) - (_as2d(s.yhat) if use_predictions else 0.0)
    n, big_n = r.shape[0], s.size
    f = n / big_n
    m3 = ((r - r.mean(axis=0)) ** 3).mean(axis=0)
    return big_n**3 * m3 / n**2 * (1 - f) * (1 - 2 * f)


def halving_labels(strata: Sequence[Stratum], estimate: Estimate, items_per_unit: Mapping[str, float]) -> int | None:
    """About how many more labelled items would halve the interval, all strata growing in
    proportion (from var(k) = V0/k - C for k times the labelled units); None when the interval is
    already 0 wide or cannot be halved by labelling (every unit labelled first)."""
    if estimate.value is None or estimate.se is None or float(estimate.se[0]) <= 0:
        return None
    v0 = c = 0.0
    for s in strata:
        n = len(s.y)
        part = float(estimate.variances.get(s.name, np.zeros(1))[0])
        if part <= 0 or n >= s.size:
            continue
        unit_var = part / (s.size**2) / ((1 - n / s.size) / n)  # the stratum's unit variance s_h^2
        v0 += s.size**2 * unit_var / n
        c += s.size**2 * unit_var / s.size
    if v0 <= 0:
        return None
    k = 4 * v0 / (v0 + 3 * c)
    extra = 0.0
    for s in strata:
        n = len(s.y)
        if n < s.size:
            extra += (min(s.size, int(np.ceil(k * n))) - n) * items_per_unit.get(s.name, 1.0)
    return int(np.ceil(extra))


# ---- metric values per unit ----------------------------------------------------------------------


def _metric(name: str, a: AnnotatedAnswer) -> float | None:
    return METRICS[name].fn(ScoringContext(a, STRICT)).value


Labels = Mapping[str, Mapping[str, "str | None"]]  # item id -> field -> one person's label


def unit_values(metric: str, sample: Sample, answers: Mapping[str, AnnotatedAnswer],
                labels: Labels | Sequence[Labels], *, soft: bool = True,
                population: Population | None = None) -> UnitValues | str:
    """Every cluster's numbers for one metric, or the reason they cannot be computed. `labels` is
    one person's labels, or several people's: a unit's human value is then the mean of the values
    of the people who labelled all of it (so two people who disagree give the average of their two
    readings, where a majority vote would have to drop the unit). A judge whose support verdicts
    carry probabilities (the fitted judge's) predicts a statement unit by its expected value under
    them (`pipeline.audit.ppi_soft`) unless `soft` is False (its thresholded labels, as before).

    With `population` (`pipeline.audit.ppi_population`: the label-free numbers of every answer,
    written once per result set), `answers` need only hold the answers of the drawn clusters: the
    others' numbers are read from it, so a corrected value never reads every answer."""
    unit = PPI_METRICS.get(metric)
    if unit is None:
        return "this metric reads no judge label"
    if unit != sample.unit:
        return f"needs a sample of {unit}s (this one holds {sample.unit}s)"
    people: list[Labels] = [labels] if isinstance(labels, Mapping) else list(labels)
    if unit == "pair":
        return _pair_units(metric, sample, answers, people, soft, population)
    return _answer_units(metric, sample, answers, people, population)


def _pair_units(metric: str, sample: Sample, answers: Mapping[str, AnnotatedAnswer], people: Sequence[Labels],
                soft: bool, population: Population | None = None) -> UnitValues | str:
    frame, items = sample.frame, sample.items
    scope = sample.meta.get("scope", "cited")
    cited_only = population.cited_only if population is not None else all(
        a.answer.meta.get("support_scope") == "cited_only" for a in answers.values())
    if metric == "unsupported_statements" and scope != "all" and not cited_only:
        return ("this dataset's judges label uncited pairs too, so a statement can be supported by a source it does "
                "not cite: draw a pair sample with --scope all for this metric")
    if sample.meta.get("relevance"):  # answer clusters asking relevance too
        return relevance_units(metric, sample, answers, people, population)
    design = ("pair", metric, scope)
    # with a population only the given (drawn) answers are computed here: their clusters alone
    mine = frame if population is None else frame[frame["answer_id"].isin(set(answers))]
    by_answer: dict[str, list[str]] = {}
    for cid, aid in zip(mine["cluster_id"], mine["answer_id"]):
        by_answer.setdefault(aid, []).append(cid)
    stale = (population.out_of_date(design, frame, "statement") if population is not None else
             out_of_date(by_answer, frame["cluster_id"], answers, pair_cluster_ids(answers, scope), "statement"))
    if stale:
        return stale
    drawn: dict[str, list[tuple[str, int, int]]] = {}
    for r in items[["cluster_id", "item_id", "statement_index", "source_index"]].itertuples(index=False):
        drawn.setdefault(r.cluster_id, []).append((r.item_id, int(r.statement_index), int(r.source_index)))
    rows, consts, judged = [], [], []
    for aid in sorted(answers):
        piece = pair_piece(metric, answers[aid], by_answer.get(aid, []), scope, drawn, people, soft)
        if isinstance(piece, str):
            return piece
        rows += piece.rows
        consts += piece.consts
        judged += piece.judged
    if population is not None:
        return population.merged(design, sample, answers, rows, consts, judged)
    return replace(_finish(sample, rows, consts), judged=pd.DataFrame(judged))


def pair_piece(metric: str, a: AnnotatedAnswer, all_cids: Sequence[str], scope: str,
               drawn: Mapping[str, Sequence[tuple[str, int, int]]], people: Sequence[Labels], soft: bool) -> Piece | str:
    """One answer's part of `_pair_units`: its clusters' rows, its constant and its judged row (with
    nothing drawn and no people: what `pipeline.audit.ppi_population` keeps for it)."""
    aid = a.answer.answer_id
    probs = (pair_probabilities({aid: a}).get(aid) or {}) if soft else {}
    rows: list[dict] = []
    listed = {s.index: s for s in a.answer.sources}
    statements = {s.index: s for s in a.statements}
    if any(int(cid.rsplit("#s", 1)[1]) not in statements for cid in all_cids):
        return f"a statement of answer {aid!r} in the sample is no longer in the results: draw a new sample"
    a = in_scope(a, scope)
    partly_unreadable = _partly_unreadable(a, listed, scope) if metric == "unsupported_statements" else set()
    if partly_unreadable:
        a = _undecided_statements(a, partly_unreadable)
    cids = [cid for cid in all_cids if int(cid.rsplit("#s", 1)[1]) not in partly_unreadable]
    rows += [_outside(cid) for cid in all_cids if cid not in cids]
    frame_pairs = [(si, i) for si in (int(cid.rsplit("#s", 1)[1]) for cid in cids)
                   for i in audited_sources(statements[si], listed, scope)]
    base_j = prediction_view(a, frame_pairs)
    result = METRICS[metric].fn(ScoringContext(base_j, STRICT))
    g_j = result.value
    # every readable pair has a label in base_j: what is still unknown stays so under any labels
    judged = [{"answer_id": aid, "engine": a.answer.engine, "query_type": a.answer.query_type, "metric": metric,
               "value": g_j, "units": result.units, "unknown": result.unknown, "unknown_why": result.unknown_why}]
    if g_j is None:  # not defined for this answer whatever the support labels: outside the population
        return Piece(rows + [_outside(cid) for cid in cids], [], judged)
    if not cids:  # no pair of it can be audited and none is needed: a known constant
        return Piece(rows, [_const(a, g_j, g_j)], judged)
    base_h = with_verdicts(a, _support(a, {k: "none" for k in frame_pairs}, NO_PREDICTION_JUDGE))
    result_h = METRICS[metric].fn(ScoringContext(base_h, STRICT))
    g_h, n_j, n_h = result_h.value, result.n, result_h.n
    if g_h is None:  # too many pairs without text for a value whatever people say: outside, as for the judge
        return Piece(rows + [_outside(cid) for cid in cids], [], judged)
    consts = [_const(a, 0.0, g_h)]
    share = g_j / len(cids)
    for cid in cids:
        soft_part = None
        if probs:
            si = int(cid.rsplit("#s", 1)[1])
            soft_part = expected_change(partial(_value_with, metric, base_j), g_j,
                                        [p for p in frame_pairs if p[0] == si], probs)
        row = {"cluster_id": cid, "yhat": share + (soft_part or 0.0), "y": np.nan, "c": np.nan, "complete": False,
               "in_population": True}
        pairs = drawn.get(cid) or []
        deltas = []
        for labels in people if pairs else ():
            human = {(si, src): (labels.get(iid) or {}).get("support") for iid, si, src in pairs}
            if all(definite(v) or v == CANT_TELL for v in human.values()):
                # "can't tell" is an answer, not a missing label: the pair is undecided, as the
                # scorecard of these labels has it (module doc, "Undecided units")
                with_j, with_h = (METRICS[metric].fn(ScoringContext(_relabelled(base, human), STRICT))
                                  for base in (base_j, base_h))
                if with_j.value is not None and with_h.value is not None:
                    f_j, f_h = (_left_out(n, r.n) for n, r in ((n_j, with_j), (n_h, with_h)))
                    deltas.append((with_j.value - g_j, with_h.value - g_h, f_j, f_h))
        if deltas:
            got = np.mean(np.array(deltas), axis=0)
            row |= {"y": share + float(got[0]), "c": float(got[1]), "fill": float(got[2]), "fill_c": float(got[3]),
                    "complete": True}
        rows.append(row)
    return Piece(rows, consts, judged)


def _value_with(metric: str, a: AnnotatedAnswer, labels: Mapping[tuple[int, int], object]) -> float | None:
    """The metric's value of the answer with these support labels in place of the judge's."""
    return METRICS[metric].fn(ScoringContext(_relabelled(a, labels), STRICT)).value


def _left_out(before: int, after: int) -> float:
    """The share of an answer's decided units (statements, citations) that a person's "can't tell"
    took out of its denominator."""
    return 0.0 if before <= 0 or after >= before else (before - after) / before


def _relabelled(a: AnnotatedAnswer, human: Mapping[tuple[int, int], object]) -> AnnotatedAnswer:
    """The answer with one person's support labels on these pairs: a definite label replaces the
    judge's, "can't tell" leaves the pair unknown (the judge's label removed: in the label view a
    decided label would win over an `unknown` one)."""
    undecided = {k for k, v in human.items() if not definite(v)}
    if undecided:
        a = AnnotatedAnswer(a.answer, a.statements, tuple(
            v for v in a.verdicts if not (v.kind == "support" and (v.statement_index, v.source_index) in undecided)))
    return with_verdicts(a, _support(a, {k: str(v) for k, v in human.items() if definite(v)}, "human:audit"))


def _partly_unreadable(a: AnnotatedAnswer, listed: Mapping[int, Any], scope: str) -> set[int]:
    """Statements with a source in scope that has no text here (or could not be fetched). Whether such
    a statement is supported would hang on the labels of its other pairs (one "full" decides it, a
    "none" leaves it undecided), so its place in the answer's denominator would move with the labels
    and the estimate would stop being a sum over statements: unsupported statements is estimated
    over the statements whose every source in scope can be read, and these are left out."""
    out = set()
    for st in a.statements:
        indexes = [i for i in st.citations if i in listed] if scope == "cited" else list(listed)
        if any(unreadable_code(listed[i]) for i in indexes):
            out.add(st.index)
    return out


def _undecided_statements(a: AnnotatedAnswer, statements: set[int]) -> AnnotatedAnswer:
    """The answer with every single-source support verdict of these statements removed: each of
    their pairs is then unknown, so the metric leaves the statements out whatever anyone says."""
    keep = tuple(v for v in a.verdicts if not (v.kind == "support" and v.source_index is not None
                                               and v.statement_index in statements))
    return AnnotatedAnswer(a.answer, a.statements, keep)


def _answer_units(metric: str, sample: Sample, answers: Mapping[str, AnnotatedAnswer],
                  people: Sequence[Labels], population: Population | None = None) -> UnitValues | str:
    frame, items = sample.frame, sample.items
    drawn = {cid: part for cid, part in items.groupby("cluster_id", sort=False)}
    missing = sorted(set(frame["answer_id"]) - set(population.ids if population is not None else answers))
    if missing:
        return f"{len(missing)} answer(s) of the sample are no longer in the results (e.g. {missing[0]!r}): draw a new sample"
    rows, consts = [], []
    for cid, aid in zip(frame["cluster_id"], frame["answer_id"]):
        if population is not None and aid not in answers:
            continue  # its label-free numbers come from the population below
        piece = answer_piece(metric, answers[aid], cid, drawn.get(cid), people)
        rows += piece.rows
        consts += piece.consts
    if population is not None:
        return population.merged(("answer", metric, ""), sample, answers, rows, consts, [])
    return _finish(sample, rows, consts)


def answer_piece(metric: str, a: AnnotatedAnswer, cid: str, part: pd.DataFrame | None,
                 people: Sequence[Labels]) -> Piece:
    """One answer cluster's part of `_answer_units` (with no drawn part and no people: what
    `pipeline.audit.ppi_population` keeps for it)."""
    needs = ANSWER_FIELDS[metric]
    if METRICS[metric].debate_only and a.answer.query_type != "debate":
        return Piece([_outside(cid)], [], [])
    g_j = _metric(metric, a)
    # a judge that abstained on this answer predicts nothing: a constant 0 the rectifier corrects
    row = {"cluster_id": cid, "yhat": 0.0 if g_j is None else g_j, "y": np.nan, "c": np.nan, "complete": False,
           "in_population": True}
    records = [] if part is None else part.to_dict("records")
    values = []
    for labels in people if part is not None else ():
        if not _answer_complete(part, labels, needs):
            continue
        verdicts = human_verdicts(part, labels, audit_judge_id(["audit"]), "statement")
        if "confidence" not in needs:  # only metrics that read confidence take the person's
            verdicts = [v for v in verdicts if v.kind != "confidence"]
        # "can't tell" on relevance is an answer: the statement has no relevance label (the relevance
        # metrics leave it out, as on the scorecard of these labels), so the judge's is removed
        unsure = {int(r["statement_index"]) for r in records
                  if (labels.get(r["item_id"]) or {}).get("relevant") == CANT_TELL}
        base = AnnotatedAnswer(a.answer, a.statements, tuple(
            v for v in a.verdicts if not (v.kind == "relevance" and v.statement_index in unsure))) if unsure else a
        g_h = _metric(metric, with_verdicts(base, verdicts))
        if g_h is not None:
            values.append(g_h)
    if values:
        row |= {"y": float(np.mean(values)), "c": float(np.mean(values)), "complete": True}
    return Piece([row], [_const(a, 0.0, 0.0)], [])


def _answer_complete(part: pd.DataFrame, labels: Labels, needs: tuple[str, ...]) -> bool:
    """Every statement of the answer has what the metric reads: a relevance answer ("can't tell"
    counts: the statement then has no relevance label, as on the scorecard); a stance (an abstention
    counts: it is `unknown`) for statements of debate answers not called filler; the confidence."""
    debate = bool((part["query_type"] == "debate").any())
    confidence = False
    for r in part.to_dict("records"):
        got = labels.get(r["item_id"]) or {}
        if not (definite(got.get("relevant")) or got.get("relevant") == CANT_TELL):
            return False
        if "stance" in needs and debate and got.get("relevant") in ("relevant", CANT_TELL) and got.get("stance") not in (
                "agree", "disagree", "neutral", CANT_TELL):
            return False
        confidence = confidence or definite(got.get("confidence"))
    return confidence or "confidence" not in needs


def additivity_gap(metric: str, answer: AnnotatedAnswer, sample: Sample, labels: Labels,
                   units: UnitValues) -> float | None:
    """|sum of an answer's y_u - its value with every unit's human labels at once| for a pair
    metric (0 when the metric is a sum over statements, as the estimator assumes). None unless
    every unit of the answer was drawn and labelled."""
    aid = answer.answer.answer_id
    part = units.clusters[(units.clusters["answer_id"] == aid) & units.clusters["in_population"]]
    if part.empty or not part["labelled"].all():
        return None
    answer = in_scope(answer, sample.meta.get("scope", "cited"))
    if metric == "unsupported_statements":  # as `_pair_units` does: partly unreadable statements left out
        listed = {s.index: s for s in answer.answer.sources}
        answer = _undecided_statements(answer, _partly_unreadable(answer, listed, sample.meta.get("scope", "cited")))
    items = sample.items[sample.items["cluster_id"].isin(set(part["cluster_id"]))]
    pairs = {(int(r.statement_index), int(r.source_index)): (labels.get(r.item_id) or {}).get("support")
             for r in items.itertuples(index=False)}
    base = prediction_view(answer, list(pairs))
    together = _metric(metric, _relabelled(base, pairs))
    return None if together is None else abs(float(part["y"].sum()) - together)
