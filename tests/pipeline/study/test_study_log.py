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


def test_an_answer_shown_but_never_touched_is_a_row_of_zeros():
    """The seed study's trust signal: a participant who reads an answer without hovering a citation
    still gives a participant x query row, with 0 hovered and 0 clicked."""
    shown = dict(participant="P2", query_id="Q9", engine="Lumen")
    recorder.append_events("zeros", [
        ev("shown", None, **shown), ev("displayed", 1, **shown), ev("displayed", 2, **shown), ev("displayed", 3, **shown),
        ev("cited", 2, **shown),
        ev("dwell", None, dwell_seconds=12.5, **shown), ev("dwell", None, dwell_seconds=7.0, **shown),
        # a shown answer with no sources at all: displayed and cited are 0, not "not recorded"
        ev("shown", None, participant="P2", query_id="Q10", engine="Lumen"),
        # an older log row without a "shown" event: displayed stays unknown
        ev("hover", 1, participant="P3", query_id="Q9", engine="Lumen"),
    ])
    counts = recorder.load_study("zeros").counts.set_index(["participant", "query_id"])
    row = counts.loc[("P2", "Q9")]
    assert (row["displayed"], row["cited"], row["hovered"], row["clicked"]) == (3, 1, 0, 0)
    assert row["dwell_seconds"] == pytest.approx(19.5, abs=1e-9)
    empty = counts.loc[("P2", "Q10")]
    assert (empty["displayed"], empty["cited"], empty["hovered"], empty["clicked"]) == (0, 0, 0, 0)
    assert pd.isna(empty["dwell_seconds"])
    old = counts.loc[("P3", "Q9")]
    assert pd.isna(old["displayed"]) and pd.isna(old["cited"]) and old["hovered"] == 1


@pytest.mark.parametrize("row, message", [
    (ev("shown", 2), "leave source_rank blank"),
    (ev("dwell", None), "dwell_seconds"),
    (ev("dwell", None, dwell_seconds=-3), "between 0 and"),
    (ev("dwell", None, dwell_seconds="soon"), "not a number of seconds"),
    (ev("hover", 1, dwell_seconds=4), "only a 'dwell' row"),
    (ev("displayed", None), "value is missing"),
])
def test_answer_level_rows_are_checked(row, message):
    with pytest.raises(study.StudyLogError, match=message):
        recorder.append_events("checked", [row])
    assert recorder.list_studies() == []


def test_logs_written_before_dwell_times_still_load(studies_root):
    """A study recorded before the dwell_seconds column existed (int64 ranks, no dwell) loads beside new files."""
    folder = studies_root / "older"
    folder.mkdir(parents=True)
    old = pd.DataFrame([{**ev("hover", 2), "timestamp": pd.Timestamp("2025-01-01T10:00:00Z")}])
    old["source_rank"] = old["source_rank"].astype("int64")
    old.to_parquet(folder / "events-20250101T100000000000Z-aaaaaaaa.parquet", index=False)
    recorder.append_events("older", [ev("shown", None), ev("dwell", None, dwell_seconds=30)])
    counts = recorder.load_study("older").counts
    assert len(counts) == 1 and counts["hovered"].iloc[0] == 1 and counts["dwell_seconds"].iloc[0] == pytest.approx(30.0)


def _tree(root):
    return sorted(str(p) for p in root.rglob("*")) if root.is_dir() else []


def test_studies_go_beside_the_results_that_aee_results_dir_moves(tmp_path, monkeypatch):
    """Issue 45 item 13: with AEE_RESULTS_DIR set (and no AEE_STUDIES_DIR) a recorded study went into the
    checkout's data/studies; it belongs in the folder that holds the results, like the saved answers."""
    from pipeline.storage import paths

    monkeypatch.delenv("AEE_STUDIES_DIR")
    monkeypatch.delenv("AEE_USER_DIR", raising=False)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "run" / "results"))
    checkout_studies = paths.REPO_ROOT / "data" / "studies"
    before = _tree(checkout_studies)
    written = recorder.append_events("beside-1", [ev("displayed", 1)])
    assert written.parent == tmp_path / "run" / "studies" / "beside-1"
    assert recorder.list_studies() == ["beside-1"]
    assert paths.user_data_dir() == tmp_path / "run"  # saved answers go beside too (user/)
    assert _tree(checkout_studies) == before


def test_an_installed_package_never_writes_a_study_inside_itself(tmp_path, monkeypatch):
    """Installed (no checkout around it, no variable set), studies go under the working folder's
    aee-data/, never into the package's bundled data (where data_dir() points)."""
    from pipeline.storage import paths

    for name in ("AEE_STUDIES_DIR", "AEE_USER_DIR", "AEE_RESULTS_DIR", "AEE_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(paths, "is_checkout", lambda: False)
    monkeypatch.setattr(paths, "_BUNDLED", tmp_path / "site-packages" / "pipeline" / "bundled_data")
    paths._BUNDLED.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert paths.data_dir() == paths._BUNDLED  # what the old default put the studies under
    written = recorder.append_events("installed-1", [ev("displayed", 1)])
    assert written.parent == tmp_path / "work" / "aee-data" / "studies" / "installed-1"
    assert _tree(paths._BUNDLED) == []  # nothing written inside the package


def test_aee_studies_dir_still_moves_the_studies_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "run" / "results"))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "elsewhere"))
    assert recorder.append_events("own-1", [ev("displayed", 1)]).parent == tmp_path / "elsewhere" / "own-1"
