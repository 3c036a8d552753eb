"""The paper's published study figures and the sample sizes they imply.

The paper prints means, SDs and test results but not how many queries each group holds. The
loaders here read the transcribed tables from the reference folder; `infer_table4_n` and
`infer_table5_n` search integer sample sizes that reproduce the printed t and p values within
their rounding. `pipeline.study.reproduction` and `pipeline.study.simulate` build on both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from pipeline.storage import paths
from pipeline.study.log import ALL_ENGINES_LABEL, ANSWER_ENGINES, BASELINE
from pipeline.study.stats import t_from_stats

# ---------------------------------------------------------------------------------------------
# Published figures
# ---------------------------------------------------------------------------------------------

REFERENCE_FILES = (
    "study_hover_click.csv",
    "study_sources_displayed_cited.csv",
    "study_alignment.csv",
    "study_ttests_published.csv",
    "study_alignment_ttests_published.csv",
    "study_participants.csv",
    "study_text_claims.csv",
)


def load_reference(name: str, reference_dir: Path | None = None) -> pd.DataFrame:
    folder = reference_dir or paths.reference_dir()
    path = folder / name
    if not path.is_file():
        raise FileNotFoundError(f"published figures missing: {path}")
    return pd.read_csv(path)


@dataclass(frozen=True)
class Published:
    hover_click: pd.DataFrame
    sources: pd.DataFrame
    alignment: pd.DataFrame
    ttests: pd.DataFrame
    alignment_ttests: pd.DataFrame
    participants: pd.DataFrame
    text_claims: pd.DataFrame

    def stat(self, table: str, group: str, measure: str, name: str = "mean") -> float:
        frame = {"hover_click": self.hover_click, "sources": self.sources, "alignment": self.alignment}[table]
        key = "condition" if table == "alignment" else "engine"
        row = frame[(frame[key] == group) & (frame["measure"] == measure)]
        return float(row.iloc[0][name])


def load_published(reference_dir: Path | None = None) -> Published:
    r = lambda n: load_reference(n, reference_dir)  # noqa: E731
    return Published(
        r("study_hover_click.csv"), r("study_sources_displayed_cited.csv"), r("study_alignment.csv"),
        r("study_ttests_published.csv"), r("study_alignment_ttests_published.csv"),
        r("study_participants.csv"), r("study_text_claims.csv"),
    )


# ---------------------------------------------------------------------------------------------
# Sample sizes implied by the printed tests
# ---------------------------------------------------------------------------------------------

HALF_UNIT = 0.005  # the tables print two decimals
PER_ENGINE_PARTICIPANTS = 7
MAIN_PARTICIPANTS = 21
# A participant handled "3-4" prepared questions per part; up to 15 queries per participant and
# engine is a generous ceiling, so the grids below cannot miss a plausible design.
MAX_QUERIES_PER_PARTICIPANT = 15


def pooled_stats(groups: Sequence[tuple[float, float, int]]) -> tuple[float, float, int]:
    """Mean and SD of the union of groups given each group's (mean, SD, n)."""
    n = sum(g[2] for g in groups)
    mean = sum(g[0] * g[2] for g in groups) / n
    ss = sum((g[2] - 1) * g[1] ** 2 + g[2] * (g[0] - mean) ** 2 for g in groups)
    return mean, math.sqrt(ss / (n - 1)), n


def _p_rounding(p: float) -> float:
    """Relative half-unit of a p value printed with three significant figures."""
    mantissa = p / 10 ** math.floor(math.log10(p))
    return 0.005 / mantissa


def _log_p_two_sided(t: float, df: float) -> float:
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    return float(stats.t.logsf(abs(t), df) + math.log(2))


def _dlogp_dt(t: float, df: float) -> float:
    h = 1e-4
    return (_log_p_two_sided(t + h, df) - _log_p_two_sided(t - h, df)) / (2 * h)


def _t_tolerance(values: Sequence[float], n_g: int, ns: Sequence[int],
                 func: Callable[[Sequence[float], int, Sequence[int]], float]) -> float:
    """First-order bound on how much t moves when each printed statistic moves by half a unit."""
    base = func(values, n_g, ns)
    total = 0.0
    for i in range(len(values)):
        up = list(values)
        up[i] += 1e-6
        total += abs((func(up, n_g, ns) - base) / 1e-6) * HALF_UNIT
    return total


@dataclass
class Fit:
    """Residuals of one published test at one candidate (n1, n2), in units of rounding slack."""

    t: float
    t_tol: float
    z_t: float
    log_p: float  # log p implied by the printed t at df = n1 + n2 - 2
    p_tol: float
    z_p: float


def _pair_stats(pub: Published, table: str, g1: str, g2: str, measure: str) -> tuple[float, float, float, float]:
    return (pub.stat(table, g1, measure, "mean"), pub.stat(table, g1, measure, "sd"),
            pub.stat(table, g2, measure, "mean"), pub.stat(table, g2, measure, "sd"))


def _t_all_of(values: Sequence[float], n_g: int, ns: Sequence[int]) -> float:
    # values: Google mean, Google SD, then (mean, SD) per engine in ANSWER_ENGINES order.
    m, s, n = pooled_stats([(values[2 + 2 * i], values[3 + 2 * i], ns[i]) for i in range(len(ns))])
    return t_from_stats(values[0], values[1], n_g, m, s, n).t


def fit_t_test(t_pub: float, p_pub: float, t_rec: float, t_tol: float, n1: int, n2: int) -> Fit:
    df = n1 + n2 - 2
    log_p = _log_p_two_sided(t_pub, df)
    # Slack on log p: printed t is rounded (+-0.005) and the printed p to three figures.
    p_tol = abs(_dlogp_dt(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    z_t = (t_rec - t_pub) / (t_tol + HALF_UNIT)
    z_p = (log_p - math.log(p_pub)) / p_tol
    return Fit(t_rec, t_tol + HALF_UNIT, z_t, log_p, p_tol, z_p)


def _published_t(pub: Published, comparison: str, measure: str) -> tuple[float, float]:
    row = pub.ttests[(pub.ttests["comparison"] == comparison) & (pub.ttests["measure"] == measure)].iloc[0]
    return float(row["t_statistic"]), float(row["p_value"])


def _student_grid(vals: Sequence[float], n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Student t over arrays of sample sizes, and its first-order slack when each of the four
    printed statistics moves by half a unit (analytic partial derivatives:
    dt/dm = +-1/se, dt/ds_i = -t (n_i - 1) s_i / (df sp^2))."""
    m1, s1, m2, s2 = vals
    df = n1 + n2 - 2
    sp2 = ((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / df
    se = np.sqrt(sp2 * (1 / n1 + 1 / n2))
    t = (m1 - m2) / se
    slack = HALF_UNIT * (2 / se + np.abs(t) * ((n1 - 1) * s1 + (n2 - 1) * s2) / (df * sp2))
    return t, slack


def _log_p_grid(t: np.ndarray | float, df: np.ndarray) -> np.ndarray:
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    return stats.t.logsf(np.abs(t), df) + math.log(2)


def _dlogp_dt_grid(t: np.ndarray | float, df: np.ndarray) -> np.ndarray:
    # d/dt log(2 sf(t)) = -pdf(t) / sf(t), computed in logs so tiny p values do not underflow.
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    return -np.exp(stats.t.logpdf(np.abs(t), df) - stats.t.logsf(np.abs(t), df))


def _fit_grid(t_pub: float, p_pub: float, vals: Sequence[float], n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z scores (residual / rounding slack) of the printed t and the printed p over a grid."""
    t_rec, slack = _student_grid(vals, n1, n2)
    z_t = (np.abs(t_rec) - t_pub) / (slack + HALF_UNIT)
    df = n1 + n2 - 2
    p_tol = np.abs(_dlogp_dt_grid(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    z_p = (_log_p_grid(t_pub, df) - math.log(p_pub)) / p_tol
    return z_t, z_p


def infer_table4_n(pub: Published) -> dict:
    """Search integer sample sizes (Google n, n per answer engine) that make every Table 4 t
    statistic and p value reproducible within rounding.

    Stage 1, per engine: over the grid, count how many of its four printed numbers (two t, two
    p) fit within rounding; keep candidates missing at most one. Stage 2: combine the engines under
    one Google n (everyone used Google, so the Google group is the same in every comparison) and
    add the 'all answer engines' tests, whose second group is the union of the three engine groups.
    The candidate satisfying the most constraints wins (then the smallest squared misfit); a
    printed value that misses at the winner is flagged by `reproduce`."""
    measures = ("hovered", "clicked")
    n_g_grid = np.arange(MAIN_PARTICIPANTS, MAIN_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT + 1)
    n_e_grid = np.arange(PER_ENGINE_PARTICIPANTS, PER_ENGINE_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT + 1)
    G, E = np.meshgrid(n_g_grid, n_e_grid, indexing="ij")
    per_engine: dict[str, dict[int, list[tuple[int, int, float]]]] = {}
    t_only: dict[str, np.ndarray] = {}
    for engine in ANSWER_ENGINES:
        ok = np.zeros(G.shape, dtype=int)
        ssq = np.zeros(G.shape)
        t_fit = np.ones(G.shape, dtype=bool)
        for measure in measures:
            t_pub, p_pub = _published_t(pub, f"{BASELINE} vs {engine}", measure)
            z_t, z_p = _fit_grid(t_pub, p_pub, _pair_stats(pub, "hover_click", BASELINE, engine, measure), G, E)
            ok += (np.abs(z_t) <= 1).astype(int) + (np.abs(z_p) <= 1).astype(int)
            ssq += np.minimum(z_t ** 2, 1e6) + np.minimum(z_p ** 2, 1e6)
            t_fit &= np.abs(z_t) <= 1
        t_only[engine] = t_fit
        keep: dict[int, list[tuple[int, int, float]]] = {}
        for i, j in zip(*np.nonzero(ok >= 3)):
            keep.setdefault(int(G[i, j]), []).append((int(E[i, j]), int(ok[i, j]), float(ssq[i, j])))
        per_engine[engine] = keep

    all_specs = []
    for measure in measures:
        t_pub, p_pub = _published_t(pub, f"{BASELINE} vs {ALL_ENGINES_LABEL}", measure)
        vals = [pub.stat("hover_click", BASELINE, measure, "mean"), pub.stat("hover_click", BASELINE, measure, "sd")]
        for engine in ANSWER_ENGINES:
            vals += [pub.stat("hover_click", engine, measure, "mean"), pub.stat("hover_click", engine, measure, "sd")]
        all_specs.append((t_pub, p_pub, vals))

    candidates = []
    common_g = set.intersection(*(set(per_engine[e]) for e in ANSWER_ENGINES))
    for n_g in sorted(common_g):
        for combo in product(*(per_engine[e][n_g] for e in ANSWER_ENGINES)):
            ns = [c[0] for c in combo]
            hits = sum(c[1] for c in combo)  # per-engine fits within slack, then the pooled tests'
            sq_sum = sum(c[2] for c in combo)
            for t_pub, p_pub, vals in all_specs:
                t_rec = _t_all_of(vals, n_g, ns)
                fit = fit_t_test(t_pub, p_pub, t_rec, _t_tolerance(vals, n_g, ns, _t_all_of), n_g, sum(ns))
                hits += int(abs(fit.z_t) <= 1) + int(abs(fit.z_p) <= 1)
                sq_sum += min(fit.z_t ** 2, 1e6) + min(fit.z_p ** 2, 1e6)
            candidates.append((hits, -sq_sum, n_g, tuple(ns)))
    if not candidates:
        return {"found": False, "reason": "no integer sample sizes on the grid reproduce the published t statistics"}
    candidates.sort(reverse=True)
    top_ok = candidates[0][0]
    best = candidates[0]
    n = {BASELINE: best[2], **{e: best[3][i] for i, e in enumerate(ANSWER_ENGINES)}}
    n[ALL_ENGINES_LABEL] = sum(best[3])

    def spans(rows: list) -> dict:
        out = {BASELINE: _span(c[2] for c in rows)}
        for i, e in enumerate(ANSWER_ENGINES):
            out[e] = _span(c[3][i] for c in rows)
        return out

    tied = [c for c in candidates if c[0] == top_ok]
    near = [c for c in candidates if c[0] >= top_ok - 1]
    # What the t statistics alone allow (p values ignored), holding Google at its inferred n.
    g_idx = int(np.nonzero(n_g_grid == best[2])[0][0])
    t_alone = {e: _span(int(x) for x in n_e_grid[t_only[e][g_idx]]) if t_only[e][g_idx].any() else None for e in ANSWER_ENGINES}
    # And with Google free too: Google sizes for which every engine has some t-fitting size.
    g_any = np.logical_and.reduce([t_only[e].any(axis=1) for e in ANSWER_ENGINES])
    t_alone_google = _span(int(x) for x in n_g_grid[g_any]) if g_any.any() else None
    return {
        "found": True,
        "n": n,
        "t_alone_google_range": t_alone_google,
        "constraints_total": 4 * len(ANSWER_ENGINES) + 4,
        "constraints_satisfied": top_ok,
        "tuples_tied": len(tied),
        "ranges": spans(tied),
        "ranges_one_more_miss": spans(near),
        "tuples_one_more_miss": len(near),
        "t_alone_ranges_at_inferred_google_n": t_alone,
        "grid": {"google": [int(n_g_grid[0]), int(n_g_grid[-1])], "per_engine": [int(n_e_grid[0]), int(n_e_grid[-1])]},
    }


def _span(values: Iterable[int]) -> list[int]:
    vals = list(values)
    return [min(vals), max(vals)]


def infer_table5_n(pub: Published) -> dict:
    """Table 5 prints only p values. Two p values (hovered, clicked) share one pair of sample
    sizes, so search (n_aligned, n_disaligned) for pairs reproducing both within rounding
    (means/SDs +-0.005 propagated to log p, plus three-figure rounding of p)."""
    grid = np.arange(PER_ENGINE_PARTICIPANTS, 3 * PER_ENGINE_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT // 2 + 1)
    A, D = np.meshgrid(grid, grid, indexing="ij")
    zs = []
    for measure in ("hovered", "clicked"):
        p_pub = float(pub.alignment_ttests[pub.alignment_ttests["measure"] == measure].iloc[0]["p_value"])
        t, slack = _student_grid(_pair_stats(pub, "alignment", "aligned", "disaligned", measure), A, D)
        df = A + D - 2
        tol = np.abs(_dlogp_dt_grid(t, df)) * slack + _p_rounding(p_pub)
        zs.append((_log_p_grid(t, df) - math.log(p_pub)) / tol)
    worst = np.maximum(np.abs(zs[0]), np.abs(zs[1]))
    ssq = zs[0] ** 2 + zs[1] ** 2
    i, j = np.unravel_index(np.lexsort((ssq.ravel(), worst.ravel()))[0], worst.shape)
    fitting = [(int(A[a, d]), int(D[a, d]), float(ssq[a, d])) for a, d in zip(*np.nonzero(worst <= 1))]
    fitting.sort(key=lambda f: f[2])
    return {
        "n": {"aligned": int(A[i, j]), "disaligned": int(D[i, j])},
        "fits_within_rounding": bool(fitting),
        "pairs_fitting": [[a, d] for a, d, _ in fitting],
        "ranges": {"aligned": _span(f[0] for f in fitting) if fitting else None,
                   "disaligned": _span(f[1] for f in fitting) if fitting else None,
                   "total": _span(f[0] + f[1] for f in fitting) if fitting else None},
        "grid": [int(grid[0]), int(grid[-1])],
    }
