"""Inspector, Compare and Re-score (result half) under AppTest: selectors after a dataset switch,
ExpertQA statements in place, state in the URL, the compare views, and no raw None/nan anywhere.
Fixture results: tests/answer_fixtures.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from answer_fixtures import HOSTILE, build_results
from streamlit.testing.v1 import AppTest
from tolerances import close

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = str(ROOT / "pages" / "inspector.py")
COMPARE = str(ROOT / "pages" / "compare.py")
RESCORE = str(ROOT / "pages" / "rescore.py")
RAW_MISSING = re.compile(r"(?<![\w.])(None|nan|NaN|NaT|<NA>)(?![\w])")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return build_results(tmp_path_factory.mktemp("answer_pages"))


@pytest.fixture(autouse=True)
def env(results, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    monkeypatch.setenv("AEE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY", "AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _run(script: str, **params) -> AppTest:
    at = AppTest.from_file(script, default_timeout=90)
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    return at


def _component(at, n: int = 0) -> dict:
    comps = at.get("bidi_component")
    assert comps, "the answer component is missing"
    return json.loads(comps[n].proto.json)


def _visible_text(at) -> list[str]:
    """Every string a reader sees: text elements, alerts, widget values and labels, table cells."""
    out = [str(e.value) for kind in ("title", "header", "subheader", "markdown", "caption", "code", "text")
           for e in getattr(at, kind)]
    out += [str(e.body) for kind in ("info", "warning", "success", "error") for e in getattr(at, kind)]
    for kind in ("selectbox", "radio", "text_input", "toggle"):
        for w in getattr(at, kind):
            out += [str(w.label), str(w.value)]
    for frame in [d.value for d in at.dataframe] + [t.value for t in at.table]:
        out += [str(c) for c in frame.columns]
        out += [str(v) for v in frame.astype(object).to_numpy().ravel()]
    for comp in at.get("bidi_component"):
        out.append(comp.proto.json)
    return out


def _assert_no_raw_missing(at) -> None:
    bad = [t for t in _visible_text(at) if RAW_MISSING.search(t.replace("null", ""))]
    assert not bad, bad[:5]


def _table(at, first_column: str):
    for t in at.table:
        if t.value.columns[0] == first_column:
            frame = t.value.map(lambda v: str(v).replace("\\", ""))
            frame.columns = [str(c).replace("\\", "") for c in frame.columns]
            return frame
    raise AssertionError(f"no table starting with {first_column!r}")


# ---- item 1: selectors after a dataset switch -----------------------------------------------------


def test_dataset_switch_gives_every_selector_a_value_of_the_new_dataset():
    at = _run(INSPECTOR)
    at.selectbox(key="ins_dataset").set_value("fig7").run()
    at.selectbox(key="ins_judge").set_value("scripted").run()
    at.selectbox(key="ins_engine").set_value("Second engine").run()
    assert _component(at)["answer_id"] == "second-zoo"
    at.selectbox(key="ins_dataset").set_value("eqa-mini").run()
    assert not at.exception
    assert at.selectbox(key="ins_judge").value == "human"
    assert at.selectbox(key="ins_query").value in {"How do tide pool animals survive low tide?",
                                                   "What did a lighthouse keeper do each day?"}
    assert at.selectbox(key="ins_engine").value in {"bing_chat", "gpt4"}
    assert _component(at)["answer_id"].startswith("expertqa_mini:")
    # and back: fig7 opens on a fig7 answer again
    at.selectbox(key="ins_dataset").set_value("fig7").run()
    assert at.selectbox(key="ins_judge").value in {"recorded", "scripted"}
    assert at.selectbox(key="ins_query").value == "Why should zoos be abolished?"


def test_dataset_list_marks_illustrative_data(results):
    from pipeline.runner import run_dataset

    demo = ROOT / "data" / "demo" / "answers.jsonl"
    run_dataset("demo", demo, root=results, progress=False)  # the teaching corpus: illustrative
    try:
        at = _run(INSPECTOR)
        box = at.selectbox(key="ins_dataset")
        assert list(box.options) == ["Teaching corpus", "eqa-mini", "fig7"]  # as the list shows them
        assert box.value == "fig7"  # opens on the largest real dataset, not on teaching data
    finally:
        import shutil

        shutil.rmtree(results / "demo")


# ---- item 2: ExpertQA statements highlighted in place -------------------------------------------


def test_expertqa_statements_are_shown_in_the_answer_text():
    at = _run(INSPECTOR, dataset="eqa-mini", answer="expertqa_mini:1:bing_chat")
    data = _component(at)
    assert data["answer_id"] == "expertqa_mini:1:bing_chat"
    assert not any(b["t"] == "heading" and "not located" in b["s"] for b in data["blocks"])
    stmts = [b for b in data["blocks"] if b["t"] == "stmt"]
    assert [b["i"] for b in stmts] == [0, 1, 2, 3] and not any(b.get("own_line") for b in stmts)
    text = "".join(p.get("s", "") for p in stmts[2]["parts"])
    assert text == "Salinity changes after heavy rain or strong evaporation."  # bold markers dropped for display
    # markers sit inside their statements, so each one knows the judge's verdict
    cls = [p["cls"] for b in stmts for p in b["parts"] if p["t"] == "cite"]
    assert cls == ["full", "full", "full", "partial", "none"]


# ---- shareable state ------------------------------------------------------------------------------


def test_a_link_opens_its_answer_judge_and_rules():
    at = _run(INSPECTOR, dataset="fig7", judge="scripted", answer="second-zoo", mode="parity", necessity="bipartite")
    assert _component(at)["answer_id"] == "second-zoo"
    assert at.selectbox(key="ins_dataset").value == "fig7" and at.selectbox(key="ins_judge").value == "scripted"
    assert at.selectbox(key="ins_engine").value == "Second engine"
    assert at.radio(key="ins_mode").value == "parity"
    assert at.radio(key="ins_necessity_parity").value == "greedy"  # what parity runs
    assert "Scored with paper parity rules, necessity by the greedy method" in "\n".join(c.value for c in at.caption)
    at.radio(key="ins_mode").set_value("strict").run()
    assert at.radio(key="ins_necessity").value == "bipartite"  # the link's own choice comes back
    assert at.query_params["necessity"] == "bipartite" and at.query_params["mode"] == "strict"


def test_the_url_follows_the_widgets():
    at = _run(INSPECTOR)
    at.selectbox(key="ins_dataset").set_value("fig7").run()
    at.selectbox(key="ins_engine").set_value("Second engine").run()
    assert at.query_params["dataset"] == "fig7" and at.query_params["answer"] == "second-zoo"
    assert at.query_params["judge"] == at.selectbox(key="ins_judge").value


def test_a_link_to_a_missing_answer_says_so_and_shows_another():
    at = _run(INSPECTOR, dataset="fig7", answer="no-such-answer")
    assert "not in" in at.warning[0].value and "no\\-such\\-answer" in at.warning[0].value
    assert _component(at)["answer_id"] in {"fig7", "second-zoo", "hostile-zoo"}


def test_url_helpers_build_links_with_the_shared_names():
    from dashboard import url_state

    assert url_state.page_link("inspector", {"dataset": "demo", "answer": "a:1 b", "field": ["Law", "Music"],
                                             "unknown": "x", "judge": ""}) == \
        "inspector?dataset=demo&answer=a%3A1+b&field=Law&field=Music"
    assert url_state.query_string({"answer": "x" * 400}) == "answer=" + "x" * url_state.MAX_VALUE


# ---- compare --------------------------------------------------------------------------------------


def test_compare_two_engines_on_the_same_query(results):
    from dashboard import compare_model
    from pipeline.metrics import ScoreConfig
    from pipeline.report.scoring import answer_report
    from pipeline.storage.tables import load_annotated

    at = _run(COMPARE, view="engines", dataset="fig7", judge="recorded", answer="fig7", engine_b="Second engine")
    assert at.selectbox(key="cmp_engine_a").value == "Example engine"
    assert at.selectbox(key="cmp_engine_b").value == "Second engine"
    assert [json.loads(c.proto.json)["answer_id"] for c in at.get("bidi_component")] == ["fig7", "second-zoo"]
    table = _table(at, "metric").set_index("metric")
    answers = load_annotated("fig7", "recorded", results)
    rep_b = answer_report(answers["second-zoo"], ScoreConfig("strict", "exact"), "recorded")
    # Second engine: 2 relevant statements, both cite; [1] fully supports the first, [2] supports nothing -> 50 %
    assert rep_b["metrics"]["citation_accuracy"]["display"] == close(50.0)
    assert table.loc["Citation accuracy", "B: Second engine"] == "50.00%"
    assert table.loc["Statements", "B: Second engine"] == "2"
    expected = compare_model.metrics_side_by_side(
        answer_report(answers["fig7"], ScoreConfig("strict", "exact"), "recorded"), rep_b, "Example engine", "Second engine")
    assert list(table["favours"]) == list(expected["favours"])
    _assert_no_raw_missing(at)


def test_compare_two_judges_highlights_differences(results):
    from dashboard import compare_model
    from pipeline.storage.tables import load_annotated

    at = _run(COMPARE, view="judges", dataset="fig7", judge="recorded", answer="fig7", judge_b="scripted")
    diffs = compare_model.verdict_differences(load_annotated("fig7", "recorded", results)["fig7"],
                                              load_annotated("fig7", "scripted", results)["fig7"])
    n_diff = int((diffs["agreement"] == "differs").sum())
    both = int((diffs["agreement"] != "one side only").sum())
    assert 0 < n_diff < both
    assert f"{n_diff} of the {both} items both judges decided differ" in "\n".join(c.value for c in at.caption)
    shown = next(d.value for d in at.dataframe if "agreement" in d.value.columns)
    assert len(shown) == len(diffs)
    at.toggle(key="cmp_only_diff").set_value(True).run()
    shown = next(d.value for d in at.dataframe if "agreement" in d.value.columns)
    assert len(shown) == n_diff and set(shown["agreement"]) == {"differs"}
    _assert_no_raw_missing(at)


def test_compare_explains_what_is_missing():
    at = _run(COMPARE, view="engines", dataset="eqa-mini")
    assert "No query in eqa" in at.info[0].value
    at = _run(COMPARE, view="judges", dataset="eqa-mini")
    assert "Only the human judge" in at.info[0].value.replace("\\", "")
    assert "aee run --dataset eqa-mini --judge offline" in at.code[0].value
    _assert_no_raw_missing(at)


def test_compare_escapes_a_hostile_engine_name():
    at = _run(COMPARE, view="engines", dataset="fig7", judge="recorded", answer="hostile-zoo", engine_b="fig7")
    headings = [m.value for m in at.markdown if m.value.startswith("##### A")]
    assert headings and all("<script>" not in h for h in headings)
    assert any("\\<script\\>" in h for h in headings)


# ---- no raw None / nan on the pages this helper owns ------------------------------------------------


@pytest.mark.parametrize("params", [
    {"dataset": "fig7", "judge": "recorded", "answer": "fig7"},
    {"dataset": "fig7", "judge": "scripted", "answer": "second-zoo", "mode": "parity"},
    {"dataset": "eqa-mini", "answer": "expertqa_mini:2:gpt4"},
])
def test_inspector_shows_no_raw_missing_values(params):
    at = _run(INSPECTOR, **params)
    _assert_no_raw_missing(at)
    metrics = _table(at, "metric").set_index("metric")
    assert metrics.loc["Statement agreement", "value"] == "n/a" or params["dataset"] == "fig7"
    assert all(metrics.loc[metrics["value"] == "n/a", "note"].str.len() > 0)


def test_inspector_participant_view_hides_every_verdict():
    at = _run(INSPECTOR, dataset="fig7", judge="recorded", answer="fig7")
    at.toggle(key="ins_study").set_value(True).run()
    data = _component(at)
    assert data["participant"] is True and data["pairs"] == {}
    assert {s["status"] for s in data["statements"].values()} == {"plain"}
    assert {p["cls"] for b in data["blocks"] for p in b.get("parts", []) if p["t"] == "cite"} == {"plain"}
    assert not at.table and not at.get("plotly_chart")
    at.toggle(key="ins_participant_view").set_value(False).run()
    assert _component(at)["pairs"] and at.table
    _assert_no_raw_missing(at)


def test_rescore_result_shows_no_raw_missing_values(monkeypatch):
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.button(key="rs_load").click().run()
    at.button(key="rs_score").click().run()
    assert not at.exception
    _assert_no_raw_missing(at)
    metrics = _table(at, "metric").set_index("metric")
    assert metrics.loc["Statement agreement", "value"] != "None"
    at.radio(key="rs_mode").set_value("parity").run()
    assert at.radio(key="rs_necessity_parity").value == "greedy" and at.radio(key="rs_necessity_parity").disabled


URL_ONLY_PASTE = """Street trees lower summer surface temperatures by several degrees [1]. Shade from trees cuts the energy used for cooling [2].

Sources:
[1] https://example.org/trees
[2] https://example.com/shade
"""


def test_rescore_sources_without_text_read_not_checked_in_every_view():
    """A pasted answer whose sources are URLs only (the judge has nothing to read): the chips, the
    popovers' pairs, the metrics and the flags all say "not checked: no text", never "unsupported"."""
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.text_area(key="rs_paste").set_value(URL_ONLY_PASTE).run()
    at.button(key="rs_parse").click().run()
    at.text_input(key="rs_query").set_value("Do street trees cool cities?")
    at.radio(key="rs_qtype").set_value("expertise")
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    data = _component(at)
    # the chips: both cited statements are "not checked", with the reason
    assert {k: (v["status"], v["reason"]) for k, v in data["statements"].items()} == {
        "0": ("unchecked", "not checked: no text"), "1": ("unchecked", "not checked: no text")}
    # every citation marker and the pair its popover shows
    assert {p["cls"] for b in data["blocks"] for p in b.get("parts", []) if p["t"] == "cite"} == {"unknown"}
    assert {(k, v["label"], v["reason"]) for k, v in data["pairs"].items()} == {
        ("0:1", "unknown", "not checked: no text"), ("0:2", "unknown", "not checked: no text"),
        ("1:1", "unknown", "not checked: no text"), ("1:2", "unknown", "not checked: no text")}
    # the metrics: n/a with the judged share and the reason, not 100% unsupported
    metrics = _table(at, "metric").set_index("metric")
    assert metrics.loc["Unsupported statements", "value"] == "n/a"
    assert metrics.loc["Unsupported statements", "note"] == "none of 2 statements judged (sources without text)"
    assert metrics.loc["Citation accuracy", "note"] == "none of 2 citations judged (sources without text)"
    assert metrics.loc["Uncited sources", "value"] == "0.00%"  # what does not need a judge still has its value
    # the flags and the line above the answer say the same
    flags = next(d.value for d in at.table if list(d.value.columns) == ["kind", "where", "message"])
    flags = flags.map(lambda v: str(v).replace("\\", ""))  # shown as markdown, escaped
    assert list(flags["kind"]) == ["not checked", "not checked", "not checked"]
    assert flags["message"].iloc[0].startswith("4 of 4 (statement, source) pairs were not judged (sources without text: 4)")
    assert list(flags["where"]) == ["answer", "statement 1", "statement 2"]
    assert any(str(i.body).replace("\\", "").startswith(
        "Not checked: all 4 of 4 (statement, source) pairs (sources without text: 4)") for i in at.info)
    assert not any("unsupported" == v["status"] for v in data["statements"].values())
    _assert_no_raw_missing(at)


CHATGPT_PASTE = """You said:
Do street trees cool cities?
ChatGPT said:
Street trees lower summer surface temperatures by several degrees. Shade from trees cuts the energy used for cooling ([trees.example.org](https://trees.example.org/cooling?utm_source=chatgpt.com)).

Dense canopies help most in the afternoon ([shade.example.com](https://shade.example.com/study?utm_source=chatgpt.com)).
"""


def test_rescore_says_in_one_line_that_chatgpt_cites_per_paragraph():
    """A ChatGPT answer cites at the end of a paragraph: the page says so in one line, and the first
    sentence, without a link of its own, is counted as cited by its paragraph's link."""
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.text_area(key="rs_paste").set_value(CHATGPT_PASTE).run()
    at.button(key="rs_parse").click().run()
    assert at.text_input(key="rs_engine").value == "ChatGPT"
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    lines = [str(c.value).replace("\\", "") for c in at.caption if "How ChatGPT cites" in str(c.value)]
    assert lines == ["How ChatGPT cites: a citation at the end of a paragraph backs every sentence of that paragraph "
                     "before it. 1 sentence without a marker of its own is counted as cited by its paragraph's citation."]
    statements = _component(at)["statements"]
    assert statements["0"]["status"] == statements["1"]["status"] != "uncited"
    _assert_no_raw_missing(at)


def test_rescore_shows_no_scope_line_for_an_engine_citing_per_sentence():
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.text_area(key="rs_paste").set_value(URL_ONLY_PASTE).run()
    at.button(key="rs_parse").click().run()
    at.text_input(key="rs_query").set_value("Do street trees cool cities?")
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    assert not [c for c in at.caption if "cites:" in str(c.value)]
