"""Descriptive tables and two-sample tests on count-level study logs.

Pure functions of a validated count table (see `pipeline.study.log`): the paper's table layouts
(Tables 2 and 3), Student and Welch t tests, Mann-Whitney U, Cohen's d with its confidence
interval, and Holm's step-down adjustment over a family of tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from pipeline.study.log import ALL_ENGINES_LABEL, ANSWER_ENGINES, BASELINE

# ---------------------------------------------------------------------------------------------
# Descriptive statistics
# ---------------------------------------------------------------------------------------------

STAT_ROWS = ("Mean", "Median", "SD", "Max", "Min", "n")


def describe(values: Iterable[float]) -> dict[str, float]:
    """Mean, median, sample SD (n-1, as in the paper's tables), max, min, n; NaN when empty."""
    x = np.asarray([v for v in values if v is not None and not pd.isna(v)], dtype=float)
    if x.size == 0:
        return {"Mean": math.nan, "Median": math.nan, "SD": math.nan, "Max": math.nan, "Min": math.nan, "n": 0}
    return {
        "Mean": float(x.mean()),
        "Median": float(np.median(x)),
        "SD": float(x.std(ddof=1)) if x.size > 1 else math.nan,
        "Max": float(x.max()),
        "Min": float(x.min()),
        "n": int(x.size),
    }


def engine_order(engines: Iterable[str]) -> list[str]:
    present = list(dict.fromkeys(engines))
    known = [e for e in (*ANSWER_ENGINES, BASELINE) if e in present]
    return known + sorted(e for e in present if e not in known)


def descriptive_table(counts: pd.DataFrame, measures: Sequence[str] = ("hovered", "clicked"), by: str = "engine") -> pd.DataFrame:
    """Paper layout (Table 3): statistics as rows, one column per measure x group."""
    groups = engine_order(counts[by]) if by == "engine" else sorted(counts[by].unique())
    cols = {}
    for measure in measures:
        for group in groups:
            cols[(measure, group)] = describe(counts.loc[counts[by] == group, measure])
    table = pd.DataFrame(cols, index=list(STAT_ROWS))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["measure", by])
    return table


def sources_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Table 2 layout: displayed and cited per answer engine and all engines, with the cited
    share as the ratio of mean cited to mean displayed (the per-query share is undefined when
    nothing is displayed, so the ratio of means is the stable choice)."""
    ae = counts[counts["engine"] != BASELINE]
    groups = ["All", *engine_order(ae["engine"])]
    cols = {}
    for measure in ("displayed", "cited"):
        for group in groups:
            part = ae if group == "All" else ae[ae["engine"] == group]
            cols[(measure, group)] = describe(part[measure])
    table = pd.DataFrame(cols, index=list(STAT_ROWS))
    share = {}
    for group in groups:
        disp, cited = table[("displayed", group)]["Mean"], table[("cited", group)]["Mean"]
        share[group] = cited / disp if disp and not math.isnan(disp) else math.nan
    table.loc["Cited share"] = [share[g] if m == "cited" else math.nan for (m, g) in table.columns]
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["measure", "engine"])
    return table


# ---------------------------------------------------------------------------------------------
# Two-sample tests
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TTest:
    t: float
    df: float
    p: float
    mean_diff: float


def t_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, equal_var: bool = True) -> TTest:
    """Two-sided two-sample t test from summary statistics (Student pooled, or Welch)."""
    if n1 < 2 or n2 < 2:
        return TTest(math.nan, math.nan, math.nan, m1 - m2)
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    if equal_var:
        df: float = n1 + n2 - 2
        pooled = ((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / df
        se = math.sqrt(pooled * (1 / n1 + 1 / n2))
    else:
        se = math.sqrt(v1 + v2)
        df = (v1 + v2) ** 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1)) if se > 0 else math.nan
    if se == 0:
        return TTest(math.nan, df, math.nan, m1 - m2)
    t = (m1 - m2) / se
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    return TTest(t, df, float(2 * stats.t.sf(abs(t), df)), m1 - m2)


def student_t(x: Sequence[float], y: Sequence[float]) -> TTest:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return t_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, equal_var=True)


def welch_t(x: Sequence[float], y: Sequence[float]) -> TTest:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return t_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, equal_var=False)


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U for the first sample
    p: float
    method: str


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U. Counts are full of ties, so scipy's exact method is only used
    when there are none; otherwise the normal approximation with tie and continuity correction."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size == 0 or b.size == 0:
        return MannWhitney(math.nan, math.nan, "none")
    ties = np.unique(np.concatenate([a, b])).size < a.size + b.size
    method = "asymptotic" if ties or a.size + b.size > 50 else "exact"
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method=method, use_continuity=True)
    return MannWhitney(float(res.statistic), float(res.pvalue), method)


@dataclass(frozen=True)
class EffectSize:
    d: float
    ci_low: float
    ci_high: float
    confidence: float


def cohens_d_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, confidence: float = 0.95) -> EffectSize:
    """Cohen's d with the pooled SD, and the usual large-sample normal CI
    (SE = sqrt((n1+n2)/(n1 n2) + d^2 / (2 (n1+n2))), Hedges & Olkin 1985)."""
    if n1 < 2 or n2 < 2:
        return EffectSize(math.nan, math.nan, math.nan, confidence)
    pooled = math.sqrt(((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / (n1 + n2 - 2))
    if pooled == 0:
        return EffectSize(math.nan, math.nan, math.nan, confidence)
    d = (m1 - m2) / pooled
    se = math.sqrt((n1 + n2) / (n1 * n2) + d * d / (2 * (n1 + n2)))
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    z = stats.norm.ppf(0.5 + confidence / 2)
    return EffectSize(d, d - z * se, d + z * se, confidence)


def cohens_d(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> EffectSize:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return cohens_d_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, confidence)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p values (NaNs are left out of the family and stay NaN)."""
    p = np.asarray(pvalues, float)
    out = np.full(p.shape, np.nan)
    idx = np.where(~np.isnan(p))[0]
    m = idx.size
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out.tolist()


COMPARISONS = {
    "google_vs_engines": "Google vs each answer engine and all answer engines (Table 4)",
    "aligned_vs_disaligned": "Aligned vs disaligned questions, answer engines combined (Table 5)",
}


def comparison_groups(counts: pd.DataFrame, comparison: str) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(label, first group, second group) pairs making up one test family."""
    if comparison == "google_vs_engines":
        base = counts[counts["engine"] == BASELINE]
        ae = counts[counts["engine"] != BASELINE]
        pairs = [(f"{BASELINE} vs {ALL_ENGINES_LABEL}", base, ae)]
        pairs += [(f"{BASELINE} vs {e}", base, ae[ae["engine"] == e]) for e in engine_order(ae["engine"])]
        return pairs
    if comparison == "aligned_vs_disaligned":
        ae = counts[counts["engine"] != BASELINE]
        return [("aligned vs disaligned", ae[ae["alignment"] == "aligned"], ae[ae["alignment"] == "disaligned"])]
    raise ValueError(f"unknown comparison {comparison!r}; choose one of {', '.join(COMPARISONS)}")


def test_table(counts: pd.DataFrame, comparison: str = "google_vs_engines", measures: Sequence[str] = ("hovered", "clicked"),
               alpha: float = 0.01, confidence: float = 0.95) -> pd.DataFrame:
    """Student, Welch and Mann-Whitney tests plus Cohen's d for every pair x measure; Holm
    adjustment runs over the whole family (all rows) separately for each test."""
    rows = []
    for measure in measures:
        for label, g1, g2 in comparison_groups(counts, comparison):
            x = g1[measure].dropna().astype(float).to_numpy()
            y = g2[measure].dropna().astype(float).to_numpy()
            st = student_t(x, y) if x.size > 1 and y.size > 1 else TTest(math.nan, math.nan, math.nan, math.nan)
            we = welch_t(x, y) if x.size > 1 and y.size > 1 else TTest(math.nan, math.nan, math.nan, math.nan)
            mw = mann_whitney(x, y)
            es = cohens_d(x, y, confidence) if x.size > 1 and y.size > 1 else EffectSize(math.nan, math.nan, math.nan, confidence)
            rows.append({
                "comparison": label, "measure": measure, "n1": int(x.size), "n2": int(y.size),
                "mean1": float(x.mean()) if x.size else math.nan, "mean2": float(y.mean()) if y.size else math.nan,
                "sd1": float(x.std(ddof=1)) if x.size > 1 else math.nan,
                "sd2": float(y.std(ddof=1)) if y.size > 1 else math.nan,
                "student_t": st.t, "student_df": st.df, "student_p": st.p,
                "welch_t": we.t, "welch_df": we.df, "welch_p": we.p,
                "mwu_u": mw.u, "mwu_p": mw.p, "mwu_method": mw.method,
                "cohens_d": es.d, "d_ci_low": es.ci_low, "d_ci_high": es.ci_high,
            })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    for test in ("student", "welch", "mwu"):
        table[f"{test}_p_holm"] = holm(table[f"{test}_p"].tolist())
    table["significant_holm"] = table["student_p_holm"] < alpha
    table.attrs["alpha"] = alpha
    return table


# ---------------------------------------------------------------------------------------------
# Any two conditions of a log (a class comparing two engines, aligned vs disaligned, ...)
# ---------------------------------------------------------------------------------------------

# Columns of a count log whose values are conditions a study can compare, with their display names.
CONDITION_COLUMNS = {"engine": "engine", "alignment": "alignment", "query_type": "query type"}
MIN_ROWS_FOR_T = 2  # a two-sample t test needs at least two rows per group (one SD each)


def conditions(counts: pd.DataFrame) -> dict[str, list[str]]:
    """{column: its distinct values in the log} for every condition column (engines in the
    paper's order, others sorted)."""
    out: dict[str, list[str]] = {}
    for column in CONDITION_COLUMNS:
        if column not in counts.columns:
            continue
        values = [str(v) for v in counts[column].dropna().unique()]
        out[column] = engine_order(values) if column == "engine" else sorted(values)
    return out


def comparison_unavailable(counts: pd.DataFrame, column: str) -> str:
    """Why the conditions in `column` cannot be compared ("" when they can)."""
    values = conditions(counts).get(column, [])
    name = CONDITION_COLUMNS.get(column, column)
    if not values:
        return f"the log has no {name} column"
    if len(values) < 2:
        return f"only one condition: every row of this log has {name} {values[0]!r}"
    return ""


def _missing_test_reason(x: np.ndarray, y: np.ndarray, participants: tuple[int, int],
                         names: tuple[str, str]) -> str:
    """Why the t tests and Cohen's d of one pair are blank ("" when they are not)."""
    short = [f"{name} has {n} row{'s' if n != 1 else ''} ({p} participant{'s' if p != 1 else ''})"
             for name, n, p in zip(names, (x.size, y.size), participants) if n < MIN_ROWS_FOR_T]
    if short:
        return (f"too few participants: {' and '.join(short)}; a t test needs at least {MIN_ROWS_FOR_T} "
                "participant x query rows per condition")
    if x.std(ddof=1) == 0 and y.std(ddof=1) == 0:
        return "no variation: every row has the same count within each condition, so t and d are undefined"
    return ""


def pair_tests(counts: pd.DataFrame, column: str, first: str, second: str,
               measures: Sequence[str] = ("hovered", "clicked"), alpha: float = 0.01,
               confidence: float = 0.95) -> pd.DataFrame:
    """The tests of `test_table` for two conditions of one column (engine A vs engine B, aligned
    vs disaligned, ...), one row per measure, with participant counts per group and a `note`
    saying why a test is blank (too few rows or participants, no variation). Holm runs over the
    measures shown."""
    rows = []
    g1, g2 = counts[counts[column] == first], counts[counts[column] == second]
    participants = (int(g1["participant"].nunique()), int(g2["participant"].nunique()))
    for measure in measures:
        x = g1[measure].dropna().astype(float).to_numpy()
        y = g2[measure].dropna().astype(float).to_numpy()
        note = _missing_test_reason(x, y, participants, (first, second))
        ok = not note
        st = student_t(x, y) if ok else TTest(math.nan, math.nan, math.nan, math.nan)
        we = welch_t(x, y) if ok else TTest(math.nan, math.nan, math.nan, math.nan)
        mw = mann_whitney(x, y) if x.size and y.size else MannWhitney(math.nan, math.nan, "none")
        es = cohens_d(x, y, confidence) if ok else EffectSize(math.nan, math.nan, math.nan, confidence)
        rows.append({
            "comparison": f"{first} vs {second}", "measure": measure, "n1": int(x.size), "n2": int(y.size),
            "participants1": participants[0], "participants2": participants[1],
            "mean1": float(x.mean()) if x.size else math.nan, "mean2": float(y.mean()) if y.size else math.nan,
            "sd1": float(x.std(ddof=1)) if x.size > 1 else math.nan, "sd2": float(y.std(ddof=1)) if y.size > 1 else math.nan,
            "student_t": st.t, "student_df": st.df, "student_p": st.p,
            "welch_t": we.t, "welch_df": we.df, "welch_p": we.p,
            "mwu_u": mw.u, "mwu_p": mw.p, "mwu_method": mw.method,
            "cohens_d": es.d, "d_ci_low": es.ci_low, "d_ci_high": es.ci_high, "note": note,
        })
    table = pd.DataFrame(rows)
    for test in ("student", "welch", "mwu"):
        table[f"{test}_p_holm"] = holm(table[f"{test}_p"].tolist())
    table["significant_holm"] = table["student_p_holm"] < alpha
    table.attrs["alpha"] = alpha
    return table


def test_notes(tests: pd.DataFrame) -> list[str]:
    """One reason per blank row of a `test_table` result (empty groups, too few rows, no variation)."""
    notes = []
    for rec in tests.to_dict("records"):
        if rec["student_t"] == rec["student_t"]:
            continue
        if rec["n1"] == 0 or rec["n2"] == 0:
            why = "one of the two groups has no rows in this log"
        elif rec["n1"] < MIN_ROWS_FOR_T or rec["n2"] < MIN_ROWS_FOR_T:
            why = f"too few participants: a t test needs at least {MIN_ROWS_FOR_T} rows per group"
        else:
            why = "no variation within either group, so t is undefined"
        notes.append(f"{rec['comparison']} ({rec['measure']}): {why}")
    return notes
