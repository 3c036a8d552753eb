"""How far each engine's citations reach (pipeline/text/citation_scope.py): the scope every format
declares, the paragraph rule, the one line a page shows, and headings never becoming statements."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import InputError
from pipeline.importers import IMPORTERS
from pipeline.importers.canonical import parse_answer
from pipeline.importers.engines import FORMATS
from pipeline.records import AnnotatedAnswer, Answer
from pipeline.text.citation_scope import (
    META_COVERED,
    META_SCOPE,
    SCOPES,
    cover_paragraphs,
    known_scope,
    scope_for_engine,
    scope_from_text,
    scope_note,
    with_scope,
)
from pipeline.text.text import paragraph_spans, split_statements

ENGINES = Path(__file__).resolve().parents[2] / "fixtures" / "engines"

# Hand-checked: how each provider's responses attach citations.
DECLARED = {"perplexity": "sentence", "openai-responses": "paragraph", "openai-chat": "paragraph",
            "anthropic": "span", "gemini": "span", "you": "sentence", "exa": "answer"}


def test_every_format_declares_its_scope():
    assert {name: f.scope for name, f in FORMATS.items()} == DECLARED
    assert all(f.scope in SCOPES for f in FORMATS.values())


@pytest.mark.parametrize("fixture,fmt", [
    ("perplexity_sonar.json", "perplexity"), ("openai_responses.json", "openai-responses"),
    ("openai_chat_search.json", "openai-chat"), ("anthropic_web_search.json", "anthropic"),
    ("gemini_grounding.json", "gemini"), ("you_answer.json", "you"), ("exa_answer.json", "exa")])
def test_each_engine_fixture_records_its_format_scope(fixture, fmt):
    (a,) = list(IMPORTERS["auto"].iter(ENGINES / fixture))
    assert a.answer.meta["format"] == fmt
    assert a.answer.meta[META_SCOPE] == DECLARED[fmt]


def test_exa_answer_level_sources_are_said_in_one_line():
    (a,) = list(IMPORTERS["auto"].iter(ENGINES / "exa_answer.json"))
    assert all(not s.citations for s in a.statements)
    assert scope_note(a.answer.meta, a.answer.engine) == (
        "How exa cites: sources are listed for the whole answer; no sentence carries a citation of its own.")


PARAGRAPHS = ("Cities report cleaner air. Shops gain trade. Traffic moves elsewhere [1].\n\n"
              "A second paragraph opens. It ends here [2]. A trailing remark.\n\n"
              "- Item one. Item two [1].\n- Item three.")


def test_paragraph_rule_golden():
    statements = split_statements("a", PARAGRAPHS, {1, 2})
    made, covered = cover_paragraphs(PARAGRAPHS, statements)
    assert [(s.text, s.citations) for s in made] == [
        ("Cities report cleaner air.", (1,)),  # covered by the marker closing its paragraph
        ("Shops gain trade.", (1,)),
        ("Traffic moves elsewhere [1].", (1,)),
        ("A second paragraph opens.", (2,)),
        ("It ends here [2].", (2,)),
        ("A trailing remark.", ()),  # after the paragraph's last marker: nothing covers it
        ("Item one.", (1,)),  # a list item is its own paragraph
        ("Item two [1].", (1,)),
        ("Item three.", ()),  # the item above does not reach into this one
    ]
    assert covered == [0, 1, 3, 6]
    assert [(s.start, s.end) for s in made] == [(s.start, s.end) for s in statements]  # offsets untouched


def test_dangling_indexes_are_carried_too():
    text = "First claim. Second claim [7]."
    made, covered = cover_paragraphs(text, split_statements("a", text, {1}))
    assert [(s.citations, s.dangling) for s in made] == [((), (7,)), ((), (7,))] and covered == [0]


@pytest.mark.parametrize("engine,scope", [
    ("ChatGPT", "paragraph"), ("openai", "paragraph"), ("openai:gpt-4o-search-preview", "paragraph"),
    ("Perplexity", "sentence"), ("gemini", "span"), ("exa", "answer"), ("Norbridge Answers", "sentence"), ("", "sentence")])
def test_scope_for_engine(engine, scope):
    assert scope_for_engine(engine) == scope


def _answer(engine: str, text: str, meta: dict | None = None) -> dict:
    obj = {"answer_id": "x", "engine": engine, "query": "q?", "query_type": "expertise", "answer": text,
           "sources": [{"index": 1, "url": "https://a.example/", "title": "A", "text": "t"}]}
    if meta:
        obj["meta"] = meta
    return obj


def test_canonical_answers_take_the_scope_from_the_engine_name():
    text = "Trees cool streets. Shade lowers bills [1]."
    chat = parse_answer(_answer("ChatGPT", text), "w")
    assert [s.citations for s in chat.statements] == [(1,), (1,)]
    assert chat.answer.meta[META_SCOPE] == "paragraph" and chat.answer.meta[META_COVERED] == "1"
    other = parse_answer(_answer("Norbridge", text), "w")
    assert [s.citations for s in other.statements] == [(), (1,)]
    assert META_SCOPE not in other.answer.meta  # nothing to say where markers bind per sentence


def test_scope_note_wording():
    assert scope_note({}, "x") == "" and scope_note({META_SCOPE: "sentence"}, "x") == ""
    assert scope_note({META_SCOPE: "bogus"}, "x") == ""
    assert scope_note({META_SCOPE: "paragraph", META_COVERED: "2"}, "ChatGPT") == (
        "How ChatGPT cites: a citation at the end of a paragraph backs every sentence of that paragraph before it. "
        "2 sentences without a marker of their own are counted as cited by their paragraph's citation.")
    assert scope_note({META_SCOPE: "span"}, "") == (
        "How this engine cites: a citation backs the sentences whose words its character span covers.")


def test_with_scope_refuses_an_unknown_scope():
    a = AnnotatedAnswer(Answer(answer_id="a", engine="e", query="q", query_type="expertise", text="T.", sources=()), ())
    with pytest.raises(ValueError):
        with_scope(a, "chapter")


@pytest.mark.parametrize("text", [
    "## Key findings\n\nTrees cool streets [1].",
    "Key findings\n\nTrees cool streets [1].",
    "Key findings:\n\n- Trees cool streets [1].",
    "**Key findings**\n\nTrees cool streets [1].",
    "Key findings\n============\n\nTrees cool streets [1].",
])
def test_headings_are_never_statements_in_any_form(text):
    for engine in ("ChatGPT", "Perplexity"):
        a = parse_answer(_answer(engine, text), "w")
        assert [s.text for s in a.statements] == ["Trees cool streets [1]."], engine


def test_cli_score_says_how_the_engine_cites(capsys):
    from pipeline.cli import main as cli_main

    assert cli_main(["score", str(ENGINES / "openai_responses.json")]) == 0
    err = capsys.readouterr().err
    assert "How openai:gpt-4.1-mini cites: a citation at the end of a paragraph backs every sentence" in err
    assert cli_main(["score", str(ENGINES / "perplexity_sonar.json")]) == 0
    assert "cites:" not in capsys.readouterr().err  # per sentence: nothing to say


_PIECES = ["Trees cool streets.", "Shade helps [1].", "Costs fall [2][3].", "\n\n", "\n- ", "Key findings\n\n",
           " St. Louis grew.", " e.g. rice.", "[4]", " ", "## Head\n", "Why? Because."]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=25))
def test_paragraph_scope_only_adds_citations_from_its_own_paragraph(pieces):
    text = "".join(pieces)
    statements = split_statements("a", text, {1, 2, 3})
    made, covered = cover_paragraphs(text, statements)
    assert [(s.index, s.start, s.end, s.text) for s in made] == [(s.index, s.start, s.end, s.text) for s in statements]
    paragraphs = paragraph_spans(text)

    def para(s):
        return next(k for k, (a, b) in enumerate(paragraphs) if a <= s.start < b)

    for before, after in zip(statements, made):
        if before.citations or before.dangling:
            assert (after.citations, after.dangling) == (before.citations, before.dangling)
        elif after.index in covered:
            donor = next(s for s in statements[after.index + 1:] if s.citations or s.dangling)
            assert para(donor) == para(before)
            assert (after.citations, after.dangling) == (donor.citations, donor.dangling)
        else:
            assert not after.citations and not after.dangling


def _read(text: str, listed=(1, 2)) -> tuple[str, str]:
    return scope_from_text(text, split_statements("a", text, set(listed), {}))


def test_scope_from_text_golden():
    """Issue 45 item 1: an unknown engine's markers are read from the text. Hand-checked cases."""
    # two paragraphs, each cited only by the marker closing it: the ChatGPT habit -> paragraph
    assert _read("Trees cool streets. Shade lowers bills [1].\n\nCosts rise. Upkeep is dear [2].") == \
        ("paragraph", "2 paragraphs of several sentences carry markers only at the end")
    # one such paragraph, the other paragraph a single cited sentence -> paragraph (1 counted)
    assert _read("Trees cool streets. Shade lowers bills [1].\n\nUpkeep is dear [2].")[0] == "paragraph"
    # a marker inside a paragraph: the engine cites sentence by sentence
    assert _read("Trees cool streets [1]. Shade lowers bills [2].\n\nCosts rise. Upkeep is dear [2].") == \
        ("sentence", "a marker stands inside a paragraph, not only at its end")
    # only one-sentence paragraphs: nothing tells the two readings apart -> sentence
    assert _read("Trees cool streets [1].\n\nUpkeep is dear [2].") == \
        ("sentence", "no paragraph of several sentences ends with its only markers")
    # no markers at all
    assert _read("Trees cool streets. Shade lowers bills.")[0] == "sentence"
    # a dangling marker closing the paragraph counts as a marker too
    assert _read("Trees cool streets. Shade lowers bills [7].")[0] == "paragraph"


def test_known_scope_is_none_for_unknown_names():
    assert known_scope("pasted") is None and known_scope("Norbridge") is None and known_scope("") is None
    assert known_scope("ChatGPT") == "paragraph" and known_scope("openai:gpt-4o-search") == "paragraph"
    assert scope_for_engine("pasted") == "sentence"


def test_canonical_citation_scope_field_overrides_the_engine_name():
    text = "Trees cool streets. Shade lowers bills [1]."
    given = parse_answer({**_answer("Norbridge", text), "citation_scope": "paragraph"}, "w")
    assert [s.citations for s in given.statements] == [(1,), (1,)]
    kept = parse_answer({**_answer("ChatGPT", text), "citation_scope": "sentence"}, "w")
    assert [s.citations for s in kept.statements] == [(), (1,)] and kept.answer.meta[META_SCOPE] == "sentence"
    with pytest.raises(InputError) as err:
        parse_answer({**_answer("x", text), "citation_scope": "chapter"}, "w")
    assert err.value.field == "citation_scope"


def test_a_saved_answer_keeps_how_its_markers_were_read():
    """Re-score's Save writes to_canonical: the reading used on the page travels with the answer."""
    from pipeline.importers.canonical import to_canonical

    text = "Trees cool streets. Shade lowers bills [1]."
    read = parse_answer({**_answer("pasted", text), "citation_scope": "paragraph"}, "w")
    saved = to_canonical(read)
    assert saved["citation_scope"] == "paragraph"
    assert [s.citations for s in parse_answer(saved, "again").statements] == [(1,), (1,)]
    assert "citation_scope" not in to_canonical(parse_answer(_answer("Norbridge", text), "w"))
