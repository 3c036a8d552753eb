"""The Over time page's consistency intervals hold the known truth at their level (issue 42):
stability (statements kept, same sources) by a logit-scale t interval over queries, ICC by the F-based
interval, both measured on seeded simulations at 24 queries x 2 repeats; a design too small for an
interval gets none, with the reason. The full tables: `python -m pipeline.testing.interval_sim`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pytest import approx

from pipeline.consistency.change import engine_stability, mean_interval
from pipeline.consistency.spread import icc_table
from pipeline.testing.interval_sim import SHARES_ICC, STABILITY_CELLS, icc_coverage, mc_se, stability_coverage

# 200 replicates: the binomial standard error of a 95% coverage is 1.5%, so a correct interval
# measures at least 0.91 (2.6 standard errors) in all but about 1 seeded run in 200


def test_mean_interval_by_hand():
    # logit scale: 0.2, 0.4, 0.6: mean 0.4, se = 0.2 / sqrt(3) = 0.115470, t(0.975, 2) = 4.302653;
    # logit(0.4) = -0.405465, half = 4.302653 * 0.115470 / (0.4 * 0.6) = 2.070115,
    # expit(-2.475580) = 0.077588, expit(1.664650) = 0.840861 (inside 0..1 with no clipping)
    low, high = mean_interval(np.array([0.2, 0.4, 0.6]))
    assert (low, high) == approx((0.077588, 0.840861), abs=1e-6)
    # 0.5..0.8: mean 0.65, se 0.064550, t(0.975, 3) 3.182446, logit 0.619039, half 0.902972
    low, high = mean_interval(np.array([0.5, 0.6, 0.7, 0.8]))
    assert (low, high) == approx((0.429490, 0.820834), abs=1e-6)
    assert 0.65 - low > high - 0.65  # longer towards the middle of 0..1


def test_mean_interval_edges():
    assert mean_interval(np.ones(12)) == approx((1.0, 1.0), abs=1e-12)  # every query at the bound: the point
    assert mean_interval(np.zeros(12)) == approx((0.0, 0.0), abs=1e-12)
    assert all(math.isnan(x) for x in mean_interval(np.array([0.5])))
    # a cosine below 0 is outside the shares' range: the plain t interval, mean 0.066667,
    # s = 0.251661, se = 0.145297, half = 4.302653 * 0.145297 = 0.625162
    low, high = mean_interval(np.array([-0.2, 0.1, 0.3]))
    assert (low, high) == approx((0.066667 - 0.625162, 0.066667 + 0.625162), abs=1e-5)
    assert isinstance(low, float) and isinstance(high, float)


def _tails(values: np.ndarray, truth: float) -> tuple[float, float]:
    """(share of worlds whose interval lies wholly above the truth, wholly below)."""
    bounds = np.array([mean_interval(v) for v in values])
    return float(np.mean(bounds[:, 0] > truth)), float(np.mean(bounds[:, 1] < truth))


def test_statements_kept_near_1_misses_on_both_sides_alike():
    # regression: perturb 0.1 at 24 x 2, a query's statements kept is Binomial(4, 0.81) / 4 (each
    # statement survives both draws with 0.9^2). The plain t interval missed from above in 4.4% of
    # 20,000 worlds and from below in 1.4%; the logit interval 1.9% / 2.4%. 4,000 worlds: a tail's
    # standard error is about 0.0023, so 0.035 is 4 standard errors above 0.025 and below 0.044.
    rng = np.random.default_rng(20261129)
    values = rng.binomial(4, 0.81, size=(4000, 24)) / 4
    above, below = _tails(values, 0.81)
    print(above, below)
    assert above <= 0.035 and below <= 0.035 and 1 - above - below >= 0.935


def test_url_jaccard_at_10_queries_holds_its_level():
    # regression: pool 10, 3 cited, 10 x 2: a query's URL Jaccard is i / (6 - i), i hypergeometric
    # (3 of 10, 3 drawn); truth 0.200833. The t interval held it in 92.3% of 20,000 worlds.
    rng = np.random.default_rng(7)
    shared = rng.hypergeometric(3, 7, 3, size=(4000, 10))
    above, below = _tails(shared / (6 - shared), 0.200833)
    print(above, below)
    assert 1 - above - below >= 0.94


def test_stability_intervals_hold_the_truth_at_24_by_2():
    out = stability_coverage(STABILITY_CELLS["perturb 0.25, pool 4"], 24, 2, 200, seed=3)
    print(out)
    assert out["statement_overlap_truth"] == approx(0.5625, abs=1e-12) and out["url_jaccard_truth"] == approx(0.625, abs=1e-4)
    assert out["statement_overlap_coverage"] >= 0.91 and out["url_jaccard_coverage"] >= 0.91


def test_monte_carlo_standard_error_by_hand():
    # sqrt(0.95 * 0.05 / 800) = 0.0077055; sqrt(0.5 * 0.5 / 400) = 0.025
    assert mc_se(0.95, 800) == approx(0.0077, abs=1e-9) and mc_se(0.5, 400) == approx(0.025, abs=1e-9)


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
