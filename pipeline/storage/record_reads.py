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
import pyarrow.compute as pc
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


def _row_table(path: Path, ranges: Iterable[tuple[int, int]]) -> pa.Table | None:
    """The rows of a Parquet file inside the given [first, last] ranges as an Arrow table, reading
    only the row groups that hold them (None: no range, or no file)."""
    wanted = sorted((int(a), int(b)) for a, b in ranges if a >= 0 and b >= a)
    if not wanted or not path.is_file():
        return None
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
    return table.filter(pa.array(keep))


def read_rows(path: Path, ranges: Iterable[tuple[int, int]]) -> pd.DataFrame:
    """The rows of a Parquet file inside the given [first, last] ranges, reading only the row groups
    that hold them."""
    table = _row_table(path, ranges)
    if table is None:
        return pq.read_schema(path).empty_table().to_pandas() if path.is_file() else pd.DataFrame()
    return table.to_pandas()


def read_answer_tables(base: Path, dataset: str, judge: str, index: pd.DataFrame, rows: pd.DataFrame,
                       ids: Sequence[str]) -> dict[str, pa.Table]:
    """The rows of the answers of `ids` (those that exist) in the four tables an annotated answer is
    built from (answers, sources, statements, labels), as read from their files: `index` is the set's
    answer_index, `rows` the judge's answer_rows."""
    chosen = index[index["answer_id"].isin(list(ids))]
    mine = rows[rows["answer_id"].isin(list(ids))]
    where = {"answers": (table_path(dataset, "answers", base=base), zip(chosen["answers_row"], chosen["answers_row"])),
             "sources": (table_path(dataset, "sources", base=base), zip(chosen["sources_first"], chosen["sources_last"])),
             "statements": (table_path(dataset, "statements", judge, base=base),
                            zip(mine["statements_first"], mine["statements_last"])),
             "labels": (table_path(dataset, "labels", judge, base=base), zip(mine["labels_first"], mine["labels_last"]))}
    keep = pa.array(sorted(set(chosen["answer_id"])), pa.string())
    out = {}
    for name, (path, ranges) in where.items():
        table = _row_table(path, ranges) if len(chosen) else None
        if table is None or table.num_rows == 0:
            out[name] = SCHEMAS[name].empty_table()
        else:  # a row group holds other answers' rows too
            out[name] = table.filter(pc.is_in(pc.cast(table["answer_id"], pa.string()), value_set=keep))
    return out


def answers_of_tables(tables: dict[str, pa.Table]) -> dict[str, AnnotatedAnswer]:
    """The annotated answers the four tables of `read_answer_tables` hold."""
    frames = {name: (t.to_pandas() if t.num_rows else SCHEMAS[name].empty_table().to_pandas()) for name, t in tables.items()}
    if frames["answers"].empty:
        return {}
    return answers_from_tables(frames["answers"], frames["sources"], frames["statements"], frames["labels"])


def read_answers(base: Path, dataset: str, judge: str, index: pd.DataFrame, rows: pd.DataFrame,
                 ids: Sequence[str]) -> dict[str, AnnotatedAnswer]:
    """The annotated answers of `ids` (those that exist) rebuilt from only their rows: `index` is the
    set's answer_index, `rows` the judge's answer_rows, both as read from their files."""
    return answers_of_tables(read_answer_tables(base, dataset, judge, index, rows, ids))


def iter_answers(base: Path, dataset: str, judge: str, batch: int = 500) -> Iterator[list[AnnotatedAnswer]]:
    """Every answer of a set in batches, read through the records (bounded memory whatever the size)."""
    index = pq.read_table(record_path(base, "answer_index")).to_pandas()
    rows = pq.read_table(record_path(base, "answer_rows", judge)).to_pandas()
    ids = list(index["answer_id"])
    for start in range(0, len(ids), batch):
        part = ids[start:start + batch]
        got = read_answers(base, dataset, judge, index, rows, part)
        yield [got[i] for i in part if i in got]
