"""The audit in the app (AppTest): drawing a sample, labelling with the buttons (each label on disk at
once, the judge's label shown only after answering), classroom codes, the Judges page's agreement
section and the Scorecard's corrected columns, with hostile answer text never reaching markdown
unescaped."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_fixtures import build_audit_results, goto, page_text

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from pipeline.audit.labels import LabelStore, labels_path  # noqa: E402
from pipeline.audit.sample import draw_sample, register  # noqa: E402
from pipeline.metrics import METRICS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = build_audit_results(tmp_path_factory.mktemp("audit_page"))
    for dataset, n in (("demo", 70), ("hostile", 10)):
        register(draw_sample(dataset, "scripted", n, seed=1, root=root), root)
    return root


@pytest.fixture
def app(built, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(built))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    return at




def _button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def _start(at: AppTest, name: str) -> AppTest:
    at.text_input[0].input(name)
    next(b for b in at.button if "Start labelling" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    return at


def test_labelling_saves_each_answer_and_reveals_the_judge_only_after(app, built):
    at = goto(app, "pages/audit.py", dataset="demo")
    assert "Audit the judge" in page_text(at)
    at = _start(at, "Ana")
    text = page_text(at)
    assert "Item 1 of" in text and "Labelling as" in text
    assert "the judge said" not in text  # hidden until answered
    sample_id = "demo-scripted-pair-n70-s1"
    _button(at, "audit_btn_support_partial").click()
    at.run()
    text = page_text(at)
    assert "Item 2 of" in text and "you said “partially supports”, the judge" in text
    store = LabelStore(labels_path(built))
    mine = store.labels(sample_id, "Ana")
    assert list(mine["support"]) == ["partial"]
    _button(at, "audit_skip").click()  # skip item 2
    at.run()
    assert "Item 3 of" in page_text(at)
    from pipeline.audit.sample import load_sample

    second = list(load_sample(sample_id, built).items.sort_values("order")["item_id"])[1]
    assert bool(store.labels(sample_id, "Ana").set_index("item_id").loc[second, "skipped"])
    _button(at, "audit_back").click()
    at.run()
    assert "Item 2 of" in page_text(at)


def test_a_new_session_resumes_after_the_last_answer(app, built):
    store = LabelStore(labels_path(built))
    from pipeline.audit.sample import load_sample

    s = load_sample("demo-scripted-pair-n70-s1", built)
    order = list(s.items.sort_values("order")["item_id"])
    for item in order[:4]:
        store.record(s.sample_id, item, "Bo", "support", "none")
    at = _start(goto(app, "pages/audit.py", dataset="demo"), "Bo")
    assert "Item 5 of" in page_text(at) and "4 of " in str(at.get("progress")[0].proto.text)


def test_hostile_text_never_reaches_markdown_unescaped(app):
    at = goto(app, "pages/audit.py", dataset="hostile")
    at = _start(at, "<b>Eve</b>")
    assert not at.exception
    for element in (*at.markdown, *at.caption):
        value = str(element.value)
        assert "<script" not in value and "<b>" not in value and "<img" not in value, value
    _button(at, "audit_btn_support_full").click()
    at.run()
    for element in (*at.markdown, *at.caption, *at.success, *at.warning):
        assert "<script" not in str(getattr(element, "value", getattr(element, "body", ""))), element


def test_drawing_a_sample_and_creating_class_codes(app, built):
    at = goto(app, "pages/audit.py", dataset="demo")
    at.radio(key="audit_mode").set_value("Draw a sample")
    at.run()
    at.selectbox(key=next(b.key for b in at.selectbox if b.label == "Judge to audit")).set_value("scripted")
    at.number_input[0].set_value(90)
    at.number_input[1].set_value(5)
    # the teaching corpus's judges label uncited pairs too: every listed source is the default scope
    assert next(b for b in at.selectbox if b.label == "Sources per statement").value == "all"
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert "Sample demo-scripted-pair-all-n90-s5" in page_text(at)
    at.radio(key="audit_mode").set_value("Classroom")
    at.run()
    at.selectbox(key="audit_class_sample").set_value("demo-scripted-pair-n70-s1")
    at.text_input[0].input("Class 7B")
    at.number_input[0].set_value(3)
    next(b for b in at.button if "Create the codes" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    codes = LabelStore(labels_path(built)).classes("demo-scripted-pair-n70-s1")
    assert len(codes) == 3
    table = next(df.value for df in at.dataframe if "code" in df.value.columns)
    assert list(table["code"]) == list(codes["code"]) and list(table["items"])[:2] == ["1–10", "6–15"]
    assert set(table["answered"]) == {"0 of 10"} and set(table["name"]) == {"not started"}


def test_a_student_labels_ten_items_of_a_seat(app, built):
    store = LabelStore(labels_path(built))
    seat = store.create_class("demo-scripted-pair-n70-s1", "Seat test", 70, seats=2)[1]
    at = goto(app, "pages/audit.py", dataset="demo")
    at.toggle[0].set_value(True)
    at.run()
    at.text_input[0].input(seat["code"].lower())
    at.text_input[1].input("Mia")
    next(b for b in at.button if "Start labelling" in str(b.label)).click()
    at.run()
    text = page_text(at)
    assert f"class code {seat['code']}" in text and "Item 1 of 10" in text
    _button(at, "audit_btn_support_none").click()
    at.run()
    # the teacher's view: the class's progress and agreement as it goes
    at.radio(key="audit_mode").set_value("Classroom")
    at.run()
    at.selectbox(key="audit_class_sample").set_value("demo-scripted-pair-n70-s1")
    at.run()
    assert not at.exception, at.exception
    students = [m for m in at.metric if m.label == "Started"]
    assert students and any(m.value == "1" for m in students)


def test_judges_page_compares_the_judge_with_each_person(app, built):
    store = LabelStore(labels_path(built))
    from pipeline.audit.sample import load_sample

    s = load_sample("demo-scripted-pair-n70-s1", built)
    for k, item in enumerate(s.items.sort_values("order")["item_id"]):
        store.record(s.sample_id, item, "Cleo", "support", ("full", "none", "partial")[k % 3])
        store.record(s.sample_id, item, "Dan", "support", ("full", "none")[k % 2])
    at = goto(app, "pages/judges.py")
    at.selectbox(key="judges_audit_dataset").set_value("demo")
    at.run()
    at.selectbox(key="judges_audit_sample").set_value(s.sample_id)
    at.run()
    text = page_text(at)
    assert "Checked by people" in text and "Cleo" in text and "Dan" in text and "majority of the people" in text
    assert "Krippendorff" in text
    links = next(df.value for df in at.dataframe if "open" in df.value.columns)
    assert links["open"].iloc[0].startswith("inspector?dataset=demo&judge=scripted&answer=")


def test_scorecard_shows_corrected_values_beside_the_judges(app, built):
    store = LabelStore(labels_path(built))
    from pipeline.audit.sample import load_sample

    s = load_sample("demo-scripted-pair-n70-s1", built)
    for item in s.items["item_id"]:
        store.record(s.sample_id, item, "Cleo", "support", "full")
    at = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted")
    toggle = next(t for t in at.toggle if t.key == "scorecard_ppi")
    toggle.set_value(True)
    at.run()
    assert not at.exception, at.exception
    text = page_text(at)
    assert "corrected (PPI) [95%]" in text and "Citation accuracy" in text
    assert "Not corrected yet" in text and "--scope all" in text
    assert at.query_params["corrected"] == "show"  # a copied link reopens the corrected values
    toggle = next(t for t in at.toggle if t.key == "scorecard_ppi")
    toggle.set_value(False)
    at.run()
    assert "corrected" not in at.query_params
    again = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted", corrected="show")
    assert "corrected (PPI) [95%]" in page_text(again)


def test_the_scorecard_page_prints_the_numbers_the_cli_prints(app, built, capsys):
    """`aee scorecard --ppi --json` and the Scorecard page's corrected table show the same numbers:
    every row the page shows is the CLI's row, formatted (value, interval, n, verdict), and every
    cell the page lists as not corrected is one the CLI gives no value, for the same reason."""
    import json

    from dashboard.audit_panels import ppi_table
    from pipeline.audit.sample import load_sample
    from pipeline.cli import main

    s = load_sample("demo-scripted-pair-n70-s1", built)
    LabelStore(labels_path(built)).record_many(
        [(s.sample_id, item, "Dana", "support", ("full", "none")[k % 2]) for k, item in enumerate(s.items["item_id"])], "test")
    assert main(["scorecard", "--dataset", "demo", "--judge", "scripted", "--ppi", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    at = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted")
    next(t for t in at.toggle if t.key == "scorecard_ppi").set_value(True)
    at.run()
    assert not at.exception, at.exception
    # the page escapes markdown in what it shows (brackets, for one): read it back as plain text
    plain = lambda v: str(v).replace("\\", "")  # noqa: E731
    shown = next(t.value for t in at.table if any("corrected (PPI)" in plain(c) for c in t.value.columns))
    shown = shown.map(plain).rename(columns=plain).reset_index(drop=True)
    expected, missing = ppi_table(printed, "all engines")
    assert len(expected) >= 2
    assert shown.equals(expected.astype(str).reset_index(drop=True)), (shown.to_dict("records"), expected.to_dict("records"))
    # what the corrected value estimates is on every row, as the CLI's JSON names it (a support audit: judge's relevance)
    citation = shown.loc[shown["metric"] == METRICS["citation_accuracy"].label].iloc[0]
    assert citation["what the corrected value estimates"] == "the people's support labels, the judge's relevance"
    assert "the judge still decides which statements count" in page_text(at)
    for r in (r for r in printed["rows"] if r["domain"] == "all engines" and r["ppi"] is not None and r["ppi_low"] is not None):
        cell = shown.loc[shown["metric"] == METRICS[r["metric"]].label, "corrected (PPI) [95%]"].iloc[0]
        assert f"{r['ppi']:.1f}" in cell and f"{r['ppi_low']:.1f}" in cell and f"{r['ppi_high']:.1f}" in cell, cell
    text = page_text(at)
    for reason in missing:
        assert reason.split(":")[0] in text



def _downloads(at: AppTest) -> dict[str, str]:
    """Each download button's label -> the media URL it serves."""
    return {el.proto.label: el.proto.url for el in at.get("download_button")}


def test_a_sample_just_drawn_is_the_one_shown_downloaded_and_named(app, built):
    """Issue 45 item 5: after a second draw the Sample box, the CSV and the printed commands named the
    sample shown before it (the keyed box kept its earlier choice), so the CSV downloaded was the wrong one."""
    at = goto(app, "pages/audit.py", dataset="demo")
    at.radio(key="audit_mode").set_value("Draw a sample")
    at.run()
    judge_box = next(b.key for b in at.selectbox if b.label == "Judge to audit")
    drawn = []
    for n, seed in ((70, 11), (80, 12)):
        at.selectbox(key=judge_box).set_value("scripted")
        at.number_input[0].set_value(n)
        at.number_input[1].set_value(seed)
        next(b for b in at.button if "Draw and register" in str(b.label)).click()
        at.run()
        assert not at.exception, at.exception
        sample_id = f"demo-scripted-pair-all-n{n}-s{seed}"
        drawn.append(sample_id)
        assert at.selectbox(key="audit_download_sample").value == sample_id
        commands = "\n".join(str(c.value) for c in at.code)
        assert f"aee audit import --dataset demo {sample_id}.csv" in commands
        assert f"aee audit export --sample {sample_id} " in commands
        assert drawn[0] not in commands or sample_id == drawn[0]
        urls = _downloads(at)
        assert set(urls) == {"CSV", "JSON lines", "Weights"}
        # the CSV button serves this sample's file: its media id is the hash of these bytes and this name
        from streamlit.runtime.memory_media_file_storage import _calculate_file_id

        from pipeline.audit.sample import annotation_text, load_sample

        csv = annotation_text(load_sample(sample_id, built), "csv").encode("utf-8")
        assert _calculate_file_id(csv, "text/csv", f"{sample_id}.csv") in urls["CSV"]
        assert csv.decode("utf-8").count("\n") - 1 == len(load_sample(sample_id, built).items)  # header + its items
    # the person may still pick an older sample: the box does not jump back
    at.selectbox(key="audit_download_sample").set_value(drawn[0])
    at.run()
    assert at.selectbox(key="audit_download_sample").value == drawn[0]
    assert f"--sample {drawn[0]} " in "\n".join(str(c.value) for c in at.code)


def test_the_corrected_values_engine_is_in_the_address(app, built):
    """Issue 45 item 7: the corrected values' engine choice was not in the address, so a copied link
    reopened them for all engines."""
    store = LabelStore(labels_path(built))
    from pipeline.audit.sample import load_sample

    s = load_sample("demo-scripted-pair-n70-s1", built)
    for item in s.items["item_id"]:
        store.record(s.sample_id, item, "Cleo", "support", "full")
    at = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted", corrected="show")
    assert at.session_state["scorecard_ppi_domain"] == "all engines"
    assert "ppi_engine" not in at.query_params  # all engines: the plain address
    at.session_state["scorecard_ppi_domain"] = "Parrot"  # as a click on the Engines control sets it
    at.run()
    assert not at.exception, at.exception
    assert at.query_params["ppi_engine"] in ("Parrot", ["Parrot"])
    again = goto(app, "pages/scorecard.py", dataset="demo", judge="scripted", corrected="show", ppi_engine="Lumen")
    assert again.session_state["scorecard_ppi_domain"] == "Lumen"
    assert "Lumen" in page_text(again)
