"""Corpus values: per engine x query type macro means with bootstrap 95% CIs, counts and ratings.

Input is the long per-answer metric table (one row per answer x metric); output is the summary
table the scorecard shows. Null per-answer values are left out of a mean, never counted as 0.
"""

from __future__ import annotations

import hashlib
from array import array
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.metrics import METRICS, RATING_SYMBOLS

QUERY_TYPES: tuple[str, ...] = ("all", "debate", "expertise")
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 20240501
# resampled values held at once: 512 KB of indexes and as much of gathered values, which stay in a
# core's cache (blocks of 1,000,000 draws, 8 MB each, made a large group's interval twice as slow
# per draw as a small one's: the cost of the summary grew faster than the corpus)
BOOTSTRAP_BLOCK_DRAWS = 1 << 16


def bootstrap_ci(values: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (seeded, so reruns agree).

    Resamples are drawn in blocks of rows so memory stays bounded for large groups; the generator
    yields the same numbers whether drawn in one (samples, n) array or in consecutive blocks, so the
    interval does not depend on the block size."""
    n = len(values)
    if n == 0:
        return (float("nan"), float("nan"))
    if n == 1 or np.all(values == values[0]):
        return (float(values[0]) if n == 1 else float(values.mean()),) * 2
    rng = np.random.default_rng(seed)
    means = np.empty(samples)
    block = max(1, min(samples, BOOTSTRAP_BLOCK_DRAWS // n))
    for start in range(0, samples, block):
        k = min(block, samples - start)
        means[start : start + k] = values[rng.integers(0, n, size=(k, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


SUMMARY_KEYS = ("dataset", "judge", "mode", "necessity")


class SummaryAccumulator:
    """Per-answer metric values gathered by summary group, chunk by chunk.

    The runner feeds it the metric rows of each chunk as they are written, so the summary of a
    corpus needs one float per (answer, metric, configuration) and never the metrics table itself.
    """

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self.groups: set[tuple[tuple, str]] = set()  # (group key values, query type) seen
        self.values: dict[tuple[tuple, str, str], array] = {}

    def add_rows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add per-answer metric rows (dicts with the keys, query_type, metric and value)."""
        for row in rows:
            group = tuple(row[k] for k in self.keys)
            value = row["value"]
            for query_type in ("all", row["query_type"]):
                self.groups.add((group, query_type))
                slot = self.values.get((group, query_type, row["metric"]))
                if slot is None:
                    slot = self.values[(group, query_type, row["metric"])] = array("d")
                if value is not None and value == value:
                    slot.append(float(value))

    def add_frame(self, scores: pd.DataFrame) -> None:
        """Add a per-answer metric table at once (the dashboard's filtered recomputation)."""
        frame = scores[[*self.keys, "query_type", "metric", "value"]]
        for query_type in QUERY_TYPES:
            part = frame if query_type == "all" else frame[frame["query_type"] == query_type]
            if part.empty:
                continue
            for group, sub in part.groupby(list(self.keys), dropna=False, sort=False, observed=True):
                key = group if isinstance(group, tuple) else (group,)
                self.groups.add((key, query_type))
                for metric, values in sub.groupby("metric", sort=False, observed=True)["value"]:
                    self.values[(key, query_type, str(metric))] = array("d", values.dropna().to_numpy(dtype=float))

    def summary(self) -> pd.DataFrame:
        """Summary rows (keys, query_type, metric, value, ci_low, ci_high, n_answers, rating, symbol)."""
        columns = [*self.keys, "query_type", "metric", "value", "ci_low", "ci_high", "n_answers", "rating", "symbol"]
        if not self.groups:
            return pd.DataFrame(columns=columns)
        rows: list[dict] = []
        intervals: dict[tuple[int, bytes], tuple[float, float]] = {}  # values -> interval (see _interval)
        order = {q: i for i, q in enumerate(QUERY_TYPES)}
        for group, query_type in sorted(self.groups, key=lambda g: (order.get(g[1], len(order)), _sort_key(g[0]))):
            base = dict(zip(self.keys, group)) | {"query_type": query_type}
            means: dict[str, float | None] = {}
            counts: dict[str, int] = {}
            for name, info in METRICS.items():
                if info.harmonic_of:
                    continue
                values = np.asarray(self.values.get((group, query_type, name), array("d")), dtype=float)
                counts[name] = len(values)
                if len(values) == 0:
                    rows.append(base | {"metric": name, "value": None, "ci_low": None, "ci_high": None, "n_answers": 0})
                    means[name] = None
                    continue
                low, high = _interval(values, intervals)
                mean = float(values.mean())
                means[name] = mean
                rows.append(base | {"metric": name, "value": info.scale(mean), "ci_low": info.scale(low),
                                    "ci_high": info.scale(high), "n_answers": int(len(values))})
            for name, info in METRICS.items():
                if not info.harmonic_of:
                    continue
                p, r = (means.get(m) for m in info.harmonic_of)
                value = None if p is None or r is None else (0.0 if p + r == 0 else 2 * p * r / (p + r))
                rows.append(base | {"metric": name, "value": info.scale(value), "ci_low": None, "ci_high": None,
                                    "n_answers": counts.get(info.harmonic_of[0], 0)})
        out = pd.DataFrame(rows)
        out["rating"] = [METRICS[m].rate(v) if v is not None and v == v else None for m, v in zip(out["metric"], out["value"])]
        out["symbol"] = out["rating"].map(lambda r: RATING_SYMBOLS.get(r, "") if r else "")
        return out


def _interval(values: np.ndarray, known: dict[tuple[int, bytes], tuple[float, float]]) -> tuple[float, float]:
    """`bootstrap_ci(values)`, computed once for each distinct array of values: the interval is a
    function of the values alone (fixed seed), and many summary groups hold the same ones (a metric
    that does not depend on the necessity method, under all three; the "all" group of a dataset with
    one query type), so a corpus pays for its distinct groups only."""
    key = (len(values), hashlib.blake2b(values.tobytes(), digest_size=16).digest())
    if key not in known:
        known[key] = bootstrap_ci(values)
    return known[key]


def _sort_key(group: tuple) -> tuple:
    """Sort group keys as pandas' groupby(sort=True) did: by value, missing values last."""
    return tuple((v is None or v != v, "" if v is None or v != v else v) for v in group)


def summary_keys(columns: Iterable[str], group_keys: tuple[str, ...] = ("engine",)) -> list[str]:
    """The summary's group keys present among these columns."""
    present = set(columns)
    return [k for k in (*SUMMARY_KEYS, *group_keys) if k in present]


def summarize(scores: pd.DataFrame, group_keys: tuple[str, ...] = ("engine",)) -> pd.DataFrame:
    """Summary rows (keys, query_type, metric, value, ci_low, ci_high, n_answers, rating).

    `scores` needs the columns answer_id, query_type, metric, value plus the group keys; values are
    per-answer in metric units (0..1 for percent metrics) and come out in display units. Null
    per-answer values are left out of a mean; a metric with no value in a group gets value None.
    """
    acc = SummaryAccumulator(summary_keys(scores.columns, group_keys))
    if not scores.empty:
        acc.add_frame(scores)
    return acc.summary()


def scorecard_table(summary: pd.DataFrame, query_type: str = "all", decimals: int = 2) -> pd.DataFrame:
    """Wide table: one row per metric (registry order), one column per engine, values rounded."""
    part = summary[summary["query_type"] == query_type]
    if part.empty:
        return pd.DataFrame()
    wide = part.pivot_table(index="metric", columns="engine", values="value", aggfunc="first", dropna=False)
    order = [m for m in METRICS if m in wide.index]
    return wide.loc[order].round(decimals)
