"""The "Over time" page (AppTest) on a dataset of the fake engines with repeats and two waves: what
it shows comes from the run's precomputed summaries, its state lives in the address, and a
dataset without repeats says how to collect them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from timing import guard

from pipeline.testing.fake_variation import Variation, synthetic_records

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "over_time.py")
HOSTILE = "<b>Hostile</b> engine"

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

ENGINES = {"Alpha": Variation(seed=1, accuracy=0.95, perturb=0.1), HOSTILE: Variation(seed=2, accuracy=0.5, perturb=0.5)}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("over-time-page")
    data = root / "waves.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_records(ENGINES, queries=12, repeats=3, waves=2)),
                    encoding="utf-8")
    once = root / "once.jsonl"
    once.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("wave", "repeat", "captured_at")}) + "\n"
                            for r in synthetic_records({"Alpha": Variation()}, queries=3, repeats=1)), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("AEE_RESULTS_DIR", str(root / "results"))
    mp.setenv("AEE_OVER_TIME_MEANING", "lexical")
    run_dataset("waves", data, judge_name="recorded", progress=False)
    run_dataset("once", once, judge_name="recorded", progress=False)
    mp.undo()
    return root / "results"


@pytest.fixture
def page(results, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["dataset"] = "waves"
    return at


def _table(at: AppTest, column: str):
    """The dataframe or static table shown with this column (AppTest does not keep a dataframe's key);
    a Markdown link cell ("[open in the Inspector](inspector?...)") reads as its address."""
    frame = next(d.value for d in [*at.dataframe, *at.table] if column in d.value.columns).copy()
    if "side by side" in frame.columns:
        links = frame["side by side"].str.extract(r"^\[open in the Inspector\]\((.+)\)$")[0]
        assert links.notna().all(), list(frame["side by side"])  # every row is a link, never a bare address
        frame["side by side"] = links
    return frame


def _text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader])


def test_shows_stability_waves_spread_and_flips(page):
    at = page.run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "How much answers and sources change between repeats" in text
    assert "Citation accuracy across waves" in text
    assert "From 2026\\-01\\-05 to 2026\\-01\\-12" in text  # markdown-escaped
    assert "judge uncertainty is not included" in text.lower()
    stability = _table(at, "Statements kept")
    assert set(stability["engine"]) == {"Alpha", HOSTILE}
    alpha = stability.set_index("engine").loc["Alpha"]
    assert alpha["Statements kept"] == pytest.approx(0.81, abs=0.15)  # (1 - 0.1)^2 over 12 queries x 3 pairs
    # the first engine in order ("<" sorts before letters), the default metric, the latest wave
    assert at.query_params["engine"] == HOSTILE and at.query_params["metric"] == "citation_accuracy"
    assert at.query_params["wave"] == "2026-01-12"


def test_flips_link_to_the_inspector_and_state_is_in_the_address(page):
    page.query_params["engine"] = HOSTILE
    page.query_params["wave"] = "2026-01-05"
    at = page.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="over_time_engine").value == HOSTILE
    flips = _table(at, "ratings by repeat")
    assert len(flips) > 0  # accuracy 0.5 on 4 statements: most queries flip between bands
    first = flips.iloc[0]["side by side"]
    assert first.startswith("inspector?dataset=waves&judge=recorded&answer=")
    assert first.count("&side=") == 3  # every asking of the query in this wave, side by side
    assert set(flips["ratings by repeat"].str.len()) <= {2, 3}
    # the hostile engine's name is escaped wherever markdown shows it
    assert all("<b>" not in m.value or "&lt;b&gt;" in m.value for m in at.markdown)


def test_dataset_without_repeats_says_how_to_collect(page):
    page.query_params["dataset"] = "once"
    at = page.run()
    assert not at.exception, at.exception
    assert "aee collect" in at.code[0].value and "--repeat 3" in at.code[0].value
    assert any("nothing to follow over time" in i.value for i in at.info)
    at.button(key="over_time_switch_waves").click().run()
    assert not at.exception and at.selectbox(key="over_time_dataset").value == "waves"
    assert "How much answers and sources change between repeats" in _text(at)


INSPECTOR = str(ROOT / "pages" / "inspector.py")


def _inspector(results, monkeypatch, tmp_path, link: str) -> AppTest:
    """The Inspector opened on a link of the Over time page (its query string)."""
    from urllib.parse import parse_qs

    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(INSPECTOR, default_timeout=guard(90))  # a hang guard
    for name, values in parse_qs(link.split("?", 1)[1]).items():
        at.query_params[name] = values if len(values) > 1 else values[0]
    return at


def test_a_flipped_query_opens_its_askings_side_by_side(page, results, monkeypatch, tmp_path):
    page.query_params["engine"] = HOSTILE
    page.query_params["wave"] = "2026-01-05"
    over_time = page.run()
    flips = _table(over_time, "ratings by repeat")
    row = flips.iloc[0]
    at = _inspector(results, monkeypatch, tmp_path, row["side by side"]).run()
    assert not at.exception, at.exception
    side = at.multiselect(key="ins_side")
    assert len(side.value) == 3  # the three askings of the wave
    assert at.selectbox(key="ins_engine").value == HOSTILE
    labels = [side.format_func(v) for v in side.value]
    assert labels == ["2026-01-05 #1", "2026-01-05 #2", "2026-01-05 #3"]
    # the metrics table: one column per asking, the metrics whose rating changes first
    metrics = _table(at, "rating changes")
    assert list(metrics.columns) == ["metric", "rating changes", *labels]
    changed = list(metrics["rating changes"])
    assert changed.count("yes") >= 1 and changed[:changed.count("yes")] == ["yes"] * changed.count("yes")
    accuracy = metrics.set_index("metric").loc["Citation accuracy"]
    assert accuracy["rating changes"] == "yes"
    assert row["ratings by repeat"] == "".join(accuracy[label][-1] for label in labels)  # the same bands, in order
    # each asking with its heading and its matrices (citation and support panels)
    headings = [m.value for m in at.markdown if m.value.startswith("##### ")]
    assert [h.removeprefix("##### ").replace("\\", "") for h in headings] == [
        f"Wave 2026-01-05, asking {k}" for k in (1, 2, 3)]
    matrices = [h for h in at.get("html") if "Citations: what the answer cites" in h.proto.body]
    assert len(matrices) == 3
    # the state is in the address, and the hostile engine's name is escaped
    assert at.query_params["side"] == list(side.value)
    assert all("<b>" not in m.value or "&lt;b&gt;" in m.value for m in at.markdown)


def test_choosing_one_asking_shows_that_answer(page, results, monkeypatch, tmp_path):
    page.query_params["engine"] = HOSTILE
    page.query_params["wave"] = "2026-01-05"
    flips = _table(page.run(), "ratings by repeat")
    link = flips.iloc[0]["side by side"]
    at = _inspector(results, monkeypatch, tmp_path, link).run()
    second = at.multiselect(key="ins_side").value[1]
    at.multiselect(key="ins_side").set_value([]).run()
    at.selectbox(key="ins_asking").set_value(second).run()
    assert not at.exception, at.exception
    assert at.query_params["answer"] == second and "side" not in at.query_params
    assert any(second in c.value.replace("\\", "") for c in at.caption)


def test_compare_says_one_asking_is_one_draw(results, monkeypatch, tmp_path):
    """Issue 42: on a dataset with repeats, the Compare page shows one asking per engine and says so,
    pointing to the Over time page for whether the engines differ beyond the draw."""
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=60)
    at.query_params["dataset"] = "waves"
    at.run()
    assert not at.exception, at.exception
    info = [i.value for i in at.info]
    # 3 repeats in each of 2 waves: 6 askings per engine and query
    assert any("answered this query 6 times and" in i and "6 times (repeats or waves). One asking of each is shown" in i
               and "over_time?dataset=waves&judge=recorded" in i for i in info), info
