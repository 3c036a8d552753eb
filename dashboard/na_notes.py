"""Why some engines have n/a cells in a scorecard row while others have values, grouped so the page
(and a reader of an exported figure) can read it without hovering: one line per reason, naming the
engines and the metrics it covers. Metrics with no value for any engine are listed elsewhere
(the Scorecard's "Metrics without a value here")."""

from __future__ import annotations

import pandas as pd

from pipeline.metrics import METRICS


def partial_blank_notes(cells: pd.DataFrame) -> list[tuple[str, list[str], list[str]]]:
    """[(reason, engines, metric labels)] for the n/a cells of rows where another engine has a value,
    in the grid's order; cells need `metric`, `engine`, `value` and `why_blank`."""
    if cells.empty or "why_blank" not in cells.columns:
        return []
    out: dict[str, tuple[list[str], list[str]]] = {}
    for name, part in cells.groupby("metric", sort=False):
        blank = part[part["value"].isna()]
        if blank.empty or len(blank) == len(part):
            continue
        for engine, why in zip(blank["engine"], blank["why_blank"]):
            reason = why if isinstance(why, str) and why else "no value"
            engines, metrics = out.setdefault(reason, ([], []))
            if str(engine) not in engines:
                engines.append(str(engine))
            if METRICS[name].label not in metrics:
                metrics.append(METRICS[name].label)
    return [(reason, engines, metrics) for reason, (engines, metrics) in out.items()]
