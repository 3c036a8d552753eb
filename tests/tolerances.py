"""How close a computed float must be to the value a test expects, and why.

Tests never compare computed floats with `==`: the same code can round differently in the last bit
on another machine (another BLAS kernel, another thread count, numpy's pairwise sums), and a test
that passes on one machine only is a failing test. Labels, counts and strings stay exact.

Import it from a test module: `from tolerances import close, COUNTS, ENCODER`.
"""

from __future__ import annotations

from typing import Any

from pytest import approx

# Ratios and means of a few counts (2/3, 0.5, a percentage rounded to two places): exact in IEEE
# arithmetic as written today, but a change of summation order may move the last bit, never more.
COUNTS = 1e-9

# Scores that pass through the MiniLM encoder or another matrix product (cosines, support scores,
# BERTScore-style similarities): their sums run in an order the BLAS kernel and its thread count
# choose, and differences of ~2e-16 (one machine to another) up to 1.8e-7 (float32 embeddings
# batched differently) were measured. Far below any label threshold's resolution (4 decimals).
ENCODER = 1e-6


def close(expected: Any, tol: float = COUNTS) -> Any:
    """`expected` with every float inside (tuples, lists and dict values, nested) replaced by a
    pytest.approx of absolute and relative tolerance `tol`; other values compare exactly."""
    if isinstance(expected, bool) or expected is None:
        return expected
    if isinstance(expected, float):
        return approx(expected, abs=tol, rel=tol)
    if isinstance(expected, tuple):
        return tuple(close(x, tol) for x in expected)
    if isinstance(expected, list):
        return [close(x, tol) for x in expected]
    if isinstance(expected, dict):
        return {k: close(v, tol) for k, v in expected.items()}
    return expected
