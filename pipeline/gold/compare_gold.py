"""`aee compare-gold --gold DATASET --answers FILE_OR_DIR`: generated answers against gold answers.

The gold dataset (HAGRID, or any dataset whose answers are references) is read through its
importer; its answers are grouped by query (`pipeline.gold.gold`). The generated answers, in any
supported format, are then run through the ordinary pipeline by the CLI (annotate with a judge,
score, write Parquet) with the gold answers of their query attached (`GoldPlan.attach`), so the answer correctness and citation
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
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.errors import InputError
from pipeline.gold.gold import attach_gold, gold_index, query_key
from pipeline.importers import IMPORTERS, resolve_dataset
from pipeline.metrics import METRICS
from pipeline.records import AnnotatedAnswer, GoldAnswer
from pipeline.storage.paths import reference_dir

__all__ = ["COMPARED_GROUPS", "REFERENCE_CSV", "GoldPlan", "plan_gold", "default_name", "published_reference",
           "comparison_table", "report_json", "is_hagrid"]

COMPARED_GROUPS = ("attribution", "correctness")
REFERENCE_CSV = "djeddal2024_hagrid_table2"
PAPER_SUFFIX = " (paper)"


@dataclass
class GoldPlan:
    """Gold answers indexed by query, and how many of the answers to score found theirs."""

    gold: str
    gold_path: Path
    index: dict[str, tuple[GoldAnswer, ...]]
    answers: int = 0
    matched: int = 0
    unmatched_examples: list[str] = field(default_factory=list)

    @property
    def gold_queries(self) -> int:
        return len(self.index)

    def attach(self, annotated: AnnotatedAnswer) -> AnnotatedAnswer:
        """An answer to score, carrying the gold answers of its query (the runner's `transform`)."""
        return attach_gold(annotated, self.index)

    def config(self) -> dict[str, str]:
        """What the results' manifest records about the gold answers."""
        return {"gold_dataset": self.gold, "gold_path": str(self.gold_path)}


def default_name(answers: Path, gold: str) -> str:
    """Results dataset name when none is given: `<answers file stem>-vs-<gold>`."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", answers.stem or answers.name).strip("-._") or "answers"
    return f"{stem[:40]}-vs-{gold[:20]}"


def plan_gold(gold: str, answers: str | Path, *, answers_format: str = "canonical", gold_path: str | Path | None = None,
              gold_format: str | None = None) -> GoldPlan:
    """Read the gold dataset and check the answers to score against it (see the module doc): every
    answer is read and validated, and at least one must ask a query the gold dataset answers."""
    if answers_format not in IMPORTERS:
        raise InputError(f"unknown format {answers_format!r}; choose one of {', '.join(sorted(IMPORTERS))}", field="--format")
    answers = Path(answers)
    if not answers.exists():
        raise InputError("no such file or folder", record=str(answers), field="--answers")
    info = resolve_dataset(gold, gold_path, gold_format)
    assert info.path is not None  # resolve_dataset raises for data not on this machine
    plan = GoldPlan(gold, info.path, gold_index(IMPORTERS[info.importer].iter(info.path)))
    if not plan.index:
        raise InputError(f"the gold dataset {gold!r} holds no answers", record=str(info.path), field="--gold")
    for annotated in IMPORTERS[answers_format].iter(answers):
        plan.answers += 1
        if query_key(annotated.answer.query) in plan.index:
            plan.matched += 1
        elif len(plan.unmatched_examples) < 3:
            plan.unmatched_examples.append(annotated.answer.query[:120])
    if plan.matched == 0:
        raise InputError(f"none of the {plan.answers} answers asks a query of the gold dataset {gold!r} (queries are "
                         "matched ignoring case, spacing and closing punctuation)", record=str(answers), field="--answers")
    return plan


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


def report_json(plan: GoldPlan, dataset: str, judge: str, out_dir: Path | None, table: pd.DataFrame) -> dict[str, Any]:
    """The comparison as JSON-ready data (for `--json`)."""
    return {
        "dataset": dataset, "judge": judge, "gold": plan.gold,
        "answers": plan.answers, "matched": plan.matched, "gold_queries": plan.gold_queries,
        "unmatched_examples": plan.unmatched_examples, "results": str(out_dir),
        "table": {column: {row: _clean(table.at[row, column]) for row in table.index} for column in table.columns},
    }


def is_hagrid(gold: str, gold_path: str | Path | None = None, gold_format: str | None = None) -> bool:
    """True when the gold dataset is read with the HAGRID importer (Table 2 then applies)."""
    try:
        return resolve_dataset(gold, gold_path, gold_format).importer == "hagrid"
    except InputError:
        return False
