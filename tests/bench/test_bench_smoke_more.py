"""Smoke test of the benchmark's other rows (k to w): `bench/run.py --quick --json --only ...` runs
them end to end with the documented fields (tests/bench/test_bench_smoke.py runs rows a to j; split so that
two workers run the two halves at once). No timing is asserted."""

from __future__ import annotations

import pytest
from bench_smoke_helpers import check_shape, run_quick_bench

pytestmark = pytest.mark.slow

MORE_ROWS = "k,l,m,n,o,p,q,r,t,u,v,w"


def test_json_shape_of_the_other_rows(tmp_path_factory):
    rows = run_quick_bench(tmp_path_factory, MORE_ROWS)
    check_shape(rows, set(MORE_ROWS.split(",")))
