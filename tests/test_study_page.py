"""pages/study.py rendered with streamlit's AppTest (absolute path, standalone)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from pipeline import paths, study
from pipeline.study import recorder

PAGE = str((Path(__file__).resolve().parent.parent / "pages" / "study.py"))
if not all((paths.reference_dir() / f).is_file() for f in study.REFERENCE_FILES):
    pytest.skip("published study figures not in data/reference/", allow_module_level=True)


@pytest.fixture(autouse=True)
def studies_root(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    return tmp_path / "studies"


def _run() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    return at.run()


def _texts(at) -> str:
    parts = [e.value for e in (*at.warning, *at.error, *at.info, *at.caption, *at.markdown)]
    return "\n".join(str(p) for p in parts)


def _df(at, column: str) -> pd.DataFrame:
    """The first dataframe showing `column` (AppTest does not expose dataframe keys)."""
    for d in at.dataframe:
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no dataframe with column {column!r}")


def test_page_renders_with_simulated_log():
    at = _run()
    assert not at.exception
    assert "simulated from published summary statistics" in _texts(at)
    assert len(at.dataframe) == 5  # descriptive, sources, tests, reproduction, flags
    assert len(at.get("plotly_chart")) == 1
    assert "cited | All" in _df(at, "displayed | All").columns
    assert len(_df(at, "reason")) >= 5
    tests = _df(at, "student_p_holm")
    assert len(tests) == 8 and "student_p_holm" in tests.columns
    repro = _df(at, "printed_t")
    assert len(repro) == 10
    assert "Google 82" in _texts(at)
    at.selectbox(key="comparison").set_value("aligned_vs_disaligned").run()
    assert not at.exception and len(_df(at, "student_p_holm")) == 2


def test_page_with_uploaded_log():
    counts = study.simulate_counts(seed=4)
    at = _run()
    at.radio(key="source").set_value("Upload a log").run()
    at.file_uploader(key="upload").set_value(("mylog.csv", counts.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception
    assert len(_df(at, "student_p_holm")) == 8
    assert "simulated from published" not in " ".join(str(w.value) for w in at.warning)


def test_page_rejects_bad_upload_with_row_and_column():
    bad = "participant,session,engine,query_id,query_type,alignment,event,source_rank,timestamp\n" \
          "P1,S1,Google,Q1,expert,none,<b>boom</b>,1,2024-01-01T00:00:00Z\n"
    at = _run()
    at.radio(key="source").set_value("Upload a log").run()
    at.file_uploader(key="upload").set_value(("bad.csv", bad.encode(), "text/csv")).run()
    assert not at.exception
    assert at.error and "row 1, column 'event'" in at.code[0].value
    assert "<b>boom</b>" in at.code[0].value  # shown verbatim as code, never as HTML/markdown


def test_page_with_recorded_study():
    events = []
    for q, (engine, hovers) in enumerate([("Google", 5), ("Perplexity", 2), ("Google", 7), ("YouChat", 1)]):
        for r in range(1, 6):
            events.append(dict(participant="P3", session="S3", engine=engine, query_id=f"Q{q}", query_type="expert",
                               alignment="none", event="displayed", source_rank=r))
        for r in range(1, hovers + 1):
            events.append(dict(participant="P3", session="S3", engine=engine, query_id=f"Q{q}", query_type="expert",
                               alignment="none", event="hover", source_rank=r))
    recorder.append_events("lab-a", events)
    at = _run()
    at.radio(key="source").set_value("Recorded study").run()
    assert not at.exception
    assert at.selectbox(key="study_id").value == "lab-a"
    desc = _df(at, "hovered | Google")
    assert desc.loc["Mean", "hovered | Google"] == pytest.approx(6.0)
