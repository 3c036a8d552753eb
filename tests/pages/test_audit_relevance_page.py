"""Labelling a pair sample that asks relevance too on the Audit page (AppTest): a statement item shows
the statement in its answer with the relevance question and no source, a pair item the source and
the support question; every answer lands under its own field, progress and "next unlabelled" count
both kinds, and the Judges page offers both labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_fixtures import RELEVANCE_SAMPLE, build_audit_results, build_relevance_results, goto, page_text, started_app

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard.audit_view import item_data  # noqa: E402
from pipeline.audit.labels import LabelStore, labels_path  # noqa: E402
from pipeline.audit.sample import draw_sample, register  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = RELEVANCE_SAMPLE
QUESTION = "Does this statement help answer the question, or is it filler?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_relevance_results(tmp_path_factory.mktemp("audit_relevance_page"))


@pytest.fixture
def sample(built):
    from pipeline.audit.sample import load_sample

    return load_sample(SAMPLE, built)


@pytest.fixture
def app(built, monkeypatch, tmp_path) -> AppTest:
    return started_app(built, monkeypatch, tmp_path)


def _keys(at: AppTest) -> set[str]:
    return {str(b.key) for b in at.button}


def _start(at: AppTest, name: str) -> AppTest:
    at.text_input[0].input(name)
    next(b for b in at.button if "Start labelling" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    return at


def test_item_data_shows_a_statement_item_without_its_source(sample):
    rows = sample.items.sort_values("order").to_dict("records")
    statement, pair = item_data(rows[0], "pair"), item_data(rows[1], "pair")
    assert (statement["unit"], statement["asks"]) == ("statement", "relevant")
    assert not any(k.startswith("source") or k.startswith("passage") for k in statement)
    assert statement["answer_text"] == rows[0]["answer_text"] and statement["statement"] == rows[0]["statement"]
    start, end = statement["statement_start"], statement["statement_end"]
    assert rows[0]["answer_text"][start:end] == rows[0]["statement"]
    assert (pair["unit"], pair["asks"], pair["source_index"]) == ("pair", "support", 1)
    assert pair["source_text"] == rows[1]["source_text"] and pair["statement"] == rows[0]["statement"]


def test_a_statement_item_asks_relevance_then_its_pairs_ask_support(app, built, sample):
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Ana")
    text = page_text(at)
    assert f"sample {SAMPLE}" in text
    assert "Item 1 of 295" in text and "asks: is the statement relevant?" in text and QUESTION in text
    assert "Does the source support the statement?" not in text
    keys = _keys(at)
    assert {"audit_btn_relevant_relevant", "audit_btn_relevant_filler", "audit_btn_relevant_cant_tell"} <= keys
    assert not any(k.startswith("audit_btn_support_") for k in keys)
    assert "0 of 295 answered" in str(at.get("progress")[0].proto.text)
    next(b for b in at.button if b.key == "audit_btn_relevant_filler").click()
    at.run()
    text = page_text(at)
    assert "Item 2 of 295" in text and "asks: does the source support it?" in text
    assert "relevant: you said “filler”, the judge said “relevant”" in text  # the scripted judge's relevance
    assert "Does the source support the statement?" in text and QUESTION not in text
    assert "audit_btn_support_full" in _keys(at) and "audit_btn_relevant_filler" not in _keys(at)
    assert "1 of 295 answered" in str(at.get("progress")[0].proto.text)
    next(b for b in at.button if b.key == "audit_btn_support_none").click()
    at.run()
    assert "Item 3 of 295" in page_text(at) and "2 of 295 answered" in str(at.get("progress")[0].proto.text)
    order = list(sample.items.sort_values("order")["item_id"])
    mine = LabelStore(labels_path(built)).labels(SAMPLE, "Ana").set_index("item_id")
    assert mine.loc[order[0], "relevant"] == "filler" and mine.loc[order[1], "support"] == "none"
    assert mine.loc[order[0], "support"] is None and mine.loc[order[1], "relevant"] is None


def test_a_new_session_resumes_at_the_first_item_of_either_kind_not_answered(app, built, sample):
    store = LabelStore(labels_path(built))
    order = list(sample.items.sort_values("order")["item_id"])
    kinds = dict(zip(sample.items["item_id"], sample.items["asks"]))
    assert [kinds[i] for i in order[:5]] == ["relevant", "support", "support", "support", "relevant"]
    store.record(SAMPLE, order[0], "Bo", "relevant", "relevant")
    for item in order[1:4]:
        store.record(SAMPLE, item, "Bo", "support", "full")
    store.record(SAMPLE, order[4], "Bo", "support", "full")  # not the question item 5 asks: still open
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Bo")
    text = page_text(at)
    assert "Item 5 of 295" in text and "asks: is the statement relevant?" in text
    assert "4 of 295 answered" in str(at.get("progress")[0].proto.text)


def test_the_end_of_the_sample_compares_each_question_on_its_own_items(app, built, sample):
    rows = sample.items.to_dict("records")
    LabelStore(labels_path(built)).record_many(
        [(SAMPLE, r["item_id"], "Gus", *(("relevant", "relevant") if r["asks"] == "relevant" else ("support", "full")))
         for r in rows], "test")
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Gus")
    text = page_text(at)
    assert "Done: 295 of 295 answered" in text
    # the scripted judge: 64 of the 66 statements relevant (2 filler); of the 229 pairs 33 full, 7 unknown
    assert "same relevant label on **64 of 66** items (97%)" in text
    assert "same support label on **33 of 222** items (15%)" in text


def test_the_judges_page_offers_support_and_relevance_on_such_a_sample(app, built, sample):
    store = LabelStore(labels_path(built))
    rows = sample.items.sort_values("order").to_dict("records")
    store.record_many([(SAMPLE, r["item_id"], "Cy", "relevant" if r["asks"] == "relevant" else "support",
                        "relevant" if r["asks"] == "relevant" else "full") for r in rows[:40]], "test")
    at = goto(app, "pages/judges.py")
    at.selectbox(key="judges_audit_dataset").set_value("demo")
    at.run()
    at.selectbox(key="judges_audit_sample").set_value(SAMPLE)
    at.run()
    field = at.selectbox(key="judges_audit_field")
    assert list(field.options) == ["support", "relevance"]  # as shown: FIELD_TITLES of support and relevant
    n_rel = sum(r["asks"] == "relevant" for r in rows[:40])
    field.set_value("relevant")
    at.run()
    assert not at.exception
    table = next(tb.value for tb in at.table if "items compared" in tb.value.columns)
    by_person = dict(zip(table["person"], table["items compared"]))  # Ana and Bo of the tests above are there too
    assert by_person["Cy"] == str(n_rel)
    assert n_rel == 9  # items 1-40: two whole answers, 5 statements x (1 + 3 sources) and 4 x (1 + 4)


def test_drawing_such_a_sample_on_the_page_and_a_class_counting_both_kinds(app, built):
    at = goto(app, "pages/audit.py", dataset="demo")
    at.radio(key="audit_mode").set_value("Draw a sample")
    at.run()
    at.selectbox(key=next(b.key for b in at.selectbox if b.label == "Judge to audit")).set_value("scripted")
    at.number_input[0].set_value(300)
    at.number_input[1].set_value(4)
    at.checkbox(key="audit_draw_relevance").check()
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    assert "Sample demo-scripted-pair-all-rel-n300-s4" in page_text(at)
    listed = next(df.value for df in at.dataframe if "sample" in df.value.columns).set_index("sample")
    assert listed.loc["demo-scripted-pair-all-rel-n300-s4", "unit"] == "pair + relevance"
    from pipeline.audit.sample import load_sample

    drawn = load_sample("demo-scripted-pair-all-rel-n300-s4", built)
    assert drawn.meta["relevance"] is True and set(drawn.items["asks"]) == {"relevant", "support"}
    # a class on the fixture's sample: a student's relevance answers count as answered like support ones
    at.radio(key="audit_mode").set_value("Classroom")
    at.run()
    at.selectbox(key="audit_class_sample").set_value(SAMPLE)
    at.text_input[0].input("Class 9C")
    at.number_input[0].set_value(2)
    next(b for b in at.button if "Create the codes" in str(b.label)).click()
    at.run()
    store = LabelStore(labels_path(built))
    seat = store.classes(SAMPLE).iloc[0].to_dict()
    order = list(load_sample(SAMPLE, built).items.sort_values("order")["item_id"])
    first = order[int(seat["first"])]
    assert first.startswith("s-")  # seat 1 starts at item 1, a statement item
    student = f"Ida ({seat['code']})"
    store.record(SAMPLE, first, student, "relevant", "relevant")
    store.record(SAMPLE, order[int(seat["first"]) + 1], student, "support", "full")
    at.run()
    table = next(df.value for df in at.dataframe if "code" in df.value.columns).set_index("code")
    assert table.loc[seat["code"], "answered"] == "2 of 10" and table.loc[seat["code"], "name"] == "Ida"
