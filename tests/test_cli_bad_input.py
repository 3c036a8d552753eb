"""Bad input to `python -m pipeline score`: one clear line naming record and field, exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from timing import guard

ROOT = Path(__file__).resolve().parent.parent
GOOD = json.loads((ROOT / "tests" / "fixtures" / "worked_example.json").read_text())


def run_score(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "score", str(path), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=guard(120))


def with_changes(**changes) -> dict:
    obj = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if value is ...:
            obj.pop(key)
        else:
            obj[key] = value
    return obj


CASES = {
    "missing_query": (with_changes(query=...), ["fig7", "'query'", "missing"]),
    "wrong_type_sources": (with_changes(sources="none"), ["fig7", "'sources'", "list"]),
    "empty_answer": (with_changes(answer="   "), ["fig7", "'answer'", "empty"]),
    "bad_query_type": (with_changes(query_type="opinion"), ["fig7", "'query_type'"]),
    "bad_source_index": (with_changes(sources=[{"index": "one"}]), ["fig7", "'sources[0].index'"]),
    "huge_answer": (with_changes(answer="word " * 1_100_000), ["fig7", "'answer'", "limit"]),
    "bad_confidence": (with_changes(labels={"confidence": 9}), ["fig7", "'labels.confidence'"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_record_gives_one_line_exit_2(tmp_path, case):
    obj, needles = CASES[case]
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(obj))
    out = run_score(path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in out.stderr


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"answer_id": "x", "engine": }')
    out = run_score(path)
    assert out.returncode == 2 and "broken.json" in out.stderr and "invalid JSON" in out.stderr


def test_non_utf8_bytes(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(json.dumps(GOOD).encode("utf-8").replace(b"Zoos confine", b"Zoos \xe9\xff confine"))
    out = run_score(path)
    assert out.returncode == 2 and "not UTF-8" in out.stderr


def test_missing_file(tmp_path):
    out = run_score(tmp_path / "nope.json")
    assert out.returncode == 2 and "cannot read file" in out.stderr


def test_nan_number_is_refused(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(GOOD).replace('"confidence": 4', '"confidence": NaN'))
    out = run_score(path)
    assert out.returncode == 2 and "NaN" in out.stderr


def test_dangling_citation_is_scored_with_a_warning(tmp_path):
    obj = with_changes(answer=GOOD["answer"].replace("[4].", "[99]."))
    obj["labels"]["statements"][5]["text"] = "Zoos also educate millions of visitors each year [99]."
    path = tmp_path / "dangling.json"
    path.write_text(json.dumps(obj))
    out = run_score(path, "--json")
    assert out.returncode == 0, out.stderr
    assert "[99]" in out.stderr and "dangling" in out.stderr
    report = json.loads(out.stdout)
    assert report["metrics"]["dangling_citations"]["value"] == 1
    assert report["statements"][5]["dangling"] == [99]
    # source 4 is now uncited: 1 of 5 listed sources
    assert report["metrics"]["uncited_sources"]["value"] == pytest.approx(0.2)


def test_duplicate_answer_ids_in_jsonl(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    out = run_score(path)
    assert out.returncode == 2 and "duplicate answer_id" in out.stderr
