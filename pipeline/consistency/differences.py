"""Differences that are real: paired differences of every metric between two sides (two engines on
their shared queries, or one engine in two waves), with intervals that account for both sources of
chance, and a Holm adjustment over the metrics compared.

The difference of a metric is the mean over shared queries of (A's mean over its repeats - B's mean
over its repeats), in display units (percentage points for percent metrics). The queries are the
draw: each query's difference of means already carries its repeats' noise, so the standard error is
that of a mean of Q paired differences, s / sqrt(Q), and the p-value and the 95% interval read it on
Student's t with Q - 1 degrees of freedom (a paired t-test; METHOD). Nothing is resampled, so no
number of draws can hide a difference: the bootstrap p-value used before could not go below
1/draws, and after Holm's multiplication by the number of metrics a 20-metric comparison at 100 or
200 draws could never be called real; its standard error, tried in its place, made 12 of 100 null
families of 39 metrics claim something at 200 draws (the draws' own noise), against 7 for the exact
s / sqrt(Q). Holm's step-down adjustment runs over the metrics of one comparison, and a difference
is called real only when its adjusted p-value is below alpha; the interval holds 0 exactly when the
unadjusted p-value is at least 0.05.

Judge uncertainty: where the dataset has an audit (people's labels on a sample of the judge's
units), `compare_sides(..., audit=...)` corrects each audited metric's difference for the judge's
measured error and adds that estimate's variance to the difference's, on Welch-Satterthwaite's
degrees of freedom (`pipeline.consistency.judge_error` explains the method). Where no audit exists, the intervals take
the judge's labels as given; each Difference says which applied (`judge_status`, `judge_note`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.special import stdtr, stdtrit

from pipeline.consistency.judge_error import (
    CORRECTED,
    HELD,
    TOO_FEW,
    Audit,
    JudgeCheck,
    answer_weights,
    hold_with_audited,
    no_audit_check,
)
from pipeline.metrics import METRICS

ALPHA = 0.05
METHOD = ("paired t over the shared queries (standard error s / sqrt(queries), queries - 1 df; with an audit, plus the "
          "judge error's variance, Welch-Satterthwaite df), Holm over the metrics")
JUDGE_NOTE = ("judge uncertainty is not included: the intervals account for the draw of queries and repeats and take "
              "the judge's labels as given (no audit with people's labels was used; where one exists, aee compare "
              "corrects each audited metric's difference for the judge's measured error)")


@dataclass
class Difference:
    metric: str
    label: str
    a: str
    b: str
    a_mean: float
    b_mean: float
    diff: float
    ci_low: float
    ci_high: float
    p: float
    p_holm: float
    real: bool
    queries: int
    repeats_a: float
    repeats_b: float
    unit: str
    words: str = ""
    judge_status: str = "no_audit"  # judge_error: corrected, no_judge, no_audit, too_few_labels, audit_unusable
    judge_note: str = ""
    judge_diff: float | None = None  # the difference under the judge's labels alone (diff is corrected)
    judge_error: float | None = None  # people's minus the judge's difference, as the audit estimates it
    judge_error_se: float | None = None
    labelled_units: int = 0
    se: float | None = None  # the standard error the p-value and the interval read
    df: float | None = None  # their degrees of freedom
    same_labels: str = ""  # uncorrected: the corrected metrics resting on the same judge labels
    alpha: float = ALPHA
    method: str = METHOD


def _matrix(frame: pd.DataFrame, queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(values queries x max repeats padded with nan, repeats per query) for one side."""
    pos = pd.Index(queries).get_indexer(frame["query"].astype(str))
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    vals = frame["value"].to_numpy(float)[order]
    counts = np.bincount(pos, minlength=len(queries))
    starts = np.cumsum(counts) - counts
    out = np.full((len(queries), max(int(counts.max()) if counts.size else 0, 1)), np.nan)
    out[pos, np.arange(len(pos)) - starts[pos]] = vals
    return out, counts


def t_verdict(diff: float, se: float, df: float) -> tuple[float, float, float]:
    """(low, high, two-sided p) of a difference with standard error `se` on Student's t with `df`
    degrees of freedom; nan when there is no spread to read (df < 1). se 0 (every query differs by
    the same amount) gives p 0 for a nonzero difference and 1 for none."""
    if not df >= 1 or not np.isfinite(se) or not np.isfinite(diff):
        return np.nan, np.nan, np.nan
    if se <= 0:
        return diff, diff, (1.0 if diff == 0 else 0.0)
    # Student's t quantile and tail from scipy.special, as scipy.stats.t computes them (its ppf and
    # sf are stdtrit and stdtr): scipy.stats takes a page's first view 1-3 s to import
    half = float(stdtrit(df, 0.975)) * se
    return diff - half, diff + half, float(min(1.0, 2 * stdtr(df, -abs(diff) / se)))


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, judge: JudgeCheck | None = None) -> tuple:
    """a, b: query, value (non-null). (diff, low, high, p, queries, mean a, mean b, repeats a,
    repeats b, se, df): a paired t over the shared queries' differences of means (module doc).
    With a corrected `judge` check, the difference is corrected for the judge's error and its
    variance added, on Welch-Satterthwaite's degrees of freedom."""
    shared = sorted(set(a["query"].astype(str)) & set(b["query"].astype(str)))
    if not shared:
        return (np.nan,) * 4 + (0,) + (np.nan,) * 6
    va, ca = _matrix(a[a["query"].isin(shared)], shared)
    vb, cb = _matrix(b[b["query"].isin(shared)], shared)
    per_query = np.nansum(va, axis=1) / ca - np.nansum(vb, axis=1) / cb
    q = len(shared)
    diff = float(per_query.mean())
    var = float(per_query.var(ddof=1)) / q if q > 1 else np.nan
    df = float(q - 1)
    centre = diff
    if judge is not None and judge.status == CORRECTED and judge.rectifier is not None and judge.se is not None:
        diff += judge.rectifier
        centre = diff + judge.shift  # the audit interval's skewness shift moves the interval, not the estimate
        judge_var = judge.se ** 2
        judge_df = judge.df if judge.df is not None and np.isfinite(judge.df) else np.inf
        total = var + judge_var
        denominator = (var ** 2 / df if df > 0 else np.inf) + (judge_var ** 2 / judge_df if judge_var > 0 else 0.0)
        df = float(total ** 2 / denominator) if denominator > 0 else df
        var = total
    se = float(np.sqrt(var)) if np.isfinite(var) else np.nan
    low, high, p = t_verdict(centre, se, df)
    return (diff, low, high, p, q, float(np.mean(np.nansum(va, axis=1) / ca)), float(np.mean(np.nansum(vb, axis=1) / cb)),
            float(ca.mean()), float(cb.mean()), se, df)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (nan stays nan)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p == p)
    out = [float("nan")] * len(pvalues)
    running = 0.0
    m = len(order)
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def compare_sides(values: pd.DataFrame, side_a: dict, side_b: dict, name_a: str, name_b: str,
                  alpha: float = ALPHA, audit: Audit | None = None) -> list[Difference]:
    """values: engine, wave, query, metric, value (display scale, non-null; answer_id where an
    audit is given). side_a / side_b select rows by column (e.g. {"engine": "A"} or {"engine": "A",
    "wave": "w1"}). With `audit`, audited metrics are corrected for the judge's error (module doc)."""
    def pick(side: dict) -> pd.DataFrame:
        mask = np.ones(len(values), dtype=bool)
        for col, want in side.items():
            mask &= (values[col] == want).to_numpy()
        return values[mask]

    a_by = {str(m): g for m, g in pick(side_a).groupby("metric", sort=False, observed=True)}
    b_by = {str(m): g for m, g in pick(side_b).groupby("metric", sort=False, observed=True)}
    out: list[Difference] = []
    metrics = sorted(set(a_by) & set(b_by), key=lambda m: (list(METRICS).index(m) if m in METRICS else 999, m))
    for metric in metrics:
        check = (audit.check(metric, answer_weights(a_by[metric], b_by[metric])) if audit is not None
                 else no_audit_check(metric))
        diff, low, high, p, q, ma, mb, ra, rb, se, df = paired_difference(a_by[metric], b_by[metric], check)
        if q == 0:
            continue
        info = METRICS.get(metric)
        correction = check.rectifier if check.status == CORRECTED and check.rectifier is not None else 0.0
        out.append(Difference(metric, info.label if info else metric, name_a, name_b, ma, mb, diff, low, high, p, p, False, q, ra, rb,
                              info.unit if info else "", judge_status=check.status, judge_note=check.note,
                              judge_diff=diff - correction, judge_error=check.rectifier, judge_error_se=check.se,
                              labelled_units=check.labelled, se=se, df=df, alpha=alpha))
    for d, adjusted in zip(out, holm([d.p for d in out])):
        d.p_holm = adjusted
        # too few labels: the difference could be the judge's bias alone, so it is never called real
        d.real = bool(adjusted < alpha) and d.judge_status != TOO_FEW
    hold_with_audited(out)
    for d in out:
        d.words = difference_words(d)
    return out


def _amount(d: Difference) -> str:
    unit = " points" if d.unit == "percent" else ""
    return f"{d.diff:+.1f}{unit} [{d.ci_low:.1f}, {d.ci_high:.1f}]"


def difference_words(d: Difference) -> str:
    """One sentence: who does better on what, by how much, or that it is within noise."""
    info = METRICS.get(d.metric)
    if d.p_holm != d.p_holm:
        return f"{d.label}: {d.a} vs {d.b} not tested: {d.queries} shared query leaves no spread to read"
    if d.judge_status == TOO_FEW and d.p_holm < d.alpha:
        return (f"{d.label}: {d.a} vs {d.b} {_amount(d)} under the judge's labels, not claimed: too few people's "
                "labels to tell it from the judge's error")
    if d.judge_status == HELD:
        return f"{d.label}: {d.a} vs {d.b} {_amount(d)} under the judge's labels, {d.judge_note}"
    if not d.real:
        return f"{d.label}: {d.a} and {d.b} are within noise ({_amount(d)}, adjusted p = {d.p_holm:.2f})"
    direction = info.direction if info else "neutral"
    higher, lower = (d.a, d.b) if d.diff > 0 else (d.b, d.a)
    if direction == "neutral":
        return f"{higher} is higher than {lower} on {d.label}: {_amount(d)}{_corrected(d)}"
    better = higher if direction == "higher_is_better" else lower
    worse = lower if better == higher else higher
    return f"{better} does better than {worse} on {d.label}: {_amount(d)}{_corrected(d)}"


def _corrected(d: Difference) -> str:
    if d.same_labels:
        return f" (not corrected: the judge's labels as given; on the same labels {d.same_labels} is corrected)"
    if d.judge_status != CORRECTED or d.judge_diff is None:
        return ""
    return f" (corrected for the judge's error by people's labels; the judge alone: {d.judge_diff:+.1f})"


def judge_summary(diffs: list[Difference]) -> str:
    """Which metrics the audit corrected and which take the judge's labels as given, in one line."""
    groups: dict[str, list[str]] = {}
    for d in diffs:
        groups.setdefault(d.judge_status, []).append(d.label)
    words = {"corrected": "corrected for the judge's error by people's labels (the audit)",
             "no_audit": "no audit, the judge's labels taken as given",
             "not_audited": "not covered by the audit (no estimator, or no sample of its unit), the judge's labels "
                            "taken as given",
             "no_judge": "no judge label enters",
             "too_few_labels": "too few people's labels, never called real",
             "held_by_audit": "not corrected and not claimed: a metric on the same judge labels, corrected, is not real "
                              "(or runs the other way)",
             "audit_unusable": "the audit could not be used, the judge's labels taken as given"}
    order = ("corrected", "too_few_labels", "held_by_audit", "audit_unusable", "not_audited", "no_audit", "no_judge")
    parts = [f"{words.get(status, status)}: {', '.join(groups[status])}"
             for status in sorted(groups, key=lambda s: order.index(s) if s in order else len(order))]
    out = "judge uncertainty: " + ("; ".join(parts) if parts else "nothing compared")
    # the audit measured the judge erring differently on the two sides: metrics it cannot correct
    # that read the same kind of labels may carry that error, and a claim on them deserves care
    erring = [d.label for d in diffs if d.judge_status == CORRECTED and d.judge_error is not None
              and d.judge_error_se is not None and abs(d.judge_error) > 1.96 * d.judge_error_se]
    exposed = [d.label for d in diffs if d.real and d.judge_status in ("not_audited", "audit_unusable")]
    if erring and exposed:
        out += (f". Caution: the audit found the judge erring differently on the two sides ({', '.join(erring)}); "
                f"the uncorrected differences called real ({', '.join(exposed)}) may carry the same error")
    return out


def method_words(diffs: list[Difference]) -> str:
    """How the verdicts were reached, with the alpha and the draws actually used."""
    if not diffs:
        return ""
    d = diffs[0]
    return f"Holm-adjusted over {len(diffs)} metrics at alpha {d.alpha:g}; paired t over {d.queries} queries"


def summary_words(diffs: list[Difference]) -> str:
    """The comparison in a few sentences: the real differences, then how many are within noise."""
    real = [d for d in diffs if d.real]
    noise = len(diffs) - len(real)
    if not diffs:
        return "no metric has values on both sides for a shared query"
    parts = [d.words for d in real]
    if not real:
        return f"all {len(diffs)} metrics are within noise ({method_words(diffs)})"
    tail = "the others are within noise" if noise else "every metric differs"
    return "; ".join(parts) + f"; {tail} ({noise} of {len(diffs)} metrics; {method_words(diffs)})."


def as_json(diffs: list[Difference]) -> list[dict]:
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in asdict(d).items()} for d in diffs]
