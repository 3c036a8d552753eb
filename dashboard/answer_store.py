"""One answer, one judge's sides or one audit frame at a time, read from the records `aee run` wrote
into the result set (`pipeline.page_records`), so no page builds every annotated answer of a set.

Each loader is keyed by the record file's path and modification time (a new set is a new path).
A result set written before the records still opens: the loaders return None and `dashboard.data`
builds what the page needs from every answer once per server process, as before, while the page
says so in one line (`records_note`) with the command that writes the records.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import streamlit as st

from pipeline import page_records
from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import result_set

INDEX_COLUMNS = ["answer_id", "engine", "query", "query_type", "field"]


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def base(dataset: str, root: Path) -> Path | None:
    """The dataset's current result set, or None when it has no answer index (written before the records)."""
    folder = result_set(dataset, root)
    return folder if page_records.record_path(folder, "answer_index").is_file() else None


def judge_base(dataset: str, judge: str, root: Path, names: tuple[str, ...] = page_records.ANSWER_RECORDS) -> Path | None:
    """The current result set when it holds these records of this judge (by default those the answer,
    sides and audit loaders read), else None."""
    folder = result_set(dataset, root)
    return None if page_records.missing(folder, judge, names) else folder


@st.cache_resource(show_spinner=False, max_entries=16)
def _parquet(path: str, mtime: int) -> pd.DataFrame:
    # cache_resource: one shared frame per file (callers filter it, never change it in place)
    return pq.read_table(path).to_pandas()


def _record(folder: Path, name: str, judge: str | None = None) -> pd.DataFrame:
    path = page_records.record_path(folder, name, judge)
    return _parquet(str(path), _mtime(path))


def index(dataset: str, root: Path) -> pd.DataFrame | None:
    """The set's answer index (answer_id, engine, query, query_type, field, support_scope, wave, repeat,
    captured_at, marked and the row locators), or None for a set without it."""
    folder = base(dataset, root)
    return None if folder is None else _record(folder, "answer_index")


@st.cache_data(show_spinner=False, max_entries=256)
def _source_rows(folder: str, dataset: str, answer_id: str, stamp: int) -> pd.DataFrame:
    from pipeline.storage.store import table_path

    found = _record(Path(folder), "answer_index")
    rows = found.loc[found["answer_id"] == answer_id, ["sources_first", "sources_last"]]
    frame = page_records.read_rows(table_path(dataset, "sources", base=Path(folder)),
                                   zip(rows["sources_first"], rows["sources_last"]))
    return frame[frame["answer_id"] == answer_id].reset_index(drop=True) if len(frame) else frame


def source_rows(dataset: str, answer_id: str, root: Path) -> pd.DataFrame | None:
    """The sources-table rows of one answer, or None for a set without an answer index."""
    folder = base(dataset, root)
    if folder is None:
        return None
    return _source_rows(str(folder), dataset, answer_id, _mtime(page_records.record_path(folder, "answer_index")))


@st.cache_resource(show_spinner=False, max_entries=512)
def _answers(folder: str, dataset: str, judge: str, ids: tuple[str, ...], stamp: tuple) -> dict[str, AnnotatedAnswer]:
    where = Path(folder)
    return page_records.read_answers(where, dataset, judge, _record(where, "answer_index"),
                                     _record(where, "answer_rows", judge), ids)


def answers(dataset: str, judge: str, ids: list[str] | tuple[str, ...], root: Path) -> dict[str, AnnotatedAnswer] | None:
    """The annotated answers of `ids` (those that exist), read from their rows only; None for a set
    without this judge's records."""
    folder = judge_base(dataset, judge, root)
    if folder is None:
        return None
    stamp = tuple(_mtime(page_records.record_path(folder, n, judge)) for n in ("answer_index", "answer_rows"))
    return _answers(str(folder), dataset, judge, tuple(sorted({str(i) for i in ids})), stamp)


def one(dataset: str, judge: str, answer_id: str, root: Path) -> tuple[bool, AnnotatedAnswer | None]:
    """(records present, the answer or None when it is not in the set)."""
    got = answers(dataset, judge, [answer_id], root)
    return (False, None) if got is None else (True, got.get(answer_id))


def sides(dataset: str, judge: str, root: Path) -> pd.DataFrame | None:
    """The Conflicting evidence page's rows of one judge (`pipeline.conflict.sides.ROW_COLUMNS`)."""
    folder = judge_base(dataset, judge, root)
    if folder is None:
        return None
    from pipeline.conflict.sides import ROW_COLUMNS

    return _record(folder, "sides", judge)[ROW_COLUMNS]


def clusters(dataset: str, judge: str, variant: str, root: Path) -> pd.DataFrame | None:
    """The clusters of one audit frame (`pipeline.audit.population.FRAME_VARIANTS`)."""
    folder = judge_base(dataset, judge, root)
    if folder is None:
        return None
    path = page_records.record_path(folder, "audit_clusters", judge)
    return _clusters(str(path), _mtime(path), variant)


@st.cache_resource(show_spinner=False, max_entries=32)
def _clusters(path: str, mtime: int, variant: str) -> pd.DataFrame:
    # only this frame's rows (the file holds the five frames' clusters)
    table = pq.read_table(path, filters=[("variant", "=", variant)])
    return table.drop(["variant"]).to_pandas()


def captures(dataset: str, root: Path) -> pd.DataFrame | None:
    """Each answer's engine, wave and capture time (answer_id, engine, wave, captured_at), from the
    set's answer index; None for a set without it."""
    folder = base(dataset, root)
    return None if folder is None else _record(folder, "answer_index")[["answer_id", "engine", "wave", "captured_at"]]


def values(dataset: str, judge: str, engines: tuple[str, ...], wave: str, root: Path) -> pd.DataFrame | None:
    """The metric values `aee compare` compares (`pipeline.consistency.summary.load_values`' frame)
    of these engines in this wave, read from their row groups of the judge's values record; None
    for a set without it."""
    folder = judge_base(dataset, judge, root, ("values",))
    if folder is None:
        return None
    path = page_records.record_path(folder, "values", judge)
    return _values(str(path), _mtime(path), tuple(sorted(engines)), wave)


@st.cache_resource(show_spinner=False, max_entries=64)
def _values(path: str, mtime: int, engines: tuple[str, ...], wave: str) -> pd.DataFrame:
    table = pq.read_table(path, filters=[("wave", "=", wave), ("engine", "in", list(engines))])
    frame = table.to_pandas()
    for column in ("engine", "wave", "query", "metric"):  # as load_values gives them
        frame[column] = frame[column].astype("category")
    return frame


def records_note(dataset: str, judge: str, root: Path, names: tuple[str, ...] = page_records.ANSWER_RECORDS) -> str:
    """"" when the set has these records of this judge; else the line a page shows: what it did
    instead, and the command that writes them."""
    if judge_base(dataset, judge, root, names) is not None:
        return ""
    from dashboard.answer_model import md_text  # a dataset name is letters, digits, . _ - (pipeline.storage.store.dataset_dir)

    return (f"This result set was written before the pages' records (judge {md_text(judge, 80)}): this page built what it shows "
            f"from every answer, once per server start, which is slow on a large set. "
            f"`aee records --dataset {dataset.replace('`', '')[:80]}` adds the records without running the pipeline again.")
