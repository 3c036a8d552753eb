"""Minimum sets of sources that support every supported statement (source necessity).

Three variants, named as the spec names them:
- exact: the optimal set cover, solved as a small integer program (HiGHS via scipy) after
  reductions that make most real answers trivial;
- greedy: the released notebook's greedy set cover (paper-parity);
- bipartite: the paper's text - Konig's minimum vertex cover on the statement/source graph from a
  Hopcroft-Karp matching, counting the source nodes in the cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

NecessityMethod = Literal["exact", "greedy", "bipartite"]
NECESSITY_METHODS: tuple[str, ...] = ("exact", "greedy", "bipartite")


def _supported_rows(support: np.ndarray) -> np.ndarray:
    return support[support.any(axis=1)] if support.size else support


def greedy_cover(support: np.ndarray) -> list[int]:
    """Greedy set cover: repeatedly take the source covering most uncovered statements
    (ties go to the lower column)."""
    rows = _supported_rows(np.asarray(support, dtype=bool))
    uncovered = np.ones(rows.shape[0], dtype=bool)
    chosen: list[int] = []
    while uncovered.any():
        gains = rows[uncovered].sum(axis=0)
        best = int(np.argmax(gains))
        chosen.append(best)
        uncovered &= ~rows[:, best]
    return sorted(chosen)


EXACT_TIME_LIMIT = 0.8  # seconds the integer program may search before settling for its best cover


@dataclass(frozen=True)
class Cover:
    """A set of source columns covering every supported statement, and whether it is optimal."""

    columns: list[int]
    proven_optimal: bool = True
    lower_bound: int = 0  # a proven lower bound on the optimum (equals len(columns) when optimal)


def exact_cover(support: np.ndarray, time_limit: float = EXACT_TIME_LIMIT) -> list[int]:
    """Optimal set cover of the supported statements by sources (columns)."""
    return solve_cover(support, time_limit).columns


def solve_cover(support: np.ndarray, time_limit: float = EXACT_TIME_LIMIT) -> Cover:
    """Minimum set cover with its optimality status.

    Set cover is NP-hard: sparse support matrices (the usual case: each statement backed by a few
    sources) solve in milliseconds, but dense random ones with hundreds of sources can need more
    than `time_limit`; then the best cover found is returned with proven_optimal False and the
    solver's lower bound, so the metric can say so instead of pretending.
    """
    rows = _supported_rows(np.asarray(support, dtype=bool))
    if rows.shape[0] == 0:
        return Cover([], True, 0)
    forced: set[int] = set()
    # A statement supported by one source alone forces that source.
    for r in rows:
        cols = np.flatnonzero(r)
        if len(cols) == 1:
            forced.add(int(cols[0]))
    if forced:
        covered = rows[:, sorted(forced)].any(axis=1)
        rows = rows[~covered]
    if rows.shape[0] == 0:
        return Cover(sorted(forced), True, len(forced))
    # Drop duplicate rows and columns that cover nothing left; keep one column per identical set.
    rows = np.unique(rows, axis=0)
    candidates = [j for j in range(rows.shape[1]) if rows[:, j].any()]
    seen: dict[bytes, int] = {}
    for j in candidates:
        seen.setdefault(rows[:, j].tobytes(), j)
    candidates = sorted(seen.values())
    # Remove columns whose statement set is a strict subset of another column's (never optimal to
    # keep: swapping it for its superset covers at least as much).
    cand = rows[:, candidates].astype(np.int32)
    overlap = cand.T @ cand
    sizes = np.diag(overlap)
    dominated = (overlap == sizes[:, None]) & (sizes[None, :] > sizes[:, None])
    candidates = [c for k, c in enumerate(candidates) if not dominated[k].any()]
    sub = rows[:, candidates]
    # A row whose sources include all of another row's sources is covered whenever that one is.
    sub = _drop_dominated_rows(sub)
    greedy = greedy_cover(sub)
    if len(greedy) <= 1:
        return Cover(sorted(forced | {candidates[j] for j in greedy}), True, len(forced) + len(greedy))
    chosen, proven, bound = _solve_cover_ilp(sub, time_limit)
    if chosen is None or len(chosen) > len(greedy):  # solver trouble: greedy is still a valid cover
        chosen, proven = greedy, proven and chosen is not None and len(chosen) == len(greedy)
    columns = sorted(forced | {candidates[j] for j in chosen})
    return Cover(columns, proven, len(forced) + (len(chosen) if proven else bound))


def _drop_dominated_rows(rows: np.ndarray) -> np.ndarray:
    counts = rows.astype(np.int32)
    overlap = counts @ counts.T
    sizes = np.diag(overlap)
    # row b is redundant when some other row a has cols(a) strictly inside cols(b)
    inside = (overlap == sizes[:, None]) & (sizes[:, None] < sizes[None, :])
    return rows[~inside.any(axis=0)]


def _solve_cover_ilp(rows: np.ndarray, time_limit: float) -> tuple[list[int] | None, bool, int]:
    """min sum(x) s.t. rows @ x >= 1, x binary -> (columns or None, proven optimal, lower bound)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n_cols = rows.shape[1]
    result = milp(
        c=np.ones(n_cols),
        constraints=[LinearConstraint(rows.astype(float), lb=1, ub=np.inf)],
        integrality=np.ones(n_cols),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    bound = int(np.ceil((getattr(result, "mip_dual_bound", None) or 0) - 1e-6))
    if result.x is None:
        return None, False, bound
    chosen = [j for j in range(n_cols) if result.x[j] > 0.5]
    proven = result.status == 0
    return chosen, proven, len(chosen) if proven else bound


def bipartite_cover(support: np.ndarray) -> list[int]:
    """Source nodes in a minimum vertex cover of the statement/source support graph."""
    import networkx as nx
    from networkx.algorithms import bipartite

    support = np.asarray(support, dtype=bool)
    graph = nx.Graph()
    statements = [("s", i) for i in range(support.shape[0])]
    graph.add_nodes_from(statements, bipartite=0)
    graph.add_nodes_from((("c", j) for j in range(support.shape[1])), bipartite=1)
    graph.add_edges_from((("s", i), ("c", j)) for i, j in zip(*np.nonzero(support)))
    matching = bipartite.hopcroft_karp_matching(graph, top_nodes=statements)
    cover = bipartite.to_vertex_cover(graph, matching, top_nodes=statements)
    return sorted(j for kind, j in cover if kind == "c")


def necessary_sources(support: np.ndarray, method: str = "exact") -> list[int]:
    """Column positions of a minimum set of necessary sources under the chosen method."""
    if method == "exact":
        return exact_cover(support)
    if method == "greedy":
        return greedy_cover(support)
    if method == "bipartite":
        return bipartite_cover(support)
    raise ValueError(f"unknown necessity method {method!r}; choose one of {', '.join(NECESSITY_METHODS)}")
