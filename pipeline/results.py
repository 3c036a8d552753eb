"""Read exported results back into records, so the app re-scores with the same pipeline code."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pipeline.records import AnnotatedAnswer, Answer, Source, Statement
from pipeline.runner import row_verdict
from pipeline.store import read_table, table_path


def _opt_bool(value) -> bool | None:
    return None if value is None or value != value else bool(value)


def answers_from_tables(answers: pd.DataFrame, sources: pd.DataFrame, statements: pd.DataFrame,
                        labels: pd.DataFrame) -> dict[str, AnnotatedAnswer]:
    """Rebuild AnnotatedAnswer records from the four exported tables."""
    by_answer_sources: dict[str, list[Source]] = {}
    for r in sources.to_dict("records"):
        by_answer_sources.setdefault(r["answer_id"], []).append(
            Source(index=int(r["source_index"]), url=r["url"] or "", title=r["title"] or "", text=r["text"] or "",
                   fetch_ok=_opt_bool(r["fetch_ok"])))
    by_answer_statements: dict[str, list[Statement]] = {}
    for r in statements.to_dict("records"):
        by_answer_statements.setdefault(r["answer_id"], []).append(
            Statement(r["answer_id"], int(r["statement_index"]), r["text"], int(r["start"]), int(r["end"]),
                      tuple(int(c) for c in r["citations"]), tuple(int(d) for d in r["dangling"])))
    by_answer_labels: dict[str, list] = {}
    for r in labels.to_dict("records"):
        by_answer_labels.setdefault(r["answer_id"], []).append(row_verdict(r))
    out = {}
    for r in answers.to_dict("records"):
        aid = r["answer_id"]
        try:
            meta = json.loads(r["meta"] or "{}")
        except ValueError:
            meta = {}
        answer = Answer(aid, r["engine"], r["query"], r["query_type"], r["text"],
                        tuple(sorted(by_answer_sources.get(aid, []), key=lambda s: s.index)),
                        dataset=r["dataset"], field=r["field"] or "", meta=meta)
        out[aid] = AnnotatedAnswer(answer, tuple(sorted(by_answer_statements.get(aid, []), key=lambda s: s.index)),
                                   tuple(by_answer_labels.get(aid, [])))
    return out


def load_annotated(dataset: str, judge: str, root: Path | None = None) -> dict[str, AnnotatedAnswer]:
    """Every annotated answer of a dataset under one judge, keyed by answer id."""
    return answers_from_tables(
        read_table(table_path(dataset, "answers", root=root)),
        read_table(table_path(dataset, "sources", root=root)),
        read_table(table_path(dataset, "statements", judge, root)),
        read_table(table_path(dataset, "labels", judge, root)),
    )
