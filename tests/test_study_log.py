"""pipeline.study.recorder: append-only Parquet storage of recorded study events."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline import study
from pipeline.study import recorder


@pytest.fixture(autouse=True)
def studies_root(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    return tmp_path / "studies"


def ev(event, rank, **kw):
    base = dict(participant="P1", session="S1", engine="Bing Copilot", query_id="Q1", query_type="debate", alignment="aligned")
    return {**base, **kw, "event": event, "source_rank": rank}


def test_append_creates_new_file_each_time_and_never_rewrites(studies_root):
    first = recorder.append_events("pilot-1", [ev("displayed", 1), ev("displayed", 2), ev("hover", 1)])
    before = first.read_bytes()
    second = recorder.append_events("pilot-1", [ev("click", 1, timestamp="2024-05-01T10:00:00+02:00")])
    assert first != second and first.parent == second.parent == studies_root / "pilot-1"
    assert first.name.startswith("events-") and first.suffix == ".parquet"
    assert first.read_bytes() == before  # the earlier file is untouched
    assert not list(first.parent.glob(".*tmp"))  # no temp files left behind
    log = recorder.load_study_log("pilot-1")
    assert len(log) == 4 and log["event"].tolist() == ["displayed", "displayed", "hover", "click"]
    assert str(log["timestamp"].dt.tz) == "UTC"
    assert log["timestamp"].iloc[3] == pd.Timestamp("2024-05-01T08:00:00Z")
    counts = recorder.load_study("pilot-1").counts
    assert counts[["displayed", "cited", "hovered", "clicked"]].iloc[0].tolist()[0] == 2
    assert pd.isna(counts["cited"].iloc[0])
    assert counts[["hovered", "clicked"]].iloc[0].tolist() == [1, 1]
    assert recorder.list_studies() == ["pilot-1"]


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "a b", "x" * 65, "..", "C:\\x"])
def test_bad_study_id_rejected(bad, studies_root):
    with pytest.raises(study.StudyLogError, match="study id"):
        recorder.append_events(bad, [ev("hover", 1)])
    with pytest.raises(study.StudyLogError):
        recorder.load_study_log(bad)
    assert not studies_root.exists() or not any(studies_root.rglob("*.parquet"))


def test_bad_participant_code_and_extra_fields_rejected():
    with pytest.raises(study.StudyLogError, match="row 2, column 'participant'"):
        recorder.append_events("s1", [ev("hover", 1), ev("hover", 2, participant="jane.doe@example.org")])
    with pytest.raises(study.StudyLogError, match="unexpected field"):
        recorder.append_events("s1", [{**ev("hover", 1), "email": "x@y.z"}])
    with pytest.raises(study.StudyLogError, match="no events"):
        recorder.append_events("s1", [])
    assert recorder.list_studies() == []  # nothing was written for the rejected batches


def test_empty_study_loads_with_schema():
    log = recorder.load_study_log("nothing-yet")
    assert log.empty and list(log.columns) == list(study.EVENT_COLUMNS)
    assert study.counts_from_events(log).empty
