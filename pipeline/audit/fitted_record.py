"""Where a dataset's fitted judge (`aee audit fit`, pipeline/audit/fitted_run.py) keeps what it was
fitted on: its manifest's `fitted` record. Kept apart so the scorecard can find the judge a fitted
judge is corrected from without importing the fitting code (which imports the scorecard)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.judges.carried import FITTED_JUDGE  # noqa: F401 (the registry name, re-exported)


def fitted_record(dataset: str, root: Path | None = None) -> dict[str, Any] | None:
    """What the dataset's `fitted` judge was fitted on (its manifest's record), None when there is none."""
    from pipeline.storage.store import list_judges, table_path

    if FITTED_JUDGE not in list_judges(dataset, root):
        return None
    try:
        manifest = json.loads(table_path(dataset, "summary", FITTED_JUDGE, root).with_name("manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    record = (manifest.get("config") or {}).get("fitted")
    return record if isinstance(record, dict) else None


def audited_judge(dataset: str, judge: str, root: Path | None = None) -> str:
    """The judge whose samples correct `judge`: itself, or for the fitted judge the one it was fitted over."""
    if judge != FITTED_JUDGE:
        return judge
    record = fitted_record(dataset, root)
    return str(record["base_judge"]) if record else judge


