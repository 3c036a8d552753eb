"""Corpus values: per engine x query type macro means with bootstrap 95% CIs, counts and ratings.

Input is the long per-answer metric table (one row per answer x metric); output is the summary
table the scorecard shows. Null per-answer values are left out of a mean, never counted as 0.

Each cell also carries its judged share: of the units its metric needed over the cell's answers
(statements, citations, pairs, sources: `MetricResult.units`), the share a label decided. A metric
registered with `max_unknown_share` whose cell has more undecided units than that is null, with the
reason in words ("only 12% of statements judged (sources without text)"): a mean over the few
answers whose sources had text would describe which sources had text, not the engine.

Two aggregations sit side by side in every row: `value` is the mean of per-answer values (AEE's
scorecard: each answer weighs the same) and `pooled_value` pools the metric's units over the cell
(Liu et al., ALCE and ExpertQA: sum of per-answer numerators over sum of denominators, so each
statement or citation weighs the same). Both intervals resample answers. `with_aggregation` picks
one and names it.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.metrics import METRICS, RATING_SYMBOLS
from pipeline.metrics.registry import AGGREGATIONS, MetricInfo, aggregation_text, percent_text

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


def bootstrap_ratio_ci(numerators: np.ndarray, denominators: np.ndarray, samples: int = BOOTSTRAP_SAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of sum(numerators) / sum(denominators), resampling answers
    (rows) as `bootstrap_ci` does, so the pooled and the per-answer interval come from the same draws.
    A draw whose answers hold no unit has no ratio and is left out."""
    n = len(denominators)
    if n == 0 or denominators.sum() <= 0:
        return (float("nan"), float("nan"))
    ratios = numerators / np.where(denominators > 0, denominators, 1)
    if n == 1 or np.all(ratios[denominators > 0] == ratios[denominators > 0][0]):
        value = float(numerators.sum() / denominators.sum())
        return (value, value)
    rng = np.random.default_rng(seed)
    out = np.empty(samples)
    block = max(1, min(samples, BOOTSTRAP_BLOCK_DRAWS // n))
    for start in range(0, samples, block):
        k = min(block, samples - start)
        idx = rng.integers(0, n, size=(k, n))
        den = denominators[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + k] = np.where(den > 0, numerators[idx].sum(axis=1) / np.where(den > 0, den, 1), np.nan)
    low, high = np.nanpercentile(out, [2.5, 97.5])
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
        # beside each value, the units it is a share of (`MetricResult.n`), for pooled values
        self.weights: dict[tuple[tuple, str, str], array] = {}
        # per (group, query type, metric): [units needed, units no label decided], and the causes
        self.judged: dict[tuple[tuple, str, str], list[int]] = {}
        self.causes: dict[tuple[tuple, str, str], Counter] = {}

    def _count_units(self, key: tuple[tuple, str, str], units: Any, unknown: Any, why: Any) -> None:
        units, unknown = _int(units), _int(unknown)
        if not units:
            return
        slot = self.judged.setdefault(key, [0, 0])
        slot[0] += units
        slot[1] += unknown
        if unknown and why == why and why:
            self.causes.setdefault(key, Counter())[str(why)] += unknown

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
                    self.weights[(group, query_type, row["metric"])] = array("d")
                if value is not None and value == value:
                    slot.append(float(value))
                    self.weights[(group, query_type, row["metric"])].append(float(_int(row.get("n"))))
                self._count_units((group, query_type, row["metric"]), row.get("units"), row.get("unknown"),
                                  row.get("unknown_why"))

    def add_frame(self, scores: pd.DataFrame, query_types: Sequence[str] = QUERY_TYPES) -> None:
        """Add a per-answer metric table at once (the dashboard's filtered recomputation); only the
        query types given (all of them by default)."""
        counted = [c for c in ("n", "units", "unknown", "unknown_why") if c in scores.columns]  # absent in older results
        frame = scores[[*self.keys, "query_type", "metric", "value", *counted]]
        for query_type in query_types:
            part = frame if query_type == "all" else frame[frame["query_type"] == query_type]
            if part.empty:
                continue
            for group, sub in part.groupby(list(self.keys), dropna=False, sort=False, observed=True):
                key = group if isinstance(group, tuple) else (group,)
                self.groups.add((key, query_type))
                for metric, part_rows in sub.groupby("metric", sort=False, observed=True):
                    slot_key = (key, query_type, str(metric))
                    valued = part_rows[part_rows["value"].notna()]
                    self.values[slot_key] = array("d", valued["value"].to_numpy(dtype=float))
                    weights = valued["n"].fillna(0).to_numpy(dtype=float) if "n" in counted else np.zeros(len(valued))
                    self.weights[slot_key] = array("d", weights)
                    if "units" in counted and "unknown" in counted:
                        self._count_units(slot_key, part_rows["units"].fillna(0).sum(), part_rows["unknown"].fillna(0).sum(), "")
                        if "unknown_why" in counted:
                            why = part_rows[part_rows["unknown"].fillna(0) > 0].groupby("unknown_why")["unknown"].sum()
                            for cause, count in why.items():
                                if cause:
                                    self.causes.setdefault(slot_key, Counter())[str(cause)] += int(count)

    def cell(self, group: tuple, query_type: str, metric: str) -> tuple[float | None, float | None, str, int]:
        """One cell as `summary` gives it, without its interval: (value in display units or None,
        judged share, why the value is None, answers averaged). Not for a harmonic metric (its value
        is computed from two others: use `summary`)."""
        info = METRICS[metric]
        if info.harmonic_of:
            raise ValueError(f"{metric} is a harmonic mean of other metrics: use summary()")
        key = (group, query_type, metric)
        values = np.asarray(self.values.get(key, array("d")), dtype=float)
        share, reason = self._judged(key, info)
        if len(values) == 0 or reason:
            return None, share, reason, int(len(values))
        return info.scale(float(values.mean())), share, reason, int(len(values))

    def summary(self) -> pd.DataFrame:
        """Summary rows (keys, query_type, metric, value, ci_low, ci_high, n_answers, rating, symbol)."""
        columns = [*self.keys, "query_type", "metric", "value", "ci_low", "ci_high", "n_answers", "rating", "symbol",
                   "judged_share", "reason", *POOLED_COLUMNS]
        if not self.groups:
            return pd.DataFrame(columns=columns)
        rows: list[dict] = []
        intervals: dict[tuple[int, bytes], tuple[float, float]] = {}  # values -> interval (see _interval)
        order = {q: i for i, q in enumerate(QUERY_TYPES)}
        for group, query_type in sorted(self.groups, key=lambda g: (order.get(g[1], len(order)), _sort_key(g[0]))):
            base = dict(zip(self.keys, group)) | {"query_type": query_type}
            means: dict[str, float | None] = {}
            pooled_means: dict[str, float | None] = {}
            counts: dict[str, int] = {}
            reasons: dict[str, str] = {}
            for name, info in METRICS.items():
                if info.harmonic_of:
                    continue
                key = (group, query_type, name)
                values = np.asarray(self.values.get(key, array("d")), dtype=float)
                counts[name] = len(values)
                share, reasons[name] = self._judged(key, info)
                judged = {"judged_share": share, "reason": reasons[name]}
                if len(values) == 0 or reasons[name]:
                    rows.append(base | {"metric": name, "value": None, "ci_low": None, "ci_high": None,
                                        "n_answers": int(len(values))} | judged | _NO_POOLED)
                    means[name] = pooled_means[name] = None
                    continue
                low, high = _interval(values, intervals)
                mean = float(values.mean())
                means[name] = mean
                weights = np.asarray(self.weights.get(key, array("d")), dtype=float)
                pooled = _pooled(info, values, weights, mean, (low, high))
                pooled_means[name] = pooled[0]
                rows.append(base | {"metric": name, "value": info.scale(mean), "ci_low": info.scale(low),
                                    "ci_high": info.scale(high), "n_answers": int(len(values))} | judged
                            | {"pooled_value": info.scale(pooled[0]), "pooled_ci_low": info.scale(pooled[1]),
                               "pooled_ci_high": info.scale(pooled[2]), "pooled_units": pooled[3]})
            for name, info in METRICS.items():
                if not info.harmonic_of:
                    continue
                value = _harmonic(*(means.get(m) for m in info.harmonic_of))
                pooled_value = _harmonic(*(pooled_means.get(m) for m in info.harmonic_of))
                why = next((f"{METRICS[m].label.lower()}: {reasons[m]}" for m in info.harmonic_of if reasons.get(m)), "")
                rows.append(base | {"metric": name, "value": info.scale(value), "ci_low": None, "ci_high": None,
                                    "n_answers": counts.get(info.harmonic_of[0], 0), "judged_share": None, "reason": why}
                            | _NO_POOLED | {"pooled_value": info.scale(pooled_value)})
        out = pd.DataFrame(rows, columns=columns)
        out["rating"] = [METRICS[m].rate(v) if v is not None and v == v else None for m, v in zip(out["metric"], out["value"])]
        out["symbol"] = out["rating"].map(lambda r: RATING_SYMBOLS.get(r, "") if r else "")
        return out


    def _judged(self, key: tuple[tuple, str, str], info: MetricInfo) -> tuple[float | None, str]:
        """(judged share of the cell's units or None when the metric tracks none, the reason the cell
        is null because too few were judged or "")."""
        units, unknown = self.judged.get(key, (0, 0))
        if not units:
            return None, ""
        share = (units - unknown) / units
        if info.max_unknown_share is None or unknown <= info.max_unknown_share * units:
            return share, ""
        causes = self.causes.get(key)
        cause = f" ({causes.most_common(1)[0][0]})" if causes else ""
        unit = info.unknown_unit or "units"
        judged = f"none of the {unit} judged" if share == 0 else f"only {percent_text(share)} of {unit} judged"
        return share, judged + cause


POOLED_COLUMNS = ("pooled_value", "pooled_ci_low", "pooled_ci_high", "pooled_units")
_NO_POOLED = {"pooled_value": None, "pooled_ci_low": None, "pooled_ci_high": None, "pooled_units": None}


def _harmonic(p: float | None, r: float | None) -> float | None:
    return None if p is None or r is None else (0.0 if p + r == 0 else 2 * p * r / (p + r))


def _pooled(info: MetricInfo, values: np.ndarray, weights: np.ndarray, mean: float,
            interval: tuple[float, float]) -> tuple[float | None, float | None, float | None, int | None]:
    """(pooled value, interval, units pooled) of one cell in metric units. An "answer" metric pools
    answers, which is its mean; otherwise the answers whose value covers at least one unit are pooled
    (an answer with no citation adds nothing to a pool of citations, whatever its parity value)."""
    if info.pool_unit == "answer":
        return mean, interval[0], interval[1], int(len(values))
    held = weights > 0
    if not held.any():
        return None, None, None, 0
    numerators, denominators = values[held] * weights[held], weights[held]
    low, high = bootstrap_ratio_ci(numerators, denominators)
    return float(numerators.sum() / denominators.sum()), low, high, int(round(denominators.sum()))


def with_aggregation(summary: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """The summary with `value`, its interval, rating and symbol taken from one aggregation
    ("answer": mean over answers, "pooled": pooled over each metric's units), and the columns
    `aggregation` (which) and `aggregated_as` (in words, per metric: "pooled over citations").
    Results written before pooled values were kept have no pooled column: their pooled values are
    null with that reason."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, not {aggregation!r}")
    out = summary.copy()
    if "pooled_units" in out.columns:  # a count: null where nothing was pooled, never 522.0
        out["pooled_units"] = out["pooled_units"].astype("Int64")
    out["aggregation"] = aggregation
    out["aggregated_as"] = [aggregation_text(METRICS[m], aggregation) if m in METRICS else "" for m in out["metric"]]
    if aggregation == "answer" or out.empty:
        return out
    if "pooled_value" not in out.columns:
        out[["value", "ci_low", "ci_high"]] = None
        out["reason"] = "written before pooled values were kept: run the dataset again"
    else:
        out["value"], out["ci_low"], out["ci_high"] = out["pooled_value"], out["pooled_ci_low"], out["pooled_ci_high"]
    out["rating"] = [METRICS[m].rate(v) if m in METRICS and v is not None and v == v else None
                     for m, v in zip(out["metric"], out["value"])]
    out["symbol"] = out["rating"].map(lambda r: RATING_SYMBOLS.get(r, "") if r else "")
    return out


def _int(value: Any) -> int:
    """A count from a metrics row: 0 for None / NaN (rows written before counts were kept)."""
    if value is None or value != value:
        return 0
    return int(value)


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
