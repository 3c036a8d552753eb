"""The interval of a prediction-powered estimate whose rectifiers are skewed.

A judge that is usually close and now and then far off gives rectifiers that are
mostly small and sometimes large. A sample that sees few of the large ones then has an estimate and a
standard error that are both off in the same direction (on ExpertQA, for one relevance cell, they
correlated at -0.89 over 200 draws), so the studentized estimate is skewed and a symmetric t interval
misses on one side. Moving the interval's centre by Johnson's (1978) first-order term (third
cumulant / 6 variance) is not enough: it answers the skew of the estimate, not the estimate and its
standard error moving together. The interval therefore applies Hall's (1992) cubic transformation
of the studentized estimate (`hall_bounds`), second-order correct like a bootstrap-t but closed
form, so it costs nothing across hundreds of cells and draws and is the same number on every run.
The correction may lengthen a side of the t interval but never shorten one (`skewed_interval`):
the skewness is a third moment of a few dozen units and points the wrong way now and then, and in
the seeded world below Hall's bounds alone let the misses on the short side grow (0.7% to 1.8%).
Its skewness is the third cumulant of the stratified total (`pipeline.audit.ppi._third_cumulant`, finite-population
factors included) over the variance to the power 1.5, the variance with its floor. Chosen over a
bootstrap-t within strata (random, slow over row q's 200 draws x cells, and erratic with 20 units)
and over raising the floor for large corrections (it would widen every cell, skewed or not). What no
method that reads the sample can do is see a large correction the sample never met: where a stratum
of n units usually holds none (n x their rate well under 1), only the floor speaks for them
(tests/pipeline/audit/test_audit_ppi_skew.py has the world with known truth).
"""

from __future__ import annotations

import numpy as np


def hall_bounds(value: np.ndarray, se: np.ndarray, skewness: np.ndarray,
                q: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided interval from Hall's (1992) cubic transformation of the studentized estimate
    T = (estimate - truth) / se, whose skewness is gamma (the estimate's standardized skewness):
    g(T) = T + a T^2 + a^2 T^3 / 3 + b with a = gamma / 3, b = gamma / 6 is close to symmetric, and,
    unlike Johnson's (1978) quadratic, monotone, so it inverts in closed form:
    g^-1(x) = ((1 + 3a(x - b))^(1/3) - 1) / a. The interval is estimate - se g^-1(+-q). To first
    order both bounds move by se gamma (1/6 + q^2/3): Johnson's centre shift (the 1/6) plus the part
    that answers a skewed sample's estimate and standard error moving together (the q^2/3), which a
    shift of the centre alone misses. |gamma| is kept under 3q so that the estimate stays inside
    its interval (it would leave it at 6q; the expansion is not to be trusted that far anyway)."""
    q = np.asarray(q, dtype=np.float64)
    gamma = np.clip(np.nan_to_num(np.asarray(skewness, dtype=np.float64)), -3 * q, 3 * q)
    a, b = gamma / 3, gamma / 6
    flat = np.abs(a) < 1e-12
    safe = np.where(flat, 1.0, a)

    def inverse(x: np.ndarray) -> np.ndarray:
        return np.where(flat, x - b, (np.cbrt(1 + 3 * safe * (x - b)) - 1) / safe)

    return value - se * inverse(q), value - se * inverse(-q)


def skewed_interval(value: np.ndarray, se: np.ndarray, skewness: np.ndarray,
                    q: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The interval the scorecard prints: Hall's bounds where they reach further than the symmetric
    t interval (estimate +- q se), the t bound where they do not. Hall's transformation stretches the
    side the skewness points to and shortens the other; the skewness is a third moment estimated
    from a few dozen units, noisy enough to point the wrong way now and then, and a shortened side
    is then exactly where the truth lies. So the correction may only lengthen a side, never shorten
    it (as the variance floor may only raise a variance): coverage is at least that of the t
    interval and of Hall's, draw by draw."""
    low, high = hall_bounds(value, se, skewness, q)
    return np.minimum(low, value - q * se), np.maximum(high, value + q * se)
