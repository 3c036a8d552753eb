"""A simulation with known truth for `aee compare`'s judge correction (`pipeline.consistency.judge_error`):
how often a difference is claimed between two engines that are equal in truth when the judge errs
more on one of them, with and without the audit's correction; how often a true difference is found;
and how often the 95% interval holds the true difference.

The world (one replicate): `queries` questions, each with a difficulty p_q drawn from 0.15 + 0.7 *
Beta(3, 3); each engine answers each query `repeats` times with `statements` statements, each
supported by its source with probability p_q (+ `true_gap` for engine A) under the people's labels.
The metric is citation accuracy's shape: an answer's value is its share of supported statements.
The fake judge copies the people's label, except that it calls an unsupported statement supported
with probability `false_support[engine]` and misses a supported one with `missed_support[engine]`:
a bias that differs between the engines. The audit labels `labelled` statements, drawn as
`aee audit sample` draws them (strata engine x the judge's label, at least two per stratum, the rest
in proportion: `pipeline.audit.sample.allocate`). The true difference is `true_gap` x 100 points.

    python -m pipeline.testing.judge_bias_sim [--replicates 200]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

METRIC = "citation_accuracy"


@dataclass(frozen=True)
class Scenario:
    name: str
    true_gap: float = 0.0
    false_support: tuple[float, float] = (0.3, 0.0)  # engine A, engine B
    missed_support: tuple[float, float] = (0.05, 0.05)
    queries: int = 40
    repeats: int = 2
    statements: int = 5
    labelled: int = 100


SCENARIOS = (
    Scenario("equal engines, judge biased for A"),
    Scenario("A truly better by 12 points, judge biased for A", true_gap=0.12),
    Scenario("A truly better by 12 points, judge fair", true_gap=0.12, false_support=(0.1, 0.1)),
    Scenario("A truly better by 12 points, judge fair, 300 labels", true_gap=0.12, false_support=(0.1, 0.1), labelled=300),
)


# The small-n rule of `judge_error.rare_error_variance`: audits that see few or no errors of the
# judge (24 queries x 2 repeats x 4 statements, as the Over time page's smallest design)
_SMALL = {"queries": 24, "repeats": 2, "statements": 4}
SMALL_N_SCENARIOS = (
    Scenario("zero-error judge, equal engines, 33 labels", false_support=(0, 0), missed_support=(0, 0), labelled=33, **_SMALL),
    Scenario("zero-error judge, equal engines, 80 labels", false_support=(0, 0), missed_support=(0, 0), labelled=80, **_SMALL),
    Scenario("judge 10% lenient on A, 33 labels", false_support=(0.1, 0), missed_support=(0, 0), labelled=33, **_SMALL),
    Scenario("judge 20% lenient on A, 33 labels", false_support=(0.2, 0), missed_support=(0, 0), labelled=33, **_SMALL),
    Scenario("judge 10% lenient on A, 80 labels", false_support=(0.1, 0), missed_support=(0, 0), labelled=80, **_SMALL),
)


def _world(s: Scenario, rng: np.random.Generator):
    """(values for compare_sides, the audit's UnitValues) of one replicate."""
    from pipeline.audit.ppi import UnitValues
    from pipeline.audit.sample import allocate

    p = 0.15 + 0.7 * rng.beta(3, 3, size=s.queries)
    rows, units = [], []
    for e, engine in enumerate(("A", "B")):
        rate = np.clip(p + (s.true_gap if engine == "A" else 0.0), 0, 1)
        truth = rng.random((s.queries, s.repeats, s.statements)) < rate[:, None, None]
        flip = rng.random(truth.shape)
        judge = np.where(truth, flip >= s.missed_support[e], flip < s.false_support[e])
        for q in range(s.queries):
            for r in range(s.repeats):
                aid = f"{engine}-q{q}-r{r}"
                rows.append({"answer_id": aid, "engine": engine, "wave": "w", "query": f"q{q}", "repeat": r,
                             "metric": METRIC, "value": 100.0 * float(judge[q, r].mean())})
                for k in range(s.statements):
                    units.append({"cluster_id": f"{aid}#s{k}", "stratum": f"{engine} | judge: {'full' if judge[q, r, k] else 'none'}",
                                  "answer_id": aid, "engine": engine, "query_type": "factual", "n_items": 1,
                                  "yhat": float(judge[q, r, k]) / s.statements, "truth": float(truth[q, r, k]) / s.statements})
    clusters = pd.DataFrame(units)
    sizes = clusters.groupby("stratum")["cluster_id"].count().to_dict()
    drawn = np.zeros(len(clusters), dtype=bool)
    for stratum, n in sorted(allocate(sizes, s.labelled).items()):
        idx = np.flatnonzero((clusters["stratum"] == stratum).to_numpy())
        drawn[rng.choice(idx, size=n, replace=False)] = True
    clusters["labelled"] = drawn
    clusters["y"] = np.where(drawn, clusters["truth"], np.nan)
    clusters["c"] = clusters["y"]
    clusters["in_population"] = True
    answers = pd.DataFrame({"answer_id": [r["answer_id"] for r in rows], "engine": [r["engine"] for r in rows],
                            "query_type": "factual", "judge_const": 0.0, "human_const": 0.0})
    return pd.DataFrame(rows), UnitValues(clusters.drop(columns="truth"), answers)


def simulate(s: Scenario, replicates: int = 200, seed: int = 7) -> dict:
    """Share of replicates where a difference is claimed (real) and where the 95% interval holds the
    true difference, with and without the audit's correction; mean interval widths."""
    from pipeline.consistency.differences import compare_sides
    from pipeline.consistency.judge_error import Audit

    rng = np.random.default_rng(seed)
    truth = 100.0 * s.true_gap
    tally = {k: 0 for k in ("claimed_plain", "claimed_corrected", "covered_plain", "covered_corrected", "corrected")}
    widths = {"plain": 0.0, "corrected": 0.0}
    for _i in range(replicates):
        values, units = _world(s, rng)
        for kind, audit in (("plain", None), ("corrected", Audit({METRIC: units}))):
            (d,) = compare_sides(values, {"engine": "A"}, {"engine": "B"}, "A", "B", audit=audit)
            tally[f"claimed_{kind}"] += d.real
            tally[f"covered_{kind}"] += d.ci_low <= truth <= d.ci_high
            widths[kind] += d.ci_high - d.ci_low
            if audit is not None:
                tally["corrected"] += d.judge_status == "corrected"
    return {"scenario": s.name, "replicates": replicates, "true_difference": truth,
            **{k: v / replicates for k, v in tally.items()},
            "width_plain": widths["plain"] / replicates, "width_corrected": widths["corrected"] / replicates,
            "setup": asdict(s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    args = parser.parse_args(argv)
    for s in SCENARIOS + SMALL_N_SCENARIOS:
        out = simulate(s, args.replicates)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items() if k != "setup"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
