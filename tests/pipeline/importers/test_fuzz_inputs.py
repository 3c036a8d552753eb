"""Hostile and malformed input, generated: every case ends in a result or one clear error.

Cases per test (max_examples): canonical objects 300, raw bytes 200, AEE objects 200,
re-score fields 200, splitter text 200, CLI files 60 -> 1,160 generated cases in all, plus the
hand-picked regressions below. "Clear error" means an InputError (exit code 2 from the CLI)
whose message names the record; never another exception, never a traceback on stderr.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli import main as cli_main
from pipeline.errors import InputError
from pipeline.importers.aee import load_aee
from pipeline.importers.canonical import load_canonical, parse_answer
from pipeline.metrics import score_answer
from pipeline.text.text import split_statements

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

ODD_TEXT = st.text(alphabet=st.sampled_from(list("ab [](){}^【】-,.;:\n#*`|<>\"'\\") + ["\u202e", "\u200b", "\u2066",
                                                                                       "\ufeff", "é", "中", "\U0001F600"]),
                   max_size=300)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                         st.floats(allow_nan=False, allow_infinity=False), ODD_TEXT)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                   st.dictionaries(ODD_TEXT, inner, max_size=4)),
                           max_leaves=12)


def _source(k: int):
    return st.fixed_dictionaries({
        "index": st.one_of(st.just(k), JSON_SCALARS),
        "url": st.one_of(st.just(f"https://s{k}.example.org"), JSON_SCALARS),
        "title": st.one_of(st.just("T"), JSON_SCALARS),
        "text": st.one_of(st.just("some source text here"), ODD_TEXT, JSON_VALUES),
    })


@st.composite
def canonical_objects(draw):
    """Mostly well-formed answers with hostile values dropped into random fields."""
    n_sources = draw(st.integers(0, 4))
    marker = draw(st.sampled_from(["[1]", "[99]", "[-1]", "[0]", "[1-3]", "【2】", "^1", "[1][2]", "[2, 7]", ""]))
    obj = {
        "answer_id": draw(st.one_of(st.just("a1"), JSON_SCALARS)),
        "engine": draw(st.one_of(st.just("E"), JSON_SCALARS)),
        "query": draw(st.one_of(st.just("Why should X?"), JSON_SCALARS)),
        "query_type": draw(st.one_of(st.sampled_from(["debate", "expertise"]), JSON_SCALARS)),
        "answer": draw(st.one_of(st.just(f"A claim {marker}. Another one."), ODD_TEXT, JSON_VALUES)),
        "sources": draw(st.one_of(st.tuples(*[_source(k + 1) for k in range(n_sources)]).map(list), JSON_VALUES)),
    }
    if draw(st.booleans()):
        obj["labels"] = draw(st.one_of(
            JSON_VALUES,
            st.fixed_dictionaries({"confidence": JSON_SCALARS,
                                   "statements": st.lists(st.fixed_dictionaries({
                                       "text": st.one_of(st.just("A claim"), JSON_SCALARS),
                                       "relevant": JSON_SCALARS, "stance": JSON_SCALARS,
                                       "supported_by": st.one_of(st.lists(st.integers(-5, 200), max_size=3), JSON_SCALARS),
                                   }), max_size=3)})))
    for key in draw(st.lists(st.sampled_from(sorted(obj)), max_size=2)):
        obj.pop(key, None)
    return obj


def _ends_cleanly(fn, *args):
    """Run fn: a result or an InputError are fine; anything else fails the test."""
    try:
        return fn(*args)
    except InputError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return None


@settings(max_examples=300, **SETTINGS)
@given(canonical_objects())
def test_canonical_objects_end_in_result_or_clear_error(obj):
    annotated = _ends_cleanly(parse_answer, obj, "case")
    if annotated is not None:
        results = score_answer(annotated)
        for result in results.values():
            assert result.value is None or math.isfinite(result.value)


@settings(max_examples=200, **SETTINGS)
@given(st.binary(max_size=2000))
def test_random_bytes_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bytes") / "answers.jsonl"
    path.write_bytes(data)
    _ends_cleanly(load_canonical, path)


@st.composite
def aee_objects(draw):
    obj = {"id": draw(st.one_of(st.integers(0, 9), JSON_SCALARS)), "Question": draw(st.one_of(st.just("q"), JSON_SCALARS)),
           "Output": draw(st.one_of(st.just("A [1]."), JSON_VALUES)),
           "answer_engine": draw(st.one_of(st.just("YouCom"), JSON_SCALARS)),
           "is_charged": draw(JSON_SCALARS), "confidence_score": draw(JSON_SCALARS),
           "S1": draw(st.one_of(st.just("https://x.example"), JSON_SCALARS)),
           "S1_content": draw(st.one_of(st.just("Title: x\n\nbody"), JSON_VALUES)),
           "core_statements": draw(st.one_of(JSON_VALUES, st.lists(st.fixed_dictionaries({
               "id": JSON_SCALARS, "sentence": st.one_of(st.just("A [1]."), JSON_SCALARS), "core": JSON_SCALARS,
               "citations": st.one_of(st.lists(st.integers(-3, 50), max_size=3), JSON_VALUES),
               "opinion_balance": JSON_SCALARS}), max_size=3)))}
    return obj


@settings(max_examples=200, **SETTINGS)
@given(st.lists(aee_objects(), min_size=1, max_size=3))
def test_aee_release_objects(tmp_path_factory, objs):
    path = tmp_path_factory.mktemp("aee") / "ans_eng_eval_0.1.json"
    path.write_text(json.dumps(objs))
    answers = _ends_cleanly(load_aee, path)
    for annotated in answers or []:
        score_answer(annotated)


@settings(max_examples=200, **SETTINGS)
@given(ODD_TEXT, ODD_TEXT, st.lists(st.tuples(ODD_TEXT, ODD_TEXT, ODD_TEXT), max_size=4),
       st.sampled_from(["debate", "expertise", "", "other"]))
def test_rescore_fields(query, answer, sources, query_type):
    # The re-score page builds a canonical object from pasted fields and calls parse_answer.
    obj = {"answer_id": "pasted", "engine": "pasted", "query": query, "query_type": query_type, "answer": answer,
           "sources": [{"index": k + 1, "title": t, "url": u, "text": x} for k, (t, u, x) in enumerate(sources)]}
    annotated = _ends_cleanly(parse_answer, obj, "pasted answer")
    if annotated is not None:
        score_answer(annotated)


@settings(max_examples=200, **SETTINGS)
@given(ODD_TEXT, st.sets(st.integers(-2, 12), max_size=5))
def test_splitter_on_hostile_text(text, listed):
    statements = split_statements("x", text, listed)
    for s in statements:
        assert text[s.start:s.end] == s.text
        assert set(s.citations) <= listed and not set(s.dangling) & listed


@settings(max_examples=60, **SETTINGS)
@given(st.one_of(canonical_objects().map(json.dumps), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_cli_score_exit_codes(tmp_path_factory, capsys, content):
    path = tmp_path_factory.mktemp("cli") / "in.json"
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    code = cli_main(["score", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 2), err  # 1 would be an internal error reaching the user
    assert "Traceback" not in err
    if code == 2:
        assert err.startswith("error:") and len(err.strip().splitlines()) == 1


# ---- hand-picked regressions -----------------------------------------------------------------


def test_deeply_nested_json_is_a_clear_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested"):
        load_canonical(path)


def test_deeply_nested_json_line_is_a_clear_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    good = (Path(__file__).resolve().parents[2] / "fixtures" / "worked_example.json").read_text().replace("\n", " ")
    path.write_text(good + "\n" + "{\"a\":" * 50_000 + "1" + "}" * 50_000 + "\n")
    with pytest.raises(InputError, match="deep.jsonl:2"):
        load_canonical(path)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(tmp_path, literal):
    path = tmp_path / "nan.json"
    path.write_text('{"answer_id": "x", "engine": "e", "query": "q", "query_type": "debate", "answer": "a [1].", '
                    f'"sources": [{{"index": 1, "text": "t"}}], "labels": {{"confidence": {literal}}}}}')
    with pytest.raises(InputError, match=literal.lstrip("-")):
        load_canonical(path)


def test_lone_surrogate_escape_is_handled(tmp_path):
    path = tmp_path / "sur.json"
    path.write_text('{"answer_id": "x", "engine": "e", "query": "q\\ud800", "query_type": "debate", '
                    '"answer": "a [1].", "sources": [{"index": 1, "text": "t"}]}')
    annotated = _ends_cleanly(load_canonical, path)
    if annotated is not None:
        score_answer(annotated[0])
