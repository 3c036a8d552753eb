"""Source necessity: exact set cover against brute force, greedy and bipartite variants."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.necessity import bipartite_cover, exact_cover, greedy_cover, necessary_sources

# Figure 7 support matrix (rows s1..s6, columns sources 1..5).
FIG7 = np.array([
    [1, 0, 0, 1, 0],
    [0, 1, 0, 0, 1],
    [0, 0, 0, 0, 0],
    [0, 1, 1, 0, 0],
    [0, 0, 1, 0, 1],
    [0, 1, 1, 0, 0],
], dtype=bool)


def covers(support: np.ndarray, columns: list[int]) -> bool:
    needed = support.any(axis=1)
    return bool(np.all(support[:, columns].any(axis=1) >= needed)) if columns else not needed.any()


def brute_force_size(support: np.ndarray) -> int:
    for k in range(support.shape[1] + 1):
        if any(covers(support, list(c)) for c in combinations(range(support.shape[1]), k)):
            return k
    raise AssertionError("unreachable")


def test_fig7_all_methods_pick_three():
    for method in ("exact", "greedy", "bipartite"):
        chosen = necessary_sources(FIG7, method)
        assert len(chosen) == 3, method
    assert covers(FIG7, exact_cover(FIG7))
    assert exact_cover(FIG7) in ([0, 1, 2], [1, 2, 3])


def test_nothing_supported_needs_no_source():
    empty = np.zeros((4, 3), dtype=bool)
    assert exact_cover(empty) == [] and greedy_cover(empty) == [] and bipartite_cover(empty) == []


def test_greedy_is_not_optimal_on_classic_trap():
    # Two halves covered by columns 0 and 1; column 2 covers more but forces extra picks.
    support = np.zeros((6, 3), dtype=bool)
    support[:3, 0] = True
    support[3:, 1] = True
    support[[0, 1, 3, 4], 2] = True
    # greedy takes column 2 first (4 rows), then needs both 0 and 1 -> 3; the optimum is 2.
    assert len(greedy_cover(support)) == 3
    assert exact_cover(support) == [0, 1]


def test_bipartite_counts_only_source_nodes():
    # One statement supported by two sources: the vertex cover may take the statement node instead.
    support = np.array([[1, 1]], dtype=bool)
    assert len(exact_cover(support)) == 1
    assert len(bipartite_cover(support)) in (0, 1)


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ValueError, match="exact, greedy, bipartite"):
        necessary_sources(FIG7, "magic")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.data())
def test_exact_matches_brute_force(rows, cols, data):
    cells = data.draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))
    support = np.array(cells, dtype=bool).reshape(rows, cols)
    chosen = exact_cover(support)
    assert covers(support, chosen)
    assert len(chosen) == brute_force_size(support)
    assert len(greedy_cover(support)) >= len(chosen)
    assert covers(support, greedy_cover(support))


def test_exact_on_large_random_matrix_is_valid_and_no_worse_than_greedy():
    rng = np.random.default_rng(7)
    support = rng.random((150, 200)) < 0.02
    chosen = exact_cover(support)
    assert covers(support, chosen)
    assert len(chosen) <= len(greedy_cover(support))
