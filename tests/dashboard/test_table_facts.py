"""dashboard/table_facts.py reads a few columns of a results table instead of the whole table: the
facts it gives the pages are the same as those computed from the whole table with pandas (the
teaching corpus, recorded labels)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipeline.aggregate import QUERY_TYPES
from pipeline.records import CONFIDENCE_NAMES


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("facts") / "results"
    run_dataset("demo", root=root, progress=False)
    return root


@pytest.fixture
def data(demo, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(demo))
    from dashboard import data as module

    return module


def _whole(data, name: str, judge: str | None = None) -> pd.DataFrame:
    from pipeline.storage.store import read_table, table_path

    return read_table(table_path("demo", name, judge, data.results_root()), name)


def test_engines_fields_and_query_types_match_the_whole_table(data):
    answers = _whole(data, "answers")
    metrics = _whole(data, "metrics", "recorded")
    assert data.engines("demo") == sorted(answers["engine"].dropna().unique().tolist())
    assert len(data.engines("demo")) >= 2
    assert data.fields("demo", "recorded") == sorted(f for f in metrics["field"].dropna().unique() if f)
    assert data.query_types_present("demo") == set(answers["query_type"].dropna())


def test_confidence_counts_match_the_whole_table(data):
    metrics = _whole(data, "metrics", "recorded")
    part = metrics[metrics["metric"] == "confidence"]
    first = part[["mode", "necessity"]].drop_duplicates().iloc[0]
    part = part[(part["mode"] == first["mode"]) & (part["necessity"] == first["necessity"])].drop_duplicates("answer_id")
    labelled = part.dropna(subset=["value"])
    counts = data.confidence_counts("demo", "recorded")
    assert int(counts[counts["split"] == "all"]["count"].sum()) == len(labelled) > 0
    for engine, frame in labelled.groupby("engine"):
        for i, level in enumerate(CONFIDENCE_NAMES, start=1):
            got = counts[(counts["split"] == "all") & (counts["engine"] == engine) & (counts["level"] == level)]["count"]
            assert int(got.iloc[0]) == int((frame["value"].round() == i).sum())
    assert set(counts["split"]) <= set(QUERY_TYPES)
    assert data.unscored_confidence("demo", "recorded") == int(part["value"].isna().sum())
    assert data.has_confidence("demo")


def test_blank_reasons_match_the_whole_table(data):
    metrics = _whole(data, "metrics", "recorded")
    part = metrics[(metrics["mode"] == "strict") & (metrics["necessity"] == "exact") & metrics["value"].isna()]
    part = part[part["reason"].fillna("") != ""]
    # the reason most of its answers give; on a tie, the first in text order (a rule, not pandas' order)
    want = {(str(e), str(m)): min(r.value_counts().items(), key=lambda kv: (-kv[1], kv[0]))[0]
            for (e, m), r in part.groupby(["engine", "metric"])["reason"]}
    assert data.blank_reasons("demo", "recorded", "strict", "exact", "all") == want


def test_a_missing_dataset_gives_empty_facts(data):
    assert data.engines("nope") == [] and data.fields("nope", "recorded") == []
    assert data.confidence_counts("nope", "recorded").empty and data.unscored_confidence("nope", "recorded") == 0
