"""The Over time page's consistency intervals hold the known truth at their level (issue 42):
stability (statements kept, same sources) by a t interval over queries, ICC by the F-based
interval, both measured on seeded simulations at 24 queries x 2 repeats; a design too small for an
interval gets none, with the reason. The full tables: `python -m pipeline.testing.interval_sim`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pytest import approx

from pipeline.consistency.change import engine_stability, mean_interval
from pipeline.consistency.spread import icc_table
from pipeline.testing.interval_sim import SHARES_ICC, STABILITY_CELLS, icc_coverage, stability_coverage

# 200 replicates: the binomial standard error of a 95% coverage is 1.5%, so a correct interval
# measures at least 0.91 (2.6 standard errors) in all but about 1 seeded run in 200


def test_mean_interval_by_hand():
    # 0.2, 0.4, 0.6: mean 0.4, s = 0.2, se = 0.2 / sqrt(3) = 0.115470, t(0.975, 2) = 4.302653: half 0.496828
    low, high = mean_interval(np.array([0.2, 0.4, 0.6]))
    assert low == approx(0.0, abs=1e-12) and high == approx(0.896828, abs=1e-6)  # clipped at 0
    low, high = mean_interval(np.array([0.5, 0.6, 0.7, 0.8]))  # mean 0.65, s 0.129099, t(0.975, 3) 3.182446
    assert (low, high) == approx((0.65 - 0.205426, 0.65 + 0.205426), abs=1e-6)


def test_stability_intervals_hold_the_truth_at_24_by_2():
    out = stability_coverage(STABILITY_CELLS["perturb 0.25, pool 4"], 24, 2, 200, seed=3)
    print(out)
    assert out["statement_overlap_truth"] == approx(0.5625, abs=1e-12) and out["url_jaccard_truth"] == approx(0.625, abs=1e-4)
    assert out["statement_overlap_coverage"] >= 0.91 and out["url_jaccard_coverage"] >= 0.91


def test_icc_intervals_hold_the_truth_at_24_by_2():
    assert SHARES_ICC == approx(0.2314, abs=1e-4)
    for cell in ("shares", "normal ICC 0.6"):
        out = icc_coverage(cell, 24, 2, 200, seed=9)
        print(out)
        assert out["coverage"] >= 0.91 and out["with_interval"] == approx(1.0, abs=1e-12)


def test_a_design_too_small_gets_no_interval_and_says_why():
    per_query = pd.DataFrame({"engine": "E", "wave": "w", "query": [f"q{k}" for k in range(6)],
                              "statement_overlap": [0.5, 0.75, 1.0, 0.25, 0.5, 0.5], "meaning_similarity": np.nan,
                              "url_jaccard": 0.2, "domain_jaccard": 0.5, "rank_overlap": 0.3})
    row = engine_stability(per_query).set_index("measure").loc["statement_overlap"]
    assert row["value"] == approx(3.5 / 6, abs=1e-12) and math.isnan(row["ci_low"])
    assert row["note"] == "6 queries: too few for an interval (at least 10)"
    values = pd.DataFrame({"engine": "E", "wave": "w", "metric": "m", "query": [f"q{k // 2}" for k in range(12)],
                           "value": np.arange(12, dtype=float)})
    icc = icc_table(values).iloc[0]
    assert math.isnan(icc["icc_low"]) and icc["icc_note"] == "6 queries: too few for an interval (at least 10)"
