"""What a teacher stumbled on (issue 34, item 4), in AppTest: the Audit page opens where there is
something to do and keeps its mode in the address; the tour's study link turns the inspector's study
mode on with the study id filled in; the Overview's commands are a code block."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_fixtures import goto

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("classroom_pages") / "results"
    run_dataset("demo", progress=False, root=root)
    return root


@pytest.fixture
def app(built, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(built))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    return at


def test_audit_opens_on_drawing_a_sample_when_there_is_none(app):
    at = goto(app, "pages/audit.py", dataset="demo")
    assert at.radio(key="audit_mode").value == "Draw a sample"
    assert at.query_params["view"] in ("draw", ["draw"])
    judge = next(s for s in at.selectbox if s.label == "Judge to audit")
    assert judge.value == "recorded"  # the teaching corpus's own labels, not the offline judge


def test_audit_mode_comes_from_the_address(app):
    at = goto(app, "pages/audit.py", dataset="demo", view="classroom")
    assert at.radio(key="audit_mode").value == "Classroom"
    at.radio(key="audit_mode").set_value("Import a file").run()
    assert at.query_params["view"] in ("import", ["import"])


def test_a_study_link_turns_study_mode_on_with_its_id(app):
    at = goto(app, "pages/inspector.py", dataset="demo", judge="recorded", study="class-20260101")
    assert at.toggle(key="ins_study").value is True
    assert at.text_input(key="ins_study_id").value == "class-20260101"


def test_the_tour_links_the_inspector_in_study_mode(app):
    at = goto(app, "pages/tour.py")
    links = [p for p in at.get("page_link") if "study mode" in str(p.proto.label)]
    assert links and "study=class-" in str(links[0].proto.query_string), [p.proto for p in links]


def test_adding_data_commands_are_a_code_block(app):
    at = goto(app, "pages/home.py")
    assert any("aee run --dataset expertqa" in c.value and c.language == "bash" for c in at.code)


def test_on_a_served_room_fetching_and_the_llm_judge_need_the_join_code(app, monkeypatch):
    """Re-score's outbound work (pages fetched from this machine, the owner's LLM key) is the room's,
    like writing labels: a student who has not joined scores offline without fetching, and asking
    for either shows the join form and keeps Score off until the code is typed."""
    from dashboard import room_gate
    from pipeline.room import JOIN_CODE_ENV

    monkeypatch.setattr(room_gate, "served", lambda: True)
    monkeypatch.setenv(JOIN_CODE_ENV, "BLUE-FOX")
    at = goto(app, "pages/rescore.py")
    assert at.checkbox(key="rs_fetch").value is False  # not ticked for a visitor who has not joined
    assert not at.button(key="rs_score").disabled
    at.checkbox(key="rs_fetch").check().run()
    assert at.button(key="rs_score").disabled
    assert any("need the room's join code" in c.value for c in at.caption)
    at.checkbox(key="rs_fetch").uncheck().run()
    at.radio(key="rs_judge").set_value(at.radio(key="rs_judge").options[1]).run()  # the LLM judge
    assert at.button(key="rs_score").disabled
    at.text_input(key="room_code_rescore_outbound").input("blue-fox")
    next(b for b in at.button if "Join the room" in str(b.label)).click().run()
    assert not at.exception, at.exception
    assert not at.button(key="rs_score").disabled
