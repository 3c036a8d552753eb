"""End to end on the fake engines: a dataset with repeats and two waves is run, its over-time
summaries are written with the results, and `aee compare` / `aee consistency` read them."""

from __future__ import annotations

import json

import pytest
from pytest import approx

from pipeline.cli import main as cli_main
from pipeline.consistency.summary import FLIPS_FILE, SUMMARY_FILE
from pipeline.runner import run_dataset
from pipeline.storage.result_sets import set_problem
from pipeline.storage.store import dataset_dir, result_set
from pipeline.testing.fake_variation import Variation, synthetic_records

ENGINES = {"Alpha": Variation(seed=1, accuracy=0.9, perturb=0.1), "Beta": Variation(seed=2, accuracy=0.6, perturb=0.5, pool=6)}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("over-time")
    data = root / "syn.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_records(ENGINES, queries=30, repeats=3, waves=2)),
                    encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("AEE_RESULTS_DIR", str(root / "results"))
    mp.setenv("AEE_OVER_TIME_MEANING", "lexical")
    run_dataset("syn", data, judge_name="recorded", progress=False)
    yield root
    mp.undo()


def test_run_writes_the_summaries_inside_the_result_set(results):
    folder = result_set("syn") / "recorded"
    assert (folder / SUMMARY_FILE).is_file() and (folder / FLIPS_FILE).is_file()
    assert set_problem(dataset_dir("syn")) is None  # listed in SET.json like every other table
    summary = json.loads((folder / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["waves"] == ["2026-01-05", "2026-01-12"] and summary["engines"] == ["Alpha", "Beta"]
    assert summary["repeats"] == {"min": 3, "max": 3, "mean": 3.0} and summary["meaning_method"] == "lexical"
    stable = {(r["engine"], r["measure"]): r["value"] for r in summary["stability"] if r["wave"] == "2026-01-05"}
    # Alpha rewords 10% of statements, Beta 50%: (1 - p)^2 = 0.81 vs 0.25 (30 queries: +-0.1)
    assert stable[("Alpha", "statement_overlap")] == approx(0.81, abs=0.1)
    assert stable[("Beta", "statement_overlap")] == approx(0.25, abs=0.1)


def test_compare_engines_finds_the_real_difference(results, capsys):
    assert cli_main(["compare", "--dataset", "syn", "--judge", "recorded", "--engines", "Alpha,Beta", "--json", "--samples", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    diffs = {d["metric"]: d for d in out["comparisons"][0]["differences"]}
    accuracy = diffs["citation_accuracy"]
    # accuracy 0.9 vs 0.6: 30 points; 30 queries x 3 repeats x 4 statements
    assert accuracy["real"] and accuracy["ci_low"] <= 30 <= accuracy["ci_high"]
    assert not diffs["n_sources"]["real"]
    assert "judge uncertainty is not included" in out["judge_uncertainty"]
    assert cli_main(["compare", "--dataset", "syn", "--judge", "recorded", "--engines", "Alpha,Beta", "--samples", "500"]) == 0
    text = capsys.readouterr().out
    assert "Alpha does better than Beta on Citation accuracy: +" in text


def test_compare_waves_and_bad_names(results, capsys):
    assert cli_main(["compare", "--dataset", "syn", "--judge", "recorded", "--waves", "2026-01-05,2026-01-12", "--engine", "Beta", "--json",
                     "--samples", "300"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["comparisons"]) == 1 and not any(d["real"] for d in out["comparisons"][0]["differences"])
    assert cli_main(["compare", "--dataset", "syn", "--judge", "recorded", "--engines", "Alpha,Gamma"]) == 2
    assert "no engine 'Gamma'" in capsys.readouterr().err
    assert cli_main(["compare", "--dataset", "syn"]) == 2
    assert cli_main(["consistency", "--dataset", "syn", "--judge", "recorded"]) == 0
    assert "Statements kept" in capsys.readouterr().out


def test_another_judges_run_carries_the_summaries_over(results):
    folder = result_set("syn") / "recorded"
    before = (folder / SUMMARY_FILE).read_text(encoding="utf-8")
    run_dataset("syn", results / "syn.jsonl", judge_name="offline:lexical", progress=False)
    after = result_set("syn")
    assert after != folder.parent  # a new result set
    assert (after / "recorded" / SUMMARY_FILE).read_text(encoding="utf-8") == before
    assert (after / "recorded" / FLIPS_FILE).is_file() and (after / "offline_lexical" / SUMMARY_FILE).is_file()
    assert set_problem(dataset_dir("syn")) is None


def test_a_release_with_a_question_twice_is_not_an_audit_over_time():
    import pandas as pd

    from pipeline.consistency.captures import capture_frame, has_repeats_or_waves

    plain = pd.DataFrame({"answer_id": ["a", "b"], "engine": ["E", "E"], "query": ["q", "q"], "meta": ["{}", "{}"]})
    assert not has_repeats_or_waves(capture_frame(plain))
    dated = plain.assign(meta=['{"captured_at": "2026-01-05T10:00:00+00:00"}', '{"captured_at": "2026-01-05T11:00:00+00:00"}'])
    assert has_repeats_or_waves(capture_frame(dated))
