"""What a person sees of a support sample asking relevance too, after a browser review (AppTest): the
sample named by its two kinds of item, the draw form's relevance box (its cost, disabled for a
relevance-and-stance sample, errors in the form's words), the labelling page (a line on a filler
statement's pairs, a neutral mark for "can't tell", the same words on button and feedback, the end
summary once, whole answers complete) and the captions of the Judges and Scorecard pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from audit_fixtures import RELEVANCE_SAMPLE, build_audit_results, build_relevance_results, goto, page_text, started_app

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from pipeline.audit.labels import LabelStore, labels_path  # noqa: E402
from pipeline.audit.population import build_frame  # noqa: E402
from pipeline.audit.sample import draw_sample, load_sample, register  # noqa: E402
from pipeline.errors import InputError  # noqa: E402
from pipeline.storage.tables import load_annotated  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = RELEVANCE_SAMPLE


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_relevance_results(tmp_path_factory.mktemp("audit_relevance_fixes"))


@pytest.fixture
def sample(built):
    from pipeline.audit.sample import load_sample

    return load_sample(SAMPLE, built)


@pytest.fixture
def app(built, monkeypatch, tmp_path) -> AppTest:
    return started_app(built, monkeypatch, tmp_path)


def _start(at: AppTest, name: str) -> AppTest:
    at.text_input[0].input(name)
    next(b for b in at.button if "Start labelling" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    return at


def _click(at: AppTest, key: str) -> AppTest:
    next(b for b in at.button if b.key == key).click()
    at.run()
    assert not at.exception, at.exception
    return at


def _progress(at: AppTest) -> str:
    return str(at.get("progress")[0].proto.text)


def _order(sample) -> list[str]:
    return list(sample.items.sort_values("order")["item_id"])


def test_the_sample_is_named_by_its_two_kinds_of_item(app, built, sample):
    kinds = sample.items["asks"].value_counts().to_dict()
    assert kinds == {"relevant": 66, "support": 229}  # 295 items (the sample of test_audit_relevance_page)
    at = goto(app, "pages/audit.py", dataset="demo")
    box = at.selectbox(key="audit_label_sample")
    assert (f"{SAMPLE} · 295 items: 66 statements (relevance) and 229 pairs (support) · judge scripted"
            in list(box.options))
    # the Judges page's box (a third of the width): id and size; the rest on the line below it
    store = LabelStore(labels_path(built))
    store.record(SAMPLE, _order(sample)[0], "Lu", "relevant", "relevant")
    store.record(SAMPLE, _order(sample)[1], "Lu", "support", "full")
    at = goto(app, "pages/judges.py")
    at.selectbox(key="judges_audit_dataset").set_value("demo")
    at.run()
    at.selectbox(key="judges_audit_sample").set_value(SAMPLE)
    at.run()
    assert at.selectbox(key="judges_audit_sample").value == SAMPLE
    assert f"{SAMPLE} · 295 items" in list(at.selectbox(key="judges_audit_sample").options)
    text = page_text(at)
    assert f"Sample {SAMPLE}: 295 items: 66 statements (relevance) and 229 pairs (support), judge scripted." in text
    # its items are clustered by answer: the bootstrap redraws answers, not statements
    assert "redrawing the labelled answers within their strata" in text


def _draw_form(app: AppTest) -> AppTest:
    at = goto(app, "pages/audit.py", dataset="demo")
    at.radio(key="audit_mode").set_value("Draw a sample")
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_relevance_box_states_its_cost_and_errors_in_the_forms_words(app, built):
    answers = load_annotated("demo", "recorded", built)  # the teaching corpus's own labels
    clusters = build_frame("demo", answers, "pair", "all", True).clusters
    mean = float(clusters["n_items"].mean())
    assert (len(clusters), round(mean, 1)) == (24, 26.5)  # 635 items over the corpus's 24 answers
    at = _draw_form(app)
    box = at.checkbox(key="audit_draw_relevance")
    assert not box.disabled and box.value is False
    assert "about 26.5 items each here with every listed source (24 answers)" in box.help
    assert "even a statement the judge or you call filler" in box.help
    assert "needs 20 answers of that engine labelled completely (or all of them)" in box.help
    box.check()
    at.run()
    assert "Whole answers: about 26.5 items each here with every listed source (24 answers), every statement asked" \
        in page_text(at)
    at.selectbox(key=next(b.key for b in at.selectbox if b.label == "Judge to audit")).set_value("recorded")
    at.number_input[0].set_value(100)  # too few for whole answers: the error in the form's words
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    with pytest.raises(InputError) as cli:
        draw_sample("demo", "recorded", 100, unit="pair", scope="all", relevance=True, root=built)
    least = re.search(r"at least (\d+) items", str(cli.value)).group(1)
    shown = [e.value.replace("\\", "") for e in at.error]  # as read: markdown escapes dropped
    assert len(shown) == 1
    assert shown[0].startswith("Items (about): 100 items make about 4 answers (of 26.5 items each on average)")
    assert shown[0].endswith(f"set Items (about) to {least} or more")
    assert "--n" not in shown[0] and "strata" not in shown[0]


def test_a_relevance_and_stance_sample_cannot_tick_the_relevance_box(app, built):
    at = _draw_form(app)
    at.checkbox(key="audit_draw_relevance").check()
    at.run()
    at.radio(key="audit_draw_unit").set_value("statement")
    at.run()
    box = at.checkbox(key="audit_draw_relevance")
    assert box.disabled and box.value is False  # unticked and greyed: nothing silently ignored
    assert box.help.startswith("Not for a relevance-and-stance sample")
    assert "Whole answers: about" not in page_text(at)


def test_labelling_filler_cant_tell_and_the_support_words(app, built, sample):
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Ana")
    answers = sample.items["cluster_id"].nunique()
    assert f"0 of 295 answered · answers complete: 0 of {answers} · 0 skipped" in _progress(at)
    _click(at, "audit_btn_relevant_filler")  # item 1: a statement item
    text = page_text(at)
    assert "Item 2 of 295" in text
    assert "You called this statement filler. Answer it anyway: another person may count this statement." in text
    labels = {str(b.key): str(b.label) for b in at.button}
    assert labels["audit_btn_support_partial"] == "Partially supports" and "Partially: some of it." in text
    _click(at, "audit_btn_support_partial")  # item 2, the filler statement's first source
    assert "you said “partially supports”" in page_text(at)
    assert "You called this statement filler" in page_text(at)  # item 3: the same statement's next source
    _click(at, "audit_btn_support_cant_tell")
    # "can't tell" agrees with nobody: a neutral note, not the green tick of an agreement
    feedback = [e for e in at.info if "you said “can't tell”" in e.body.replace("\\", "")]
    assert len(feedback) == 1 and feedback[0].icon == ":material/radio_button_unchecked:"
    assert not any("can't tell" in e.body.replace("\\", "") for e in [*at.success, *at.warning])


def test_a_statement_counted_relevant_shows_no_filler_line(app, built):
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Bea")
    _click(at, "audit_btn_relevant_relevant")
    assert "Item 2 of 295" in page_text(at) and "You called this statement filler" not in page_text(at)


def test_whole_answers_complete_beside_items_answered(app, built, sample):
    store = LabelStore(labels_path(built))
    order = _order(sample)
    clusters = dict(zip(sample.items["item_id"], sample.items["cluster_id"]))
    kinds = dict(zip(sample.items["item_id"], sample.items["asks"]))
    first = [i for i in order if clusters[i] == clusters[order[0]]]
    second = [i for i in order if clusters[i] == clusters[order[len(first)]]]
    for item in first + second[1:]:  # the first answer whole; the second with its first item skipped
        store.record(SAMPLE, item, "Cal", *(("relevant", "relevant") if kinds[item] == "relevant" else ("support", "full")))
    store.record(SAMPLE, second[0], "Cal", "skip", "")
    answers = sample.items["cluster_id"].nunique()
    done = len(first) + len(second) - 1
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Cal")
    assert f"{done} of 295 answered · answers complete: 1 of {answers} · 1 skipped" in _progress(at)
    assert ("1 answer(s) wait on a skipped item: an answer counts in the corrected values only once every one of its "
            "items is answered.") in page_text(at)


def test_the_end_summary_says_each_comparison_once(app, built, sample):
    rows = sample.items.to_dict("records")
    LabelStore(labels_path(built)).record_many(
        [(SAMPLE, r["item_id"], "Gus", *(("relevant", "relevant") if r["asks"] == "relevant" else ("support", "full")))
         for r in rows], "test")
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Gus")
    text = page_text(at)
    assert text.count("The Judges page compares the judge with everyone who labelled this sample") == 1
    assert ("You and the judge gave the same relevant label on **64 of 66** items (97%) and the same support label "
            "on **33 of 222** items (15%).") in text
    answers = sample.items["cluster_id"].nunique()
    assert f"295 of 295 answered · answers complete: {answers} of {answers}" in _progress(at)


def test_the_scorecard_caption_shows_code_and_defines_n_for_whole_answers(app, built, sample):
    rows = sample.items.to_dict("records")
    LabelStore(labels_path(built)).record_many(
        [(SAMPLE, r["item_id"], "Hal", *(("relevant", "relevant") if r["asks"] == "relevant" else ("support", "full")))
         for r in rows], "test")
    at = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted")
    next(t for t in at.toggle if t.key == "scorecard_ppi").set_value(True)
    at.run()
    assert not at.exception, at.exception
    caption = next(c.value for c in at.caption if "What the corrected values estimate" in c.value)
    assert "`aee scorecard --judge human`" in caption  # a code span, not backticks shown as text
    assert "\\`" not in caption
    assert ("a pair sample asking relevance too: whole answers, every statement's relevance and every pair's "
            "support") in caption


def test_a_draw_says_at_once_which_engines_it_leaves_without_a_corrected_value(app, built):
    at = _draw_form(app)
    at.checkbox(key="audit_draw_relevance").check()
    at.run()
    next(n for n in at.number_input if "Items" in str(n.label)).set_value(300)
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    text = " ".join(w.value.replace("\\", "") for w in at.warning)
    # 300 items draw about 11 of the 24 answers: no engine gets all 8 of its answers, which it needs
    assert "Even labelled in full, this sample leaves some engines without a corrected value" in text
    assert "Lumen:" in text and "of its 8 answers drawn; its corrected values need 8 labelled answers" in text
