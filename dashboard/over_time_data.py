"""What the "Over time" page reads: the summaries `aee run` wrote beside a judge's tables when the
dataset holds repeats or waves (pipeline/consistency/summary.py). Nothing here computes a metric;
it only reads, filters and shapes for display."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import streamlit as st

from dashboard import data
from pipeline.consistency.summary import FLIPS_FILE, SUMMARY_FILE
from pipeline.store import table_path

FLIP_COLUMNS = ["engine", "wave", "query", "metric", "ratings", "answer_ids", "values"]


def _folder(dataset: str, judge: str) -> Path:
    return table_path(dataset, "summary", judge, data.results_root()).parent


def summary(dataset: str, judge: str) -> dict:
    """The over-time summary ({} when the dataset has none or its results are not a whole set)."""
    path = _folder(dataset, judge) / SUMMARY_FILE
    if not path.is_file() or data.manifest(dataset, judge) == {}:
        return {}
    return data._json(str(path), data._mtime(path))


@st.cache_data(show_spinner=False, max_entries=64)
def _flips(path: str, mtime: float, engine: str, metric: str, wave: str) -> pd.DataFrame:
    table = pq.read_table(path)
    mask = pc.and_(pc.and_(pc.equal(table["engine"], engine), pc.equal(table["metric"], metric)), pc.equal(table["wave"], wave))
    return table.filter(mask).to_pandas()


def flips(dataset: str, judge: str, engine: str, metric: str, wave: str) -> pd.DataFrame:
    """Queries of one engine, metric and wave whose rating band flips between repeats."""
    path = _folder(dataset, judge) / FLIPS_FILE
    if not path.is_file():
        return pd.DataFrame(columns=FLIP_COLUMNS)
    return _flips(str(path), data._mtime(path), engine, metric, wave)


def frame(summary_: dict, key: str) -> pd.DataFrame:
    return pd.DataFrame(summary_.get(key) or [])
