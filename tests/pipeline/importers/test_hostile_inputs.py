"""Hostile and malformed input across the importers, the canonical format, the CLI and the re-score
page's inputs: every generated case ends in a result or one clear error naming the record (and the
field where there is one); exit code 2 for bad input, never 1 (an internal error); no traceback;
results already written are never touched by a failing command.

Generated cases per test (hypothesis max_examples):

    test_random_bytes_files ............................ 150
    test_mutated_good_files ............................ 150
    test_wrong_type_in_one_field ....................... 250
    test_citation_indexes .............................. 120
    test_jsonl_bad_line_in_the_middle .................. 80
    test_non_finite_numbers_anywhere ................... 60
    test_unicode_direction_zero_width_surrogates ....... 120
    test_deeply_nested_json ............................ 30
    test_huge_strings .................................. 15
    test_duplicate_ids ................................. 40
    test_aee_release_hostile ........................... 120
    test_aee_support_rows_hostile ...................... 60
    test_expertqa_hostile .............................. 80
    test_cli_in_process_exit_codes ..................... 80
    test_rescore_pasted_fields ......................... 150
    test_rescore_pasted_fields_offline_judge ........... 60
    test_splitter_hostile_text ......................... 120
    test_failing_run_or_import_keeps_written_results ... 40
                                                 total 1,725

plus named regression tests (one per finding) and a few subprocess cases proving that no
traceback reaches stderr. In-process calls keep the whole file near a minute on two cores.
"""

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


SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])

# ---- strategies -------------------------------------------------------------------------------

DIRECTION = ["\u202e", "\u202d", "\u202a", "\u202b", "\u202c", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u200e", "\u200f", "\u061c"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f"]
CONTROL = ["\x00", "\x1b[31m", "\r", "\n", "\r\n", "\t", "\x7f", "\x85", "\u2028", "\u2029", "\x0b", "\x0c"]
SURROGATES = ["\ud800", "\udfff", "\udc80", "\ud83d"]  # lone halves: legal to spell in JSON, not Unicode
MARKUP = ["[1]", "[2]", "[99]", "[0]", "[-1]", "[1-3]", "[3-1]", "[1-999]", "[1, 2]", "【2】", "【1†x】", "^1", "[^3]",
          "[a](https://s1.example.org/)", "](", "[[1]](u)", "`", "```\n", "\\", '"', "<script>", "%s", "{}", ". ",
          "e.g. ", "# ", "- ", "> ", "| a |"]
ODD_PIECES = DIRECTION + ZERO_WIDTH + CONTROL + MARKUP + ["é", "中", "\U0001F600", "\U0010ffff", " ", "word"]

hostile_text = st.lists(st.one_of(st.sampled_from(ODD_PIECES), st.text(max_size=6)), max_size=25).map("".join)
surrogate_text = st.tuples(hostile_text, st.sampled_from(SURROGATES), hostile_text).map("".join)
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1, 5, 6, 999, 10_000, 10_001, 2**31, -(2**31) - 1, 10**300]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -0.0, 1.5, 5e-324]),
    hostile_text, st.sampled_from(["", "   ", "debate", "expertise", "1", "true", "full", "none", "agree"]),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                           max_leaves=8)


def leaf_paths(obj: Any, prefix: str = "") -> list[str]:
    """Every path in the canonical notation the importer uses in messages: a.b[2].c"""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.extend(leaf_paths(value, f"{prefix}.{key}" if prefix else key))
    elif isinstance(obj, list):
        for k, value in enumerate(obj):
            out.extend(leaf_paths(value, f"{prefix}[{k}]"))
    return out


def set_path(obj: Any, path: str, value: Any) -> None:
    parts: list[Any] = []
    for piece in path.replace("[", ".[").split("."):
        if piece:
            parts.append(int(piece[1:-1]) if piece.startswith("[") else piece)
    target = obj
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value


def try_set_path(obj: Any, path: str, value: Any) -> None:
    """set_path where an earlier change may have replaced a container by a scalar: then skip."""
    try:
        set_path(obj, path, value)
    except (KeyError, IndexError, TypeError):
        pass


GOOD_PATHS = leaf_paths(GOOD)


def ends_cleanly(fn, *args, **kwargs):
    """A result, or one InputError whose message is one line and names a record (or a field)."""
    try:
        return fn(*args, **kwargs)
    except InputError as exc:
        message = str(exc)
        assert message.strip() and "\n" not in message and "\r" not in message, repr(message)
        assert not any(ch in message for ch in DIRECTION + ["\u2028", "\u2029", "\x00", "\x1b"]), repr(message)
        return exc


def check_scored(annotated) -> None:
    for result in score_answer(annotated).values():
        assert result.value is None or math.isfinite(result.value)
        assert result.value is not None or result.reason


def check_loaded(result) -> None:
    """After a loader: either an error naming the record, or answers that score."""
    if isinstance(result, InputError):
        assert result.record or result.field, str(result)
        return
    for annotated in result:
        for s in annotated.statements:
            assert not set(s.citations) & set(s.dangling)
        check_scored(annotated)


# ---- files of any bytes -------------------------------------------------------------------------


@settings(max_examples=150, **SETTINGS)
@given(data=st.binary(max_size=3000), suffix=st.sampled_from([".json", ".jsonl"]))
def test_random_bytes_files(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("bytes") / f"in{suffix}"
    path.write_bytes(data)
    check_loaded(ends_cleanly(load_canonical, path))


@st.composite
def mutated_bytes(draw):
    """The teaching corpus's first lines with byte flips, cuts, splices and non-UTF-8 bytes."""
    data = bytearray("\n".join(DEMO_LINES[: draw(st.integers(1, 3))]).encode("utf-8"))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "cut", "insert", "truncate", "bom", "latin1"]))
        if kind == "flip" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[pos:pos + draw(st.integers(1, 50))]
        elif kind == "insert":
            data[pos:pos] = draw(st.one_of(st.binary(max_size=8), st.sampled_from(
                [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"\\ud800", b"\\u0000", b"[[[[", b"}", b",", b"\n",
                 b"\xe2\x80\xae", b"\xef\xbb\xbf", b"null", b"\"\"", b"\xff", b"\xc3"])))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "bom":
            data[0:0] = b"\xef\xbb\xbf"
        elif kind == "latin1":
            data[pos:pos] = "caf\u00e9".encode("latin-1")
    return bytes(data)


@settings(max_examples=150, **SETTINGS)
@given(data=mutated_bytes())
def test_mutated_good_files(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("mut") / "answers.jsonl"
    path.write_bytes(data)
    check_loaded(ends_cleanly(load_canonical, path))


# ---- wrong types, citation indexes, bad lines ---------------------------------------------------


@settings(max_examples=250, **SETTINGS)
@given(path=st.sampled_from(GOOD_PATHS + ["labels", "labels.confidence", "labels.statements",
                                          "sources[0].fetch_ok", "field", "dataset", "note"]),
       value=st.one_of(json_values, st.floats(), surrogate_text),
       through_file=st.booleans())
@example(path="sources", value=[{}], through_file=False)  # one default source left; labels.sources names [2]
def test_wrong_type_in_one_field(tmp_path_factory, path, value, through_file):
    """One field of a good answer replaced by anything: a result, or an error naming that field."""
    obj = good_obj()
    if path.startswith("labels") and "labels" not in obj:
        obj["labels"] = {}
    set_path(obj, path, value)
    if through_file:
        file = tmp_path_factory.mktemp("wt") / "answer.json"
        file.write_text(json.dumps(obj), encoding="utf-8")
        result = ends_cleanly(load_canonical, file)
        result = result if isinstance(result, InputError) else result[0]
    else:
        result = ends_cleanly(parse_answer, obj, "case")
    if isinstance(result, InputError):
        assert "case" in result.record or "answer.json" in result.record, str(result)
        assert result.field, str(result)
        if path.startswith("sources") and result.field.startswith("labels.sources[") and result.field.endswith("].index"):
            # a changed source list can leave a recorded source stance (labels.sources) naming a
            # source that is no longer listed: the error names that label
            assert "must name a listed source" in str(result), (path, str(result))
        elif path.startswith("sources["):
            # a repeated index is named where it repeats, which may be the next source
            assert result.field.startswith("sources["), (path, str(result))
        else:
            # the error names the changed field, a part of it, or the list/object holding it
            assert result.field.startswith(path) or path.startswith(result.field), (path, str(result))
    else:
        check_scored(result)


@st.composite
def citation_answers(draw):
    """Answers whose markers, labels and source indexes disagree: missing, huge, negative, repeated."""
    n_sources = draw(st.integers(1, 6))
    indexes = draw(st.one_of(st.just(list(range(1, n_sources + 1))),
                             st.lists(st.integers(-3, 20_000), min_size=n_sources, max_size=n_sources)))
    markers = draw(st.lists(st.one_of(
        st.integers(-5, 12).map(lambda k: f"[{k}]"),
        st.sampled_from(["[0]", "[1000]", "[999999]", "[99999999999]", "[1-50]", "[1-51]", "[2-1]", "[1,1,1]",
                         "【3】", "^2", "[^4]", "[-2]", "[1–3]", "[１]", "[٣]"]),
        st.tuples(st.integers(0, 30), st.integers(0, 30)).map(lambda t: f"[{t[0]}-{t[1]}]")), max_size=6))
    sentences = [f"Claim {k} holds {m}." for k, m in enumerate(markers)] or ["A claim without markers."]
    obj = {"answer_id": "cit", "engine": "E", "query": "q", "query_type": draw(st.sampled_from(["debate", "expertise"])),
           "answer": " ".join(sentences),
           "sources": [{"index": i, "url": f"https://s{k}.example.org", "text": f"text {k}"} for k, i in enumerate(indexes)]}
    if draw(st.booleans()):
        ints = st.integers(-(2**40), 2**40)
        obj["labels"] = {"statements": [
            {"text": s, "relevant": draw(st.booleans()),
             "supported_by": draw(st.lists(st.one_of(st.integers(-3, 12), ints), max_size=4)),
             "partially_supported_by": draw(st.lists(st.one_of(st.integers(-3, 12), ints), max_size=3))}
            for s in draw(st.permutations(sentences))]}
    return obj


@settings(max_examples=120, **SETTINGS)
@given(obj=citation_answers())
def test_citation_indexes(obj):
    result = ends_cleanly(parse_answer, obj, "cit")
    if isinstance(result, InputError):
        assert result.field.startswith("sources["), str(result)  # only a source index may be refused
        return
    listed = {s.index for s in result.answer.sources}
    for s in result.statements:
        assert set(s.citations) <= listed and not set(s.dangling) & listed
        assert all(isinstance(i, int) and 0 < i <= 10_000 for i in s.citations)
        assert all(-(2**31) < i < 2**31 for i in s.dangling)  # fits the int32 Parquet column
    check_scored(result)


@settings(max_examples=80, **SETTINGS)
@given(kind=st.sampled_from(sorted(BAD_LINES)), position=st.integers(0, 4), blank=st.booleans(),
       crlf=st.booleans())
def test_jsonl_bad_line_in_the_middle(tmp_path_factory, kind, position, blank, crlf):
    lines = DEMO_LINES[2:7]
    bad, needle = BAD_LINES[kind]
    lines = lines[:position] + [bad] + lines[position:]
    if blank:
        lines.insert(0, "")
    line_no = position + 1 + blank
    path = tmp_path_factory.mktemp("jsonl") / "answers.jsonl"
    path.write_text(("\r\n" if crlf else "\n").join(lines) + "\n", encoding="utf-8")
    result = ends_cleanly(load_canonical, path)
    assert isinstance(result, InputError), kind
    if position == 0 and not BAD_LINES[kind][0].startswith('{"answer_id"'):
        # a first line that is not an object makes the file look like one JSON document: the error
        # names the file (and line 1 in its message) instead of "answers.jsonl:1"
        assert "answers.jsonl" in result.record, (kind, str(result))
        assert needle in str(result) or "invalid JSON at line 1" in str(result) or "nested" in str(result)
        return
    assert f"answers.jsonl:{line_no}" in result.record, (kind, str(result))
    assert needle in str(result), (kind, str(result))


@settings(max_examples=60, **SETTINGS)
@given(path=st.sampled_from(GOOD_PATHS + ["extra", "labels.extra"]),
       literal=st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "[NaN]", '{"v": Infinity}']),
       jsonl=st.booleans())
def test_non_finite_numbers_anywhere(tmp_path_factory, path, literal, jsonl):
    obj = good_obj()
    obj.setdefault("labels", {})
    set_path(obj, path, "@@LITERAL@@")
    text = json.dumps(obj).replace('"@@LITERAL@@"', literal)
    file = tmp_path_factory.mktemp("nan") / ("a.jsonl" if jsonl else "a.json")
    file.write_text(DEMO_LINES[3] + "\n" + text + "\n" if jsonl else text, encoding="utf-8")
    result = ends_cleanly(load_canonical, file)
    assert isinstance(result, InputError), (path, literal)
    assert ("a.jsonl:2" if jsonl else "a.json") in result.record
    assert result.field.startswith(path), str(result)  # the error names the field
    assert ("NaN" if "NaN" in literal else "Infinity") in str(result)


@settings(max_examples=120, **SETTINGS)
@given(path=st.sampled_from(GOOD_PATHS), piece=st.sampled_from(DIRECTION + ZERO_WIDTH + SURROGATES + CONTROL),
       where=st.sampled_from(["prefix", "suffix", "replace"]), ascii_escapes=st.booleans())
def test_unicode_direction_zero_width_surrogates(tmp_path_factory, path, piece, where, ascii_escapes):
    obj = good_obj()
    parts = path.replace("[", ".[").split(".")
    current: Any = obj
    for part in parts:
        current = current[int(part[1:-1])] if part.startswith("[") else current[part]
    if not isinstance(current, str):
        current = str(current)
    value = {"prefix": piece + current, "suffix": current + piece, "replace": piece}[where]
    set_path(obj, path, value)
    file = tmp_path_factory.mktemp("uni") / "a.json"
    text = json.dumps(obj, ensure_ascii=ascii_escapes)
    file.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = ends_cleanly(load_canonical, file)
    if piece in SURROGATES:
        # a lone surrogate can never be stored as UTF-8: a clear error naming the field, every time
        assert isinstance(result, InputError), path
        if ascii_escapes:  # "\ud800" spelled as an escape: refused by name
            assert result.field.startswith(path) and "surrogate" in str(result), str(result)
        else:  # written raw, the file itself is not UTF-8
            assert "not UTF-8" in str(result), str(result)
    elif not isinstance(result, InputError):
        check_loaded(result)


@settings(max_examples=30, **SETTINGS)
@given(depth=st.sampled_from([500, 990, 1_000, 3_000, 10_000, 50_000]),
       opener=st.sampled_from(["[", '{"a": ', '{"labels": ']), place=st.sampled_from(["top", "field", "line2"]))
def test_deeply_nested_json(tmp_path_factory, depth, opener, place):
    closer = "]" if opener == "[" else "}"
    deep = opener * depth + ("1" if opener != "[" else "") + closer * depth
    if place == "top":
        text = deep
    elif place == "field":
        text = DEMO_LINES[0].replace('"engine"', f'"nested": {deep}, "engine"', 1)
    else:
        text = DEMO_LINES[0] + "\n" + deep + "\n"
    file = tmp_path_factory.mktemp("deep") / "a.jsonl"
    file.write_text(text, encoding="utf-8")
    result = ends_cleanly(load_canonical, file)
    if depth >= 3_000:
        assert isinstance(result, InputError) and ("nested too deeply" in str(result) or place != "field")
    if isinstance(result, InputError):
        assert result.record


@settings(max_examples=15, **SETTINGS)
@given(path=st.sampled_from(["answer", "query", "engine", "answer_id", "sources[0].text", "sources[0].url",
                             "sources[0].title", "labels.statements[0].text", "extra"]),
       size=st.sampled_from([5_000, 200_000, MAX_ANSWER_CHARS + 1, 2_100_000]),
       unit=st.sampled_from(["a", "word [1]. ", "\u202e", " ", "[", "\n\n"]))
def test_huge_strings(tmp_path_factory, path, size, unit):
    obj = good_obj()
    obj.setdefault("labels", {"statements": [{"text": "x"}]})
    set_path(obj, path, (unit * (size // len(unit) + 1))[:size])
    file = tmp_path_factory.mktemp("huge") / "a.json"
    file.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    result = ends_cleanly(load_canonical, file)
    if isinstance(result, InputError):
        assert result.field.startswith(path.split("[")[0].split(".")[0]), str(result)
        assert len(str(result)) < 1_000  # the message never echoes the huge value
    else:
        check_loaded(result)


@settings(max_examples=40, **SETTINGS)
@given(ids=st.lists(st.sampled_from(["a", "A", "a ", "1", 1, "\u200ba", "lumen-q1"]), min_size=2, max_size=5))
def test_duplicate_ids(tmp_path_factory, ids):
    lines = []
    for answer_id in ids:
        obj = good_obj()
        obj["answer_id"] = answer_id
        lines.append(json.dumps(obj))
    file = tmp_path_factory.mktemp("dup") / "a.jsonl"
    file.write_text("\n".join(lines), encoding="utf-8")
    result = ends_cleanly(load_canonical, file)
    as_text = [str(i) for i in ids]
    if len(set(as_text)) < len(as_text):
        assert isinstance(result, InputError) and "duplicate" in str(result) and result.field == "answer_id"
    else:
        assert not isinstance(result, InputError), str(result)
        assert len({a.answer.answer_id for a in result}) == len(ids)


# ---- the AEE release ----------------------------------------------------------------------------


@st.composite
def aee_objects(draw, k: int = 0):
    obj: dict[str, Any] = {
        "id": k, "Question": "Why?", "Output": "A first claim [1]. A second [2].", "answer_engine": "YouCom",
        "is_charged": "1", "confidence_score": "Moderately Confident",
        "S1": "https://x.example", "S1_content": "Title: x\n\nbody",
        "S2": "https://y.example", "S2_content": "Error",
        "core_statements": [{"id": 0, "sentence": "A first claim [1].", "core": "1", "citations": [1],
                             "supporting_sources": [1], "opinion_balance": "agree"}],
    }
    for key in draw(st.lists(st.sampled_from(["id", "Question", "Output", "answer_engine", "is_charged",
                                              "confidence_score", "S1", "S1_content", "S2", "S11", "core_statements",
                                              "cs.id", "cs.sentence", "cs.core", "cs.citations",
                                              "cs.supporting_sources", "cs.opinion_balance"]), max_size=3)):
        value = draw(st.one_of(json_values, st.lists(st.one_of(st.integers(-(2**40), 2**40), st.floats(),
                                                               st.sampled_from(["1", "x", "²", "٣", "1e3"])),
                                                     max_size=3),
                               st.sampled_from(["9" * 40, "²", "-7", "٣", "1" * 12])))
        if key.startswith("cs."):
            try_set_path(obj, f"core_statements[0].{key[3:]}", value)
        else:
            obj[key] = value
    if draw(st.booleans()):
        obj.pop(draw(st.sampled_from(sorted(obj))))
    return obj


@settings(max_examples=120, **SETTINGS)
@given(objs=st.lists(st.integers(0, 3), min_size=1, max_size=3).flatmap(
    lambda ks: st.tuples(*[aee_objects(k) for k in ks])))
def test_aee_release_hostile(tmp_path_factory, objs):
    path = tmp_path_factory.mktemp("aee") / "ans_eng_eval_0.1.json"
    path.write_text(json.dumps(list(objs)), encoding="utf-8")  # json.dumps may write NaN/Infinity
    result = ends_cleanly(load_aee, path)
    check_loaded(result)
    if not isinstance(result, InputError):
        for a in result:  # every index is storable in the int32 Parquet columns
            for s in a.statements:
                assert all(abs(i) <= 10_000 for i in s.citations + s.dangling)


@settings(max_examples=60, **SETTINGS)
@given(rows=st.lists(st.fixed_dictionaries({
    "sample_id": st.one_of(st.just(0), json_values),
    "core_statement_id": st.one_of(st.just(0), json_values, st.sampled_from([1e999, "9" * 40, "x"])),
    "source_idx": st.one_of(st.just(1), json_values, st.sampled_from([float("inf"), -1, 2**63])),
    "support": st.one_of(st.sampled_from(["full", "partial", "none", "Full ", "maybe"]), json_values)}),
    min_size=1, max_size=3), raw_line=st.sampled_from(["", "not json", "[]", "{", "\"\\udfff\""]))
def test_aee_support_rows_hostile(tmp_path_factory, rows, raw_line):
    folder = tmp_path_factory.mktemp("aees")
    answers = {"id": 0, "Question": "q", "Output": "A first claim [1].", "answer_engine": "E", "S1": "https://x",
               "S1_content": "Title: x\n\nbody", "core_statements": [{"id": 0, "sentence": "A first claim [1].",
                                                                      "core": "1", "citations": [1]}]}
    (folder / "ans_eng_eval_0.1.json").write_text(json.dumps([answers]))
    lines = [json.dumps(r) for r in rows] + ([raw_line] if raw_line else [])
    (folder / "ans_eng_eval_0.1_support_results.jsonl").write_text("\n".join(lines), encoding="utf-8")
    check_loaded(ends_cleanly(load_aee, folder))


# ---- ExpertQA -----------------------------------------------------------------------------------


@st.composite
def expertqa_lines(draw):
    claim = {"claim_string": "A claim [1].", "evidence": ["[1] https://x.example\n\nA passage."],
             "support": "Complete", "informativeness": "Very relevant", "worthiness": "Yes", "reliability": "Reliable"}
    answer = {"answer_string": "A claim [1].", "attribution": ["[1] https://x.example"], "claims": [claim]}
    obj: dict[str, Any] = {"question": "Why?", "answers": {"sys": answer}, "metadata": {"field": "Law"}}
    # deep nesting, lone surrogates and 5,000-digit numbers have their own regression tests below
    values = st.one_of(json_values, st.sampled_from(["[99999] u", "[0] u", "[-1] u", "[1]", "[1] \n\n", "", "[ 7 ] u\n\np"]),
                       st.lists(st.sampled_from(["[1] u", "[2] v\n\npassage", "nope", "[9999] w"]), max_size=3))
    for key in draw(st.lists(st.sampled_from(["question", "answers", "metadata", "answers.sys",
                                              "a.answer_string", "a.attribution", "a.claims", "a.attribution[0]",
                                              "c.claim_string", "c.evidence", "c.evidence[0]", "c.support",
                                              "c.informativeness", "c.reliability", "c"]), max_size=3)):
        value = draw(values)
        if key.startswith("a."):
            try_set_path(answer, key[2:], value)
        elif key == "c":
            answer["claims"] = [value] if isinstance(answer.get("claims"), list) else value
        elif key.startswith("c."):
            try_set_path(claim, key[2:], value)
        else:
            try_set_path(obj, key, value)
    return json.dumps(obj)


@pytest.mark.skipif(load_expertqa is None, reason="the ExpertQA importer is not present")
@settings(max_examples=80, **SETTINGS)
@given(lines=st.lists(expertqa_lines(), min_size=1, max_size=3), junk=st.sampled_from(["", "{", "[1]", "null", "\x00"]))
def test_expertqa_hostile(tmp_path_factory, lines, junk):
    path = tmp_path_factory.mktemp("eqa") / "rand_val.jsonl"
    path.write_text("\n".join(lines + ([junk] if junk else [])) + "\n", encoding="utf-8")
    check_loaded(ends_cleanly(load_expertqa, path))


# ---- the CLI, in process ------------------------------------------------------------------------


@settings(max_examples=80, **SETTINGS)
@given(content=st.one_of(mutated_bytes(), st.binary(max_size=200),
                         st.sampled_from(sorted(BAD_LINES)).map(lambda k: BAD_LINES[k][0].encode()),
                         citation_answers().map(lambda o: json.dumps(o).encode())),
       command=st.sampled_from(["score", "score --json", "run", "import canonical", "import aee", "import expertqa"]))
def test_cli_in_process_exit_codes(tmp_path_factory, capsys, results_root, content, command):
    path = tmp_path_factory.mktemp("cli") / "input.jsonl"
    path.write_bytes(content)
    words = command.split()
    if words[0] == "score":
        argv = ["score", str(path), *words[1:]]
    elif words[0] == "run":
        argv = ["run", "--dataset", "hostile", "--path", str(path), "--no-progress"]
    else:
        if words[1] == "expertqa":
            assume(load_expertqa is not None)
        argv = ["import", words[1], str(path), "--dataset", f"hostile-{words[1]}", "--no-progress"]
    cli(capsys, *argv)


# ---- the re-score page's inputs -----------------------------------------------------------------


pasted_text = st.one_of(hostile_text, surrogate_text, st.just(""), st.text(max_size=300),
                        st.sampled_from(["x" * 100_001, "[1] " * 5_000, "\u202e" * 5_000, "\u200b" * 1_001]))
pasted_fields = st.tuples(pasted_text, pasted_text, st.sampled_from(["debate", "expertise", "", "Debate", "\u202edebate"]),
                          pasted_text, st.lists(st.tuples(pasted_text, pasted_text, pasted_text), max_size=5))


@settings(max_examples=150, **SETTINGS)
@given(fields=pasted_fields)
def test_rescore_pasted_fields(fields):
    obj = pasted_object(*fields)
    result = ends_cleanly(parse_answer, obj, "pasted answer")
    if isinstance(result, InputError):
        assert result.record == "pasted answer" or result.record.startswith("pasted answer (")
        assert result.field  # the page maps the field to the text box to fix
    else:
        check_scored(result)


@pytest.fixture(scope="module")
def offline_judge():
    try:
        from pipeline.judges.offline.judge import OfflineJudge
    except ImportError as exc:  # pragma: no cover
        pytest.skip(f"offline judge not importable: {exc}")
    return OfflineJudge()


@settings(max_examples=60, **SETTINGS)
@given(fields=st.tuples(hostile_text, hostile_text, st.sampled_from(["debate", "expertise"]),
                        hostile_text.map(lambda t: t + " A claim [1]."),
                        st.lists(st.tuples(hostile_text, hostile_text, hostile_text), min_size=1, max_size=3)))
def test_rescore_pasted_fields_offline_judge(offline_judge, fields):
    """The page then runs the offline judge on what parse_answer accepted: labels, never an exception."""
    from pipeline.annotate import annotate_answer

    result = ends_cleanly(parse_answer, pasted_object(*fields), "pasted answer")
    if isinstance(result, InputError):
        return
    labelled = annotate_answer(result, offline_judge)
    for v in labelled.verdicts:
        assert v.score is None or math.isfinite(v.score)
    check_scored(labelled)


@settings(max_examples=120, **SETTINGS)
@given(text=st.one_of(hostile_text, surrogate_text, st.text(max_size=2000),
                      st.tuples(st.sampled_from(MARKUP + DIRECTION), st.integers(1, 3_000)).map(lambda t: t[0] * t[1])),
       listed=st.sets(st.integers(-3, 30), max_size=6),
       urls=st.dictionaries(hostile_text, st.one_of(st.integers(-2, 8), st.none(), hostile_text), max_size=3))
def test_splitter_hostile_text(text, listed, urls):
    statements = split_statements("x", text, listed, urls)
    for s in statements:
        assert 0 <= s.start <= s.end <= len(text) and text[s.start:s.end] == s.text
        assert set(s.citations) <= listed and not set(s.dangling) & listed
    for marker in find_citation_markers(text, urls):
        assert 0 <= marker.start < marker.end <= len(text) and marker.indexes


# ---- nothing already written is lost ------------------------------------------------------------


@pytest.fixture(scope="module")
def written_results(tmp_path_factory):
    """A results root holding the teaching corpus imported as dataset `kept` (recorded labels)."""
    base = tmp_path_factory.mktemp("kept")
    env = {"AEE_RESULTS_DIR": str(base / "results"), "AEE_CACHE_DIR": str(base / "cache")}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        assert cli_main(["run", "--dataset", "kept", "--path", str(DEMO), "--no-progress"]) == 0
        assert cli_main(["import", "canonical", str(DEMO), "--dataset", "kept", "--no-progress"]) == 0
    before = snapshot(base / "results")
    assert any(name.endswith("metrics.parquet") for name in before)
    return base, env, before


@st.composite
def bad_inputs(draw):
    """Input that must fail: good lines with one bad line or one bad field somewhere."""
    lines = list(DEMO_LINES[: draw(st.integers(0, 6))])
    kind = draw(st.sampled_from(["line", "field", "bytes", "dup"]))
    if kind == "line":
        lines.insert(draw(st.integers(0, len(lines))), BAD_LINES[draw(st.sampled_from(sorted(BAD_LINES)))][0])
        return "\n".join(lines).encode("utf-8")
    if kind == "field":
        obj = good_obj()
        path = draw(st.sampled_from(["query", "sources[1].url", "labels.statements[0].text", "engine"]))
        set_path(obj, path, draw(st.sampled_from(["\ud800", float("nan"), float("inf"), ["x"], {"a": 1}]
                                                 if path != "labels.statements[0].text" else ["\ud800", 3, ""])))
        lines.insert(draw(st.integers(0, len(lines))), json.dumps(obj).replace('"lumen-q1"', '"fresh-id"'))
        return "\n".join(lines).encode("utf-8")
    if kind == "bytes":
        return "\n".join(lines + [DEMO_LINES[7]]).encode("utf-8").replace(b"the", b"th\xe9", 1)
    return "\n".join(lines + [DEMO_LINES[0], DEMO_LINES[0]]).encode("utf-8")


@settings(max_examples=40, **SETTINGS)
@given(content=bad_inputs(), how=st.sampled_from(["run", "run --judge offline", "import canonical", "import aee"]))
def test_failing_run_or_import_keeps_written_results(written_results, capsys, content, how, monkeypatch):
    base, env, before = written_results
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    path = base / "bad.jsonl"
    path.write_bytes(content)
    # --strict: stop at the first bad record (without it the bad record is refused and listed, and the
    # good ones are run: tests/pipeline/importers/test_import_refusals.py)
    if how.startswith("run"):
        argv = ["run", "--dataset", "kept", "--path", str(path), "--no-progress", "--strict", *how.split()[1:]]
    else:
        argv = ["import", how.split()[1], str(path), "--dataset", "kept", "--no-progress", "--strict"]
    code, _, err = cli(capsys, *argv)
    assert code == 2, err
    assert snapshot(base / "results") == before  # byte-identical, nothing added or removed
