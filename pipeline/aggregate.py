"""Corpus values: per engine x query type macro means with bootstrap 95% CIs, counts and ratings.

Input is the long per-answer metric table (one row per answer x metric); output is the summary
table the scorecard shows. Null per-answer values are left out of a mean, never counted as 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.metrics import METRICS, RATING_SYMBOLS

QUERY_TYPES: tuple[str, ...] = ("all", "debate", "expertise")
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 20240501


def bootstrap_ci(values: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (seeded, so reruns agree)."""
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1 or np.all(values == values[0]):
        return (float(values[0]) if n == 1 else float(values.mean()),) * 2
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, n, size=(samples, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


SUMMARY_KEYS = ("dataset", "judge", "mode", "necessity")


def summarize(scores: pd.DataFrame, group_keys: tuple[str, ...] = ("engine",)) -> pd.DataFrame:
    """Summary rows (keys, query_type, metric, value, ci_low, ci_high, n_answers, rating).

    `scores` needs the columns answer_id, query_type, metric, value plus the group keys; values are
    per-answer in metric units (0..1 for percent metrics) and come out in display units.
    """
    keys = [k for k in (*SUMMARY_KEYS, *group_keys) if k in scores.columns]
    rows: list[dict] = []
    if scores.empty:
        return pd.DataFrame(columns=[*keys, "query_type", "metric", "value", "ci_low", "ci_high", "n_answers", "rating", "symbol"])
    for query_type in QUERY_TYPES:
        part = scores if query_type == "all" else scores[scores["query_type"] == query_type]
        if part.empty:
            continue
        for group, frame in part.groupby(keys, dropna=False, sort=True):
            group = group if isinstance(group, tuple) else (group,)
            base = dict(zip(keys, group)) | {"query_type": query_type}
            means: dict[str, float | None] = {}
            for name, info in METRICS.items():
                if info.harmonic_of:
                    continue
                values = frame.loc[frame["metric"] == name, "value"].dropna().to_numpy(dtype=float)
                if len(values) == 0:
                    rows.append(base | {"metric": name, "value": None, "ci_low": None, "ci_high": None, "n_answers": 0})
                    means[name] = None
                    continue
                low, high = bootstrap_ci(values)
                mean = float(values.mean())
                means[name] = mean
                rows.append(base | {"metric": name, "value": info.scale(mean), "ci_low": info.scale(low),
                                    "ci_high": info.scale(high), "n_answers": int(len(values))})
            for name, info in METRICS.items():
                if not info.harmonic_of:
                    continue
                p, r = (means.get(m) for m in info.harmonic_of)
                value = None if p is None or r is None else (0.0 if p + r == 0 else 2 * p * r / (p + r))
                n = int(frame.loc[frame["metric"] == info.harmonic_of[0], "value"].notna().sum())
                rows.append(base | {"metric": name, "value": info.scale(value), "ci_low": None, "ci_high": None, "n_answers": n})
    out = pd.DataFrame(rows)
    out["rating"] = [METRICS[m].rate(v) if v is not None and v == v else None for m, v in zip(out["metric"], out["value"])]
    out["symbol"] = out["rating"].map(lambda r: RATING_SYMBOLS.get(r, "") if r else "")
    return out


def scorecard_table(summary: pd.DataFrame, query_type: str = "all", decimals: int = 2) -> pd.DataFrame:
    """Wide table: one row per metric (registry order), one column per engine, values rounded."""
    part = summary[summary["query_type"] == query_type]
    if part.empty:
        return pd.DataFrame()
    wide = part.pivot_table(index="metric", columns="engine", values="value", aggfunc="first", dropna=False)
    order = [m for m in METRICS if m in wide.index]
    return wide.loc[order].round(decimals)
