"""The benchmark's rows, in one registry. A row registers itself where it is written; bench/run.py only
finds the row modules and runs what they registered, so no row module imports the runner and the
runner imports no row module by name.

A row module is any bench/*_rows.py. A new row goes into one (a new file, or one whose topic fits):

    from registry import row
    from rows import Row, cost_row

    @row("x", "x. what is measured: baseline vs ours")
    def bench_x(quick: bool) -> list[Row]:
        ...  # heavy imports inside the function: every row module is imported on each run

and nothing else changes: `bench/run.py` lists it in letter order, `--only x` runs it alone, and a
failure in it becomes a SKIPPED row with the error instead of hiding the other rows. A letter
belongs to one function; registering it for a second one is an error, so two rows cannot silently
replace each other. Describe the row in bench/run.py's docstring and docs/benchmarks.md.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

BENCH_DIR = Path(__file__).resolve().parent
ROW_MODULES = "*_rows.py"


@dataclass(frozen=True)
class Bench:
    """One registered row (it may give several table rows): its letter, the title printed while it
    runs (and in a SKIPPED row when it fails), and the function, called with `quick`."""

    letter: str
    title: str
    fn: Callable[[bool], list[Any]]


ROWS: dict[str, Bench] = {}


def row(letter: str, title: str) -> Callable[[Callable[[bool], list[Any]]], Callable[[bool], list[Any]]]:
    """Register the decorated function as the benchmark row `letter`; the function is returned as is."""
    key = letter.strip().lower()
    if not key or not key.isalnum():
        raise ValueError(f"a bench row's letter is letters or digits, not {letter!r}")

    def register(fn: Callable[[bool], list[Any]]) -> Callable[[bool], list[Any]]:
        old = ROWS.get(key)
        if old is not None and (old.fn.__module__, old.fn.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"bench row {key!r} registered twice: {old.fn.__module__}.{old.fn.__qualname__} "
                             f"and {fn.__module__}.{fn.__qualname__}")
        ROWS[key] = Bench(key, title, fn)
        return fn

    return register


def discover() -> dict[str, Bench]:
    """Import every row module (bench/*_rows.py); the registered rows by letter, in letter order."""
    if str(BENCH_DIR) not in sys.path:  # row modules import their neighbours as top-level modules
        sys.path.insert(0, str(BENCH_DIR))
    for path in sorted(BENCH_DIR.glob(ROW_MODULES)):
        importlib.import_module(path.stem)
    return dict(sorted(ROWS.items()))
