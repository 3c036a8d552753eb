"""Every metric's spread between repeats of a query, against the differences between queries and
between engines, and the queries whose rating band flips between repeats.

Per engine and wave, the one-way random-effects ICC(1) of a metric over queries: the share of the
per-answer variance that lies between queries rather than between repeats of one query (1: the
engine answers a query the same way every time; 0: the repeats differ as much as different queries
do). Per wave, a variance decomposition over the engines: the shares of the variance of per-answer
values due to the engine, to the query within the engine, and to repeats (the rest). The ICC's
interval is the F-based one (`icc_interval`); the shares' intervals are percentile bootstrap
intervals that resample queries (a query keeps all its repeats), so they hold for the query set as a
sample of queries.

The shares' bootstrap works on per-(engine, query) sums (count, sum, sum of squares) weighted by how often
a resample drew each query, so its cost grows with the number of queries, not of answers.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy.special import fdtri  # = scipy.stats.f.ppf; importing scipy.stats costs each `aee run` ~2 s

from pipeline.metrics import METRICS, RATING_SYMBOLS

SAMPLES = 500
SEED = 20261126
_BLOCK = 100  # bootstrap samples per block (memory stays bounded for large query sets)


def _cell_sums(values: pd.DataFrame, rows: str, cols: str) -> tuple[list, list, np.ndarray, np.ndarray, np.ndarray]:
    """(row keys, column keys, n, sum, sum of squares) as rows x cols arrays (numpy counting)."""
    row_keys, r = np.unique(values[rows].astype(str).to_numpy(), return_inverse=True)
    col_keys, c = np.unique(values[cols].astype(str).to_numpy(), return_inverse=True)
    v = values["value"].to_numpy(float)
    shape = (len(row_keys), len(col_keys))
    flat = r * shape[1] + c
    size = shape[0] * shape[1]
    n = np.bincount(flat, minlength=size).reshape(shape).astype(float)
    s = np.bincount(flat, weights=v, minlength=size).reshape(shape)
    sq = np.bincount(flat, weights=v * v, minlength=size).reshape(shape)
    return list(row_keys), list(col_keys), n, s, sq


def _icc_weighted(n: np.ndarray, s: np.ndarray, sq: np.ndarray, w: np.ndarray) -> np.ndarray:
    """ICC(1) for each row of weights w (samples x queries) over per-query n, s, sq (queries)."""
    groups = w.sum(axis=1)
    total_n = w @ n
    grand = (w @ s) / np.where(total_n > 0, total_n, 1)
    means = s / np.where(n > 0, n, 1)
    ss_within = w @ (sq - s * means)
    ss_between = (w * n) @ (means ** 2) - total_n * grand ** 2
    df_b = groups - 1
    df_w = total_n - groups
    with np.errstate(divide="ignore", invalid="ignore"):
        msb = ss_between / df_b
        msw = ss_within / df_w
        k0 = (total_n - (w @ (n ** 2)) / total_n) / df_b
        icc = (msb - msw) / (msb + (k0 - 1) * msw)
    icc[(df_b <= 0) | (df_w <= 0) | ~np.isfinite(icc)] = np.nan
    return icc


def _per_query(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n, sum and sum of squares of the values per query present (numpy counting, no groupby)."""
    _, codes = np.unique(group["query"].astype(str).to_numpy(), return_inverse=True)
    v = group["value"].to_numpy(float)
    return (np.bincount(codes).astype(float), np.bincount(codes, weights=v), np.bincount(codes, weights=v * v))


MIN_QUERIES = 10  # below this, no interval is given: the design is too small to hold one at its level


def icc_interval(n: np.ndarray, s: np.ndarray, sq: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The F-based interval of ICC(1) (Searle 1971; Shrout & Fleiss 1979) from per-query counts, sums
    and sums of squares: exact for normal random effects with equal repeats, k0 (the mean repeats,
    adjusted for imbalance) in their place otherwise. A query bootstrap, used before, held the true
    ICC in 89-93% of simulated 24 x 2 designs; this one in 93-97% of 800 per cell
    (pipeline.testing.interval_sim)."""
    groups, total = float(n.size), float(n.sum())
    df_b, df_w = groups - 1, total - groups
    if df_b < 1 or df_w < 1:
        return np.nan, np.nan
    means = s / n
    grand = s.sum() / total
    msb = float((n * (means - grand) ** 2).sum() / df_b)
    msw = float((sq - s * means).sum() / df_w)
    if msw <= 0:
        return np.nan, np.nan  # no spread between repeats: nothing to scale the queries' spread by
    k0 = (total - (n ** 2).sum() / total) / df_b
    ratio = msb / msw
    tail = (1 + level) / 2
    low_f = ratio / float(fdtri(df_b, df_w, tail))
    high_f = ratio * float(fdtri(df_w, df_b, tail))
    return (low_f - 1) / (low_f + k0 - 1), (high_f - 1) / (high_f + k0 - 1)


def icc_table(values: pd.DataFrame) -> pd.DataFrame:
    """values: engine, wave, query, metric, value (non-null, display scale). One row per engine,
    wave and metric: icc with its F-based interval (none below MIN_QUERIES queries, and `note` says
    why), within-query SD, between-query SD, queries, answers."""
    rows = []
    for (engine, wave, metric), group in values.groupby(["engine", "wave", "metric"], sort=True, observed=True):
        n, s, sq = _per_query(group)
        point = _icc_weighted(n, s, sq, np.ones((1, n.size)))[0]
        low, high = icc_interval(n, s, sq) if n.size >= MIN_QUERIES else (np.nan, np.nan)
        note = ""
        if n.size < MIN_QUERIES:
            note = f"{n.size} queries: too few for an interval (at least {MIN_QUERIES})"
        elif not np.isfinite(low):
            note = "no query was asked twice with different values: no interval"
        means = s / n
        within = np.sqrt(np.sum(sq - s * means) / max(n.sum() - n.size, 1)) if n.sum() > n.size else np.nan
        rows.append({"engine": engine, "wave": wave, "metric": metric, "icc": float(point) if np.isfinite(point) else np.nan,
                     "icc_low": float(low), "icc_high": float(high), "icc_note": note,
                     "within_sd": float(within), "between_sd": float(np.std(means, ddof=1)) if n.size > 1 else np.nan,
                     "queries": int(n.size), "answers": int(n.sum())})
    return pd.DataFrame(rows, columns=["engine", "wave", "metric", "icc", "icc_low", "icc_high", "icc_note", "within_sd",
                                       "between_sd", "queries", "answers"])


def _shares(n: np.ndarray, s: np.ndarray, sq: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(samples, 3): engine, query-within-engine and repeat shares of the total sum of squares.
    n, s, sq: engines x queries; w: samples x queries."""
    n_e = w @ n.T  # samples x engines
    s_e = w @ s.T
    total_n = n_e.sum(axis=1)
    grand = s_e.sum(axis=1) / np.where(total_n > 0, total_n, 1)
    cell_mean = s / np.where(n > 0, n, 1)
    ss_total = (w @ sq.T).sum(axis=1) - total_n * grand ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        eng_mean = s_e / np.where(n_e > 0, n_e, 1)
    ss_engine = (n_e * eng_mean ** 2).sum(axis=1) - total_n * grand ** 2
    ss_repeat = (w @ (sq - s * cell_mean).T).sum(axis=1)
    ss_query = ss_total - ss_engine - ss_repeat
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.stack([ss_engine, ss_query, ss_repeat], axis=1) / ss_total[:, None]
    out[~np.isfinite(out).all(axis=1)] = np.nan
    return out


def variance_shares(values: pd.DataFrame, samples: int = SAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Per wave and metric, over the queries every engine answered: the shares of variance due to
    engine, query (within engine) and repeat, with bootstrap intervals over queries."""
    rows = []
    rng = np.random.default_rng(seed)
    for (wave, metric), group in values.groupby(["wave", "metric"], sort=True, observed=True):
        engines = group["engine"].nunique()
        if engines < 2:
            continue
        shared = group.groupby("query", observed=True)["engine"].nunique()
        group = group[group["query"].isin(shared[shared == engines].index)]
        if group["query"].nunique() < 2:
            continue
        _, _, n, s, sq = _cell_sums(group, "engine", "query")
        q = n.shape[1]
        point = _shares(n, s, sq, np.ones((1, q)))[0]
        draws = []
        for start in range(0, samples, _BLOCK):
            k = min(_BLOCK, samples - start)
            picks = rng.integers(0, q, size=(k, q))
            w = np.zeros((k, q))
            np.add.at(w, (np.repeat(np.arange(k), q), picks.ravel()), 1.0)
            draws.append(_shares(n, s, sq, w))
        boot = np.concatenate(draws)
        boot = boot[np.isfinite(boot).all(axis=1)]
        row = {"wave": wave, "metric": metric, "engines": int(engines), "queries": int(q)}
        for k, name in enumerate(("engine", "query", "repeat")):
            row[f"{name}_share"] = float(point[k])
            row[f"{name}_low"] = float(np.quantile(boot[:, k], 0.025)) if boot.size else np.nan
            row[f"{name}_high"] = float(np.quantile(boot[:, k], 0.975)) if boot.size else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def ratings(metric: str, display_values: np.ndarray) -> np.ndarray:
    """The registry's rating of each value (display scale), "" when unrated or missing."""
    info = METRICS.get(metric)
    out = np.full(display_values.shape, "", dtype=object)
    if info is None or not info.bands:
        return out
    rounded = np.round(display_values.astype(float), 2)
    for band in info.bands:
        inside = (rounded >= band.low) & (rounded < band.high)
        if band.high_inclusive:
            inside |= rounded == band.high
        out[inside & (out == "")] = band.rating
    return out


def rating_flips(values: pd.DataFrame) -> pd.DataFrame:
    """The (engine, wave, query, metric) whose repeats fall in different rating bands: the ratings
    in repeat order as symbols, and the answer ids in the same order (for the Inspector)."""
    parts = []
    for metric, group in values.groupby("metric", sort=True, observed=True):
        rated = group.assign(rating=ratings(str(metric), group["value"].to_numpy()))
        rated = rated[rated["rating"] != ""]
        if rated.empty:
            continue
        distinct = rated.groupby(["engine", "wave", "query"], observed=True)["rating"].transform("nunique")
        parts.append(rated[distinct > 1])
    if not parts:
        return pd.DataFrame(columns=["engine", "wave", "query", "metric", "ratings", "answer_ids", "values"])
    flips = pd.concat(parts).sort_values(["engine", "wave", "metric", "query", "repeat"])
    out = flips.groupby(["engine", "wave", "query", "metric"], sort=True, observed=True).agg(
        ratings=("rating", lambda r: "".join(RATING_SYMBOLS[x] for x in r)),
        answer_ids=("answer_id", lambda a: json.dumps(list(a))),
        values=("value", lambda v: " ".join(f"{x:.1f}" for x in v))).reset_index()
    return out
