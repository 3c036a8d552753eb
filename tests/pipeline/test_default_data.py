"""`make run`'s build step: builds what is missing and rebuilds what an older judge version made."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipeline import default_data
from pipeline.importers import known_datasets
from pipeline.judges import get_judge
from pipeline.judges.measure.agreement import save_agreement
from pipeline.storage.store import built_prompt_versions


@pytest.fixture
def no_expertqa(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("EXPERTQA_DIR", str(tmp_path / "absent"))  # skip the ExpertQA steps: fast
    return tmp_path / "results"


def test_second_build_reuses_results(no_expertqa):
    first = list(default_data.build_default(progress=False))
    assert any(line.startswith("built demo (recorded)") for line in first)
    assert any(line.startswith("built demo (offline)") for line in first)
    # both judges that need nothing get their check results (and, with ExpertQA, their agreement)
    for judge in ("offline", "offline:lexical"):
        assert f"skip agreement ({judge}): ExpertQA not found" in first
        assert any(line.startswith(f"built checks ({judge}): ") for line in first)
    # the Usability study page's simulated log is searched now (or was, by another test of this worker)
    assert any(line.startswith(("built study log (seed 0): ", "ok   study log (seed 0)")) for line in first), first
    from pipeline.study.simulate import cached_counts_path

    assert cached_counts_path(0).is_file()
    second = list(default_data.build_default(progress=False))
    assert "ok   study log (seed 0): already searched" in second
    assert "ok   demo (recorded): results already built" in second
    assert "ok   demo (offline): results already built" in second
    assert "ok   checks (offline:lexical): already run" in second
    assert sorted(p.name for p in (no_expertqa / "judge_checks").glob("*.parquet")) == [
        "offline.parquet", "offline_lexical.parquet"]
    assert built_prompt_versions("demo", "offline") == {get_judge("offline").prompt_version}


def test_results_of_an_older_judge_version_are_rebuilt(no_expertqa, monkeypatch):
    list(default_data.build_default(progress=False))
    built = get_judge("offline").prompt_version
    # as if the judge had been recalibrated since: the build finds results of an older version
    real = default_data.current_prompt_version
    monkeypatch.setattr(default_data, "current_prompt_version", lambda judge: "offline-v9" if judge == "offline" else real(judge))
    lines = list(default_data.build_default(progress=False))
    assert f"note demo (offline): built with {built}, now offline-v9: rebuilding" in lines
    assert any(line.startswith("built demo (offline)") for line in lines)
    assert "ok   demo (recorded): results already built" in lines  # data-carried labels never go stale


def test_results_that_are_not_a_whole_set_are_rebuilt(no_expertqa):
    list(default_data.build_default(progress=False))
    from pipeline.storage.store import result_set

    manifest = result_set("demo") / "offline" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"limit"', '"limit "'))  # changed after its run
    lines = list(default_data.build_default(progress=False))
    assert any(line.startswith("note demo: results not shown (") and line.endswith("rebuilding") for line in lines), lines
    assert any(line.startswith("built demo (offline)") for line in lines)
    assert any(line.startswith("built demo (recorded)") for line in lines)
    from pipeline.storage.store import broken_datasets

    assert broken_datasets() == {}


def test_results_scored_by_an_older_metric_version_are_rescored(no_expertqa, monkeypatch):
    import dataclasses

    from pipeline.metrics import METRICS

    list(default_data.build_default(progress=False))
    # as if the metric's rule had changed since the results were scored (its registry version moved
    # on); the results themselves stay a whole set, as a real older build is
    newer = dataclasses.replace(METRICS["unsupported_statements"], version=METRICS["unsupported_statements"].version + 1)
    monkeypatch.setitem(METRICS, "unsupported_statements", newer)
    assert default_data.stale_metrics("demo", "recorded") == ["unsupported_statements"]
    lines = list(default_data.build_default(progress=False))
    assert "note demo (recorded): unsupported_statements scored by an older metric version: rescoring" in lines
    assert any(line.startswith("built demo (recorded)") for line in lines)
    assert default_data.stale_metrics("demo", "recorded") == []


def test_agreement_measured_with_an_older_judge_is_measured_again(no_expertqa, monkeypatch):
    # the agreement step needs ExpertQA: give it a tiny stand-in set of answers instead
    from pipeline.importers import known_datasets

    class _Info:
        path = no_expertqa
    monkeypatch.setattr(default_data, "known_datasets", lambda: {**known_datasets(), "expertqa": _Info()})
    monkeypatch.setattr("pipeline.importers.expertqa.load_expertqa", lambda path: [])
    save_agreement({"judge": "offline", "prompt_version": "offline-v1+cal2", "support": {"n": 3}},
                   "expertqa-rand_val", "offline")
    lines = list(default_data.build_agreement())
    current = get_judge("offline").prompt_version
    assert lines == [f"note agreement (offline): measured with offline-v1+cal2, now {current}: measuring again",
                     "built agreement (offline vs experts, rand_val): n=0 AUC=n/a balanced accuracy=n/a"]
    saved = pq.read_table(no_expertqa / "agreement" / "expertqa-rand_val__offline.parquet").to_pylist()
    assert json.loads(next(r for r in saved if r["metric"] == "prompt_version")["value_json"]) == current
    assert list(default_data.build_agreement()) == ["ok   agreement (offline vs experts): already measured"]


@pytest.mark.skipif(known_datasets()["expertqa"].path is None, reason="ExpertQA not found (set EXPERTQA_DIR)")
def test_the_lexical_judges_figures_reach_its_reliability_line(tmp_path, monkeypatch):
    import pandas as pd

    from dashboard.reliability_text import reliability_summary
    from pipeline.judges.measure.checks import checks_path

    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    assert list(default_data.build_agreement(judge_name="offline:lexical")) == [
        "built agreement (offline:lexical vs experts, rand_val): n=803 AUC=0.563 balanced accuracy=0.535"]
    list(default_data.build_checks(judge_name="offline:lexical"))
    agreement = pd.read_parquet(tmp_path / "results" / "agreement" / "expertqa-rand_val__offline_lexical.parquet")
    checks = pd.read_parquet(checks_path("offline:lexical"))
    support = checks[checks["kind"] == "support"]
    assert reliability_summary("offline:lexical", agreement, checks) == (
        "offline:lexical judge: AUC 0.56 against experts on expertqa-rand_val (held out), "
        f"{checks['passed'].mean():.0%} of {len(checks)} behavioural checks passed (support {support['passed'].mean():.0%})")
    # the offline judge's line is not fed by the variant's files
    assert reliability_summary("offline", agreement, None).startswith("offline judge: agreement with experts not measured")
