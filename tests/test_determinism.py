"""Same input, same results: every bundled dataset run twice, cold then warm, gives identical tables.

The first run labels everything (its judge cache starts empty); the second, under another dataset
name, finds every verdict in the cache the first one filled and asks the judge nothing. Every table
of the two result sets must hold the same rows, bit for bit, apart from the dataset's name. This is
what a cache key that misses an input breaks: ExpertQA lists one passage under two numbers in some
answers, and a warm cache used to give the cited one the uncited one's "ruled out" verdict.

Datasets: the teaching corpus (`demo`) with its hand labels and with the offline judge, and, when
its files are on this machine, a slice of ExpertQA (the questions whose answers list one passage
twice) with the experts' labels and with the offline judge.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.runner import run_dataset
from pipeline.storage.store import JUDGE_TABLES, read_arrow, table_path

pytestmark = pytest.mark.slow

EXPERTQA_QUESTIONS = 6  # questions in the ExpertQA slice: enough for twin passages, small enough to be quick


def _without_name(table: pa.Table) -> pa.Table:
    return table.drop_columns(["dataset"]) if "dataset" in table.schema.names else table


def assert_same_results(root: Path, cold: str, warm: str, judge: str) -> None:
    for table in ("answers", "sources", *JUDGE_TABLES):
        owner = None if table in ("answers", "sources") else judge
        a = _without_name(read_arrow(table_path(cold, table, owner, root)))
        b = _without_name(read_arrow(table_path(warm, table, owner, root)))
        assert a.num_rows > 0 or table in ("statements",), (table, "no rows")
        assert a.equals(b), f"{table}: the warm run differs from the cold one"


def cold_then_warm(root: Path, name: str, judge: str, path: Path | None = None, importer: str | None = None) -> tuple[dict, dict]:
    first = run_dataset(f"{name}-cold", path, judge_name=judge, importer=importer, progress=False, root=root)
    second = run_dataset(f"{name}-warm", path, judge_name=judge, importer=importer, progress=False, root=root)
    assert_same_results(root, f"{name}-cold", f"{name}-warm", first.judge)
    return first.cache, second.cache


@pytest.mark.parametrize("judge", ["recorded", "offline"])
def test_teaching_corpus_cold_and_warm_runs_are_identical(results_root, judge):
    from pipeline.importers import known_datasets

    demo = known_datasets()["demo"]
    cold, warm = cold_then_warm(results_root, "demo", judge, demo.path, demo.importer)
    if judge == "offline":
        assert cold["misses"] > 0
        assert warm["misses"] == 0 and warm["hits"] == cold["hits"] + cold["misses"]  # the warm run asked nothing


def _twin_passage_slice(expertqa: Path, out: Path) -> Path:
    """The first questions of ExpertQA's domain_val split whose answers list one passage twice
    (under two numbers), as a one-file folder."""
    from pipeline.importers.expertqa import iter_expertqa

    source = expertqa / "domain_val.jsonl" if expertqa.is_dir() else expertqa
    lines = source.read_text(encoding="utf-8").splitlines()
    picked: list[int] = []
    for annotated in iter_expertqa(source):
        texts = [s.text for s in annotated.answer.sources if s.text]
        line_no = int(annotated.answer.answer_id.split(":")[1])
        if len(texts) != len(set(texts)) and line_no not in picked:
            picked.append(line_no)
            if len(picked) == EXPERTQA_QUESTIONS:
                break
    assert picked, "no ExpertQA answer lists one passage twice any more"
    out.mkdir(parents=True, exist_ok=True)
    (out / "domain_val.jsonl").write_text("\n".join(lines[n - 1] for n in picked) + "\n", encoding="utf-8")
    return out


@pytest.mark.parametrize("judge", ["human", "offline"])
def test_expertqa_cold_and_warm_runs_are_identical(results_root, expertqa_path, tmp_path, judge):
    folder = _twin_passage_slice(expertqa_path, tmp_path / "expertqa-slice")
    cold, warm = cold_then_warm(results_root, "expertqa", judge, folder, "expertqa")
    if judge == "offline":
        assert warm["misses"] == 0 and warm["hits"] == cold["hits"] + cold["misses"]
