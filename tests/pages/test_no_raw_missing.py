"""No page shows a raw None / nan / NaN / <NA> to a person: every missing value reads "n/a" with a
reason. AppTest walks the Overview, Start here, Scorecard (every query type and both scoring
rules), Confidence, Judges, Usability study and Methodology pages on the bundled teaching corpus,
on ExpertQA when its files are on this machine, with agreement reports that lack statistics, and
with recorded class studies too small for tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from pipeline.storage import paths  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
RAW = re.compile(r"(?<![A-Za-z])(None|nan|NaN|<NA>|NaT)(?![A-Za-z])")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The teaching corpus (its recorded labels), ExpertQA (expert labels) when found, and two
    agreement reports: one complete, one with most statistics missing."""
    import os

    from pipeline.judges.measure.agreement import save_agreement
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("bundled") / "results"
    old = os.environ.get("AEE_RESULTS_DIR")
    os.environ["AEE_RESULTS_DIR"] = str(root)
    try:
        run_dataset("demo", progress=False, root=root)
        if paths.expertqa_dir() is not None:
            run_dataset("expertqa", progress=False, root=root)
        confusion = {"rows": ["full", "partial", "none"], "cols": ["Complete", "Partial", "Incomplete"],
                     "matrix": [[4, 1, 0], [1, 1, 0], [0, 1, 2]]}
        save_agreement({"judge": "offline", "support": {"n": 803, "auc": 0.696, "in_calibration": 0,
                                                        "confusion": confusion},
                        "calibration": {"fit_splits": "domain_val", "fit_pairs": 1035}}, "expertqa-rand_val", "offline")
        save_agreement({"judge": "recorded", "support": {"n": 12, "kappa": None, "confusion": confusion}},
                       "expertqa-tiny", "recorded")
    finally:
        if old is None:
            os.environ.pop("AEE_RESULTS_DIR", None)
        else:
            os.environ["AEE_RESULTS_DIR"] = old
    return root


@pytest.fixture
def app(results, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def _raw_missing(at: AppTest) -> list[str]:
    """Every place a person would read a raw missing value, as "kind: text"."""
    found = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "code", "text", "info", "warning",
                 "success", "error"):
        for e in getattr(at, kind):
            value = str(e.value)
            if RAW.search(value):
                found.append(f"{kind}: {value[:160]}")
    for kind in ("dataframe", "table"):
        for e in getattr(at, kind):
            frame = e.value
            if frame.isna().any().any():  # st.dataframe draws a null cell as "None"
                cols = [str(c) for c in frame.columns[frame.isna().any()]]
                found.append(f"{kind}: null cells in {cols}")
            text = frame.astype(str).to_csv()
            for line in text.splitlines():
                if RAW.search(line):
                    found.append(f"{kind}: {line[:160]}")
            for name in [*frame.columns, *frame.index]:
                if RAW.search(str(name)):
                    found.append(f"{kind} label: {name}")
    for e in at.selectbox:
        for shown in e.options:  # the labels a person reads
            if RAW.search(str(shown)):
                found.append(f"selectbox {e.label}: {shown}")
    return found


def _visit(at: AppTest, page: str) -> AppTest:
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _datasets(results: Path) -> list[str]:
    from pipeline.storage.store import list_datasets

    return sorted(list_datasets(results))


@pytest.mark.parametrize("page", ["pages/home.py", "pages/tour.py", "pages/judges.py", "pages/methodology.py"])
def test_page_shows_no_raw_missing_value(app, page):
    at = _visit(app, page)
    assert _raw_missing(at) == []


def test_scorecard_shows_no_raw_missing_value_on_any_dataset(app, results):
    at = _visit(app, "pages/scorecard.py")
    for dataset in _datasets(results):
        at.selectbox(key="scorecard_dataset").set_value(dataset).run()
        for query_type in at.radio(key="scorecard_query_type").options:
            at.radio(key="scorecard_query_type").set_value(query_type).run()
            for mode in ("strict", "parity"):
                at.radio(key="scorecard_mode").set_value(mode).run()
                assert not at.exception, (dataset, query_type, mode)
                assert _raw_missing(at) == [], (dataset, query_type, mode)
            at.radio(key="scorecard_mode").set_value("strict").run()
        at.toggle(key="scorecard_published").set_value(True).run()
        assert _raw_missing(at) == [], (dataset, "published")
        at.toggle(key="scorecard_published").set_value(False).run()


def test_expertqa_scorecard_says_why_rows_are_empty(app, results):
    if "expertqa" not in _datasets(results):
        pytest.skip("ExpertQA files not on this machine")
    at = _visit(app, "pages/scorecard.py")
    at.selectbox(key="scorecard_dataset").set_value("expertqa").run()
    table = next(df.value for df in at.dataframe if "Why n/a" in df.value.columns).set_index("Metric")
    # ExpertQA has expertise questions only: debate-only metrics say so
    assert table.loc["One-sided answer", "Why n/a"] == \
        "defined for debate queries only, and this selection has no debate queries"
    assert table.loc["One-sided answer", "bing_chat"] == "n/a"
    assert table.loc["Confidence", "Why n/a"] == "no confidence label"
    # rows with values keep their unit
    assert table.loc["Uncited sources", "bing_chat"].startswith("31.71% ▼")
    assert table.loc["Sources", "bing_chat"].startswith("6.12 ")
    assert "defined for debate queries only" in "\n".join(m.value for m in at.markdown)
    # the illustrative note is for the teaching corpus only
    assert not [i for i in at.sidebar.info if "illustrative" in i.value]


def test_confidence_shows_no_raw_missing_value_on_any_dataset(app, results):
    at = _visit(app, "pages/confidence.py")
    for dataset in _datasets(results):
        at.selectbox(key="confidence_dataset").set_value(dataset).run()
        assert not at.exception
        assert _raw_missing(at) == [], dataset
    if "expertqa" in _datasets(results):
        # expert labels carry no confidence: the page says so and offers the teaching corpus instead
        at.selectbox(key="confidence_dataset").set_value("expertqa").run()
        assert any("No answer in ExpertQA has a confidence label" in i.value for i in at.info)
        at.button(key="confidence_switch_demo").click().run()
        assert at.selectbox(key="confidence_dataset").value == "demo"
        assert any("Strongly confident" in df.value.columns for df in at.dataframe)


def test_study_shows_no_raw_missing_value(app, tmp_path):
    from pipeline.study import recorder

    # a class of two, one engine each: no test is possible, and SDs cannot be computed
    for participant, engine in (("P1", "Lumen"), ("P2", "Parrot")):
        recorder.append_events("tiny-class", [dict(participant=participant, session="s1", engine=engine,
                                                   query_id="q1", query_type="debate", alignment="none",
                                                   event="hover", source_rank=1)])
    at = _visit(app, "pages/study.py")
    assert _raw_missing(at) == [], "simulated log"
    from pipeline.study import COMPARISONS

    for comparison in ["pair", *COMPARISONS]:
        at.selectbox(key="comparison").set_value(comparison).run()
        assert _raw_missing(at) == [], comparison
    at.radio(key="source").set_value("recorded").run()
    assert not at.exception
    assert _raw_missing(at) == [], "tiny recorded study, alignment"
    at.selectbox(key="comparison").set_value("pair").run()
    assert _raw_missing(at) == [], "tiny recorded study, two engines"
    text = " ".join(str(t.value.to_csv()) for t in at.table)
    assert "too few participants" in text and "one row, no spread" in text
