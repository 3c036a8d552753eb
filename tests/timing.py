"""Time limits in tests are hang guards, never speed checks (the team guide). This module scales them
by how slow this machine is right now, measured once per test process:

- `SLOWDOWN` (>= 1): a fixed pure-Python loop is timed; wall time over the CPU time it got says how
  much of a core a test process gets (2 cores shared by 8 busy processes: ~4), and its CPU time
  against the same loop on the project's 2-core reference machine says how slow the core itself is.
  `AEE_TEST_SLOWDOWN=<number>` overrides the measurement.
- `guard(seconds)`: a limit for something that finishes well within `seconds` on a quiet machine,
  times `GUARD_FACTOR` and `SLOWDOWN`. It only matters when something hangs, so it is generous.
- `guard_ms(seconds)`: the same in milliseconds (Playwright's unit).

The global pytest-timeout is scaled the same way in conftest.py (`pytest_configure`).
"""

from __future__ import annotations

import os
import time

LOOP = 1_000_000
REFERENCE_CPU_S = 0.06  # CPU seconds of the loop on the reference machine (2-core AMD EPYC, Python 3.11)
GUARD_FACTOR = 3.0  # headroom on top of the measured slowdown: the load may grow after it was measured
MAX_SLOWDOWN = 20.0  # a measurement above this is noise (or a stopped process); cap what a guard can reach


def _loop() -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    x = 0
    for _ in range(LOOP):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return time.perf_counter() - wall, time.process_time() - cpu


def measure_slowdown(tries: int = 3) -> float:
    """How many times longer than on a quiet reference machine CPU-bound work takes here now (>= 1)."""
    override = os.environ.get("AEE_TEST_SLOWDOWN")
    if override:
        try:
            return min(MAX_SLOWDOWN, max(1.0, float(override)))
        except ValueError:
            pass
    worst = 1.0
    for _ in range(tries):  # the largest of a few: a lucky quiet moment must not hide the load
        wall, cpu = _loop()
        share = wall / max(cpu, 1e-3)  # 1 = a whole core to ourselves
        core = max(1.0, cpu / REFERENCE_CPU_S)  # 1 = as fast as the reference core
        worst = max(worst, share * core)
    return min(MAX_SLOWDOWN, worst)


SLOWDOWN = measure_slowdown()


def guard(seconds: float) -> float:
    """A hang guard for work that takes well under `seconds` on a quiet machine."""
    return seconds * GUARD_FACTOR * SLOWDOWN


def guard_ms(seconds: float) -> float:
    """`guard` in milliseconds, for Playwright's `timeout=` arguments."""
    return guard(seconds) * 1000.0
