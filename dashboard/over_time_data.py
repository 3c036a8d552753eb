"""What the "Over time" page reads: the summaries `aee run` wrote beside a judge's tables when the
dataset holds repeats or waves (pipeline/consistency/summary.py). Nothing here computes a metric;
it only reads, filters and shapes for display."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import streamlit as st

from dashboard import data
from pipeline.consistency.summary import FLIPS_FILE, SUMMARY_FILE
from pipeline.storage.store import table_path

FLIP_COLUMNS = ["engine", "wave", "query", "metric", "ratings", "answer_ids", "values"]


def _folder(dataset: str, judge: str) -> Path:
    return table_path(dataset, "summary", judge, data.results_root()).parent


TABLES = ("stability", "icc", "shares", "metric_waves", "wave_changes")


@st.cache_resource(show_spinner=False, max_entries=16)
def _parsed(path: str, mtime: float) -> tuple[dict, dict[str, pd.DataFrame]]:
    # a resource, not data: shared read-only by every session instead of unpickled per rerun (a
    # year of weekly waves makes these lists long); the page never changes them in place
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    frames = {key: pd.DataFrame(raw.pop(key, None) or []) for key in TABLES}
    return raw, frames


def summary(dataset: str, judge: str) -> tuple[dict, dict[str, pd.DataFrame]]:
    """(the over-time summary's scalars, its tables as frames); ({}, {}) when the dataset has none
    or its results are not a whole set."""
    path = _folder(dataset, judge) / SUMMARY_FILE
    if not path.is_file() or data.manifest(dataset, judge) == {}:
        return {}, {}
    return _parsed(str(path), data._mtime(path))


def summary_json(dataset: str, judge: str) -> bytes:
    """The summary file itself, for the export."""
    path = _folder(dataset, judge) / SUMMARY_FILE
    return path.read_bytes() if path.is_file() else b"{}"


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




def datasets_over_time() -> list[str]:
    """Datasets with an over-time summary for at least one judge (to offer when the chosen one has none)."""
    return [name for name in data.datasets() if any(summary(name, judge)[0] for judge in data.judges(name))]
