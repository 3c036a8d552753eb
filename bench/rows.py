"""A benchmark row and its constructors, shared by bench/run.py, the row modules and the tests that
build rows without importing run.py (which changes its process's environment on import)."""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("name", "baseline", "ours", "ratio", "unit", "note")


@dataclass
class Row:
    """One benchmark row: baseline vs ours, and how many times better ours is."""

    name: str
    baseline: float | None
    ours: float | None
    ratio: float | None
    unit: str
    note: str


def cost_row(name: str, baseline: float, ours: float, unit: str, note: str) -> Row:
    """A row where lower is better: ratio = baseline / ours."""
    ratio = baseline / ours if ours else None
    return Row(name, baseline, ours, ratio, unit, note)


def rate_row(name: str, baseline: float, ours: float, unit: str, note: str) -> Row:
    """A row where higher is better: ratio = ours / baseline."""
    ratio = ours / baseline if baseline else None
    return Row(name, baseline, ours, ratio, unit, note)


def skipped(name: str, reason: str) -> Row:
    return Row(name, None, None, None, "", f"SKIPPED: {reason}")
