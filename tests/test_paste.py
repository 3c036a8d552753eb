"""The paste parser (pipeline/importers/paste.py): property tests over generated answers and source
lists in every shape it reads, hand-picked pastes, JSON and uploads, and arbitrary text.

Generated cases: rendered lists 300, arbitrary text 200, reference definitions 100.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import InputError
from pipeline.importers.canonical import parse_answer
from pipeline.importers.paste import MAX_PASTED_SOURCES, parse_paste, parse_upload

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

words = st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzéü")), min_size=2, max_size=9)
title_words = st.text(alphabet=st.sampled_from(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789éü&'")),
                      min_size=1, max_size=10)
# a title of digits alone reads as a citation number ("[3](url)"), and one wrapped in a pair of quotes
# loses them (the quotes of '"Title"'), so generated titles hold a letter and are not wrapped
titles = st.lists(title_words, min_size=1, max_size=6).map(" ".join).filter(
    lambda t: any(c.isalpha() for c in t) and not (len(t) > 2 and t[0] == t[-1] == "'"))
hosts = st.tuples(st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyz0123456789")), min_size=2, max_size=12),
                  st.sampled_from(["org", "com", "net", "example", "co.uk"])).map(".".join)
paths = st.lists(st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyz0123456789-_")), min_size=1, max_size=12),
                 max_size=3).map("/".join)
urls = st.tuples(st.sampled_from(["https://", "http://", "https://www."]), hosts, paths,
                 st.sampled_from(["", "?q=1", "?a=b&c=d", "#part"])).map(lambda t: f"{t[0]}{t[1]}/{t[2]}{t[3]}")

STYLES = {  # how one source line is written; (template, carries the title)
    "bracket-title-url": ("[{i}] {t} - {u}", True),
    "bracket-url": ("[{i}] {u}", False),
    "number-url": ("{i}. {u}", False),
    "number-paren-title-url": ("{i}) {t} {u}", True),
    "number-mdlink": ("{i}. [{t}]({u})", True),
    "footnote": ("[^{i}]: {u}", False),
    "reference-quoted": ('[{i}]: {u} "{t}"', True),
    "bullet-mdlink": ("- [{t}]({u})", True),
    "bare-url": ("{u}", False),
    "number-title-then-url": ("{i}. {t}\n   {u}", True),
}
NUMBERED = {"bracket-title-url", "bracket-url", "number-url", "number-paren-title-url", "number-mdlink", "footnote",
            "reference-quoted", "number-title-then-url"}


@st.composite
def answers(draw, n_sources: int):
    sentences = []
    for _ in range(draw(st.integers(1, 5))):
        body = " ".join(draw(st.lists(words, min_size=2, max_size=8)))
        k = draw(st.integers(1, n_sources))
        marker = draw(st.sampled_from(["[{k}]", "[{k}][{j}]", "[^{k}]", ""])).format(k=k, j=max(1, k - 1))
        sentences.append(body[:1].upper() + body[1:] + marker + ".")
    return " ".join(sentences)


@st.composite
def pastes(draw):
    n = draw(st.integers(1, 8))
    style = draw(st.sampled_from(sorted(STYLES)))
    srcs = [(k + 1, draw(titles), draw(urls)) for k in range(n)]
    template = STYLES[style][0]
    lines = [template.format(i=i, t=t, u=u) for i, t, u in srcs]
    heading = draw(st.sampled_from(["", "Sources:", "**Sources**", "## References", "Citations"]))
    sep = draw(st.sampled_from(["\n\n", "\n\n\n", "\n"])) if heading else "\n\n"
    answer = draw(answers(n))
    text = answer + sep + (heading + "\n" if heading else "") + "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))
    return text, answer, style, srcs


@settings(max_examples=300, **SETTINGS)
@given(pastes())
def test_rendered_source_lists_come_back(case):
    text, answer, style, srcs = case
    parsed = parse_paste(text)
    assert parsed.answer == answer
    assert [s.url for s in parsed.sources] == [u for _, _, u in srcs]
    assert [s.index for s in parsed.sources] == [i for i, _, _ in srcs]
    if STYLES[style][1]:
        assert [s.title for s in parsed.sources] == [t for _, t, _ in srcs]
    # what the form then builds is a valid canonical answer
    obj = {"answer_id": "pasted", "engine": "pasted", "query": "q?", "query_type": "debate", "answer": parsed.answer,
           "sources": [{"index": s.index, "url": s.url, "title": s.title} for s in parsed.sources]}
    parse_answer(obj, "pasted answer")


@settings(max_examples=200, **SETTINGS)
@given(st.text(max_size=600))
def test_any_text_parses_without_error(text):
    parsed = parse_paste(text)
    assert len(parsed.sources) <= MAX_PASTED_SOURCES
    assert sorted({s.index for s in parsed.sources}) == [s.index for s in parsed.sources]  # distinct, in order
    assert all(s.index >= 1 for s in parsed.sources)
    assert parsed.found


@settings(max_examples=100, **SETTINGS)
@given(st.lists(st.tuples(st.integers(1, 30), urls), min_size=1, max_size=6), answers(3))
def test_definitions_anywhere_are_taken_out_of_the_answer(defs, answer):
    head = f"[{defs[0][0]}]: {defs[0][1]}"
    tail = "\n".join(f"[^{i}]: {u}" for i, u in defs[1:])
    parsed = parse_paste(f"{head}\n{answer}\n\n{tail}")
    assert parsed.answer == answer
    first = {}
    for i, u in defs:
        first.setdefault(i, u)
    assert {s.index: s.url for s in parsed.sources if s.index in first and s.url == first[s.index]} == first
    assert len(parsed.sources) == len(defs)


# ---- hand-picked pastes ----------------------------------------------------------------------------


def test_perplexity_page_copy():
    text = ("Zoos fund conservation programmes[1][2] but critics point to stress in large animals[3].\n\n"
            "Sources\n[1] Zoos and conservation - WWF https://www.worldwildlife.org/zoos\n"
            "[2] https://www.aza.org/conservation\n[3] Captivity stress | Nature (2021) https://www.nature.com/articles/x1")
    p = parse_paste(text)
    assert p.answer.endswith("stress in large animals[3].")
    assert [(s.index, s.title) for s in p.sources] == [(1, "Zoos and conservation - WWF"), (2, ""), (3, "Captivity stress | Nature (2021)")]


def test_chatgpt_copy_with_inline_links_only():
    text = "Paris is the capital of France ([wikipedia.org](https://en.wikipedia.org/wiki/Paris?utm_source=chatgpt.com))."
    p = parse_paste(text)
    assert [(s.index, s.url, s.title) for s in p.sources] == [(1, "https://en.wikipedia.org/wiki/Paris?utm_source=chatgpt.com", "wikipedia.org")]
    assert "own links" in p.found


def test_answer_bullets_with_citations_are_not_a_source_list():
    text = "Two points:\n\n- Cars pollute ([a.org](https://a.org/x)).\n- Bikes do not ([b.org](https://b.org/y))."
    p = parse_paste(text)
    assert p.answer == text and [s.url for s in p.sources] == ["https://a.org/x", "https://b.org/y"]


def test_titles_without_urls_under_a_heading_and_superscripts():
    p = parse_paste("Claim one\u00b9 and claim two\u00b2.\n\nReferences:\n1. A book without a link\n2. Another, with one https://x.example/2")
    assert p.answer == "Claim one[1] and claim two[2]."
    assert [(s.index, s.url, s.title) for s in p.sources] == [(1, "", "A book without a link"), (2, "https://x.example/2", "Another, with one")]


def test_duplicate_numbers_and_hostile_titles():
    p = parse_paste("A [1] B [2].\n\n[1] <script>alert(1)</script> https://a.example/\n[1] javascript:alert(2) https://b.example/")
    assert [(s.index, s.url) for s in p.sources] == [(1, "https://a.example/"), (2, "https://b.example/")]
    assert p.sources[0].title == "<script>alert(1)</script>"  # carried as text; the page escapes it
    assert any("appears twice" in n for n in p.notes)


def test_json_envelope_and_bare_response_and_canonical(tmp_path):
    env = (FIXTURES / "gemini_grounding.json").read_bytes()
    p = parse_upload(env, "gemini_grounding.json")
    assert p.query.startswith("Should city centres") and p.engine == "gemini:gemini-2.5-flash"
    assert p.answer.startswith("Zürich’s car-free centre began in 1990 [1].")
    bare = json.dumps(json.loads(env)["response"])
    q = parse_paste(bare)
    assert q.query == "" and q.answer == p.answer and any("write the query" in n for n in q.notes)
    canon = (ROOT / "tests" / "fixtures" / "worked_example.json").read_text()
    c = parse_paste(canon)
    assert c.query and len(c.sources) == 5 and "canonical" in c.found
    jsonl = "\n".join([json.dumps(json.loads(env))] * 2).encode()
    assert any("2 answers" in n for n in parse_upload(jsonl, "two.jsonl").notes)


def test_bad_uploads_are_clear_errors():
    with pytest.raises(InputError, match="not UTF-8"):
        parse_upload(b"\xff\xfe\x00bad", "x.json")
    with pytest.raises(InputError, match="not valid JSON"):
        parse_upload(b"{broken", "x.json")
    with pytest.raises(InputError):
        parse_upload(b'{"choices": "nope", "citations": []}', "x.json")
    with pytest.raises(InputError, match="limit"):
        parse_paste("x" * 1_000_001)


def test_a_pasted_stream_is_one_response():
    """A saved stream pasted or uploaded as a JSON list (here Anthropic's events) is one answer, not
    its first event."""
    import json as _json
    from pathlib import Path as _Path

    from pipeline.importers.paste import parse_json_value

    shapes = _Path(__file__).resolve().parent / "fixtures" / "engines" / "shapes"
    events = [_json.loads(line) for line in (shapes / "anthropic_stream.jsonl").read_text().splitlines() if line.strip()]
    pasted = parse_json_value(events, "upload.json")
    assert pasted.answer == "The bridge opened in 1937 after four years of work [1]."
    assert not any("holds" in note for note in pasted.notes)
