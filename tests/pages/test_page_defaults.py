"""Which dataset, judge and sample size a page opens with (issue 45 item 6): a page opens on a dataset
it has something to show for, and the Audit page offers a draw that can give every engine a
corrected value, under the toolkit's default judge rather than the labels that came with the data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_fixtures import build_audit_results, goto

from pipeline.testing.fake_variation import Variation, synthetic_records

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_datasets(tmp_path_factory) -> Path:
    """`big`: 40 answers asked once, fact questions, no confidence labels (the largest, so the plain
    default); `small`: 16 answers, two askings per query, debate questions with confidence labels."""
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("defaults")
    big = []
    for r in synthetic_records({"Alpha": Variation(), "Beta": Variation()}, queries=20, repeats=1):
        r = {k: v for k, v in r.items() if k not in ("wave", "repeat", "captured_at")}
        r["labels"] = {k: v for k, v in r["labels"].items() if k != "confidence"}
        big.append(r)
    small = [{**r, "query_type": "debate"} for r in synthetic_records({"Alpha": Variation(), "Beta": Variation()},
                                                                      queries=4, repeats=2)]
    root = base / "results"
    for name, rows in (("big", big), ("small", small)):
        path = base / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        mp = pytest.MonkeyPatch()
        mp.setenv("AEE_OVER_TIME_MEANING", "lexical")
        run_dataset(name, path, judge_name="recorded", progress=False, root=root)
        mp.undo()
    return root


@pytest.mark.parametrize("page", ["confidence.py", "conflict.py", "over_time.py"])
def test_a_page_opens_on_a_dataset_it_can_show(two_datasets, monkeypatch, tmp_path, page):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(two_datasets))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_OVER_TIME_MEANING", "lexical")
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=90).run()
    assert not at.exception, at.exception
    box = next(s for s in at.selectbox if s.label == "Dataset")
    assert box.value == "small"
    # the plain default (every other page's) is the larger dataset: the page chose for what it shows
    from dashboard import data

    assert data.default_dataset(["big", "small"]) == "big"


def test_a_link_still_opens_the_dataset_it_names(two_datasets, monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(two_datasets))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "confidence.py"), default_timeout=90)
    at.query_params["dataset"] = "big"
    at.run()
    assert next(s for s in at.selectbox if s.label == "Dataset").value == "big"


@pytest.fixture(scope="module")
def audit_results(tmp_path_factory) -> Path:
    return build_audit_results(tmp_path_factory.mktemp("audit_defaults"))


def test_the_audit_draft_is_the_default_judge_and_enough_items(audit_results, monkeypatch, tmp_path):
    """The form offered 100 items (then warned that too few for any corrected value) and the teaching
    corpus's own recorded labels as the judge to audit."""
    from pipeline.audit.population import build_frame
    from pipeline.audit.ppi_cells import items_for_corrected_values, short_cells
    from pipeline.audit.sample import draw_sample
    from pipeline.storage.tables import load_annotated

    monkeypatch.setenv("AEE_RESULTS_DIR", str(audit_results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at = goto(at, "pages/audit.py", dataset="demo", view="draw")
    judge = next(s for s in at.selectbox if s.label == "Judge to audit")
    assert judge.value == "scripted"  # a computed judge, not the carried "recorded" labels
    scope = next(s for s in at.selectbox if s.label == "Sources per statement").value
    drafted = at.number_input[0].value
    frame = build_frame("demo", load_annotated("demo", "scripted", audit_results), "pair", scope)
    assert drafted == items_for_corrected_values(frame, dataset="demo", judge="scripted")
    assert drafted % 10 == 0 and drafted > 100  # 100 was too few on the teaching corpus
    # drawn as offered, no engine is short; ten items fewer, one is
    assert short_cells(draw_sample("demo", "scripted", drafted, scope=scope, root=audit_results)) == []
    assert short_cells(draw_sample("demo", "scripted", drafted - 10, scope=scope, root=audit_results))
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    assert not any("Even labelled in full" in str(w.value) for w in at.warning)


@pytest.fixture(scope="module")
def compare_datasets(tmp_path_factory) -> Path:
    """`single`: 30 answers, each query put to one engine (the largest, so the other pages' default);
    `pair`: two engines asked 6 queries once each; `waves`: two engines asked 4 queries 3 times each,
    built last and larger than `pair` (the size rule alone opens Compare on it)."""
    from pipeline.runner import run_dataset
    from pipeline.testing.fake_variation import canonical_record

    def strip(r: dict) -> dict:
        return {k: v for k, v in r.items() if k not in ("wave", "repeat", "captured_at")}

    single = [strip(canonical_record(("Alpha", "Beta")[q % 2], f"Lone question {q}?", 0, Variation())) for q in range(30)]
    pair = [strip(r) for r in synthetic_records({"Alpha": Variation(), "Beta": Variation()}, queries=6, repeats=1)]
    waves = list(synthetic_records({"Alpha": Variation(), "Beta": Variation()}, queries=4, repeats=3))
    base = tmp_path_factory.mktemp("compare_defaults")
    root = base / "results"
    for name, rows in (("single", single), ("pair", pair), ("waves", waves)):
        path = base / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("AEE_OVER_TIME_MEANING", "lexical")
            run_dataset(name, path, judge_name="recorded", progress=False, root=root)
    return root


def test_compare_opens_on_a_dataset_two_engines_answered_once_and_says_why(compare_datasets, monkeypatch, tmp_path):
    """Item 6: Compare opened on the last dataset built (the largest one it could show, a set of
    repeats), with no word on why it left the dataset every other page showed."""
    from audit_fixtures import page_text

    monkeypatch.setenv("AEE_RESULTS_DIR", str(compare_datasets))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert at.session_state["shared_dataset"] == "single"  # what the other pages open on
    at = goto(at, "pages/compare.py")
    assert at.selectbox(key="cmp_dataset").value == "pair"
    assert "The other pages show single, which has no query two engines answered: Compare opened on pair" \
        in page_text(at)
    # the size rule the page used before picks the set of repeats, built last
    from dashboard import data

    assert data.default_dataset(["pair", "waves"]) == "waves"
    # a person's own choice stays, with no note (it is the shared dataset now)
    at.selectbox(key="cmp_dataset").select("waves").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="cmp_dataset").value == "waves"
    assert "The other pages show" not in page_text(at)
    # leaving for a page that shows `single` and coming back opens a dataset Compare can show
    at = goto(at, "pages/scorecard.py", dataset="single")
    at.query_params.clear()
    at = goto(at, "pages/compare.py")
    assert at.selectbox(key="cmp_dataset").value == "pair"
