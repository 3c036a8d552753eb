"""Judge uncertainty in differences: where people labelled a sample of the judge's units (an audit,
`pipeline.audit`), a difference between two sides is corrected for the judge's measured error, so
that a judge erring more on one engine's answers than on the other's cannot make a difference.

The judge's difference D_J (`differences.paired_difference`) is a weighted sum over answers: each
answer of side A counts +1/(Q r_A(q)) and each of side B -1/(Q r_B(q)), Q the shared queries and
r(q) a side's repeats of query q. An answer's value under the people's labels is its judge value
plus the sum of its units' errors (y_u - yhat_u in `pipeline.audit.ppi`: a unit is a statement
for the support metrics, an answer for relevance and stance). So the people's difference is
D_J + R, with R the same weighted sum of the units' errors, and R is what the audit estimates:

* R-hat is the audit's own stratified prediction-powered estimator (`ppi.stratified`: the strata
  the sample was drawn by, the variance floor for rarely seen errors, Johnson's skewness shift)
  applied to the signed unit values w(answer) * y_u and w(answer) * yhat_u: one estimate over both
  sides, so a stratum holding units of both contributes their covariance. Strata with fewer than two
  labelled units are not pooled here as the scorecard's first estimate pools them (a pool would
  read one engine's errors off the other engine's labels): the metric then counts as too few labels.
* Its variance is taken without the finite-population correction the scorecard uses: the
  comparison treats the queries as a draw from the queries one could have asked (that is what the
  bootstrap over queries does), so the errors of the answers at hand are themselves a draw, and the
  labelled units' spread s_h^2 / n_h covers both that draw and the choice of units to label. A
  stratum labelled in full therefore still carries s_h^2 / n_h.
* The difference's variance is D_J's (s^2 / Q over the shared queries) plus R-hat's, its degrees of
  freedom Welch-Satterthwaite's over the two (Q - 1 for D_J, the strata's for R-hat), and the
  interval is centred on D_J + R-hat + the audit's skewness shift; the p-value and Holm's adjustment
  read the same t, so a difference is called real only when it survives the judge's error as well as
  the draw of queries and repeats. The two parts are taken as independent; their covariance (a
  judge's error moving with its own values) is left out, which for a judge that over- or
  under-calls a label makes the interval wider, not narrower. The simulation in
  `pipeline.testing.judge_bias_sim` measures the false-claim rate, the power and the coverage
  (docs/benchmarks.md, "Judge uncertainty in differences").

Per metric, the status says which applied:
  corrected        the audit's labels corrected the difference (the interval includes their error)
  no_judge         the metric reads no judge label (source counts, uncited, duplicate, dead sources,
                   dangling citations): nothing to correct
  no_audit         no audit under this judge: the judge's labels are taken as given
  not_audited      an audit exists, but no prediction-powered estimator covers this metric (the
                   audit estimates the metrics of `ppi.PPI_METRICS`; citation recall, AutoAIS and
                   the like also read the support labels, but are not sums over audited units): the
                   judge's labels are taken as given, and where the audit measured the judge erring
                   differently on the two sides, the comparison's summary says these may carry it
  held_by_audit    as not_audited, but a metric on the same judge labels (JUDGE_LABELS) was
                   corrected and its corrected difference is not real or runs the other way: this
                   one is not called real either (one story per judge)
  too_few_labels   an audit exists but fewer than MIN_LABELLED_UNITS of its labelled units fall in
                   the two sides: the difference is shown but never called real (it could be the
                   judge's bias alone), with how many more labels it needs
  audit_unusable   the audit cannot be read against these results (drawn before a re-run): as
                   no_audit, with the reason
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from pipeline.metrics import METRICS

CORRECTED, NO_JUDGE, NO_AUDIT, TOO_FEW, UNUSABLE = "corrected", "no_judge", "no_audit", "too_few_labels", "audit_unusable"
NOT_AUDITED, HELD = "not_audited", "held_by_audit"
# Which of the judge's labels a metric rests on: metrics of one kind share a story. Where the audit
# corrects one of them and that corrected difference is not real (or turns the other way), the
# others, which the audit cannot correct, are not called real either (`hold_with_audited`).
JUDGE_LABELS: dict[str, str] = {
    **dict.fromkeys(("unsupported_statements", "citation_accuracy", "source_necessity", "citation_thoroughness",
                     "autoais_citations", "autoais_passages", "nli_citation_recall", "nli_citation_precision",
                     "citation_recall", "citation_precision", "citation_f1"), "support"),
    **dict.fromkeys(("relevant_statements", "one_sided", "overconfident", "statement_agreement", "confidence"),
                    "statement"),
}
NO_AUDIT_NOTE = "no audit (people's labels) under this judge: the intervals take the judge's labels as given"
NOT_AUDITED_NOTE = ("an audit exists, but no prediction-powered estimator covers this metric: the intervals take the "
                    "judge's labels as given")
NO_JUDGE_NOTE = "no judge label enters this metric: nothing to correct"
# metrics computed from the answer's sources and citation markers alone (no judge label enters)
JUDGE_FREE = frozenset({"n_sources", "uncited_sources", "duplicate_sources", "dead_source_share", "dangling_citations"})


@dataclass(frozen=True)
class JudgeCheck:
    """What the audit says about one metric's difference (display units)."""

    status: str
    note: str
    rectifier: float | None = None  # people's difference minus the judge's, estimated
    se: float | None = None
    df: float | None = None
    shift: float = 0.0  # the skewness correction of the audit's interval
    labelled: int = 0  # labelled units inside the two sides
    needed: int | None = None  # labelled units still missing (too_few_labels)


def answer_weights(a: pd.DataFrame, b: pd.DataFrame) -> pd.Series:
    """answer_id -> its signed weight in the paired difference (the module doc): side A's answers of
    shared queries +1/(Q r_A), side B's -1/(Q r_B); answers of unshared queries are left out."""
    shared = set(a["query"].astype(str)) & set(b["query"].astype(str))
    q = len(shared)
    parts = []
    for frame, sign in ((a, 1.0), (b, -1.0)):
        f = frame[frame["query"].astype(str).isin(shared)]
        f = f.drop_duplicates("answer_id")
        repeats = f.groupby(f["query"].astype(str))["answer_id"].transform("size").to_numpy(float)
        parts.append(pd.Series(sign / (q * repeats), index=f["answer_id"].astype(str).to_numpy()))
    return pd.concat(parts) if parts else pd.Series(dtype=float)


class Audit:
    """A dataset's audit under one judge: per audited metric, the units' values (`ppi.UnitValues`)
    or why they cannot be computed. Metrics absent here have no sample of the unit they need."""

    def __init__(self, units: Mapping[str, object], samples: Mapping[str, str] | None = None,
                 minimum: int | None = None) -> None:
        from pipeline.audit.ppi_cells import MIN_LABELLED_UNITS

        self.units = dict(units)  # metric -> ppi.UnitValues, or why it cannot be estimated
        self.samples = dict(samples or {})
        self.minimum = MIN_LABELLED_UNITS if minimum is None else minimum

    @classmethod
    def load(cls, dataset: str, judge: str, root: Path | None = None) -> "Audit | None":
        """The audit of a dataset x judge from its registered samples and everyone's labels (as the
        prediction-powered scorecard picks them), or None when no sample was drawn under this judge."""
        from pipeline.audit.scorecard import pick_samples

        chosen = pick_samples(dataset, judge, root=root)
        if not chosen:
            return None
        try:
            import ppi_py  # noqa: F401
        except ImportError:
            return None  # the `audit` extra is missing: said as "no audit" per metric
        from pipeline.audit.labels import LabelStore, labels_path
        from pipeline.audit.ppi import PPI_METRICS, unit_values
        from pipeline.audit.ppi_population import answers_for, design_of
        from pipeline.audit.sample import load_sample
        from pipeline.audit.scorecard import human_labels
        store = LabelStore(labels_path(root))
        used = {m: chosen[unit] for m, unit in PPI_METRICS.items() if unit is not None and unit in chosen}
        samples = {sid: load_sample(sid, root) for sid in dict.fromkeys(used.values())}
        # as the corrected scorecard does: the label-free part of every answer from the stored
        # population, only the drawn answers rebuilt (reading every answer took 190 s at 140k answers)
        population, answers = answers_for(dataset, judge, root, samples.values(),
                                          [design_of(m, samples[sid]) for m, sid in used.items()])
        people = {sid: human_labels(s, "all", store=store, answers=answers, root=root) for sid, s in samples.items()}
        units: dict[str, object] = {}
        for metric, sid in used.items():
            sample, labels = samples[sid], people[sid]
            units[metric] = (unit_values(metric, sample, answers, labels, population=population) if labels
                             else "no labels given yet")
        return cls(units, chosen)

    def check(self, metric: str, weights: pd.Series) -> JudgeCheck:
        """The judge check of one metric's difference with these answer weights (`answer_weights`)."""
        return judge_check(metric, self.units.get(metric), weights, self.minimum)


def _judge_free(metric: str) -> bool:
    from pipeline.audit.ppi import PPI_METRICS

    return metric in JUDGE_FREE or (metric in PPI_METRICS and PPI_METRICS[metric] is None)


def no_audit_check(metric: str) -> JudgeCheck:
    return JudgeCheck(NO_JUDGE, NO_JUDGE_NOTE) if _judge_free(metric) else JudgeCheck(NO_AUDIT, NO_AUDIT_NOTE)


def judge_check(metric: str, units: object, weights: pd.Series, minimum: int) -> JudgeCheck:
    """See the module doc. `units`: a `ppi.UnitValues`, a reason string, or None (no sample)."""
    from pipeline.audit.ppi import PPI_METRICS

    if _judge_free(metric):
        return JudgeCheck(NO_JUDGE, NO_JUDGE_NOTE)
    if metric not in PPI_METRICS:
        return JudgeCheck(NOT_AUDITED, NOT_AUDITED_NOTE)
    if units is None:
        return JudgeCheck(NOT_AUDITED, f"{NOT_AUDITED_NOTE} (no {PPI_METRICS[metric]} sample with labels under this judge)")
    if isinstance(units, str):
        return JudgeCheck(UNUSABLE, f"the audit could not be used ({units[:200]}): the judge's labels are taken as given")
    clusters: pd.DataFrame = units.clusters  # type: ignore[attr-defined]
    w = clusters["answer_id"].astype(str).map(weights).fillna(0.0).to_numpy(float)
    inside = (w != 0) & clusters["in_population"].to_numpy(bool)
    labelled = inside & clusters["labelled"].to_numpy(bool)
    n_lab, n_pop = int(labelled.sum()), int(inside.sum())
    if n_pop == 0:
        return JudgeCheck(NO_JUDGE, "no unit of these answers can be labelled (no readable source): nothing to correct")
    if "drop_out" in clusters.columns and bool((labelled & (clusters["drop_out"].to_numpy(float) > 0)).any()):
        # a sample asking relevance: an answer the people leave without a value (every statement filler)
        # leaves its side's mean, which this weighted sum of errors cannot say; not guessed
        dropped = int((labelled & (clusters["drop_out"].to_numpy(float) > 0)).sum())
        return JudgeCheck(UNUSABLE, f"the audit could not be used: the people's labels leave {dropped} labelled "
                                    "answer(s) here without a value (every statement filler, or too little decided), "
                                    "and a difference corrected around them is not built; the judge's labels are taken "
                                    "as given", labelled=n_lab)
    need = min(minimum, n_pop)
    if n_lab < need:
        return JudgeCheck(TOO_FEW, f"an audit exists but only {n_lab} labelled units fall in these answers: label "
                                   f"{need - n_lab} more before a difference can be told from the judge's error",
                          labelled=n_lab, needed=need - n_lab)
    est = rectifier_estimate(clusters, w, inside)
    if isinstance(est, str):  # labelled units too thinly spread over the strata: as too few labels
        return JudgeCheck(TOO_FEW, f"an audit exists but cannot yet estimate the judge's error on these answers "
                                   f"({est[:200]}): a difference is not claimed", labelled=n_lab)
    value, se, df, shift = est
    scale = 100.0 if (METRICS[metric].unit == "percent" if metric in METRICS else False) else 1.0
    return JudgeCheck(CORRECTED, f"corrected by people's labels on {n_lab} units (the judge's error: "
                                 f"{value * scale:+.1f} ± {1.96 * se * scale:.1f})",
                      value * scale, se * scale, df, shift * scale, n_lab)


Z = 1.959964


def rare_error_variance(r: np.ndarray, scale: float) -> float:
    """The least variance of the mean of a stratum's n rectifiers r that a comparison accepts: the
    judge's disagreements taken as events of rate p, estimated by Agresti and Coull's
    p~ = (k + z^2/2) / (n + z^2) from the k seen, each of the mean square size of those seen (of
    `scale`, one unit's weight, when none was seen): m2 p~ (1 - p~) / (n + z^2). With no disagreement
    in n labels, p~ is 1.92 / (n + 3.84): a rate the labels cannot rule out, not 0. Every stratum
    gets it, those where the judge said "no" too (a missed "yes" is an error of one unit's weight;
    the scorecard's floor, sized by the stratum's largest prediction, gave them none). Checked on
    the zero- and low-error audits of `pipeline.testing.judge_bias_sim` (docs/benchmarks.md, "Judge
    uncertainty in differences"): the interval holds the truth in 99-100% of them; Jeffreys'
    (k + 1/2) / (n + 1), tried as a narrower rule, fell to 95.5% with a 10% error rate and 80 labels."""
    n = r.size
    if n == 0:
        return 0.0
    seen = np.abs(r) > 1e-15
    k = int(seen.sum())
    m2 = float(np.mean(r[seen] ** 2)) if k else scale ** 2
    p = (k + Z ** 2 / 2) / (n + Z ** 2)
    return m2 * p * (1 - p) / (n + Z ** 2)


def hold_with_audited(diffs: list) -> None:
    """One story per judge (in place, after Holm): a difference the audit could not correct is not
    called real while a metric on the same judge labels, corrected by the audit, is not real or runs
    the other way; every uncorrected metric of such a kind names its corrected neighbours
    (`same_labels`), so a reader sees which figure the audit stands behind."""
    kinds: dict[str, list] = {}
    for d in diffs:
        if d.metric in JUDGE_LABELS:
            kinds.setdefault(JUDGE_LABELS[d.metric], []).append(d)
    for members in kinds.values():
        anchors = [d for d in members if d.judge_status in (CORRECTED, TOO_FEW)]
        if not anchors:
            continue
        for d in members:
            if d.judge_status not in (NOT_AUDITED, UNUSABLE):
                continue
            d.same_labels = ", ".join(a.label for a in anchors)
            against = [a for a in anchors if not a.real or _favours(a) * _favours(d) < 0]
            if d.real and against:
                d.real = False
                d.judge_status = HELD
                d.judge_note = (f"not claimed: it rests on the same judge labels as {', '.join(a.label for a in against)}, "
                                "whose difference corrected by the audit is "
                                + ("within noise" if not against[0].real else "real the other way"))


def _favours(d) -> float:
    """+1 when the difference favours side A (by the metric's direction), -1 side B, 0 neutral."""
    direction = METRICS[d.metric].direction if d.metric in METRICS else "neutral"
    sign = float(np.sign(d.diff))
    return sign if direction == "higher_is_better" else -sign if direction == "lower_is_better" else 0.0


def rectifier_estimate(clusters: pd.DataFrame, w: np.ndarray, inside: np.ndarray
                       ) -> tuple[float, float, float | None, float] | str:
    """(R-hat, its superpopulation standard error, degrees of freedom, skewness shift) of the
    weighted sum of the units' errors, or why it cannot be estimated."""
    from pipeline.audit.ppi import Stratum, pool_short, satterthwaite, stratified

    y = np.where(inside, clusters["y"].to_numpy(float) * w, 0.0)
    yhat = np.where(inside, clusters["yhat"].to_numpy(float) * w, 0.0)
    lab = clusters["labelled"].to_numpy(bool)
    strata = []
    for name, idx in clusters.groupby("stratum", sort=True).indices.items():
        if not inside[idx].any():
            continue  # no unit of this stratum is compared: it adds exactly 0
        keep = idx[lab[idx]]
        strata.append(Stratum(str(name), len(idx), y[keep], yhat[keep], yhat[idx]))
    _, pooled = pool_short(strata)
    if pooled:
        # the scorecard's "first estimate" pools such strata; in a comparison a pool would read one
        # side's errors off the other side's labels, so the difference waits for the labels instead
        return (f"{len(pooled)} stratum(s) of these answers have fewer than two labelled units "
                f"(e.g. '{pooled[0][:80]}'): label at least two in every stratum")
    est = stratified(strata, 0.0, use_predictions=True, pool=False, floor=False)
    if est.value is None or est.se is None:
        return est.reason or "no estimate"
    judge_total = float(sum(np.sum(s.yhat_all) for s in strata))
    sizes = np.abs(np.concatenate([np.asarray(s.yhat_all, float).reshape(-1) for s in strata]))
    typical = float(np.median(sizes[sizes > 0])) if (sizes > 0).any() else 0.0
    parts: dict[str, np.ndarray] = {}
    dfs: dict[str, int] = {}
    for s in strata:
        n = len(s.y)
        if s.size == 0 or n == 0:
            continue
        r = np.asarray(s.y, float).reshape(-1) - np.asarray(s.yhat, float).reshape(-1)
        if n >= s.size:  # labelled in full: the superpopulation spread s^2 / n is still there
            spread = r.var(ddof=1) / n if n > 1 else 0.0
        else:  # the scorecard's variance without the finite-population correction
            spread = float(est.variances.get(s.name, np.zeros(1))[0]) / (1 - n / s.size) / s.size**2
        own = np.abs(np.asarray(s.yhat_all, float).reshape(-1))
        scale = float(np.median(own[own > 0])) if (own > 0).any() else typical
        parts[s.name] = np.array([s.size**2 * max(spread, rare_error_variance(r, scale))])
        if n > 1:
            dfs[s.name] = n - 1
    var = float(sum(float(v[0]) for v in parts.values()))
    df = float(satterthwaite(parts, dfs)[0]) if dfs else None
    se = float(np.sqrt(var))
    shift = float(est.shift[0]) if est.shift is not None else 0.0
    return float(est.value[0]) - judge_total, se, df, float(np.clip(shift, -se, se))
