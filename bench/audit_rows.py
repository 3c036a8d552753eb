"""Benchmark rows of the audit by people: k (prediction-powered scorecards, bench/audit_ppi.py) and q
(their coverage per cell, bench/ppi_coverage.py). What each row measures: bench/run.py's docstring."""

from __future__ import annotations

from registry import row
from rows import Row, cost_row, rate_row, skipped


@row("k", "k. prediction-powered scorecard on ExpertQA: human-only vs PPI")
def bench_audit_ppi(quick: bool) -> list[Row]:
    import audit_ppi  # bench/ is on sys.path when this file runs as a script

    return audit_ppi.bench_audit_ppi(quick, cost_row, skipped)


@row("q", "q. prediction-powered scorecard: coverage per cell on ExpertQA")
def bench_ppi_coverage(quick: bool) -> list[Row]:
    import ppi_coverage  # bench/ is on sys.path when this file runs as a script

    return ppi_coverage.bench_ppi_coverage(quick, rate_row, skipped)


@row("r", "r. fitted judge on ExpertQA: coverage and width per cell")
def bench_fitted_judge(quick: bool) -> list[Row]:
    import fitted_coverage  # bench/fitted_coverage.py (issue 41)

    return fitted_coverage.bench_fitted(quick, rate_row, skipped)
