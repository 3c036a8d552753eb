"""The benchmark table in text and markdown, and the machine it ran on (bench/run.py prints them;
bench/over_time.py and bench/pages_scale.py print their own rows with them)."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Sequence

from rows import Row


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.01:
        return f"{value:.3g}"
    return f"{value:.2e}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{_fmt(value)}x"


def text_table(rows: Sequence[Row]) -> str:
    cells = [[r.name, _fmt(r.baseline), _fmt(r.ours), _ratio(r.ratio), r.unit] for r in rows]
    heads = ["name", "baseline", "ours", "ratio", "unit"]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(heads)]
    line = lambda vals: "  ".join(v.ljust(w) if i in (0, 4) else v.rjust(w) for i, (v, w) in enumerate(zip(vals, widths)))  # noqa: E731
    out = [line(heads), line(["-" * w for w in widths])]
    for r, c in zip(rows, cells):
        out.append(line(c))
        out.append("    note: " + r.note)
    out.append("ratio = how many times better 'ours' is (baseline/ours for costs, ours/baseline for pairs/s)")
    return "\n".join(out)


def markdown_table(rows: Sequence[Row]) -> str:
    out = ["| name | baseline | ours | ratio | unit | note |", "|---|---:|---:|---:|---|---|"]
    for r in rows:
        note = r.note.replace("|", "\\|")
        out.append(f"| {r.name} | {_fmt(r.baseline)} | {_fmt(r.ours)} | {_ratio(r.ratio)} | {r.unit} | {note} |")
    return "\n".join(out)


def machine() -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")).split()[1])
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"nproc": str(os.cpu_count()), "cpu": cpu or platform.processor(), "ram": ram,
            "python": platform.python_version(), "os": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M %Z")}
