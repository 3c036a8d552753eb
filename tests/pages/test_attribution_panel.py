"""The inspector's attribution panel: per-statement AutoAIS, NLI recall and the citations NLI
precision marks irrelevant, in words, for a stored HAGRID answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.attribution_panel import COLUMNS, attribution_rows
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = str(ROOT / "pages" / "inspector.py")
FIXTURE = ROOT / "tests" / "fixtures" / "hagrid"


def _v(statement: int, source: int | None, label: str | None, members: tuple[int, ...] = ()) -> Verdict:
    return Verdict("a", "support", label, "t", "v1", statement_index=statement, source_index=source, source_set=members)


def test_rows_in_words():
    sources = (Source(1, text="one"), Source(2, text="two"), Source(3, text="three"))
    statements = (Statement("a", 0, "Both needed [1][2].", citations=(1, 2)),
                  Statement("a", 1, "One is redundant [1][3].", citations=(1, 3)),
                  Statement("a", 2, "No label yet [2].", citations=(2,)),
                  Statement("a", 3, "Uncited <b>claim</b>.", citations=()),
                  Statement("a", 4, "Hope this helps!", citations=()))
    verdicts = (_v(0, 1, "partial"), _v(0, 2, "partial"), _v(0, None, "full", (1, 2)),
                _v(1, 1, "full"), _v(1, 3, "none"), _v(1, None, "full", (1, 3)), _v(2, 2, None),
                Verdict("a", "relevance", "filler", "t", "v1", statement_index=4))
    table = attribution_rows(AnnotatedAnswer(Answer("a", "e", "q", "expertise", "text", sources), statements, verdicts))
    assert list(table.columns) == list(COLUMNS)
    assert table.values.tolist() == [
        [1, "Both needed [1][2].", "[1] [2]", "no", "yes", "–"],
        [2, "One is redundant [1][3].", "[1] [3]", "yes", "yes", "[3]"],
        [3, "No label yet [2].", "[2]", "not checked", "not checked", "– (not checked: [2])"],
        [4, "Uncited <b>claim</b>.", "–", "no citation", "no (cites nothing)", "–"],
        [5, "Hope this helps!", "–", "filler: not scored", "filler: not scored", "–"],
    ]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("results")
    run_dataset("hagrid", FIXTURE, importer="hagrid", root=root, progress=False)
    return root


def test_inspector_shows_the_panel(results, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(INSPECTOR, default_timeout=60).run()
    at.selectbox(key="ins_dataset").set_value("hagrid").run()
    at.text_input(key="ins_search").set_value("dev:1:0").run()
    assert not at.exception
    assert any(e.label.startswith("Attribution per statement") for e in at.expander)
    panel = next(d.value for d in at.dataframe if "irrelevant citations (NLI precision)" in d.value.columns)
    # HAGRID's labels: sentence 2 cites [1][2], judged not attributable, so both citations are irrelevant
    assert panel["irrelevant citations (NLI precision)"].tolist() == ["–", "[1] [2]", "–"]
    assert panel["AutoAIS: a citation supports it alone"].tolist() == ["yes", "no", "filler: not scored"]


def test_scorecard_shows_the_attribution_group_and_table_2_beside(results, tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "scorecard.py"), default_timeout=60).run()
    assert not at.exception
    # the correctness group has no value on HAGRID, so it starts hidden with its reason in a caption
    assert any("Answer correctness" in c.value and "no engine has a value here" in c.value for c in at.caption)
    at.pills(key="scorecard_groups").set_value(["attribution", "correctness"]).run()
    at.toggle(key="scorecard_show_empty").set_value(True).run()
    assert not at.exception
    table = next(df.value for df in at.dataframe if list(df.value.columns[:2]) == ["Group", "Metric"])
    rows = table.set_index("Metric")
    assert rows.loc["NLI citation precision", "Group"] == "Attribution (Djeddal et al.)"
    # only dev:1:0 has a value (1/3): the other answers lack labelled cited sentences
    assert rows.loc["NLI citation precision", "gpt-3.5-turbo (HAGRID)"].startswith("33.33")
    assert rows.loc["AutoAIS (citations)", "gpt-3.5-turbo (HAGRID)"].startswith("50.00")
    # HAGRID's own answers have no gold answer to be compared with: shown as not scorable, never nan
    assert rows.loc["ROUGE-L F", "Group"] == "Answer correctness against gold answers"
    assert rows.loc["ROUGE-L F", "gpt-3.5-turbo (HAGRID)"] == "n/a"
    at.toggle(key="scorecard_published").set_value(True).run()
    at.selectbox(key="scorecard_published_source").set_value("djeddal").run()
    assert not at.exception
    shown = " ".join(e.proto.body for e in at.get("html"))
    assert "Gold answer (paper)" in shown and "83.65" in shown
