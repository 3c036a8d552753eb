"""ExpertQA importer: counts, a hand-checked golden slice, robustness and error messages."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from pipeline.importers.expertqa import HUMAN_JUDGE, PROMPT_VERSION, load_expertqa
from pipeline.storage.paths import expertqa_dir

EQA = expertqa_dir()
needs_data = pytest.mark.skipif(EQA is None, reason="ExpertQA not found (set EXPERTQA_DIR or put it in ../shared/data/expertqa)")

EXPECTED = {  # answers per split and system, counted from the files by hand-run jq
    "rand_val": {"bing_chat": 49, "post_hoc_gs_gpt4": 45, "rr_gs_gpt4": 41, "post_hoc_sphere_gpt4": 40,
                 "rr_sphere_gpt4": 25, "gpt4": 17},
    "domain_val": {"bing_chat": 52, "post_hoc_gs_gpt4": 43, "rr_gs_gpt4": 39, "post_hoc_sphere_gpt4": 36,
                   "rr_sphere_gpt4": 18, "gpt4": 18},
    "domain_test": {"bing_chat": 50, "post_hoc_sphere_gpt4": 50, "rr_gs_gpt4": 47, "post_hoc_gs_gpt4": 42,
                    "rr_sphere_gpt4": 35, "gpt4": 19},
}


@pytest.fixture(scope="module")
def all_answers():
    return load_expertqa(EQA)


@needs_data
def test_counts_per_split_and_system(all_answers):
    got: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for a in all_answers:
        got[a.answer.meta["split"]][a.answer.engine] += 1
    assert {k: dict(v) for k, v in got.items()} == EXPECTED
    assert len({a.answer.answer_id for a in all_answers}) == len(all_answers) == 666
    assert sum(len(a.statements) for a in all_answers) == 3845


@needs_data
def test_all_answers_are_well_formed(all_answers):
    for a in all_answers:
        assert a.answer.dataset == "expertqa" and a.answer.query_type == "expertise"
        assert a.answer.meta["support_scope"] == "cited_only"
        listed = {s.index for s in a.answer.sources}
        for st in a.statements:
            assert set(st.citations) <= listed
            assert not set(st.dangling) & listed
        for v in a.verdicts:
            assert v.judge == HUMAN_JUDGE and v.prompt_version == PROMPT_VERSION
            assert v.statement_index is not None and v.statement_index < len(a.statements)
        if not a.answer.engine.startswith(("rr_", "post_hoc_")):
            assert all(not s.text for s in a.answer.sources)


@needs_data
def test_golden_post_hoc_answer(all_answers):
    a = next(x for x in all_answers if x.answer.answer_id == "rand_val:8:post_hoc_sphere_gpt4")
    assert a.answer.field == "Music" and a.answer.engine == "post_hoc_sphere_gpt4"
    assert [s.url for s in a.answer.sources] == [
        "https://penzington.com/A440_(pitch_standard)", "https://www.total-piano-care.com/what-is-a440hz.html"]
    assert [s.fetch_ok for s in a.answer.sources] == [True, True]
    assert a.answer.sources[0].text.startswith("A440 (pitch standard) A440 (pitch standard)")
    assert [s.text[:44] for s in a.statements] == [
        "In Germany, the tuning standard is set at A=", "This standard, known as concert pitch, is wi"]
    # located in the answer text (hand-checked: the first sentence ends with "[1]." at 148)
    assert [(s.citations, s.dangling, s.start, s.end) for s in a.statements] == [((1,), (), 0, 148), ((2,), (), 149, 368)]
    assert a.answer.text[0:148].endswith("ISO 16:1975 [1].")
    got = sorted((v.kind, v.statement_index, v.source_index, v.label, v.raw) for v in a.verdicts)
    assert got == sorted([
        ("support", 0, 1, "none", "Incomplete"), ("relevance", 0, None, "filler", "Uninformative"),
        ("worthiness", 0, None, "no", "No"), ("reliability", 0, 1, "not_reliable", "Not reliable at all"),
        ("support", 1, 2, "full", "Complete"), ("relevance", 1, None, "relevant", "Very relevant"),
        ("worthiness", 1, None, "yes", "Yes"), ("reliability", 1, 2, "reliable", "Reliable"),
    ])


@needs_data
def test_golden_gpt4_multi_citation_and_na(all_answers):
    a = next(x for x in all_answers if x.answer.answer_id == "rand_val:26:gpt4")
    assert [(s.index, s.text, s.fetch_ok) for s in a.answer.sources] == [(1, "", None), (2, "", None), (3, "", False)]
    assert [s.citations for s in a.statements] == [(1, 2), (3,)]
    support = sorted((v.statement_index, v.source_index, v.label, v.raw) for v in a.verdicts
                     if v.kind == "support" and v.source_index is not None)
    # one claim label, given to each of its two cited sources; the N/A claim's pair was not judged
    # by the expert (the page could not be opened): unknown with the reason, never "none"
    assert support == [(0, 1, "partial", "Partial"), (0, 2, "partial", "Partial"),
                       (1, 3, "unknown", "not checked: the expert could not open the page (N/A)")]
    # ... and kept once as what the expert judged: the two sources together
    union = [(v.statement_index, v.source_set, v.label) for v in a.verdicts if v.kind == "support" and v.source_index is None]
    assert union == [(0, (1, 2), "partial")]
    rel = [v for v in a.verdicts if v.kind == "reliability"]
    assert [(v.statement_index, v.source_index, v.label) for v in rel] == [(0, None, "reliable")]


def _line(**over) -> dict:
    obj = {"question": "q?", "annotator_id": "x", "metadata": {"question_type": "t", "field": "F", "specific_field": "s"},
           "answers": {"rr_gs_gpt4": {"answer_string": "A [1]. B [1][9].", "attribution": ["[1] http://a.example"],
                                      "claims": [{"claim_string": "A [1].", "evidence": ["[1] http://a.example\n\npassage one"],
                                                  "support": "Complete", "informativeness": "Very relevant",
                                                  "worthiness": "Yes", "reliability": "Reliable"},
                                                 {"claim_string": "B [1][9].", "evidence": ["[1] http://a.example\n\npassage two"],
                                                  "support": "Partial", "informativeness": "Not too important",
                                                  "worthiness": "No", "reliability": "N/A"}]}}}
    obj.update(over)
    return obj


def test_small_file_mapping(tmp_path: Path):
    f = tmp_path / "mini.jsonl"
    f.write_text(json.dumps(_line()) + "\n")
    [a] = load_expertqa(f)
    assert a.answer.answer_id == "mini:1:rr_gs_gpt4"
    assert a.answer.sources[0].text == "passage one\n\npassage two" and a.answer.sources[0].fetch_ok is True
    assert a.statements[1].citations == (1,) and a.statements[1].dangling == (9,)
    kinds = sorted((v.kind, v.statement_index, v.label) for v in a.verdicts)
    assert ("relevance", 1, "filler") in kinds and ("support", 1, "partial") in kinds
    assert not any(v.kind == "reliability" and v.statement_index == 1 for v in a.verdicts)


def test_invalid_json_line_names_file_and_line(tmp_path: Path):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(_line()) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        load_expertqa(f)


def test_missing_field_names_file_line_and_field(tmp_path: Path):
    obj = _line()
    del obj["answers"]["rr_gs_gpt4"]["claims"][1]["claim_string"]
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(_line()) + "\n" + json.dumps(obj) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2.*claims\[1\].*claim_string"):
        load_expertqa(f)
    obj = _line()
    del obj["question"]
    f.write_text(json.dumps(obj) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1.*'question'"):
        load_expertqa(f)


def test_missing_path_and_empty_folder(tmp_path: Path):
    with pytest.raises(ValueError):
        load_expertqa(tmp_path / "nope")
    with pytest.raises(ValueError, match="no \\*.jsonl"):
        load_expertqa(tmp_path)
