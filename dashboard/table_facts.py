"""Small facts read from one large results table, cached per file (path + modification time).

st.cache_data hands back a fresh (unpickled) copy of what it stores on every call, so a page that
asks for a whole per-answer table on each rerun pays for copying it every time: the metrics table
of 20,000 answers has three million rows, over a second per copy (bench row t4). These functions
read only the columns and rows they need with Arrow, and cache the small result instead, so a warm
rerun costs the same at any corpus size. Callers (dashboard/data.py) pass a file that exists and
belongs to a whole result set.

Where `aee run` wrote the judge's facts record (`pipeline.page_records.write_facts`: the same
counts, a few hundred rows), the `*_of` functions read that instead: at 140k answers the metrics
table has 22 million rows, and reading the columns below took 10-13 s and 1.4 GB per page.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import streamlit as st

from pipeline.aggregate import QUERY_TYPES
from pipeline.records import CONFIDENCE_NAMES

COUNT_COLUMNS = ["split", "engine", "level", "count"]


@st.cache_data(show_spinner=False, max_entries=128)
def distinct(path: str, mtime: float, column: str) -> list[Any]:
    """The sorted distinct non-null values of one column."""
    values = pc.unique(pq.read_table(path, columns=[column]).column(column).combine_chunks())
    return sorted(v for v in values.to_pylist() if v is not None)


def _confidence_rows(path: str) -> pd.DataFrame:
    """The per-answer "confidence" rows of a metrics table, under one scoring configuration (the
    label does not depend on it), one row per answer."""
    part = pq.read_table(path, columns=["answer_id", "engine", "query_type", "mode", "necessity", "value"],
                         filters=[("metric", "==", "confidence")]).to_pandas()
    if part.empty:
        return part
    first = part[["mode", "necessity"]].drop_duplicates().iloc[0]
    part = part[(part["mode"] == first["mode"]) & (part["necessity"] == first["necessity"])]
    return part.drop_duplicates("answer_id")


@st.cache_data(show_spinner=False, max_entries=32)
def confidence_counts(path: str, mtime: float) -> pd.DataFrame:
    """Answers per engine x split x confidence level (see data.confidence_counts)."""
    part = _confidence_rows(path)
    if part.empty:
        return pd.DataFrame(columns=COUNT_COLUMNS)
    part = part.dropna(subset=["value"])
    return _level_counts(part.assign(level=part["value"].round().astype(int), count=1))


def _level_counts(levels: pd.DataFrame) -> pd.DataFrame:
    """Answers per split, engine and confidence level from rows of (engine, query_type, level, count)."""
    rows = []
    for split in QUERY_TYPES:
        sub = levels if split == "all" else levels[levels["query_type"] == split]
        if sub.empty:
            continue
        for engine, frame in sub.groupby("engine", sort=True):
            for i, level in enumerate(CONFIDENCE_NAMES, start=1):
                rows.append({"split": split, "engine": engine, "level": level,
                             "count": int(frame.loc[frame["level"] == i, "count"].sum())})
    return pd.DataFrame(rows, columns=COUNT_COLUMNS)


@st.cache_data(show_spinner=False, max_entries=32)
def confidence_missing(path: str, mtime: float) -> tuple[int, int]:
    """(answers with a confidence label, answers whose confidence row has no value)."""
    part = _confidence_rows(path)
    missing = int(part["value"].isna().sum()) if len(part) else 0
    return len(part) - missing, missing


@st.cache_data(show_spinner=False, max_entries=32)
def blank_reasons(path: str, mtime: float, mode: str, necessity: str, query_type: str,
                  field_filter: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """{(engine, metric): the reason most of its unscored answers give} (see data.blank_reasons)."""
    part = pq.read_table(path, columns=["engine", "metric", "query_type", "field", "reason", "value"],
                         filters=[("mode", "==", mode), ("necessity", "==", necessity)]).to_pandas()
    part = part[part["value"].isna()]
    if query_type != "all":
        part = part[part["query_type"] == query_type]
    if field_filter:
        part = part[part["field"].isin(field_filter)]
    part = part[part["reason"].fillna("") != ""]
    return _most_common(part.assign(count=1))


def _most_common(part: pd.DataFrame) -> dict[tuple[str, str], str]:
    """{(engine, metric): its reason with the most answers (on a tie, the first in text order)}."""
    out: dict[tuple[str, str], str] = {}
    totals = part.groupby(["engine", "metric", "reason"], sort=True)["count"].sum().reset_index()
    for (engine, metric), reasons in totals.groupby(["engine", "metric"], sort=False):
        best = reasons.sort_values(["count", "reason"], ascending=[False, True], kind="stable").iloc[0]
        out[(str(engine), str(metric))] = str(best["reason"])
    return out


@st.cache_data(show_spinner=False, max_entries=32)
def facts(path: str, mtime: float) -> pd.DataFrame:
    """The judge's facts record (small: cached whole)."""
    return pq.read_table(path).to_pandas()


def blank_reasons_of(found: pd.DataFrame, mode: str, necessity: str, query_type: str,
                     field_filter: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """`blank_reasons` from the facts record."""
    part = found[(found["kind"] == "blank") & (found["mode"] == mode) & (found["necessity"] == necessity)]
    if query_type != "all":
        part = part[part["query_type"] == query_type]
    if field_filter:
        part = part[part["field"].isin(field_filter)]
    return _most_common(part) if len(part) else {}


def _confidence_levels(found: pd.DataFrame) -> pd.DataFrame:
    return found[found["kind"] == "confidence"]


def confidence_counts_of(found: pd.DataFrame) -> pd.DataFrame:
    """`confidence_counts` from the facts record."""
    return _level_counts(_confidence_levels(found).dropna(subset=["level"]))


def confidence_missing_of(found: pd.DataFrame) -> tuple[int, int]:
    """`confidence_missing` from the facts record."""
    part = _confidence_levels(found)
    missing = int(part.loc[part["level"].isna(), "count"].sum())
    return int(part["count"].sum()) - missing, missing
