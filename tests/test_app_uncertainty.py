"""Uncertain labels, the judge's reliability line, the second opinion and the check results, as the
pages show them (Streamlit AppTest): counts equal the pipeline's report, no raw None/nan anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from openai_fixtures import TEST_KEY, _server_module, fake_openai, smart_reply  # noqa: F401 - pytest fixtures
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = str(ROOT / "pages" / "inspector.py")
RESCORE = str(ROOT / "pages" / "rescore.py")
JUDGES = str(ROOT / "pages" / "judges.py")
RAW_MISSING = re.compile(r"(?<![\w.])(None|nan|NaN|NaT|<NA>)(?![\w])")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The teaching corpus under the offline judge, and the offline judge's check results."""
    from pipeline.importers import known_datasets
    from pipeline.judge_checks import load_cases, run_checks, save_checks
    from pipeline.judges import get_judge
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("uncertainty") / "results"
    run_dataset("demo", known_datasets()["demo"].path, judge_name="offline", root=root, progress=False, use_cache=False)
    save_checks(run_checks(get_judge("offline", cache=False), load_cases()), root=root)
    return root


@pytest.fixture(autouse=True)
def env(results, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY", "AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL", "AEE_OPENAI_MODEL",
                 "AEE_NLI_MODEL", "AEE_MINICHECK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _text(at) -> list[str]:
    out = [str(e.value) for kind in ("title", "subheader", "markdown", "caption", "code") for e in getattr(at, kind)]
    out += [str(e.body) for kind in ("info", "warning", "success", "error") for e in getattr(at, kind)]
    for frame in [d.value for d in at.dataframe] + [t.value for t in at.table]:
        frame = getattr(frame, "data", frame)  # a Styler
        out += [str(c) for c in frame.columns] + [str(v) for v in frame.to_numpy().ravel()]
    return out


def _plain(markdown: str) -> str:
    """Markdown-escaped text as a reader sees it."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _no_raw_missing(at) -> None:
    bad = [t for t in _text(at) if RAW_MISSING.search(t)]
    assert not bad, bad[:5]


def _uncertain_answer() -> tuple[str, int]:
    """An answer of the corpus with uncertain support labels, and how many the pipeline finds."""
    from dashboard import data
    from pipeline.scoring import answer_report

    for aid, annotated in sorted(data.annotated_answers("demo", "offline").items()):
        n = len(answer_report(annotated)["uncertain_support"])
        if n:
            return aid, n
    pytest.fail("no uncertain support label in the teaching corpus under the offline judge")


def test_inspector_shows_uncertain_count_and_the_judges_reliability():
    answer, n = _uncertain_answer()
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.query_params.update({"dataset": "demo", "judge": "offline", "answer": answer})
    at.run()
    assert not at.exception, at.exception
    noun = "label" if n == 1 else "labels"
    assert any(f"≈ {n} support {noun} uncertain" in m.value for m in at.markdown), [m.value for m in at.markdown][:20]
    header = [_plain(c.value) for c in at.caption if c.value.startswith("How far to trust these labels")]
    # measured here: the checks (no agreement saved in this results folder: the line says how to measure it)
    assert header and "offline judge:" in header[0] and "behavioural checks passed" in header[0]
    assert "agreement with experts not measured here (aee judges evaluate --dataset expertqa --judge offline)" in header[0]
    data = json.loads(at.get("bidi_component")[0].proto.json)  # what the answer component receives
    assert data["uncertain_count"] == n
    assert data["reliability"]["url"] == "judges" and data["reliability"]["line"].startswith("offline judge:")
    assert sum(1 for p in data["pairs"].values() if p["uncertain"]) >= n
    _no_raw_missing(at)


def test_judges_page_lists_check_results_and_failures_and_the_bands():
    import pandas as pd

    from pipeline.judge_checks import checks_path

    saved = pd.read_parquet(checks_path("offline"))
    at = AppTest.from_file(JUDGES, default_timeout=60).run()
    assert not at.exception, at.exception
    passed, total = int(saved["passed"].sum()), len(saved)
    assert any(f"{passed} of {total} cases passed" in m.value for m in at.markdown)
    tables = [getattr(d.value, "data", d.value) for d in at.dataframe]
    checks = next(t for t in tables if "capability" in t.columns and "pass rate" in t.columns)
    stance = checks[(checks["kind"] == "stance") & (checks["capability"] == "(all)")].iloc[0]
    n_stance = int((saved["kind"] == "stance").sum())
    ok_stance = int(saved.loc[saved["kind"] == "stance", "passed"].sum())
    assert stance["passed"] == f"{ok_stance} of {n_stance}"
    assert stance["pass rate"] == f"{ok_stance / n_stance:.0%}"
    failed = next(t for t in tables if "got" in t.columns)
    assert len(failed) == total - passed
    first = saved.loc[~saved["passed"]].iloc[0]
    row = failed[failed["case"] == first["id"]].iloc[0]
    assert row["expected"] == first["expected"].replace("|", " or ")
    bands = next(t for t in [getattr(d.value, "data", d.value) for d in at.table] if "uncertain band" in t.columns)
    assert set(bands["judge"]) == {"offline", "nli", "minicheck"}
    _no_raw_missing(at)


def test_judges_page_says_how_to_produce_check_results(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "empty"))
    at = AppTest.from_file(JUDGES, default_timeout=60).run()
    assert not at.exception, at.exception
    assert any("No check results are saved yet" in i.body for i in at.info)
    assert any(c.value == "aee judges check --judge offline" for c in at.code)


def test_rescore_second_opinion_side_by_side(fake_openai, monkeypatch):  # noqa: F811 - the fixture
    fake_openai.handler = smart_reply({"support": "none"})
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.button(key="rs_load").click().run()
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    assert any(_plain(c.value).startswith("How far to trust these labels: offline judge:") for c in at.caption)
    # without configuration, the other judges say why in one line each, and no second opinion is offered
    why = [_plain(c.value) for c in at.caption if "not available here" in _plain(c.value)]
    assert len(why) == 3 and any("set AEE_NLI_MODEL" in w for w in why), why
    assert not [b for b in at.button if b.key == "rs_second_go"]
    # an OpenAI-compatible endpoint is configured: the openai judge is offered and run
    monkeypatch.setenv("AEE_OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AEE_OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("AEE_OPENAI_MODEL", "fake-model")
    at.run()
    # (minicheck falls back to the same OpenAI-compatible endpoint when it has none of its own)
    assert "openai" in at.selectbox(key="rs_second_judge").options and "nli" not in at.selectbox(key="rs_second_judge").options
    at.selectbox(key="rs_second_judge").set_value("openai").run()
    at.button(key="rs_second_go").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.body for e in at.error]
    assert any(m.value.startswith("##### Second opinion: offline vs openai") for m in at.markdown)
    tables = [getattr(d.value, "data", d.value) for d in at.dataframe]
    metrics = next(t for t in tables if "difference" in t.columns)
    labels = next(t for t in tables if "source" in t.columns and "differs" in t.columns)
    assert list(metrics.columns) == ["metric", "offline", "openai:fake-model", "difference", "differs"]
    # every support label the openai judge gave is "none"; rows shown are those where offline said otherwise
    support = labels[labels["label"] == "support"]
    assert len(support) and all(v.startswith("none") for v in support.iloc[:, 4])
    assert all(not v.startswith("none") for v in support.iloc[:, 3])
    assert set(labels["differs"]) == {"≠ differs"}
    accuracy = metrics[metrics["metric"] == "Citation accuracy"].iloc[0]
    assert accuracy.iloc[2] == "0.00%" and accuracy["differs"] == "≠ differs"
    served = len(fake_openai.chat_requests)
    at.button(key="rs_second_go").click().run()  # same input, same judge: from the session, no new request
    assert len(fake_openai.chat_requests) == served
    # the first result is still on the page
    assert any(m.value == "#### Metrics for this answer" for m in at.markdown)
    _no_raw_missing(at)
