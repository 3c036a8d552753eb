"""Simulations with known truth for the Over time page's consistency intervals: how often the 95%
interval of an engine's stability (statements kept, same sources) and of a metric's ICC holds the
true value, per cell, at the designs people use.

Stability: the fake engines (`pipeline.testing.fake_variation`) answer `queries` queries `repeats`
times; statements kept has the expected value (1 - perturb)^2, URL Jaccard the hypergeometric
expectation `expected_url_jaccard(pool, cited)`. The interval is `change.engine_stability`'s.

ICC: per query a true value drawn once and repeats around it. "normal ICC r": query effects
N(0, r) and repeat noise N(0, 1 - r), so the ICC is r. "shares": the value is the share of 4
statements that hold, each with the query's rate p ~ 0.15 + 0.7 Beta(3, 3) (citation accuracy's
shape): between-query variance Var(p) = 0.49 * 3*3 / (6^2 * 7) = 0.0175, within E[p(1-p)] / 4 =
(0.25 - 0.0175) / 4 = 0.058125, ICC 0.0175 / 0.075625 = 0.2314. The interval is
`spread.icc_table`'s.

    python -m pipeline.testing.interval_sim [--replicates 800] [--seed 0] [--only stability|icc]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from pipeline.testing.fake_variation import Variation, expected_statement_overlap, expected_url_jaccard

STABILITY_CELLS = {
    "perturb 0.1, pool 10": Variation(perturb=0.1, pool=10, cited=3),
    "perturb 0.25, pool 10": Variation(perturb=0.25, pool=10, cited=3),
    "perturb 0.5, pool 6": Variation(perturb=0.5, pool=6, cited=3),
    "perturb 0.25, pool 4": Variation(perturb=0.25, pool=4, cited=3),
}
VAR_P = 0.49 * 9 / (36 * 7)
SHARES_ICC = VAR_P / (VAR_P + (0.25 - VAR_P) / 4)
ICC_CELLS = ("normal ICC 0.1", "normal ICC 0.3", "normal ICC 0.6", "normal ICC 0.9", "shares")
DESIGNS = ((10, 2), (24, 2), (24, 3), (50, 2))


def stability_coverage(variation: Variation, queries: int, repeats: int, replicates: int, seed: int = 0) -> dict:
    """Share of replicates whose interval holds the truth, for statements kept and URL Jaccard."""
    from itertools import combinations

    from pipeline.consistency.change import dice, engine_stability, jaccard, normalise_statement
    from pipeline.testing.fake_variation import varied_answer

    truth = {"statement_overlap": expected_statement_overlap(variation.perturb),
             "url_jaccard": expected_url_jaccard(variation.pool, variation.cited)}
    held = {m: 0 for m in truth}
    above = {m: 0 for m in truth}  # the interval lies wholly above the truth
    shown = 0
    for rep in range(replicates):
        v = Variation(seed=seed * 100_003 + rep, pool=variation.pool, cited=variation.cited,
                      statements=variation.statements, perturb=variation.perturb)
        rows = []
        for q in range(queries):
            draws = [varied_answer("E", f"Question {q}?", r, v, "w") for r in range(repeats)]
            pairs = list(combinations(draws, 2))
            rows.append({"engine": "E", "wave": "w", "query": f"q{q}",
                         "statement_overlap": float(np.mean([dice({normalise_statement(s) for s in a.statements},
                                                                  {normalise_statement(s) for s in b.statements})
                                                             for a, b in pairs])),
                         "url_jaccard": float(np.mean([jaccard(set(a.urls), set(b.urls)) for a, b in pairs]))})
        frame = pd.DataFrame(rows).assign(meaning_similarity=np.nan, domain_jaccard=np.nan, rank_overlap=np.nan)
        table = engine_stability(frame).set_index("measure")
        shown += bool(np.isfinite(table.loc["url_jaccard", "ci_low"]))
        for m, value in truth.items():
            held[m] += bool(table.loc[m, "ci_low"] <= value <= table.loc[m, "ci_high"])
            above[m] += bool(table.loc[m, "ci_low"] > value)
    return {"queries": queries, "repeats": repeats, "replicates": replicates, "with_interval": shown / replicates,
            **{f"{m}_truth": round(truth[m], 4) for m in truth}, **{f"{m}_coverage": held[m] / replicates for m in held},
            **{f"{m}_se": mc_se(held[m] / replicates, replicates) for m in held},
            **{f"{m}_missed_above": above[m] / replicates for m in held}}


def mc_se(coverage: float, replicates: int) -> float:
    """The Monte-Carlo (binomial) standard error of a measured coverage."""
    return round(float(np.sqrt(coverage * (1 - coverage) / replicates)), 4)


def icc_values(cell: str, queries: int, repeats: int, rng: np.random.Generator) -> tuple[pd.DataFrame, float]:
    """One replicate of an ICC cell: (values as icc_table reads them, the true ICC)."""
    if cell == "shares":
        p = 0.15 + 0.7 * rng.beta(3, 3, size=queries)
        x = 100.0 * rng.binomial(4, np.repeat(p[:, None], repeats, axis=1)) / 4
        truth = SHARES_ICC
    else:
        truth = float(cell.rsplit(" ", 1)[1])
        x = rng.normal(0, np.sqrt(truth), (queries, 1)) + rng.normal(0, np.sqrt(1 - truth), (queries, repeats))
    q = np.repeat(np.arange(queries), repeats)
    return pd.DataFrame({"engine": "E", "wave": "w", "metric": "m", "query": [f"q{i}" for i in q],
                         "value": x.ravel()}), truth


def icc_coverage(cell: str, queries: int, repeats: int, replicates: int, seed: int = 0) -> dict:
    from pipeline.consistency.spread import icc_table

    rng = np.random.default_rng(seed)
    held = shown = 0
    truth = np.nan
    for _ in range(replicates):
        values, truth = icc_values(cell, queries, repeats, rng)
        row = icc_table(values).iloc[0]
        if np.isfinite(row["icc_low"]):
            shown += 1
            held += bool(row["icc_low"] <= truth <= row["icc_high"])
    return {"cell": cell, "queries": queries, "repeats": repeats, "replicates": replicates, "truth": round(truth, 4),
            "coverage": held / shown if shown else None, "se": mc_se(held / shown, shown) if shown else None,
            "with_interval": shown / replicates}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0,
                        help="shifts every cell's seed, to check a result on worlds it was not measured on")
    parser.add_argument("--only", choices=("stability", "icc"), help="run one of the two tables")
    args = parser.parse_args(argv)
    base = 1_000 * args.seed
    for k, (q, r) in enumerate(DESIGNS):
        for j, (name, variation) in enumerate(STABILITY_CELLS.items()):
            if args.only != "icc":
                out = stability_coverage(variation, q, r, args.replicates, seed=base + 10 * k + j)
                print(json.dumps({"table": "stability", "cell": name, **out}), flush=True)
    for k, (q, r) in enumerate(DESIGNS):
        for j, cell in enumerate(ICC_CELLS):
            if args.only != "stability":
                out = icc_coverage(cell, q, r, args.replicates, seed=base + 100 + 10 * k + j)
                print(json.dumps({"table": "icc", **out}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
