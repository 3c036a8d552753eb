"""Reading the pages' records of a result set (`pipeline.page_records` writes them): where each record
lives, which ones a set lacks, and one answer (or a few, or all of them in batches) rebuilt from only
its rows through the row locators. Kept in storage, below every stage, so that whatever reads answers
this way (the pages, the audit's draws and its stored population) imports nothing that writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import SCHEMAS, judge_dirname, table_path
from pipeline.storage.tables import answers_from_tables

SET_RECORDS = ("answer_index",)
JUDGE_RECORDS = ("answer_rows", "sides", "audit_clusters", "values", "facts")
# what the pages that show answers, sides and audit frames open from (a set written before the
# values record still opens them from their records)
ANSWER_RECORDS = ("answer_index", "answer_rows", "sides", "audit_clusters")
RECORD_FILES = tuple(f"{name}.parquet" for name in JUDGE_RECORDS)


def record_path(base: Path, name: str, judge: str | None = None) -> Path:
    """Where one page record lives in a result set (`base`)."""
    if name in JUDGE_RECORDS:
        if judge is None:
            raise ValueError(f"record {name!r} belongs to a judge")
        return base / judge_dirname(judge) / f"{name}.parquet"
    return base / f"{name}.parquet"


def missing(base: Path, judge: str, names: Sequence[str] | None = None) -> list[str]:
    """The page records (of `names`, default all) a result set lacks for this judge (empty when the
    pages can open from them)."""
    return [name for name in (names or (*SET_RECORDS, *JUDGE_RECORDS)) if not record_path(base, name, judge).is_file()]


def read_rows(path: Path, ranges: Iterable[tuple[int, int]]) -> pd.DataFrame:
    """The rows of a Parquet file inside the given [first, last] ranges, reading only the row groups
    that hold them."""
    wanted = sorted((int(a), int(b)) for a, b in ranges if a >= 0 and b >= a)
    if not wanted or not path.is_file():
        return pq.read_schema(path).empty_table().to_pandas() if path.is_file() else pd.DataFrame()
    pf = pq.ParquetFile(path)
    starts = np.cumsum([0] + [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)])
    groups = sorted({g for a, b in wanted for g in range(int(np.searchsorted(starts, a, "right")) - 1,
                                                          int(np.searchsorted(starts, b, "right")))})
    table = pf.read_row_groups(groups)
    offsets = {g: int(starts[g]) for g in groups}
    position = np.concatenate([np.arange(offsets[g], offsets[g] + pf.metadata.row_group(g).num_rows) for g in groups])
    keep = np.zeros(len(position), dtype=bool)
    for a, b in wanted:
        keep |= (position >= a) & (position <= b)
    return table.filter(pa.array(keep)).to_pandas()


def read_answers(base: Path, dataset: str, judge: str, index: pd.DataFrame, rows: pd.DataFrame,
                 ids: Sequence[str]) -> dict[str, AnnotatedAnswer]:
    """The annotated answers of `ids` (those that exist) rebuilt from only their rows: `index` is the
    set's answer_index, `rows` the judge's answer_rows, both as read from their files."""
    chosen = index[index["answer_id"].isin(list(ids))]
    if chosen.empty:
        return {}
    mine = rows[rows["answer_id"].isin(list(ids))]
    answers = read_rows(table_path(dataset, "answers", base=base), zip(chosen["answers_row"], chosen["answers_row"]))
    sources = read_rows(table_path(dataset, "sources", base=base), zip(chosen["sources_first"], chosen["sources_last"]))
    statements = read_rows(table_path(dataset, "statements", judge, base=base),
                       zip(mine["statements_first"], mine["statements_last"]))
    labels = read_rows(table_path(dataset, "labels", judge, base=base), zip(mine["labels_first"], mine["labels_last"]))
    keep = set(chosen["answer_id"])

    def only(frame: pd.DataFrame, table: str) -> pd.DataFrame:
        if frame.empty:
            return SCHEMAS[table].empty_table().to_pandas()
        return frame[frame["answer_id"].isin(keep)]

    return answers_from_tables(only(answers, "answers"), only(sources, "sources"), only(statements, "statements"),
                               only(labels, "labels"))


def iter_answers(base: Path, dataset: str, judge: str, batch: int = 500) -> Iterator[list[AnnotatedAnswer]]:
    """Every answer of a set in batches, read through the records (bounded memory whatever the size)."""
    index = pq.read_table(record_path(base, "answer_index")).to_pandas()
    rows = pq.read_table(record_path(base, "answer_rows", judge)).to_pandas()
    ids = list(index["answer_id"])
    for start in range(0, len(ids), batch):
        part = ids[start:start + batch]
        got = read_answers(base, dataset, judge, index, rows, part)
        yield [got[i] for i in part if i in got]
