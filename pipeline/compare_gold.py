"""`aee compare-gold --gold DATASET --answers FILE_OR_DIR`: generated answers against gold answers.

The gold dataset (HAGRID, or any dataset whose answers are references) is read through its
importer; its answers are grouped by query (`pipeline.gold`). The generated answers, in any
supported format, are run through the ordinary pipeline (annotate with a judge, score, write
Parquet) with the gold answers of their query attached, so the answer correctness and citation
overlap metrics can be computed beside the citation metrics. The results are a dataset of their
own (default name `<answers>-vs-<gold>`), readable by the dashboard like any other.

When the gold dataset is HAGRID, the published results of Djeddal et al. (2024, Table 2;
`data/reference/djeddal2024_hagrid_table2.csv`) are shown beside the computed values: they come
from other systems, another NLI model and the original BERTScore, so they are a scale to read
against, not a target.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.errors import InputError
from pipeline.gold import attach_gold, gold_index, query_key
from pipeline.importers import IMPORTERS, resolve_dataset
from pipeline.metrics import METRICS
from pipeline.paths import reference_dir
from pipeline.runner import RunResult, run_dataset

__all__ = ["COMPARED_GROUPS", "REFERENCE_CSV", "CompareResult", "compare_gold", "published_reference", "comparison_table"]

COMPARED_GROUPS = ("attribution", "correctness")
REFERENCE_CSV = "djeddal2024_hagrid_table2"
PAPER_SUFFIX = " (paper)"


@dataclass
class CompareResult:
    """What `compare_gold` did: the run, and how many answers found a gold answer for their query."""

    run: RunResult
    gold: str
    answers: int = 0
    matched: int = 0
    gold_queries: int = 0
    unmatched_examples: list[str] = field(default_factory=list)


def _default_name(answers: Path, gold: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", answers.stem or answers.name).strip("-._") or "answers"
    return f"{stem[:40]}-vs-{gold[:20]}"


def compare_gold(gold: str, answers: str | Path, *, answers_format: str = "canonical", gold_path: str | Path | None = None,
                 gold_format: str | None = None, judge_name: str = "offline", dataset: str | None = None, limit: int | None = None,
                 progress: bool = True, root: Path | None = None, use_cache: bool = True) -> CompareResult:
    """Score `answers` against the gold answers of dataset `gold` (see the module doc)."""
    if answers_format not in IMPORTERS:
        raise InputError(f"unknown format {answers_format!r}; choose one of {', '.join(sorted(IMPORTERS))}", field="--format")
    answers = Path(answers)
    if not answers.exists():
        raise InputError("no such file or folder", record=str(answers), field="--answers")
    info = resolve_dataset(gold, gold_path, gold_format)
    assert info.path is not None  # resolve_dataset raises for data not on this machine
    index = gold_index(IMPORTERS[info.importer].iter(info.path))
    if not index:
        raise InputError(f"the gold dataset {gold!r} holds no answers", record=str(info.path), field="--gold")
    reader = IMPORTERS[answers_format]
    seen = matched = 0
    unmatched: list[str] = []
    for annotated in reader.iter(answers):  # validates the whole input before any judge call
        seen += 1
        if query_key(annotated.answer.query) in index:
            matched += 1
        elif len(unmatched) < 3:
            unmatched.append(annotated.answer.query[:120])
    if matched == 0:
        raise InputError(f"none of the {seen} answers asks a query of the gold dataset {gold!r} (queries are matched "
                         "ignoring case, spacing and closing punctuation)", record=str(answers), field="--answers")
    name = dataset or _default_name(answers, gold)
    run = run_dataset(name, answers, importer=answers_format, judge_name=judge_name, limit=limit, progress=progress,
                      root=root, use_cache=use_cache, transform=partial(attach_gold, index=index),
                      config_extra={"gold_dataset": gold, "gold_path": str(info.path)})
    return CompareResult(run, gold, seen, matched, len(index), unmatched)


def published_reference(name: str = REFERENCE_CSV) -> pd.DataFrame:
    """A published table of these metrics in long form (setting, metric, value in display units);
    empty when the file is missing. Cells printed as "-" are left out."""
    path = reference_dir() / f"{name}.csv"
    if not path.is_file():
        return pd.DataFrame(columns=["source", "setting", "metric", "value"])
    by_column = {info.reference_column: metric for metric, info in METRICS.items()
                 if info.group in COMPARED_GROUPS and info.reference_column}
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for rec in csv.DictReader(handle):
            for column, metric in by_column.items():
                try:
                    value = float((rec.get(column) or "").strip())
                except ValueError:
                    continue
                rows.append({"source": rec.get("source", ""), "setting": rec.get("setting", ""), "metric": metric, "value": value})
    return pd.DataFrame(rows, columns=["source", "setting", "metric", "value"])


def comparison_table(summary: pd.DataFrame, reference: pd.DataFrame | None = None, mode: str = "strict",
                     necessity: str = "exact") -> pd.DataFrame:
    """Metrics of the compared groups down, engines across (display units, None when not
    scorable), then the published settings across with PAPER_SUFFIX."""
    part = summary[(summary["mode"] == mode) & (summary["necessity"] == necessity) & (summary["query_type"] == "all")]
    metrics = [m for m, info in METRICS.items() if info.group in COMPARED_GROUPS]
    table = pd.DataFrame(index=metrics)
    for engine, frame in part.groupby("engine", sort=True):
        values = dict(zip(frame["metric"], frame["value"]))
        table[str(engine)] = [_clean(values.get(m)) for m in metrics]
    if reference is not None and len(reference):
        for setting, frame in reference.groupby("setting", sort=False):
            values = dict(zip(frame["metric"], frame["value"]))
            table[f"{setting}{PAPER_SUFFIX}"] = [_clean(values.get(m)) for m in metrics]
    table.index = [METRICS[m].label for m in metrics]
    return table


def _clean(value: Any) -> float | None:
    return None if value is None or value != value else round(float(value), 2)


def report_json(result: CompareResult, table: pd.DataFrame) -> dict[str, Any]:
    """The comparison as JSON-ready data (for `--json`)."""
    return {
        "dataset": result.run.dataset, "judge": result.run.judge, "gold": result.gold,
        "answers": result.answers, "matched": result.matched, "gold_queries": result.gold_queries,
        "unmatched_examples": result.unmatched_examples, "results": str(result.run.out_dir),
        "table": {column: {row: _clean(table.at[row, column]) for row in table.index} for column in table.columns},
    }


def is_hagrid(gold: str, gold_path: str | Path | None = None, gold_format: str | None = None) -> bool:
    """True when the gold dataset is read with the HAGRID importer (Table 2 then applies)."""
    try:
        return resolve_dataset(gold, gold_path, gold_format).importer == "hagrid"
    except InputError:
        return False
