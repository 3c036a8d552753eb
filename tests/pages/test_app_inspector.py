"""pages/inspector.py and pages/rescore.py under streamlit's AppTest, on fixture Parquet results."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = str(ROOT / "pages" / "inspector.py")
RESCORE = str(ROOT / "pages" / "rescore.py")
WORKED = ROOT / "tests" / "fixtures" / "worked_example.json"
DEMO = ROOT / "data" / "demo" / "answers.jsonl"
HOSTILE = 'Zoos are cruel <img src=x onerror="window.__pwned=1"> [1]. <script>window.__pwned=1</script> See [x](javascript:alert(1)) [2].'


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("results")
    run_dataset("fig7", WORKED, root=root, progress=False)
    if DEMO.is_file():
        run_dataset("demo", DEMO, root=root, progress=False)
    return root


@pytest.fixture(autouse=True)
def env(results, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    monkeypatch.setenv("AEE_DATA_DIR", str(tmp_path / "data"))  # no demo corpus: the worked example is the fallback
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY", "AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _texts(at) -> str:
    parts = [e.value for e in (*at.warning, *at.error, *at.info, *at.caption, *at.markdown, *at.success)]
    return "\n".join(str(p) for p in parts)


def _component(at) -> dict:
    comps = at.get("bidi_component")
    assert len(comps) == 1, "the answer component is missing"
    return json.loads(comps[0].proto.json)


def _err(at) -> str:
    """The first error message as the user reads it (markdown escapes removed)."""
    return at.error[0].value.replace("\\", "")


def _metrics(at):
    """The per-answer metrics table as the reader sees it (a static table of escaped markdown)."""
    for t in at.table:
        if "rating" in t.value.columns and "metric" in t.value.columns:
            return t.value.map(lambda v: str(v).replace("\\", ""))
    raise AssertionError("no metrics table")


# ---- inspector -------------------------------------------------------------------------------


def test_inspector_renders_answer_matrices_graph_and_metrics():
    at = AppTest.from_file(INSPECTOR, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Answer inspector"
    at.selectbox(key="ins_dataset").set_value("fig7").run()
    data = _component(at)
    assert data["answer_id"] == "fig7" and data["debate"] is True
    statuses = {k: v["status"] for k, v in data["statements"].items()}
    # worked example: statement 3 cites [1][3] which do not support it, the last one is filler
    assert statuses["2"] == "unsupported" and statuses["6"] == "filler" and statuses["0"] == "supported"
    assert data["statements"]["4"]["stance"] == "disagree"
    assert data["sources"]["1"]["http"] is True
    assert data["report_events"] is False
    metrics = _metrics(at)
    assert "Citation accuracy" in set(metrics["metric"])
    assert any(str(r).startswith(("▲", "●", "▼")) for r in metrics["rating"])
    # value, direction and rating stay on one line each ("↑ higher" wrapped made every row two lines tall)
    styles = next(t for t in at.table if "rating" in t.value.columns).proto.arrow_data.styler.styles
    assert all(f"td.col{k} p" in styles for k in (1, 2, 3)) and "white-space: nowrap" in styles
    # the matrices as an HTML table (no chart bundle): statement 3's cited sources [1] and [3] do not
    # fully support it (✗ on the citation side), the hover says which statement and source
    matrices = next(e.proto.body for e in at.get("html") if "aee-mx" in e.proto.body)
    assert matrices.count("<tr>") == 2 + len(data["statements"]) - 1  # two header rows + the relevant statements
    assert "Citations: what the answer cites" in matrices and "✗" in matrices and "●" in matrices
    assert "source [1]" in matrices and not at.get("plotly_chart")  # the graph waits in its box
    assert "Minimum set of sources" in _texts(at)
    at.session_state["ins_answer_graph_box"] = True
    at.run()
    assert len(at.get("plotly_chart")) == 1  # the statement-source graph, once asked for


def _fig7() -> AppTest:
    at = AppTest.from_file(INSPECTOR, default_timeout=60).run()
    return at.selectbox(key="ins_dataset").set_value("fig7").run()


def test_inspector_toggles_rescore():
    at = _fig7()
    exact = _metrics(at).set_index("metric")["note"]["Source necessity"]
    assert "exact" in exact
    at.radio(key="ins_necessity").set_value("greedy").run()
    assert not at.exception
    assert "greedy" in _metrics(at).set_index("metric")["note"]["Source necessity"]
    assert "necessity by the greedy method" in _texts(at)
    at.radio(key="ins_mode").set_value("parity").run()
    assert not at.exception
    assert "Scored with paper parity rules" in _texts(at)
    assert at.radio(key="ins_necessity_parity").disabled and at.radio(key="ins_necessity_parity").value == "greedy"


def test_inspector_search_filters_queries():
    at = _fig7()
    at.text_input(key="ins_search").set_value("zoos").run()
    assert not at.exception and at.selectbox(key="ins_query").options == ["Why should zoos be abolished?"]
    at.text_input(key="ins_search").set_value("no such query anywhere").run()
    assert not at.exception
    assert "No query matches" in _texts(at)
    assert not at.get("bidi_component")


def test_inspector_study_mode_validates_codes():
    at = _fig7()
    at.toggle(key="ins_study").set_value(True).run()
    assert not at.exception
    at.text_input(key="ins_study_id").set_value("pilot-1")
    at.text_input(key="ins_participant").set_value("jane@example.org").run()
    assert "participant code" in _texts(at)
    assert _component(at)["report_events"] is False
    at.text_input(key="ins_participant").set_value("P07").run()
    assert not at.exception
    assert "Recording for participant P07 into study pilot-1" in _texts(at)
    assert _component(at)["report_events"] is True
    # the answer on screen is recorded at once, before any hover: a zero-hover answer is a row
    from pipeline.study import recorder

    counts = recorder.load_study("pilot-1").counts
    assert len(counts) == 1 and counts[["hovered", "clicked"]].iloc[0].tolist() == [0, 0]
    assert counts["displayed"].iloc[0] == 5  # the worked example lists five sources
    assert "1 answer(s) shown" in _texts(at)
    at.run()  # a rerun of the same answer records nothing more
    assert len(recorder.load_study_log("pilot-1")) == len(recorder.load_study_log("pilot-1").drop_duplicates())
    assert int((recorder.load_study_log("pilot-1")["event"] == "shown").sum()) == 1


@pytest.mark.skipif(not DEMO.is_file(), reason="teaching corpus data/demo/answers.jsonl not present")
@pytest.mark.parametrize("answer_id, kind", [("parrot-q2", "injection-like text"), ("quarry-q2", "dangling citation"),
                                             ("quarry-q3", "dead source"), ("lumen-q4", "duplicate source")])
def test_inspector_flags(answer_id, kind):
    at = AppTest.from_file(INSPECTOR, default_timeout=60).run()
    at.selectbox(key="ins_dataset").set_value("demo").run()
    at.text_input(key="ins_search").set_value(answer_id).run()
    assert not at.exception
    assert _component(at)["answer_id"] == answer_id
    flags = next(d.value for d in at.table if "kind" in d.value.columns)  # a static table: messages wrap
    assert kind in {k.replace("\\", "") for k in flags["kind"]}
    if kind != "dangling citation":
        assert any(s["flags"] for s in _component(at)["sources"].values())


def test_inspector_without_results(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "empty"))
    at = AppTest.from_file(INSPECTOR, default_timeout=60).run()
    assert not at.exception
    assert "No results yet" in _texts(at)


def test_study_rows_fit_the_log(tmp_path):
    from dashboard.answer_view import _parse_event, study_rows
    from pipeline.study import recorder

    events = [_parse_event({"seq": 1, "type": "hover", "statement": 0, "source": 2, "ts": 1_700_000_000_000, "answer": "a"}),
              _parse_event({"seq": 2, "type": "click", "statement": None, "source": 1, "ts": "bad", "answer": "a"})]
    assert _parse_event({"seq": 3, "type": "scroll", "source": 1}) is None
    assert _parse_event({"seq": 3, "type": "click", "source": "1"}) is None
    assert events[0]["timestamp"] == datetime.fromtimestamp(1_700_000_000, tz=timezone.utc)
    rows = study_rows(events, participant="P1", session="s1", alignment="none",
                      context={"engine": "Example engine", "query_id": "q-1", "query_type": "debate"})
    recorder.append_events("t1", rows)
    log = recorder.load_study_log("t1")
    assert list(log["event"]) == ["hover", "click"] and list(log["source_rank"]) == [2, 1]

    # the time an answer stayed on screen arrives as a dwell event and becomes an answer-level row
    dwell = _parse_event({"seq": 4, "type": "dwell", "ms": 12_345, "ts": 1_700_000_030_000, "answer": "a"})
    assert dwell["event"] == "dwell" and dwell["seconds"] == pytest.approx(12.3, abs=1e-9)
    for bad in ({"seq": 5, "type": "dwell", "ms": -1}, {"seq": 5, "type": "dwell", "ms": True},
                {"seq": 5, "type": "dwell", "ms": 10**12}, {"seq": "5", "type": "dwell", "ms": 10}):
        assert _parse_event(bad) is None
    rows = study_rows([dwell], participant="P1", session="s1", alignment="none",
                      context={"engine": "Example engine", "query_id": "q-1", "query_type": "debate"})
    recorder.append_events("t1", rows)
    counts = recorder.load_study("t1").counts
    assert counts["dwell_seconds"].iloc[0] == pytest.approx(12.3, abs=1e-9)


def test_an_event_stays_new_until_it_is_stored():
    """Issue 45 item 10: a run that read the component's events marked them as seen at once; a rerun
    cutting that run short before the study log's write (a participant choosing the next query while
    the run the marker's click started was going) lost them. They stay new until `mark_stored`, so the
    next run, reading the same cumulative payload, writes them; once stored they are not returned again."""
    from dashboard.answer_view import mark_stored, new_events, stored_marks

    key = "test_stays_new"
    click = {"seq": 1, "type": "click", "statement": 0, "source": 2, "ts": 1_700_000_000_000, "answer": "a"}
    hover = {"seq": 2, "type": "hover", "statement": 1, "source": 3, "ts": 1_700_000_001_000, "answer": "a"}
    payload = {"mount": "m1", "events": [click]}
    first = new_events(payload, key)
    assert [(e["event"], e["source"]) for e in first] == [("click", 2)]
    assert new_events(payload, key) == first  # the run that read it was cut short: the next one reads it again
    marks = stored_marks(key)
    mark_stored(marks, first)
    assert new_events(payload, key) == []  # written once, never twice
    later = new_events({"mount": "m1", "events": [click, hover]}, key)  # cumulative: only the hover is new
    assert [(e["event"], e["source"]) for e in later] == [("hover", 3)]
    assert [e["event"] for e in new_events({"mount": "m2", "events": [click]}, key)] == ["click"]  # another mount
    assert stored_marks(key) == {"m1": 1}


def test_every_answer_shown_is_recorded_with_its_sources(tmp_path):
    """shown_rows: the answer, each listed source as displayed and each cited one as cited, so a
    participant who never hovers still leaves a row of zeros."""
    from dashboard.answer_view import shown_rows
    from pipeline.importers.canonical import parse_answer
    from pipeline.study import recorder

    obj = {"answer_id": "s", "engine": "Lumen", "query": "Do trees cool streets?", "query_type": "expertise",
           "answer": "Trees shade streets [2]. They cool the air [2][9].",
           "sources": [{"index": 1, "url": "https://a.example.org", "title": "A", "text": "x"},
                       {"index": 2, "url": "https://b.example.org", "title": "B", "text": "y"},
                       {"index": 3, "url": "https://c.example.org", "title": "C", "text": "z"}]}
    annotated = parse_answer(obj, "test")
    rows = shown_rows(annotated, participant="P4", session="s1", alignment="none",
                      context={"engine": "Lumen", "query_id": "q-7", "query_type": "expertise"})
    assert [(r["event"], r["source_rank"]) for r in rows] == [
        ("shown", None), ("displayed", 1), ("displayed", 2), ("displayed", 3), ("cited", 2)]  # [9] is dangling
    recorder.append_events("t2", rows)
    counts = recorder.load_study("t2").counts
    assert counts[["displayed", "cited", "hovered", "clicked"]].iloc[0].tolist() == [3, 1, 0, 0]


def test_component_code_never_parses_data_as_html():
    from dashboard import answer_view

    for needle in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert needle not in answer_view._JS


def test_hostile_answer_stays_data(tmp_path):
    from dashboard import answer_model
    from pipeline.importers.canonical import parse_answer
    from pipeline.metrics import ScoreConfig
    from pipeline.report.scoring import answer_report

    obj = {"answer_id": "h", "engine": "E<b>", "query": "q", "query_type": "debate", "answer": HOSTILE,
           "sources": [{"index": 1, "url": "javascript:alert(1)", "title": "<img src=x onerror=alert(1)>", "text": "t"},
                       {"index": 2, "url": "https://ok.example.org/a", "title": "fine", "text": "u"}]}
    annotated = parse_answer(obj, "test")
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), "recorded")
    data = answer_model.component_data(annotated, rep, answer_model.computed_source_rows(annotated))
    assert data["sources"]["1"]["http"] is False and data["sources"]["2"]["http"] is True
    texts = "".join(p.get("s", "") for b in data["blocks"] for p in b.get("parts", []))
    assert "<script>" in texts  # kept verbatim as text for the script to insert as a text node
    assert answer_model.md_text("[x](javascript:alert(1)) <b>") == r"\[x\]\(javascript\:alert\(1\)\) \<b\>"


# ---- re-score --------------------------------------------------------------------------------


def _rescore() -> AppTest:
    return AppTest.from_file(RESCORE, default_timeout=120).run()


def test_rescore_example_scores_with_offline_judge(tmp_path):
    at = _rescore()
    assert not at.exception
    assert at.selectbox(key="rs_example").value == "fig7"  # the worked example (no demo corpus here)
    at.button(key="rs_load").click().run()
    assert at.text_input(key="rs_query").value == "Why should zoos be abolished?"
    assert at.number_input(key="rs_n").value == 5
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    if at.error:
        msg = at.error[0].value
        if "Judge" in msg:
            pytest.skip(f"offline judge unavailable here: {msg}")
        raise AssertionError(msg)
    assert "Scored with the offline" in " ".join(str(s.label) for s in at.get("expandable")) or at.get("status")
    data = _component(at)
    assert data["answer_id"].startswith("pasted-") and len(data["sources"]) == 5
    assert len([e for e in at.get("html") if "aee-mx" in e.proto.body]) == 1 and not at.get("plotly_chart")
    at.radio(key="rs_mode").set_value("parity").run()
    assert not at.exception and "Scored with paper parity rules" in _texts(at)
    assert not (tmp_path / "data" / "user").exists()  # nothing stored without the save button


def test_rescore_bad_input_names_the_field():
    at = _rescore()
    at.text_input(key="rs_query").set_value("").run()
    at.text_area(key="rs_answer").set_value("Something [1].")
    at.text_input(key="rs_src_title_0").set_value("One")
    at.button(key="rs_score").click().run()
    assert not at.exception
    assert at.error and _err(at).startswith("Query:")
    assert at.text_area(key="rs_answer").value == "Something [1]."  # input kept
    at.text_input(key="rs_query").set_value("Is it?")
    at.text_area(key="rs_answer").set_value("   ").run()
    at.button(key="rs_score").click().run()
    assert _err(at).startswith("Answer:")
    at.text_area(key="rs_answer").set_value("Claim [1].")
    at.text_input(key="rs_src_title_0").set_value("").run()
    at.button(key="rs_score").click().run()
    # an answer that lists no source is scored (engines do answer without sources; issue 30): no error
    assert not at.exception and not at.error
    assert at.text_input(key="rs_query").value == "Is it?"


def test_rescore_fetch_failure_is_explained():
    at = _rescore()
    at.text_input(key="rs_query").set_value("Why?")
    at.text_area(key="rs_answer").set_value("Because [1]. And so [2].")
    at.number_input(key="rs_n").set_value(2).run()
    at.text_input(key="rs_src_url_0").set_value("http://127.0.0.1:9/never")  # refused by the fetcher's policy
    at.text_area(key="rs_src_text_1").set_value("So it is.")
    at.checkbox(key="rs_fetch").check().run()
    at.button(key="rs_score").click().run()
    assert not at.exception
    if at.error:
        pytest.skip(f"scoring unavailable here: {at.error[0].value}")
    # issue 32: an address the fetcher refuses is not a dead source (dead: the site says the page is gone)
    texts = _texts(at).replace("\\", "")
    assert "Source 1 not checked: the page could not be fetched (the fetcher's safety rules do not allow" in texts
    assert not any(f.startswith("dead") for f in _component(at)["sources"]["1"]["flags"])
    assert _component(at)["statements"]["0"]["reason"] == "not checked: the page was not fetched, not known to be gone"


def test_rescore_llm_judge_without_configuration_explains():
    at = _rescore()
    at.text_input(key="rs_query").set_value("Why?")
    at.text_area(key="rs_answer").set_value("Because [1].")
    at.text_area(key="rs_src_text_0").set_value("Because of reasons.")
    at.radio(key="rs_judge").set_value(at.radio(key="rs_judge").options[1]).run()
    at.button(key="rs_score").click().run()
    assert not at.exception
    assert at.error and _err(at).startswith("Judge:")


def test_rescore_save_validates_name_and_appends(tmp_path):
    at = _rescore()
    at.text_input(key="rs_query").set_value("Why?")
    at.radio(key="rs_qtype").set_value("expertise")
    at.text_area(key="rs_answer").set_value("Because of reasons [1].")
    at.text_input(key="rs_src_title_0").set_value("Reasons")
    at.text_area(key="rs_src_text_0").set_value("Because of reasons, said the report.").run()
    at.button(key="rs_score").click().run()
    if at.error:
        pytest.skip(f"scoring unavailable here: {at.error[0].value}")
    at.text_input(key="rs_save_name").set_value("../evil").run()
    at.button(key="rs_save").click().run()
    assert at.error and "Dataset name" in at.error[0].value
    assert not (tmp_path / "data" / "user").exists()
    at.text_input(key="rs_save_name").set_value("mine").run()
    at.button(key="rs_save").click().run()
    target = tmp_path / "data" / "user" / "mine.jsonl"
    lines = target.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["query"] == "Why?" and obj["query_type"] == "expertise" and obj["sources"][0]["title"] == "Reasons"
    from pipeline.importers.canonical import load_canonical

    assert load_canonical(target)[0].answer.text == "Because of reasons [1]."


# ---- re-score: paste anything ------------------------------------------------------------------

PASTED = ("Zoos fund conservation [1] but critics cite stress in large animals [2][3].\n\n"
          "Sources:\n[1] Zoos and conservation - https://www.worldwildlife.org/zoos\n"
          "[2] https://www.nature.com/articles/stress\n[3] <script>x()</script> Welfare review https://example.org/welfare")


def test_rescore_paste_fills_the_form_for_review():
    at = _rescore()
    at.text_area(key="rs_paste").set_value(PASTED).run()
    at.button(key="rs_parse").click().run()
    assert not at.exception
    assert at.text_area(key="rs_answer").value == "Zoos fund conservation [1] but critics cite stress in large animals [2][3]."
    assert at.number_input(key="rs_n").value == 3
    assert [at.text_input(key=f"rs_src_url_{k}").value for k in range(3)] == [
        "https://www.worldwildlife.org/zoos", "https://www.nature.com/articles/stress", "https://example.org/welfare"]
    assert at.text_input(key="rs_src_title_2").value == "<script>x()</script> Welfare review"
    assert "3 source(s)" in _texts(at).replace("\\", "") and not at.get("bidi_component")  # parsed, not scored yet


def test_rescore_plain_paste_of_question_answer_and_urls():
    """The journalist's paste from the issue: the question fills the Query (not the answer), a factual
    question gets the expertise type, and what was understood is shown before anything is scored."""
    text = (ROOT / "tests" / "fixtures" / "paste" / "plain_question_urls.txt").read_text(encoding="utf-8")
    at = _rescore()
    at.radio(key="rs_qtype").set_value("debate").run()  # a previous answer's type must not stick
    at.text_area(key="rs_paste").set_value(text).run()
    at.button(key="rs_parse").click().run()
    assert not at.exception
    assert at.text_input(key="rs_query").value == "How much of the world's electricity came from wind power in 2023?"
    assert at.radio(key="rs_qtype").value == "expertise"
    assert at.text_area(key="rs_answer").value.startswith("Wind turbines produced a little under 8%")
    assert "?" not in at.text_area(key="rs_answer").value.splitlines()[0]
    shown = _texts(at).replace("\\", "")
    assert "What was understood" in shown and "(from the first line)" in shown and "a question of fact" in shown
    understood = next(t.value for t in at.table if "address" in t.value.columns).map(lambda v: v.replace("\\", ""))
    assert list(understood["source"]) == ["[1]", "[2]", "[3]"]
    assert set(understood["text"]) == {"none yet: fetched on Score when “Fetch the page” is ticked"}
    assert not at.get("bidi_component")  # nothing scored yet


@pytest.mark.parametrize("pasted, says", [
    ('{"answer_id": "a", "engine": "e", "query": "q", "answer": "Trees cool streets [1].", "sources": [{"index": 1, "url"',
     "the JSON is cut off"),
    ('{"id": "resp_1", "usage": {"input_tokens": 10}}', "not a shape this form reads (an object with keys id, usage)"),
])
def test_rescore_json_that_cannot_be_read_says_why(pasted, says):
    at = _rescore()
    at.text_area(key="rs_paste").set_value(pasted).run()
    at.button(key="rs_parse").click().run()
    assert not at.exception
    assert at.error and says in _err(at).replace("\\", "")
    assert at.text_area(key="rs_answer").value != pasted  # never taken in as answer text


def test_rescore_upload_of_a_capture_fills_query_engine_and_markers():
    at = _rescore()
    data = (ROOT / "tests" / "fixtures" / "engines" / "gemini_grounding.json").read_bytes()
    at.get("file_uploader")[0].set_value(("gemini_grounding.json", data, "application/json")).run()
    at.button(key="rs_parse").click().run()
    assert not at.exception
    assert at.text_input(key="rs_query").value == "Should city centres be closed to private cars?"
    assert at.text_input(key="rs_engine").value == "gemini:gemini-2.5-flash"
    assert at.text_area(key="rs_answer").value.startswith("Zürich’s car-free centre began in 1990 [1].")
    assert at.number_input(key="rs_n").value == 3 and at.text_input(key="rs_src_title_0").value == "stadt-zuerich.ch"
    assert "written into the answer as [n] markers" in _texts(at).replace("\\", "")


def test_rescore_error_clears_the_previous_result_and_clear_empties_everything():
    at = _rescore()
    at.button(key="rs_load").click().run()
    at.button(key="rs_score").click().run()
    if at.error:
        pytest.skip(f"scoring unavailable here: {at.error[0].value}")
    assert at.get("bidi_component")  # a result is on screen
    at.text_input(key="rs_query").set_value("").run()
    at.button(key="rs_score").click().run()
    assert at.error and _err(at).startswith("Query:")
    assert not at.get("bidi_component") and "Result" not in [h.value for h in at.subheader]  # the old result is gone
    at.text_area(key="rs_paste").set_value("{not json at all").run()
    at.button(key="rs_parse").click().run()
    assert not at.exception
    at.get("file_uploader")[0].set_value(("bad.json", b"{broken", "application/json")).run()
    at.button(key="rs_parse").click().run()
    assert at.error and "Paste: record bad.json: not valid JSON" in _err(at)
    at.button(key="rs_clear").click().run()
    assert not at.exception and not at.error
    assert at.text_area(key="rs_paste").value == "" and at.text_area(key="rs_answer").value == ""
    assert at.text_input(key="rs_query").value == "" and at.get("file_uploader")[0].value is None


PARAGRAPH_ANSWER = ("Street trees cool cities in summer. Their shade lowers pavement heat by several degrees [1].\n\n"
                    "Upkeep costs money. Cities budget for pruning and watering every year [2].")


def _cited(at: AppTest) -> list[tuple[int, ...]]:
    return [s.citations for s in at.session_state["rs_result"]["annotated"].statements]


def _reading(at: AppTest) -> str:
    return next(str(m.value).replace("\\", "") for m in at.markdown if "Citations read as" in str(m.value))


def test_rescore_reads_an_unknown_engines_markers_from_the_text_and_switches(tmp_path):
    """Issue 45 item 1: left at "pasted", a paragraph-closing marker covered only its sentence (with
    "ChatGPT" the paragraph): the field's default decided what counted as uncited. Now the text decides,
    the page says which reading it used, and one click scores the other."""
    at = _rescore()
    at.text_input(key="rs_query").set_value("Do street trees cool cities?")
    at.text_area(key="rs_answer").set_value(PARAGRAPH_ANSWER)
    at.number_input(key="rs_n").set_value(2).run()
    at.text_area(key="rs_src_text_0").set_value("Shade from street trees lowers pavement heat by several degrees.")
    at.text_area(key="rs_src_text_1").set_value("Cities budget for pruning and watering street trees every year.").run()
    assert at.text_input(key="rs_engine").value == "pasted"
    at.button(key="rs_score").click().run()
    if at.error:
        pytest.skip(f"scoring unavailable here: {at.error[0].value}")
    assert _cited(at) == [(1,), (1,), (2,), (2,)]  # every sentence is covered by its paragraph's marker
    assert "a marker closing a paragraph backs the whole paragraph" in _reading(at)
    assert "read from the text: 2 paragraphs of several sentences carry markers only at the end" in _reading(at)
    at.button(key="rs_scope_switch").click().run()
    assert not at.exception, at.exception
    assert _cited(at) == [(), (1,), (), (2,)]
    assert "each marker backs only the sentence it closes" in _reading(at) and "your choice" in _reading(at)
    at.button(key="rs_scope_switch").click().run()
    assert _cited(at) == [(1,), (1,), (2,), (2,)] and "your choice" in _reading(at)
    # a named engine's habit is used, and said; pressing Score again drops the earlier choice
    at.text_input(key="rs_engine").set_value("Perplexity").run()
    at.button(key="rs_score").click().run()
    assert _cited(at) == [(), (1,), (), (2,)] and "how Perplexity cites" in _reading(at)
