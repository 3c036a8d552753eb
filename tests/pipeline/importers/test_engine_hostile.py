"""Hostile and malformed engine responses and capture envelopes: every generated case ends in
answers that score or in one clear error line naming the record (exit code 2 from the CLI, never 1),
and a failing run leaves the results already written untouched.

Generated cases per test (hypothesis max_examples):

    test_wrong_type_in_one_field ............... 150
    test_missing_field ......................... 60
    test_hostile_offsets_and_indexes ........... 90
    test_envelope_fields ....................... 40
    test_huge_arrays ........................... 14
    test_cli_score_exit_codes .................. 60
    test_failing_run_keeps_written_results ..... 10
    test_recorded_shapes_mutated ............... 150
    test_saved_streams_mutated ................. 120
                                         total   694
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.cli import main as cli_main
from pipeline.errors import InputError
from pipeline.importers.engines import ImportOptions, engine_answer
from pipeline.metrics import score_answer
from pipeline.storage.store import to_table
from pipeline.storage.tables import source_rows, statement_rows

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
NAMES = sorted(p.name for p in FIXTURES.glob("*.json"))
GOOD = {name: json.loads((FIXTURES / name).read_text(encoding="utf-8")) for name in NAMES}
SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])

# The edges of every integer the results tables store (int32 source and statement numbers, int64
# counts), one step either side: a number that fits in JSON but not in a column must be met by the
# search in every run, not now and then (issue 45: a Gemini chunk index of 2**31 - 1 became source
# 2**31 and stopped a run).
TABLE_INT_BOUNDS = [2**31 - 2, 2**31 - 1, 2**31, -(2**31) + 1, -(2**31), -(2**31) - 1,
                    2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30]
ODD = ["\u202e", "\u200b", "\x00", "\x1b[31m", "\n", "\r", "<script>alert(1)</script>", "javascript:alert(1)", "[1]", "[99]",
       "【2】", "é", "中", "\U0001F600", "", " ", "https://", "%s", "{}", '"', "\\"]
odd_text = st.lists(st.one_of(st.sampled_from(ODD), st.text(max_size=5)), max_size=12).map("".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.sampled_from([0, -1, 1, *TABLE_INT_BOUNDS]),
                    st.floats(allow_nan=False, allow_infinity=False), odd_text)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=6)


def paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in obj, as a tuple of keys and indexes."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            out.extend(paths(v, (*prefix, k)))
    return out


PATHS = {name: paths(GOOD[name]["response"]) for name in NAMES}


def set_at(obj: Any, path: tuple, value: Any, delete: bool = False) -> None:
    target = obj
    for part in path[:-1]:
        target = target[part]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


def ends_cleanly(obj: Any, options: ImportOptions | None = None):
    """Answers that score, or one InputError line naming the record."""
    try:
        annotated = engine_answer(obj, "case", options=options)
    except InputError as exc:
        message = str(exc)
        assert message.strip() and "\n" not in message and "\r" not in message and "\x1b" not in message, repr(message)
        assert "case" in message, message
        return exc
    assert annotated.answer.text.strip()
    text = annotated.answer.text
    for s in annotated.statements:
        assert text[s.start:s.end] == s.text
        assert set(s.citations) <= {src.index for src in annotated.answer.sources}
    for result in score_answer(annotated).values():
        assert result.value is None or math.isfinite(result.value)
    # what a run writes must fit the tables' columns (a failure here stops `aee run` with exit 1)
    to_table("statements", statement_rows("d", "j", [annotated]))
    to_table("sources", source_rows("d", [annotated]))
    return annotated


@st.composite
def mutated(draw, how: str):
    name = draw(st.sampled_from(NAMES))
    obj = copy.deepcopy(GOOD[name])
    path = draw(st.sampled_from(PATHS[name]))
    if how == "type":
        set_at(obj["response"], path, draw(json_values))
    else:
        set_at(obj["response"], path, None, delete=True)
    return obj


@settings(max_examples=150, **SETTINGS)
@given(mutated("type"))
def test_wrong_type_in_one_field(obj):
    ends_cleanly(obj)


@settings(max_examples=60, **SETTINGS)
@given(mutated("missing"))
def test_missing_field(obj):
    ends_cleanly(obj)


OFFSETS = st.one_of(st.integers(-5, 400), st.sampled_from([-1, 10**20, *TABLE_INT_BOUNDS]),
                    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
                    st.sampled_from(["12", "-3", "x", None, True, [], {}]))


@st.composite
def hostile_offsets(draw):
    """Negative, reversed, out-of-range or wrongly typed offsets and source numbers."""
    kind = draw(st.sampled_from(["openai-responses", "openai-chat", "gemini"]))
    name = {"openai-responses": "openai_responses.json", "openai-chat": "openai_chat_search.json", "gemini": "gemini_grounding.json"}[kind]
    obj = copy.deepcopy(GOOD[name])
    resp = obj["response"]
    if kind == "openai-responses":
        targets = [a for a in resp["output"][1]["content"][0]["annotations"]]
        keys = ["start_index", "end_index"]
    elif kind == "openai-chat":
        targets = [a["url_citation"] for a in resp["choices"][0]["message"]["annotations"]]
        keys = ["start_index", "end_index"]
    else:
        supports = resp["candidates"][0]["groundingMetadata"]["groundingSupports"]
        targets = [s["segment"] for s in supports]
        keys = ["startIndex", "endIndex", "partIndex"]
        for s in supports:
            if draw(st.booleans()):
                s["groundingChunkIndices"] = draw(st.lists(OFFSETS, max_size=4))
    for target in targets:
        for key in keys:
            if draw(st.booleans()):
                target[key] = draw(OFFSETS)
        if draw(st.booleans()) and keys[0] in target and keys[1] in target:
            target[keys[0]], target[keys[1]] = target[keys[1]], target[keys[0]]  # reversed
    return obj


@settings(max_examples=90, **SETTINGS)
@given(hostile_offsets())
def test_hostile_offsets_and_indexes(obj):
    result = ends_cleanly(obj)
    if isinstance(result, InputError):
        assert result.field  # a typed offset problem names the field to fix


@settings(max_examples=40, **SETTINGS)
@given(st.sampled_from(NAMES), st.sampled_from(["query", "engine", "query_type", "id", "captured_at", "format", "fetched", "request"]),
       json_values, st.one_of(st.none(), odd_text))
def test_envelope_fields(name, field, value, cli_query):
    obj = copy.deepcopy(GOOD[name])
    obj[field] = value
    result = ends_cleanly(obj, ImportOptions(query=cli_query))
    if not isinstance(result, InputError) and field == "request" and value is not None:
        assert result.answer.meta["request"]


@settings(max_examples=14, **SETTINGS)
@given(st.sampled_from([("perplexity_sonar.json", ("citations",), "https://x.example/a"),
                        ("perplexity_sonar.json", ("search_results",), {"url": "https://x.example/", "title": "t"}),
                        ("gemini_grounding.json", ("candidates", 0, "groundingMetadata", "groundingSupports"),
                         {"segment": {"endIndex": 5}, "groundingChunkIndices": [0]}),
                        ("gemini_grounding.json", ("candidates", 0, "groundingMetadata", "groundingChunks"), {"web": {"uri": "https://a/"}}),
                        ("anthropic_web_search.json", ("content",), {"type": "text", "text": "x. "}),
                        ("openai_responses.json", ("output",), {"type": "web_search_call", "action": {"type": "search"}}),
                        ("you_answer.json", ("citations",), {"source": "https://y.example/"})]),
       st.sampled_from([600, 25_000]))
def test_huge_arrays(case, n):
    name, path, item = case
    obj = copy.deepcopy(GOOD[name])
    target = obj["response"]
    for part in path:
        target = target[part]
    target.extend(copy.deepcopy(item) for _ in range(n))  # the real entries stay first
    result = ends_cleanly(obj)
    if isinstance(result, InputError):
        assert "limit" in str(result) or "more than" in str(result), str(result)


# ---- the CLI -------------------------------------------------------------------------------------


def cli(capsys, *argv: str) -> int:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith(("format:", "warning:"))]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        assert "Traceback" not in err
    return code


@settings(max_examples=60, **SETTINGS)
@given(st.one_of(mutated("type"), mutated("missing"), hostile_offsets()), st.booleans(), st.sampled_from(["", "anthropic", "exa"]))
def test_cli_score_exit_codes(tmp_path_factory, capsys, obj, bare, forced):
    path = tmp_path_factory.mktemp("score") / "response.json"
    path.write_text(json.dumps(obj["response"] if bare else obj), encoding="utf-8")
    argv = ["score", str(path), "--judge", "recorded"] + (["--format", forced] if forced else []) + (["--query", "q?"] if bare else [])
    cli(capsys, *argv)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """Results of a good run over every fixture (copied afresh for each case)."""
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("written")
    folder = base / "in"
    folder.mkdir()
    for name in NAMES:
        (folder / name).write_text(json.dumps(GOOD[name]), encoding="utf-8")
    run_dataset("kept", folder, judge_name="recorded", progress=False, root=base / "results")
    return base


def _gemini_with_chunk_index(value: int) -> dict:
    obj = copy.deepcopy(GOOD["gemini_grounding.json"])
    obj["response"]["candidates"][0]["groundingMetadata"]["groundingSupports"][0]["groundingChunkIndices"] = [value]
    return obj


@settings(max_examples=10, **SETTINGS)
@given(st.one_of(mutated("type"), mutated("missing")))
@example(_gemini_with_chunk_index(2**31 - 1))  # issue 45: exit 1, "Value 2147483648 too large to fit in C integer type"
def test_failing_run_keeps_written_results(tmp_path_factory, capsys, monkeypatch, written, obj):
    import shutil

    base = tmp_path_factory.mktemp("kept")
    shutil.copytree(written / "results", base / "results")
    shutil.copytree(written / "in", base / "in")
    monkeypatch.setenv("AEE_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(base / "cache"))
    before = snapshot(base / "results")
    (base / "in" / "zz_mutated.json").write_text(json.dumps({**obj, "id": "mutated-one"}), encoding="utf-8")
    code = cli(capsys, "run", "--dataset", "kept", "--path", str(base / "in"), "--judge", "recorded", "--no-progress")
    if code == 2:
        assert snapshot(base / "results") == before
    else:
        assert snapshot(base / "results") != before  # the new answer was added


def test_regression_chunk_index_past_int32_is_a_dangling_citation_not_a_failed_run(tmp_path, capsys, monkeypatch):
    """The exact input of issue 45: chunk index 2**31 - 1 names source 2**31, one past int32. The run
    ends with 0, says so, and stores the citation as dangling at the bound; the answer's other
    citations are kept as they were."""
    import pandas as pd

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "big.json").write_text(json.dumps({**_gemini_with_chunk_index(2**31 - 1), "id": "big"}), encoding="utf-8")
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    code = cli_main(["run", "--dataset", "big", "--path", str(folder), "--judge", "recorded", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "warning: 1 citation(s) name a source number past what the results tables store (2,147,483,647)" in out
    from pipeline.storage.store import table_path

    rows = pd.read_parquet(table_path("big", "statements", "recorded", root=tmp_path / "results"))
    first = rows.sort_values("statement_index").iloc[0]
    assert list(first["dangling"]) == [2**31 - 1] and list(first["citations"]) == []
    assert [list(c) for c in rows.sort_values("statement_index")["citations"]][1] == [1, 2]  # support 1 untouched


@pytest.mark.parametrize("bound", TABLE_INT_BOUNDS)
def test_every_integer_field_at_the_table_bounds(bound):
    """Every integer field of every recorded response set to each bound in turn (53 fields x 11
    values, all of them, every run): answers whose rows fit the tables, or one clear error line."""
    cases = 0
    for name in NAMES:
        for path in PATHS[name]:
            value = GOOD[name]["response"]
            for part in path:
                value = value[part]
            if isinstance(value, int) and not isinstance(value, bool):
                obj = copy.deepcopy(GOOD[name])
                set_at(obj["response"], path, bound)
                ends_cleanly(obj)
                cases += 1
    assert cases == 53  # the fixtures' integer fields (a new fixture field changes this on purpose)


def test_regression_control_characters_in_titles_never_reach_the_terminal(tmp_path, capsys):
    obj = copy.deepcopy(GOOD["perplexity_sonar.json"])
    obj["response"]["search_results"][0]["title"] = "evil\x1b[2J\x1b]0;pwned\x07title\nnext line"
    obj["response"]["choices"][0]["message"]["content"] = "A claim\x1b[31m in red [1]. \u202eesrever [2]."
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps(obj))
    assert cli_main(["score", str(path), "--judge", "recorded"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "evil\\x1b[2J" in out


# ---- the recorded shapes (streams, conversations, several parts) ---------------------------------

SHAPES = FIXTURES / "shapes"
SHAPE_NAMES = sorted(p.name for p in SHAPES.glob("*.json"))
SHAPE_GOOD = {name: json.loads((SHAPES / name).read_text(encoding="utf-8")) for name in SHAPE_NAMES}
SHAPE_PATHS = {name: [p for p in paths(SHAPE_GOOD[name]) if p[0] in ("response", "responses") and len(p) > 1]
               for name in SHAPE_NAMES}


@settings(max_examples=150, **SETTINGS)
@given(st.sampled_from(SHAPE_NAMES), st.data(), st.booleans())
def test_recorded_shapes_mutated(name, data, delete):
    """Any one field of a stream, a conversation or a multi-part response given the wrong type or
    left out: answers that score, or one clear error line naming the record."""
    obj = copy.deepcopy(SHAPE_GOOD[name])
    path = data.draw(st.sampled_from(SHAPE_PATHS[name]))
    set_at(obj, path, None if delete else data.draw(json_values), delete=delete)
    ends_cleanly(obj, ImportOptions(query="q?"))


def _events(name: str) -> list:
    from pipeline.importers.streams import parse_sse

    text = (SHAPES / name).read_text(encoding="utf-8")
    return parse_sse(text, name) if name.endswith(".sse") else [json.loads(line) for line in text.splitlines() if line.strip()]


STREAMS = {name: _events(name) for name in sorted(p.name for p in SHAPES.iterdir() if p.suffix in (".jsonl", ".sse"))}


@settings(max_examples=120, **SETTINGS)
@given(st.sampled_from(sorted(STREAMS)), st.data(), st.booleans())
def test_saved_streams_mutated(name, data, delete):
    """One field of one event of a saved stream wrong or missing, or events dropped and repeated."""
    events = copy.deepcopy(STREAMS[name])
    path = data.draw(st.sampled_from(paths(events)))
    set_at(events, path, None if delete else data.draw(json_values), delete=delete)
    if data.draw(st.booleans()):
        events = data.draw(st.lists(st.sampled_from(events), max_size=len(events) + 3))
    ends_cleanly({"query": "q?", "engine": "x", "response": events})
