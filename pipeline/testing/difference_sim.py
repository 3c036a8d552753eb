"""A simulation with known truth for `aee compare`'s verdicts (`pipeline.consistency.differences`):
how often a family of metrics on which two engines are equal yields a false "real difference", and
how often a true gap is called real (the power), by queries, repeats and gap.

The world (one replicate): `queries` questions; for every metric, each query has a rate p_q drawn
from 0.15 + 0.7 * Beta(3, 3) (the metrics independent of each other); each engine answers each query
`repeats` times, and an answer's value is the share of its `statements` statements that hold, each
with probability p_q (p_q + gap for engine A on the metrics given a gap), in percentage points. The
true difference of a metric is therefore 100 x gap on average over queries (less where p_q + gap is
clipped at 1; `true_gap` says how much exactly).

    python -m pipeline.testing.difference_sim              # the null family and the power table
    python -m pipeline.testing.difference_sim --replicates 400
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

STATEMENTS = 4


@dataclass(frozen=True)
class World:
    queries: int = 24
    repeats: int = 2
    metrics: int = 20
    gap: float = 0.0  # on the first metric only (the others equal in truth)
    statements: int = STATEMENTS


def metric_names(count: int) -> list[str]:
    """The registry's first `count` metrics (their labels and units appear in the verdicts)."""
    from pipeline.metrics import METRICS

    names = list(METRICS)
    if count > len(names):
        raise ValueError(f"the registry has {len(names)} metrics, not {count}")
    return names[:count]


def true_gap(gap: float, draws: int = 400_000, seed: int = 3) -> float:
    """The expected difference in points of a metric given `gap` (clipping at 1 included)."""
    p = 0.15 + 0.7 * np.random.default_rng(seed).beta(3, 3, size=draws)
    return float(100.0 * np.mean(np.clip(p + gap, 0, 1) - p))


def values(w: World, rng: np.random.Generator) -> pd.DataFrame:
    """One replicate as compare_sides reads it: engine, wave, query, metric, value."""
    names = metric_names(w.metrics)
    p = 0.15 + 0.7 * rng.beta(3, 3, size=(w.metrics, w.queries))
    parts = []
    for engine, shift in (("A", w.gap), ("B", 0.0)):
        rate = p.copy()
        rate[0] = np.clip(rate[0] + shift, 0, 1)
        held = rng.binomial(w.statements, np.repeat(rate[:, :, None], w.repeats, axis=2))  # metrics x queries x repeats
        m, q, r = np.meshgrid(np.arange(w.metrics), np.arange(w.queries), np.arange(w.repeats), indexing="ij")
        parts.append(pd.DataFrame({"engine": engine, "wave": "w", "query": [f"q{i}" for i in q.ravel()],
                                   "metric": [names[i] for i in m.ravel()],
                                   "value": 100.0 * held.ravel() / w.statements}))
    return pd.concat(parts, ignore_index=True)


def simulate(w: World, replicates: int = 200, alpha: float = 0.05, seed: int = 11) -> dict:
    """Share of replicates with any false claim among the equal metrics (family-wise), share where the
    gap metric is called real (power, when gap > 0), and the coverage of the gap metric's interval."""
    from pipeline.consistency.differences import compare_sides

    rng = np.random.default_rng(seed)
    truth = true_gap(w.gap)
    names = metric_names(w.metrics)
    false_family = found = covered = 0
    for _i in range(replicates):
        diffs = {d.metric: d for d in compare_sides(values(w, rng), {"engine": "A"}, {"engine": "B"}, "A", "B",
                                                     alpha=alpha)}
        nulls = names[1:] if w.gap else names
        false_family += any(diffs[m].real for m in nulls)
        first = diffs[names[0]]
        found += bool(first.real) if w.gap else 0
        covered += first.ci_low <= truth <= first.ci_high
    return {"queries": w.queries, "repeats": w.repeats, "metrics": w.metrics, "true_gap": round(truth, 2),
            "replicates": replicates, "alpha": alpha,
            "familywise_false": false_family / replicates, "power": (found / replicates) if w.gap else None,
            "coverage": covered / replicates}


POWER_DESIGNS = ((24, 2), (24, 3), (50, 2), (50, 3), (100, 2))
POWER_GAPS = (0.05, 0.10, 0.15, 0.20)


def power_table(replicates: int = 200, metrics: int = 20,
                designs: tuple = POWER_DESIGNS, gaps: tuple = POWER_GAPS) -> list[dict]:
    """Chance of calling a true gap real, per design (queries x repeats) and gap, in a family of
    `metrics` metrics (one with the gap): the table in docs/over_time.md."""
    return [simulate(World(q, r, metrics, g), replicates, seed=1000 + 7 * k)
            for k, ((q, r), g) in enumerate((d, g) for d in designs for g in gaps)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--only", choices=("null", "power"), help="one of the two tables")
    args = parser.parse_args(argv)
    if args.only in (None, "null"):
        for q, r, m in ((10, 2, 39), (24, 2, 39), (24, 3, 39), (50, 3, 39), (24, 2, 20)):
            print(json.dumps(simulate(World(q, r, m), args.replicates, seed=q * 100 + r * 10 + m)))
    if args.only in (None, "power"):
        for row in power_table(args.replicates):
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
