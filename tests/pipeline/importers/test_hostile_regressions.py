"""Named regressions of hostile input (one test per finding), split from tests/pipeline/importers/test_hostile_inputs.py:
each once ended in an internal error, a traceback or lost results; now it ends in one clear error
line (exit code 2) and keeps what was written."""


from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_helpers import BAD_LINES, DEMO, DEMO_LINES, GOOD, ROOT, cli, good_obj, pasted_object, snapshot
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from timing import guard

from pipeline.cli import main as cli_main
from pipeline.errors import InputError
from pipeline.importers.aee import load_aee
from pipeline.importers.canonical import MAX_ANSWER_CHARS, load_canonical, parse_answer
from pipeline.metrics import score_answer
from pipeline.text.text import find_citation_markers, split_statements

try:
    from pipeline.importers.expertqa import load_expertqa
except ImportError:  # pragma: no cover - the ExpertQA importer is optional
    load_expertqa = None


# ---- named regressions (one per finding) ---------------------------------------------------------


def _run_then_fail(tmp_path, capsys, monkeypatch, bad_path: Path, fmt: str) -> str:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    assert cli_main(["import", "canonical", str(DEMO), "--dataset", "same", "--no-progress"]) == 0
    capsys.readouterr()
    before = snapshot(tmp_path / "results")
    code, _, err = cli(capsys, "import", fmt, str(bad_path), "--dataset", "same", "--no-progress")
    assert code == 2, err
    assert snapshot(tmp_path / "results") == before
    return err


def test_regression_lone_surrogate_in_canonical_source_url_is_exit_2(tmp_path, capsys, monkeypatch):
    # Was: exit 1 "UnicodeEncodeError ... surrogates not allowed" while writing sources.parquet,
    # after answers.parquet had already been replaced.
    bad = tmp_path / "sur.jsonl"
    bad.write_text(DEMO_LINES[0].replace('"url": "', '"url": "\\udc80', 1) + "\n", encoding="utf-8")
    err = _run_then_fail(tmp_path, capsys, monkeypatch, bad, "canonical")
    assert "sources[0].url" in err and "surrogate" in err


def test_regression_lone_surrogate_in_pasted_field(tmp_path):
    with pytest.raises(InputError, match="surrogate") as info:
        parse_answer(pasted_object("E", "why\ud83d", "debate", "A claim [1].", [("t", "https://x", "body")]), "pasted answer")
    assert info.value.field == "query"


def test_regression_unicode_line_separator_inside_jsonl_string(tmp_path):
    # Was: str.splitlines() cut a JSONL line at a raw U+2028 / U+0085 inside a string -> "invalid JSON".
    obj = good_obj()
    obj["query"] += "\u2028and\u0085more\u2029"
    path = tmp_path / "sep.jsonl"
    path.write_text(json.dumps(obj, ensure_ascii=False) + "\n" + DEMO_LINES[1] + "\n", encoding="utf-8")
    answers = load_canonical(path)
    assert [a.answer.query for a in answers][0] == obj["query"] and len(answers) == 2


@pytest.mark.parametrize("first", [BAD_LINES["deep"][0], BAD_LINES["huge_int"][0], "[1, 2, 3]"])
def test_regression_jsonl_first_line_error_names_the_line(tmp_path, first):
    # Was: a too-deep / too-long-number first line of a JSONL file (or a list) was reported against
    # the whole file ("nested too deeply", "invalid JSON at line 2 column 1: Extra data").
    path = tmp_path / "first.jsonl"
    path.write_text(first + "\n" + DEMO_LINES[1] + "\n")
    with pytest.raises(InputError) as info:
        load_canonical(path)
    assert info.value.record.startswith("first.jsonl:1"), str(info.value)


def test_regression_non_finite_number_names_the_field(tmp_path):
    # Was: "NaN is not a valid JSON number" naming only the file; now the field too.
    path = tmp_path / "nan.json"
    path.write_text(DEMO_LINES[0].replace('"title": ', '"w": [1, -Infinity], "title": ', 1))
    with pytest.raises(InputError, match="-Infinity") as info:
        load_canonical(path)
    assert info.value.field == "sources[0].w[1]"


def test_regression_overflowing_number_is_refused(tmp_path):
    # 1e999 parses to float('inf') without any NaN/Infinity literal.
    path = tmp_path / "inf.json"
    path.write_text(DEMO_LINES[0].replace('"engine"', '"weight": 1e999, "engine"', 1))
    with pytest.raises(InputError, match="Infinity") as info:
        load_canonical(path)
    assert info.value.field == "weight"


@pytest.mark.parametrize("field,limit", [("answer_id", 1_000), ("engine", 1_000), ("query", 100_000)])
def test_regression_huge_short_fields_are_refused(field, limit):
    obj = good_obj()
    obj[field] = "x" * (limit + 1)
    with pytest.raises(InputError, match="limit") as info:
        parse_answer(obj, "case")
    assert info.value.field == field and len(str(info.value)) < 500


def _aee_file(tmp_path: Path, **statement: Any) -> Path:
    obj = {"id": 1, "answer_engine": "E", "Question": "q", "Output": "o [1]", "S1": "https://x",
           "S1_content": "Title: t", "core_statements": [{"id": 0, "sentence": "o", "core": "1", "citations": [1],
                                                          **statement}]}
    path = tmp_path / "ans_eng_eval_0.1.json"
    path.write_text(json.dumps([obj]))
    return path


def test_regression_aee_huge_citation_index_is_exit_2_and_keeps_results(tmp_path, capsys, monkeypatch):
    # Was: exit 1 "ArrowInvalid: Value 1000000000000 too large" while writing statements.parquet,
    # after answers.parquet and sources.parquet had already been replaced.
    err = _run_then_fail(tmp_path, capsys, monkeypatch, _aee_file(tmp_path, citations=[10**12]), "aee")
    assert "core_statements[0].citations" in err


@pytest.mark.parametrize("citations", [[1e300], [-(10**7)], [2**63], "1e999"])
def test_regression_aee_overflowing_citation_is_input_error(tmp_path, citations):
    # Was: int(1e300) fed a 1e300 index to the int32 tables (ArrowInvalid, exit 1), and
    # int(float('inf')) raised OverflowError (exit 1).
    path = _aee_file(tmp_path, citations=citations)
    if citations == "1e999":
        path.write_text(path.read_text().replace('"1e999"', "[1e999]"))
    with pytest.raises(InputError) as info:
        load_aee(path)
    assert "core_statements[0].citations" in info.value.field


@pytest.mark.parametrize("citations", ["12", {"1": 2}])
def test_regression_aee_citations_must_be_a_list(tmp_path, citations):
    # Was: the string "12" silently became citations [1, 2].
    with pytest.raises(InputError, match="list") as info:
        load_aee(_aee_file(tmp_path, citations=citations))
    assert info.value.field == "core_statements[0].citations"


@pytest.mark.parametrize("statement_id", ["²", "9" * 5000, "٣", True, [1]])
def test_regression_aee_odd_statement_id(tmp_path, statement_id):
    # Was: "²".isdigit() is true but int("²") raises; a 5,000-digit id hit the int-from-str limit.
    answers = load_aee(_aee_file(tmp_path, id=statement_id))
    assert len(answers[0].statements) == 1


def test_regression_aee_support_row_infinite_index(tmp_path):
    # Was: int(float('inf')) -> OverflowError -> exit 1.
    path = _aee_file(tmp_path)
    (tmp_path / "ans_eng_eval_0.1_support_results.jsonl").write_text(
        '{"sample_id": 1, "core_statement_id": 1e999, "source_idx": 1, "support": "full"}\n')
    with pytest.raises(InputError, match="Infinity|support row"):
        load_aee(path)


def test_regression_lone_surrogate_in_aee_is_input_error(tmp_path):
    path = _aee_file(tmp_path)
    path.write_text(path.read_text().replace('"q"', '"\\ud800q"'))
    with pytest.raises(InputError, match="surrogate") as info:
        load_aee(path)
    assert info.value.field == "Question"


# ---- known bugs outside the files this suite may change (reported; flip when fixed) ---------------

expertqa_only = pytest.mark.skipif(load_expertqa is None, reason="the ExpertQA importer is not present")


@expertqa_only
def test_regression_expertqa_deep_nesting_is_input_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": ' * 50_000 + "1" + "}" * 50_000 + "\n")
    with pytest.raises(InputError):
        load_expertqa(path)


@expertqa_only
def test_regression_expertqa_huge_integer_is_input_error(tmp_path):
    path = tmp_path / "int.jsonl"
    path.write_text('{"question": ' + "9" * 5000 + "}\n")
    with pytest.raises(InputError):
        load_expertqa(path)


def _expertqa_line(claim: str = "A claim [1].", answer: str = "A claim [1].") -> str:
    return json.dumps({"question": "Why?", "answers": {"sys": {
        "answer_string": answer, "attribution": ["[1] https://x.example"],
        "claims": [{"claim_string": claim, "evidence": ["[1] https://x.example\n\nA passage."], "support": "Complete"}]}}})


@expertqa_only
def test_regression_expertqa_lone_surrogate_is_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    good = tmp_path / "good" / "rand_val.jsonl"
    good.parent.mkdir()
    good.write_text(_expertqa_line() + "\n")
    assert cli_main(["import", "expertqa", str(good), "--dataset", "eqa", "--no-progress"]) == 0
    capsys.readouterr()
    before = snapshot(tmp_path / "results")
    bad = tmp_path / "bad" / "rand_val.jsonl"
    bad.parent.mkdir()
    bad.write_text(_expertqa_line("A claim \ud800 [1].", "Another claim [1].") + "\n")
    code = cli_main(["import", "expertqa", str(bad), "--dataset", "eqa", "--no-progress"])
    capsys.readouterr()
    assert code == 2 and snapshot(tmp_path / "results") == before


def test_regression_unknown_judge_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    assert cli_main(["score", str(DEMO), "--judge", "nope"]) == 2


# ---- a few real processes: no traceback ever reaches stderr -------------------------------------


@pytest.mark.parametrize("name,content", [
    ("deep.json", b"[" * 100_000 + b"]" * 100_000),
    ("bytes.jsonl", bytes(range(256)) * 4),
    ("surrogate.jsonl", DEMO_LINES[0].replace('"query": "', '"query": "\\ud800', 1).encode()),
    ("nan.jsonl", DEMO_LINES[0].replace('"engine"', '"x": NaN, "engine"', 1).encode()),
])
def test_subprocess_no_traceback(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    env = {**os.environ, "AEE_RESULTS_DIR": str(tmp_path / "r"), "AEE_CACHE_DIR": str(tmp_path / "c")}
    env.pop("AEE_DEBUG", None)
    for argv in (["score", str(path)], ["run", "--dataset", "sub", "--path", str(path), "--no-progress"]):
        out = subprocess.run([sys.executable, "-m", "pipeline", *argv], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=guard(120))
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert not (tmp_path / "r" / "sub").exists()  # nothing was written for bad input
