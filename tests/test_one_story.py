"""Issue 32 item 4: one story per page. Every count Re-score and the Inspector show about one answer (the
statements and their marks, each metric's value, n and judged share) is the same as `aee score
--json` gives for the same answer, and a statement's cross never sits beside an n/a that its own
row caused. An uncited source without text does not make cited, judged statements undecided."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.answer_model import metrics_table
from pipeline.cli import main
from pipeline.importers.canonical import parse_answer
from pipeline.metrics import ScoreConfig
from pipeline.metrics.context import ScoringContext
from pipeline.storage.paths import REPO_ROOT

RESCORE = str(REPO_ROOT / "pages" / "rescore.py")
QUERY = "How did the town's population and schools change?"
ANSWER = ("The town had 12,400 residents in 2020 [1]. Its population rose by 3 percent since then [1]. "
          "Two new schools opened in 2022 [2]. The old library closed in 2019 [2]. "
          "The river flooded the centre in 2021 [3]. Tourism doubled over the decade [3].")
SOURCES = [
    {"index": 1, "title": "Census", "url": "https://stats.example.org/town",
     "text": "The 2020 census counted 12,400 residents in the town. The population has risen by 3 percent since 2020."},
    {"index": 2, "title": "Schools", "url": "https://news.example.org/schools",
     "text": "Two new primary schools opened in the town in 2022, the council said."},
    {"index": 3, "title": "Weather", "url": "https://weather.example.org/rain",
     "text": "Rainfall in the region was close to the long-term average last year."},
    # listed, never cited, no text (an engine's API response carries none): it must not make n/a
    {"index": 4, "title": "Travel guide", "url": "https://guide.example.com/town", "text": ""},
]


def _canonical() -> dict:
    return {"answer_id": "story-1", "engine": "E", "query": QUERY, "query_type": "expertise", "answer": ANSWER,
            "sources": SOURCES}


@pytest.fixture(scope="module")
def cli_report(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("story") / "answer.json"
    path.write_text(json.dumps(_canonical()), encoding="utf-8")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["score", str(path), "--judge", "offline", "--json", "--no-fetch"]) == 0
    return json.loads(out.getvalue())


def test_an_uncited_source_without_text_leaves_judged_statements_decided(cli_report):
    statuses = [s["status"] for s in cli_report["statements"]]
    crosses = statuses.count("unsupported")
    assert crosses >= 2  # the flood and tourism statements: their cited source says nothing of them
    unsupported = cli_report["metrics"]["unsupported_statements"]
    assert unsupported["value"] is not None, unsupported  # was n/a: source 4 had no text
    # every statement is decided here, so the crosses are exactly the unsupported share
    assert unsupported["n"] == len([s for s in cli_report["statements"] if s["relevant"]])
    assert unsupported["value"] == pytest.approx(crosses / unsupported["n"], abs=1e-9)


def test_a_cited_source_without_text_still_leaves_its_statement_undecided():
    obj = _canonical()
    obj["sources"] = [dict(s) for s in SOURCES]
    obj["sources"][2]["text"] = ""  # source 3 is cited by two statements
    annotated = parse_answer(obj, "test")
    from pipeline.annotate import annotate_answer
    from pipeline.judges import get_judge

    labelled = annotate_answer(annotated, get_judge("offline"))
    ctx = ScoringContext(labelled, ScoreConfig())
    rows = {s.index: k for k, s in enumerate(ctx.relevant_statements)}
    cites_3 = [s.index for s in labelled.statements if 3 in s.citations and s.index in rows]
    assert cites_3 and all(ctx.statement_supported(rows[i]) is None or ctx.statement_supported(rows[i]) is True
                           for i in cites_3)


def test_the_page_tells_the_same_story_as_the_json(cli_report, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    at = AppTest.from_file(RESCORE, default_timeout=180).run()
    at.text_input(key="rs_query").set_value(QUERY)
    at.radio(key="rs_qtype").set_value("expertise")
    at.text_input(key="rs_engine").set_value("E")
    at.text_area(key="rs_answer").set_value(ANSWER)
    at.number_input(key="rs_n").set_value(len(SOURCES)).run()
    for k, s in enumerate(SOURCES):
        at.text_input(key=f"rs_src_title_{k}").set_value(s["title"])
        at.text_input(key=f"rs_src_url_{k}").set_value(s["url"])
        at.text_area(key=f"rs_src_text_{k}").set_value(s["text"])
    at.checkbox(key="rs_fetch").set_value(False)
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    data = json.loads(at.get("bidi_component")[0].proto.json)
    # the statements and their marks
    assert len(data["statements"]) == len(cli_report["statements"])
    assert [data["statements"][str(s["index"])]["status"] for s in cli_report["statements"]] == \
        [s["status"] for s in cli_report["statements"]]
    # every metric row: value as shown, n, and the note with its judged share
    page = next(t.value for t in at.table if str(t.value.columns[0]) == "metric")
    page = page.map(lambda v: str(v).replace("\\", "")).set_index("metric")
    expected = metrics_table(cli_report).drop(columns=["id"]).set_index("metric")
    assert list(page.index) == list(expected.index)
    for label in expected.index:
        for column in ("value", "n", "note"):
            assert page.loc[label, column] == str(expected.loc[label, column]), (label, column)
    # the crosses on the page are the statements the Unsupported statements metric counts
    crosses = sum(1 for v in data["statements"].values() if v["status"] == "unsupported")
    metric = cli_report["metrics"]["unsupported_statements"]
    assert crosses == round(metric["value"] * metric["n"])


def test_the_statement_count_says_why_it_is_smaller_than_the_statements_shown(tmp_path, capsys):
    obj = _canonical() | {"answer": "Great question! " + ANSWER}
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    assert main(["score", str(path), "--judge", "offline", "--json", "--no-fetch"]) == 0
    report = json.loads(capsys.readouterr().out)
    shown = len(report["statements"])
    filler = sum(1 for s in report["statements"] if s["status"] == "filler")
    assert filler == 1
    count = report["metrics"]["n_statements"]
    assert count["value"] == shown - filler
    assert count["reason"] == f"claims only: 1 of {shown} statements are filler"


def test_the_inspector_tells_the_same_story_as_the_json(cli_report, tmp_path, monkeypatch):
    from pipeline.runner import run_dataset

    path = tmp_path / "story.jsonl"
    path.write_text(json.dumps(_canonical()) + "\n", encoding="utf-8")
    root = tmp_path / "results"
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_DATA_DIR", str(tmp_path / "data"))
    run_dataset("story", path, judge_name="offline", root=root, progress=False)
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "inspector.py"), default_timeout=180)
    at.query_params.update({"dataset": "story", "judge": "offline", "answer": "story-1"})
    at.run()
    assert not at.exception, at.exception
    data = json.loads(at.get("bidi_component")[0].proto.json)
    assert data["answer_id"] == "story-1"
    assert [data["statements"][str(s["index"])]["status"] for s in cli_report["statements"]] == \
        [s["status"] for s in cli_report["statements"]]
    page = next(t.value for t in at.table if str(t.value.columns[0]) == "metric")
    page = page.map(lambda v: str(v).replace("\\", "")).set_index("metric")
    expected = metrics_table(cli_report).drop(columns=["id"]).set_index("metric")
    for label in expected.index:
        for column in ("value", "n", "note"):
            assert page.loc[label, column] == str(expected.loc[label, column]), (label, column)
