"""Locating pre-split claims in their answer text: hand-checked cases of each tolerance, properties,
and the share located on the three ExpertQA files (the acceptance asks for >= 95%)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.storage.paths import expertqa_dir
from pipeline.text.locate import locate_spans

ANSWER = ("Guilds were **associations of craftsmen**[1] [2]. Some of the main problems are:\n\n"
          "- A lack of legal entry pathways[4].\n- **No system** to share the burdens[5].\n\n"
          "1. Begin with an assessment of the patient [3].")


def _slices(text: str, claims: list[str]) -> list[str | None]:
    return [text[s:e] if s >= 0 else None for s, e in locate_spans(text, claims)]


def test_exact_claims_keep_their_markers_and_full_stop():
    assert _slices(ANSWER, ["Guilds were **associations of craftsmen**[1] [2]."]) == [
        "Guilds were **associations of craftsmen**[1] [2]."]


def test_whitespace_bullets_and_bold_the_splitter_changed():
    claims = [
        "Guilds were **associations of craftsmen**[1] [2].",
        "Some of the main problems are:  - A lack of legal entry pathways[4]. -",  # newlines eaten, bullet glued
        "No system** to share the burdens[5]. 1.",  # opening bold lost, next number glued
        "Begin with an assessment of the patient [3].",
    ]
    assert _slices(ANSWER, claims) == [
        "Guilds were **associations of craftsmen**[1] [2].",
        "Some of the main problems are:\n\n- A lack of legal entry pathways[4].",
        "**No system** to share the burdens[5].",
        "Begin with an assessment of the patient [3].",
    ]


def test_marker_missing_from_claim_or_from_answer():
    text = "Cars pollute [1] the air of cities. Buses are cleaner."
    assert _slices(text, ["Cars pollute the air of cities.", "Buses are cleaner [2]."]) == [
        "Cars pollute [1] the air of cities.", "Buses are cleaner."]


def test_case_quotes_and_unicode_forms_do_not_matter():
    text = "The \u201cﬁrst\u201d rule is SIMPLE. Next one."
    assert _slices(text, ['the "first" rule is simple.']) == ["The \u201cﬁrst\u201d rule is SIMPLE."]


def test_repeated_sentence_goes_to_the_next_free_place():
    text = "It works. Then more. It works."
    assert locate_spans(text, ["It works.", "Then more.", "It works."]) == [(0, 9), (10, 20), (21, 30)]
    # out of order: the second copy is found before the cursor, in the part nobody holds
    assert locate_spans(text, ["Then more.", "It works.", "It works."]) == [(10, 20), (21, 30), (0, 9)]


def test_loose_match_accepts_a_small_edit_and_rejects_a_different_sentence():
    text = "The committee approved the new budget for schools and hospitals in March. Other text here."
    edited = "The committee approved a new budget for schools and hospitals in March."  # one word changed
    assert _slices(text, [edited]) == ["The committee approved the new budget for schools and hospitals in March."]
    assert locate_spans(text, ["Rainfall in the desert doubled during the last decade."]) == [(-1, -1)]


def test_not_found_empty_and_hostile_inputs():
    assert locate_spans("abc", ["", "   ", "- **", "zzz"]) == [(-1, -1)] * 4
    assert locate_spans("", ["abc"]) == [(-1, -1)]
    assert locate_spans("x" * 500_000, ["x"]) == [(-1, -1)]  # over the size bound: not searched


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
                min_size=1, max_size=6))
def test_spans_are_in_bounds_and_never_overlap(parts):
    text = " ".join(parts)
    spans = locate_spans(text, parts)
    assert len(spans) == len(parts)
    located = sorted(s for s in spans if s[0] >= 0)
    for s, e in located:
        assert 0 <= s < e <= len(text)
    for (_, end), (next_start, _) in zip(located, located[1:]):
        assert end <= next_start


@settings(max_examples=100, deadline=None)
@given(st.lists(st.from_regex(r"[A-Za-z]{2,9}( [a-z]{2,9}){2,8}\.", fullmatch=True), min_size=1, max_size=5))
def test_sentences_cut_from_the_text_are_all_found(sentences):
    text = "\n\n".join(f"- **{s[:-1]}**[{k + 1}]." for k, s in enumerate(sentences))
    spans = locate_spans(text, sentences)
    assert all(s >= 0 for s, _ in spans)


@pytest.mark.skipif(expertqa_dir() is None, reason="ExpertQA files not found")
def test_expertqa_claims_are_located():
    shares = {}
    for path in sorted(expertqa_dir().glob("*.jsonl")):
        total = found = 0
        for line in path.open(encoding="utf-8"):
            question = json.loads(line)
            for answer in question["answers"].values():
                spans = locate_spans(answer["answer_string"], [c["claim_string"] for c in answer["claims"]])
                total += len(spans)
                found += sum(s >= 0 for s, _ in spans)
        shares[path.stem] = found / total
    assert set(shares) == {"domain_test", "domain_val", "rand_val"}
    assert min(shares.values()) >= 0.95, shares
