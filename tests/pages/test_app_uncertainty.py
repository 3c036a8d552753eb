"""Uncertain labels, the judge's reliability line, the second opinion and the check results, as the
pages show them (Streamlit AppTest): counts equal the pipeline's report, no raw None/nan anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from openai_fixtures import TEST_KEY, _server_module, fake_openai, smart_reply  # noqa: F401 - pytest fixtures
from streamlit.testing.v1 import AppTest

from pipeline.judges import get_judge
from pipeline.judges.measure.checks import checks_path

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = str(ROOT / "pages" / "inspector.py")
RESCORE = str(ROOT / "pages" / "rescore.py")
JUDGES = str(ROOT / "pages" / "judges.py")
RAW_MISSING = re.compile(r"(?<![\w.])(None|nan|NaN|NaT|<NA>)(?![\w])")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """The teaching corpus under the offline judge, and the check results of both offline judges
    (as `aee build-default` saves them)."""
    from pipeline.importers import known_datasets
    from pipeline.judges.measure.checks import load_cases, run_checks, save_checks
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("uncertainty") / "results"
    run_dataset("demo", known_datasets()["demo"].path, judge_name="offline", root=root, progress=False, use_cache=False)
    for judge in ("offline", "offline:lexical"):
        save_checks(run_checks(get_judge(judge, cache=False), load_cases()), root=root)
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
    from pipeline.report.scoring import answer_report

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
    saved = pd.read_parquet(checks_path("offline"))
    at = AppTest.from_file(JUDGES, default_timeout=60).run()
    assert not at.exception, at.exception
    passed, total = int(saved["passed"].sum()), len(saved)
    assert any(f"{passed} of {total} cases passed" in m.value for m in at.markdown)
    tables = [getattr(d.value, "data", d.value) for d in at.dataframe]
    # the pass rates: a static table of escaped markdown (it wraps long capability names at any width)
    checks = next(t.value for t in at.table if "capability" in t.value.columns and "pass rate" in t.value.columns)
    checks = checks.map(lambda v: v.replace("\\", ""))
    stance = checks[(checks["kind"] == "stance") & (checks["capability"] == "(all)")].iloc[0]
    n_stance = int((saved["kind"] == "stance").sum())
    ok_stance = int(saved.loc[saved["kind"] == "stance", "passed"].sum())
    assert stance["passed"] == f"{ok_stance} of {n_stance}"
    assert stance["pass rate"] == f"{ok_stance / n_stance:.0%}"
    assert not any("got" in t.columns for t in tables)  # the failed cases are drawn only once their box is opened
    at.session_state["judges_failed_box_offline"] = True
    at.run()
    failed = next(t for t in [getattr(d.value, "data", d.value) for d in at.dataframe] if "got" in t.columns)
    assert len(failed) == total - passed
    first = saved.loc[~saved["passed"]].iloc[0]
    row = failed[failed["case"] == first["id"]].iloc[0]
    assert row["expected"] == first["expected"].replace("|", " or ")
    bands = next(t for t in [getattr(d.value, "data", d.value) for d in at.table] if "uncertain band" in t.columns)
    assert set(bands["judge"]) == {"offline", "offline:lexical", "nli", "minicheck"}
    # each offline judge's band around its own cut points (cal7): 0.184 / 0.418 and (lexical model) 0.089 / 0.328
    band = dict(zip(bands["judge"], bands["uncertain band"]))
    assert band["offline"] == "scores from 0.13 to 0.23 or from 0.37 to 0.47"
    assert band["offline:lexical"] == "scores from 0.04 to 0.14 or from 0.28 to 0.38"
    # the lexical judge's check results, measured like the offline judge's
    lexical = pd.read_parquet(checks_path("offline:lexical"))
    ok = int(lexical["passed"].sum())
    line = (f"**offline:lexical**: {ok} of {len(lexical)} cases passed ({ok / len(lexical):.0%}), "
            f"rules {get_judge('offline:lexical').prompt_version}")
    assert line in [_plain(m.value) for m in at.markdown], [m.value for m in at.markdown if "cases passed" in m.value]
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
    # without configuration, the judges that need a model, a server or a key say why in one line each;
    # the lexical offline judge, which needs nothing, is the one offered
    why = [_plain(c.value) for c in at.caption if "not available here" in _plain(c.value)]
    assert len(why) == 3 and any("set AEE_NLI_MODEL" in w for w in why), why
    assert at.selectbox(key="rs_second_judge").options == ["offline:lexical"]
    # an OpenAI-compatible endpoint is configured: the openai judge is offered and run
    monkeypatch.setenv("AEE_OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AEE_OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("AEE_OPENAI_MODEL", "fake-model")
    at.run()
    # (minicheck falls back to the same OpenAI-compatible endpoint when it has none of its own)
    assert at.selectbox(key="rs_second_judge").options[0] == "offline:lexical"
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


def _tinted_rows(element) -> set[int]:
    """Rows of a styled table whose cells carry the "differs" tint (read from the Styler's CSS)."""
    styles = element.proto.arrow_data.styler.styles
    tinted = set()
    for rule in styles.split("}"):
        if "rgba(255, 164, 33, 0.22)" in rule:
            tinted |= {int(n) for n in re.findall(r"_row(\d+)_col0\b", rule)}
    return tinted


def _example_diff(first: str, second: str) -> dict:
    """The pipeline's own comparison of the two judges on the example Re-score loads."""
    from pipeline.annotate import annotate_answer
    from pipeline.importers.canonical import load_canonical, parse_answer, to_canonical
    from pipeline.report.second_opinion import compare_judges
    from pipeline.storage.paths import data_dir

    example = load_canonical(data_dir() / "demo" / "answers.jsonl")[0]
    parsed = parse_answer(to_canonical(example), "pasted answer", dataset="pasted")
    return compare_judges(annotate_answer(parsed, get_judge(first)), annotate_answer(parsed, get_judge(second)))


def _expected_differences(first: str, second: str) -> list[tuple[int, int, str, str]]:
    """(statement, source, first label, second label) of every support label the two judges give
    differently on the example Re-score loads, computed by the pipeline itself."""
    diff = _example_diff(first, second)
    assert all(x["kind"] == "support" for x in diff["labels"] if x["differs"])  # the same rules for the rest
    return [(x["statement"], x["source"], x["first"], x["second"]) for x in diff["labels"] if x["differs"]]


def test_rescore_second_opinion_by_the_lexical_judge_is_one_click_on_a_fresh_setup():
    expected = _expected_differences("offline", "offline:lexical")
    assert expected  # the first teaching example: S3 x [3] is partial for offline, full for offline:lexical
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.button(key="rs_load").click().run()
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    # nothing configured, and still a second judge ready: chosen by default, described in a line
    assert at.selectbox(key="rs_second_judge").value == "offline:lexical"
    assert any(_plain(c.value).startswith("offline:lexical: The offline judge with its lexical-only support model")
               and "only support labels can differ" in _plain(c.value) for c in at.caption)
    at.button(key="rs_second_go").click().run()  # the one click
    assert not at.exception, at.exception
    assert not at.error, [e.body for e in at.error]
    assert any(_plain(m.value) == "##### Second opinion: offline vs offline:lexical" for m in at.markdown)
    assert any(c.value.startswith("Both judges label relevance, stance and confidence with the same offline rules")
               for c in at.caption)
    labels_element = next(d for d in at.dataframe if "label" in d.value.columns and "differs" in d.value.columns)
    labels = labels_element.value
    shown = [(row["statement"].split(":")[0], row["source"], row["offline"].split(" ")[0],
              row["offline:lexical"].split(" ")[0]) for row in labels.to_dict("records")]
    assert shown == [(f"S{s + 1}", f"[{src}]", a, b) for s, src, a, b in expected]
    assert set(labels["label"]) == {"support"} and set(labels["differs"]) == {"≠ differs"}
    assert _tinted_rows(labels_element) == set(range(len(labels)))  # every differing row highlighted
    # ≈ after a label whose score sits in that judge's uncertain band, as each judge's report says; on this
    # example (cal7) the lexical judge's differing pairs sit near its partial cut point (0.089), the
    # offline judge's scores near none of its own
    diff = _example_diff("offline", "offline:lexical")
    unsure = [{(u["statement"], u["source"]) for u in r["uncertain_support"]} for r in diff["reports"]]
    for row, (s, src, _, _) in zip(labels.to_dict("records"), expected):
        assert row["offline"].endswith(" ≈") == ((s, src) in unsure[0])
        assert row["offline:lexical"].endswith(" ≈") == ((s, src) in unsure[1])
    assert any(row["offline:lexical"].endswith(" ≈") for row in labels.to_dict("records"))
    assert any("that judge's own score" in c.value and "uncertain band" in c.value for c in at.caption)
    # the metrics: only those that differ (with cal7 none does on this example: the judges part on
    # none against partial, and the metrics count full only), then all of them, differing ones tinted
    if diff["metrics_differing"]:
        metrics_element = next(d for d in at.dataframe if "difference" in d.value.columns)
        assert len(metrics_element.value) == diff["metrics_differing"]
        assert set(metrics_element.value["differs"]) == {"≠ differs"}
    else:
        assert not any("difference" in d.value.columns for d in at.dataframe)
        assert any(c.value == "The two judges give every metric the same value." for c in at.caption)
    at.toggle(key="rs_second_only_metrics").set_value(False).run()
    metrics_element = next(d for d in at.dataframe if "difference" in d.value.columns)
    assert len(metrics_element.value) == len(diff["metrics"])
    assert _tinted_rows(metrics_element) == {k for k, d in enumerate(metrics_element.value["differs"]) if d == "≠ differs"}
    # all labels: only the differing ones are tinted
    at.toggle(key="rs_second_only").set_value(False).run()
    labels_element = next(d for d in at.dataframe if "label" in d.value.columns and "differs" in d.value.columns)
    every = labels_element.value
    assert len(every) > len(labels)
    assert _tinted_rows(labels_element) == {k for k, d in enumerate(every["differs"]) if d == "≠ differs"}
    assert (every["differs"] == "≠ differs").sum() == len(expected)
    _no_raw_missing(at)


def test_rescore_with_the_lexical_judge_offers_the_offline_judge_as_second_opinion():
    at = AppTest.from_file(RESCORE, default_timeout=120).run()
    at.button(key="rs_load").click().run()
    at.radio(key="rs_judge").set_value("Offline judge, lexical-only support (offline:lexical)").run()
    at.button(key="rs_score").click().run()
    assert not at.exception, at.exception
    header = [_plain(c.value) for c in at.caption if _plain(c.value).startswith("How far to trust these labels")]
    # its own measured figures: the saved check results of offline:lexical
    saved = pd.read_parquet(checks_path("offline:lexical"))
    assert header and header[0].startswith("How far to trust these labels: offline:lexical judge:")
    assert f"{saved['passed'].mean():.0%} of {len(saved)} behavioural checks passed" in header[0]
    assert at.selectbox(key="rs_second_judge").options[0] == "offline"
    at.button(key="rs_second_go").click().run()
    assert not at.exception, at.exception
    assert any(_plain(m.value) == "##### Second opinion: offline:lexical vs offline" for m in at.markdown)
    labels = next(d.value for d in at.dataframe if "label" in d.value.columns and "differs" in d.value.columns)
    flipped = [(s, src, b, a) for s, src, a, b in _expected_differences("offline", "offline:lexical")]
    assert [(r["statement"].split(":")[0], r["source"], r["offline:lexical"].split(" ")[0], r["offline"].split(" ")[0])
            for r in labels.to_dict("records")] == [(f"S{s + 1}", f"[{src}]", a, b) for s, src, a, b in flipped]
    _no_raw_missing(at)
