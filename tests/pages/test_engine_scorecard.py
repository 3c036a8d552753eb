"""The scorecard says where engine answers' source text came from (collect --sources), read from the
run manifest; canonical datasets show no such line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("engines") / "results"
    run_dataset("engines", ROOT / "tests" / "fixtures" / "engines", judge_name="recorded", progress=False, root=root)
    run_dataset("fig7", ROOT / "tests" / "fixtures" / "worked_example.json", progress=False, root=root)
    return root


def _captions(results: Path, monkeypatch, tmp_path, dataset: str) -> str:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/scorecard.py")
    at.run()
    at.selectbox(key="scorecard_dataset").set_value(dataset).run()
    assert not at.exception
    return "\n".join(str(c.value) for c in at.caption).replace("\\", "")


def test_scorecard_names_the_source_text_of_engine_answers(results, monkeypatch, tmp_path):
    text = _captions(results, monkeypatch, tmp_path, "engines")
    # 20 since `aee run --path` reads a folder of folders (issue 42): the 7 top-level responses and the 13 of shapes/
    assert "Source text judged: the engines' own snippets (not the pages) for 20 answer(s)." in text


def test_no_source_line_for_canonical_data(results, monkeypatch, tmp_path):
    assert "Source text judged" not in _captions(results, monkeypatch, tmp_path, "fig7")


def test_overview_shows_the_import_report(results, monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    frames = [d.value for d in at.dataframe if "file" in d.value.columns]
    (report,) = [f for f in frames if "openai_responses.json" in set(f["file"])]
    row = report.set_index("file").loc["openai_responses.json"]
    assert (row["answers"], row["sources"], row["offsets"], row["by text"], row["dropped"]) == (1, 5, 5, 0, 1)
    assert report.set_index("file").loc["perplexity_sonar.json", "markers"] == 6
    text = "\n".join(str(m.value) for m in at.markdown).replace("\\", "")  # markdown escapes
    assert "**openai_responses.json**, dropped: 1 citation(s) point outside the answer text" in text
