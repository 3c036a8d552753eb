"""Runs end to end: Parquet tables, idempotent reruns, resumable annotation, no loss on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from pipeline.judges.scripted import ScriptedJudge
from pipeline.runner import CHUNK_SIZE, run_dataset
from pipeline.storage.store import SCHEMAS, list_judges, read_table, table_path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "answers.jsonl"


def test_demo_run_writes_every_table_with_declared_schema(results_root):
    result = run_dataset("demo", progress=False, root=results_root)
    assert result.answers == 24 and result.judge == "recorded"
    for table in ("answers", "sources"):
        path = table_path("demo", table, root=results_root)
        assert pq.read_schema(path).names == SCHEMAS[table].names
    for table in ("statements", "labels", "pairs", "metrics", "summary"):
        path = table_path("demo", table, "recorded", results_root)
        assert pq.read_schema(path).names == SCHEMAS[table].names, table
    manifest = json.loads(table_path("demo", "summary", "recorded", results_root).with_name("manifest.json").read_text())
    assert manifest["judge"] == "recorded" and manifest["config"]["illustrative"] is True
    assert "pandas" in manifest["packages"] and manifest["git_sha"]
    metrics = read_table(table_path("demo", "metrics", "recorded", results_root))
    # null stays null: expertise answers have no one-sided value, never 0
    expertise = metrics[(metrics["metric"] == "one_sided") & (metrics["query_type"] == "expertise")]
    assert len(expertise) and expertise["value"].isna().all()
    assert set(metrics["mode"]) == {"strict", "parity"}
    assert set(metrics["necessity"]) == {"exact", "greedy", "bipartite"}
    sources = read_table(table_path("demo", "sources", root=results_root))
    assert (sources["injection_flags"] != "").sum() >= 2  # the corpus holds two injection-bearing sources
    assert sources["duplicate_of"].notna().sum() >= 1
    assert list_judges("demo", results_root) == ["recorded"]


def test_rerun_is_idempotent(results_root):
    run_dataset("demo", progress=False, root=results_root)
    first = read_table(table_path("demo", "summary", "recorded", results_root))
    run_dataset("demo", progress=False, root=results_root)
    second = read_table(table_path("demo", "summary", "recorded", results_root))
    pd.testing.assert_frame_equal(first, second)


def test_annotation_resumes_from_saved_chunks(results_root):
    judge = ScriptedJudge()
    first = run_dataset("demo", progress=False, root=results_root, judge=judge, use_cache=False)
    chunks = -(-24 // CHUNK_SIZE)
    assert first.chunks_done == chunks and first.chunks_skipped == 0 and judge.calls > 0
    again = ScriptedJudge()
    second = run_dataset("demo", progress=False, root=results_root, judge=again, use_cache=False)
    assert second.chunks_skipped == chunks and second.chunks_done == 0
    assert again.calls == 0  # nothing asked twice
    a = read_table(table_path("demo", "metrics", "scripted", results_root))
    b = read_table(table_path("demo", "metrics", "scripted", results_root))
    pd.testing.assert_frame_equal(a, b)
    assert sorted(list_judges("demo", results_root)) == ["scripted"]


def test_limited_run_of_one_judge_keeps_other_answers(results_root):
    run_dataset("demo", progress=False, root=results_root)
    run_dataset("demo", progress=False, root=results_root, judge=ScriptedJudge(), use_cache=False, limit=3)
    answers = read_table(table_path("demo", "answers", root=results_root))
    assert len(answers) == 24


def test_bad_input_leaves_earlier_results_untouched(results_root, tmp_path):
    run_dataset("mine", DEMO, progress=False, root=results_root)
    before = {p: p.read_bytes() for p in (results_root / "mine").rglob("*.parquet")}
    bad = tmp_path / "bad.jsonl"
    lines = DEMO.read_text().splitlines()
    bad.write_text("\n".join(lines[:3] + ["{not json"] + lines[3:]) + "\n")
    from pipeline.errors import InputError

    with pytest.raises(InputError, match="bad.jsonl:4"):  # strict: the first bad record stops the run
        run_dataset("mine", bad, progress=False, root=results_root, strict=True)
    after = {p: p.read_bytes() for p in (results_root / "mine").rglob("*.parquet")}
    assert before == after
    # by default the bad line is refused (listed with its line) and the other answers are run
    result = run_dataset("mine", bad, progress=False, root=results_root)
    assert result.answers == len(lines) and result.refused[0].startswith("refused bad.jsonl:4: invalid JSON")


def test_dataset_name_cannot_escape_results_root(results_root):
    with pytest.raises(ValueError, match="must be letters"):
        run_dataset("../evil", DEMO, progress=False, root=results_root)


def test_an_edited_input_is_judged_again_not_resumed(results_root, tmp_path):
    import json

    from pipeline.importers.canonical import load_canonical, to_canonical
    from pipeline.storage.paths import data_dir

    answers = [to_canonical(a) for a in load_canonical(data_dir() / "demo" / "answers.jsonl")][:3]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in answers) + "\n", encoding="utf-8")
    judge = ScriptedJudge()
    first = run_dataset("edited", path, progress=False, root=results_root, judge=judge, use_cache=False)
    assert first.chunks_done == 1
    answers[0]["sources"][0]["text"] = "A completely different page about penguins."
    path.write_text("\n".join(json.dumps(a) for a in answers) + "\n", encoding="utf-8")
    second = run_dataset("edited", path, progress=False, root=results_root, judge=judge, use_cache=False)
    assert second.chunks_done == 1 and second.chunks_skipped == 0  # same ids, new text: labels are not reused
    third = run_dataset("edited", path, progress=False, root=results_root, judge=judge, use_cache=False)
    assert third.chunks_done == 0 and third.chunks_skipped == 1
