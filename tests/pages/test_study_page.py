"""pages/study.py rendered with streamlit's AppTest (absolute path, standalone)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from pipeline import study
from pipeline.storage import paths
from pipeline.study import recorder

PAGE = str((Path(__file__).resolve().parents[2] / "pages" / "study.py"))
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
    """The first table showing `column` (AppTest does not expose element keys)."""
    for d in (*at.table, *at.dataframe):
        if column in d.value.columns:
            return d.value
    raise AssertionError(f"no table with column {column!r}")


def test_page_renders_with_simulated_log():
    at = _run()
    assert not at.exception
    assert "simulated from published summary statistics" in _texts(at)
    figure = [e.proto.body for e in at.get("html")]
    assert len(figure) == 1 and figure[0].count('class="dot"') == len(
        study.validate_counts(study.simulate_counts(0))) * 2  # a dot per row and measure
    assert "cited | All" in _df(at, "displayed | All").columns
    tests = _df(at, "p, Holm")
    assert len(tests) == 8
    # p values this small print in scientific notation, never as 0.0000
    first = tests.iloc[0]
    assert first["comparison"] == "Google vs All answer engines" and "×10⁻" in first["p"]
    assert first["significant"] == "yes"
    at.session_state["study_tab"] = "Reproduction of the paper"  # only the open tab is drawn
    at.run()
    assert len(_df(at, "reason")) >= 5
    repro = _df(at, "t printed")
    assert len(repro) == 10
    # Table 5 prints p but no t: said in words, never "None"
    table5 = repro[repro["table"] == "Table 5"]
    assert set(table5["t printed"]) == {"not printed in the paper"}
    assert "Google 82" in _texts(at)
    assert "26 + 21" in _texts(at) and "[[" not in _texts(at)  # inferred sizes as text, not a Python list
    at.session_state["study_tab"] = "This log"
    at.run()
    at.selectbox(key="comparison").set_value("aligned_vs_disaligned").run()
    assert not at.exception and len(_df(at, "p, Holm")) == 2


def test_page_with_uploaded_log():
    counts = study.simulate_counts(seed=4)
    at = _run()
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload").set_value(("mylog.csv", counts.to_csv(index=False).encode(), "text/csv")).run()
    assert not at.exception
    assert len(_df(at, "p, Holm")) == 8
    assert "simulated from published" not in " ".join(str(w.value) for w in at.warning)


def test_page_rejects_bad_upload_with_row_and_column():
    bad = "participant,session,engine,query_id,query_type,alignment,event,source_rank,timestamp\n" \
          "P1,S1,Google,Q1,expert,none,<b>boom</b>,1,2024-01-01T00:00:00Z\n"
    at = _run()
    at.radio(key="source").set_value("upload").run()
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
    at.radio(key="source").set_value("recorded").run()
    assert not at.exception
    assert at.selectbox(key="study_id").value == "lab-a"
    desc = _df(at, "hovered | Google")
    assert desc.loc["Mean", "hovered | Google"] == "6.00"
    # one Perplexity row and one YouChat row: their SD cannot be computed, and the page says why
    assert desc.loc["SD", "hovered | Perplexity"] == "n/a: one row, no spread"


def _class_events(rows: list[tuple[str, str, int]]) -> list[dict]:
    """Events of a class study: (participant, engine, hovers) per question, one question each."""
    events = []
    for q, (participant, engine, hovers) in enumerate(rows):
        for r in range(1, hovers + 1):
            events.append(dict(participant=participant, session="S1", engine=engine, query_id=f"Q{q}",
                               query_type="debate", alignment="none", event="hover", source_rank=r))
        events.append(dict(participant=participant, session="S1", engine=engine, query_id=f"Q{q}",
                           query_type="debate", alignment="none", event="click", source_rank=1))
    return events


def test_class_study_compares_two_engines():
    rows = [("P1", "Lumen", 3), ("P1", "Parrot", 1), ("P2", "Lumen", 4), ("P2", "Parrot", 2),
            ("P3", "Lumen", 2), ("P3", "Parrot", 1)]
    recorder.append_events("class-a", _class_events(rows))
    at = _run()
    at.radio(key="source").set_value("recorded").run()
    assert not at.exception
    assert at.selectbox(key="comparison").value == "pair"  # no Google in a class study: pairs first
    assert at.selectbox(key="pair_column").value == "engine"
    tests = _df(at, "p, Holm").set_index("measure")
    hovered = tests.loc["hovered"]
    assert hovered["comparison"] == "Lumen vs Parrot" and hovered["participants"] == "3\u00a0vs\u00a03"
    # Lumen 3, 4, 2 vs Parrot 1, 2, 1: means 3.00 and 1.33, SDs 1.00 and 0.58, pooled t = 2.50 on 4 df
    assert hovered["mean ± SD (first)"] == "3.00 ± 1.00" and hovered["mean ± SD (second)"] == "1.33 ± 0.58"
    assert hovered["Student t"] == "2.50 (df\u00a04)"
    # every row clicked exactly one source: no spread, so no t test, and the page says why
    clicked = tests.loc["clicked"]
    assert clicked["Student t"] == "n/a: no variation"
    assert any("clicked: no variation" in str(i.value) for i in at.info)
    text = " ".join(str(c.value) for c in at.caption)
    assert "only one condition" in text and "alignment" in text  # why alignment is not offered


def test_class_study_with_too_few_participants_says_so():
    recorder.append_events("class-b", _class_events([("P1", "Lumen", 3), ("P2", "Parrot", 1), ("P3", "Parrot", 2)]))
    at = _run()
    at.radio(key="source").set_value("recorded").run()
    tests = _df(at, "p, Holm").set_index("measure")
    assert tests.loc["hovered", "Student t"] == "n/a: too few participants"
    assert any("hovered: too few participants: Lumen has 1 row (1 participant)" in i.value for i in at.info)
    assert tests.loc["hovered", "mean ± SD (first)"] == "3.00 (SD n/a: one row)"


def test_one_engine_study_explains_why_no_test():
    recorder.append_events("class-c", _class_events([("P1", "Lumen", 3), ("P2", "Lumen", 1)]))
    at = _run()
    at.radio(key="source").set_value("recorded").run()
    warning = " ".join(w.value for w in at.warning)
    assert "No test is possible" in warning and "every row of this log has engine 'Lumen'" in warning


def test_log_template_downloads_and_documents_every_column():
    at = _run()
    labels = {e.proto.label for e in at.get("download_button")}
    assert {"Count log template (CSV)", "Event log template (CSV)"} <= labels
    docs = _df(at, "what it holds").set_index("column")
    assert set(docs.index) == set(study.COUNT_COLUMNS) | set(study.EVENT_COLUMNS)
    assert docs.loc["hovered", "count log"] == "required" and docs.loc["displayed", "count log"] == "optional"
    assert docs.loc["timestamp", "event log"] == "required"


def _shown(participant: str, engine: str, q: int, hovers: int, n_sources: int = 4, dwell: float | None = None) -> list[dict]:
    """What the inspector's study mode writes for one answer shown: shown, displayed, cited, hovers, dwell."""
    base = dict(participant=participant, session="S1", engine=engine, query_id=f"Q{q}", query_type="debate",
                alignment="none")
    rows = [dict(base, event="shown", source_rank=None)]
    rows += [dict(base, event="displayed", source_rank=r) for r in range(1, n_sources + 1)]
    rows += [dict(base, event="cited", source_rank=r) for r in range(1, n_sources)]
    rows += [dict(base, event="hover", source_rank=r) for r in range(1, hovers + 1)]
    if dwell is not None:
        rows.append(dict(base, event="dwell", source_rank=None, dwell_seconds=dwell))
    return rows


def test_untouched_answers_count_in_every_table_and_test():
    """3 students x 2 answers per engine, half of them never touching a citation: 12 rows, 3 vs 3
    participants, zeros in the tests (the issue saw 10 rows and 3 vs 2 when only touches were logged)."""
    events = []
    hovers = {("P1", "Lumen"): (2, 0), ("P1", "Parrot"): (0, 0), ("P2", "Lumen"): (3, 1), ("P2", "Parrot"): (1, 0),
              ("P3", "Lumen"): (0, 2), ("P3", "Parrot"): (0, 0)}
    q = 0
    for (participant, engine), per_answer in hovers.items():
        for h in per_answer:
            events += _shown(participant, engine, q, h, dwell=30.0 + q)
            q += 1
    recorder.append_events("class-zeros", events)
    at = _run()
    at.radio(key="source").set_value("recorded").run()
    assert not at.exception
    assert "12 participant x question rows" in _texts(at)
    tests = _df(at, "p, Holm").set_index("measure")
    hovered = tests.loc["hovered"]
    assert hovered["rows (n)"] == "6\u00a0vs\u00a06" and hovered["participants"] == "3\u00a0vs\u00a03"
    # Lumen 2, 0, 3, 1, 0, 2 (mean 1.33) vs Parrot 0, 0, 1, 0, 0, 0 (mean 0.17), hand-checked
    assert hovered["mean ± SD (first)"] == "1.33 ± 1.21" and hovered["mean ± SD (second)"] == "0.17 ± 0.41"
    sources = _df(at, "displayed | All")
    assert sources.loc["Mean", "displayed | All"] == "4.00" and sources.loc["Cited share", "cited | All"] == "75% of displayed"
    dwell = _df(at, "dwell_seconds | Lumen")
    assert dwell.loc["n", "dwell_seconds | Lumen"] == "6"
    at.session_state["study_rows_box"] = True  # the rows are drawn once their box is opened
    at.run()
    rows = _df(at, "time on screen")
    assert len(rows) == 12 and (rows["hovered"] == "0").sum() == 7


def test_open_recorded_before_anything_is_recorded_says_so():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["log"] = "recorded"
    at.query_params["study"] = "class-20261125"
    at.run()
    assert not at.exception
    text = _texts(at)
    assert "Study class\\-20261125 has nothing recorded yet" in text
    assert "simulated from published" not in text  # no simulated log in its place
    assert "Nothing to show until a study is recorded" in text
    assert not at.get("html") and not any("participant x question" in str(c.value) for c in at.caption)


def test_address_reopens_the_same_view():
    recorder.append_events("class-a", _class_events([("P1", "Lumen", 3), ("P1", "Parrot", 1), ("P2", "Lumen", 4),
                                                     ("P2", "Parrot", 2)]))
    at = AppTest.from_file(PAGE, default_timeout=60)
    for key, value in {"log": "recorded", "study": "class-a", "alpha": "0.05", "condition": "engine",
                       "first": "Parrot", "second": "Lumen"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.radio(key="source").value == "recorded" and at.select_slider(key="alpha").value == 0.05
    assert at.selectbox(key="pair_first_engine").value == "Parrot"
    assert _df(at, "p, Holm").iloc[0]["comparison"] == "Parrot vs Lumen"
