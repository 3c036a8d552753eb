"""The paste parser (pipeline/importers/paste.py): property tests over generated answers and source
lists in every shape it reads, hand-picked pastes, JSON and uploads, and arbitrary text.

Generated cases: rendered lists 300, arbitrary text 200, reference definitions 100.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import InputError
from pipeline.importers.canonical import parse_answer
from pipeline.importers.paste import MAX_PASTED_SOURCES, parse_paste, parse_upload

ROOT = Path(__file__).resolve().parents[3]
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
    if re.match(r'\s*\ufeff?\s*(?:\{\s*["}]|\[\s*[\[{])', text):  # it opens as JSON: read as JSON or refused, with the reason
        try:
            parse_paste(text)
        except InputError as exc:
            assert "JSON" in str(exc) or "shape" in str(exc)
        return
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


# ---- what people copy from engines' pages (tests/fixtures/paste/, written for these tests) ---------------

PASTES = ROOT / "tests" / "fixtures" / "paste"
# file: (query, query type, engine, n markers, [(index, url, title, has text)])
LAYOUTS = {
    "plain_question_urls.txt": ("How much of the world's electricity came from wind power in 2023?", "expertise", "", 4, [
        (1, "https://www.energy-review.example.org/global-electricity-2023", "", False),
        (2, "https://windstats.example.com/capacity/china-2023", "", False),
        (3, "https://offshore.example.net/reports/2023-outlook", "", False)]),
    "perplexity_copy.txt": ("", "expertise", "", 5, [
        (1, "https://www.pollinator-notes.example.org/navigation/sun-compass", "", False),
        (2, "https://journals.example.com/insect-behaviour/2021/polarised-light", "", False),
        (3, "https://beekeeping.example.net/guides/orientation-flights", "", False),
        (4, "https://science-digest.example.org/articles/magnetoreception-bees", "", False)]),
    "perplexity_page.txt": ("Do street trees lower summer temperatures in cities?", "expertise", "", 4, [
        (1, "", "Heat islands and what trees do about them (cityclimate.example.org)", False),
        (2, "", "Measuring shade on asphalt streets (urbanlab.example.edu)", False),
        (3, "", "Tree canopy and night-time heat (weatherdesk.example.com)", False)]),
    "chatgpt_page.txt": ("When did the first transatlantic telegraph cable work?", "expertise", "ChatGPT", 3, [
        (1, "https://telegraph-history.example.org/cables/1858?utm_source=chatgpt.com", "telegraph-history.example.org", False),
        (2, "https://maritime-archive.example.com/great-eastern/1866-cable?utm_source=chatgpt.com",
         "maritime-archive.example.com", False)]),
    "chatgpt_copy.md": ("Should cities ban cars from their historic centres?", "debate", "", 4, [
        (1, "https://www.transport-observatory.example.eu/car-free-air", "Car-free centres and air quality", False),
        (2, "https://planning-journal.example.org/pedestrian-exemptions", "Exemptions in pedestrian zones: a review", False),
        (3, "https://mobility.example.net/sequence-matters", "Public transport before restrictions", False)]),
    "copilot_classic.txt": ("", "expertise", "Copilot", 3, [
        (1, "https://marinelife.example.org/octopus/hearts", "Why octopuses have three hearts", False),
        (2, "https://oceanfacts.example.com/cephalopods/haemocyanin", "Copper blood in cephalopods - Ocean Facts", False),
        (3, "https://biochem-basics.example.net/hemocyanin", "Hemocyanin explained", False)]),
    "copilot_copy.txt": ("Is remote work better for productivity than working in the office?", "debate", "Copilot", 4, [
        (1, "", "worklife.example.com", False), (2, "", "management-review.example.org", False)]),
    "gemini_copy.txt": ("What is the boiling point of water at the top of Mount Everest?", "expertise", "", 3, [
        (1, "https://mountain-science.example.org/boiling-point", "High-altitude cooking and boiling points", True),
        (2, "https://physics-classroom.example.edu/pressure-boiling", "Air pressure and phase changes", True)]),
    "bulleted_titles_snippets.txt": ("Why do onions make people cry?", "expertise", "", 3, [
        (1, "https://kitchen-science.example.com/onion-tears", "Onion chemistry in the kitchen", True),
        (2, "https://eyehealth.example.org/reflex-tears", "How tears are triggered", False),
        (3, "https://foodlab.example.net/chilling-onions", "Cold onions and slower enzymes", True)]),
}


def test_every_layout_fixture_is_listed():
    assert sorted(p.name for p in PASTES.iterdir()) == sorted(LAYOUTS)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_engine_page_layouts(name):
    """The question fills the Query (never the answer), the type follows its wording, the sources
    come back with their titles and snippets, and the answer holds only the answer."""
    query, query_type, engine, n_markers, sources = LAYOUTS[name]
    p = parse_paste((PASTES / name).read_text(encoding="utf-8"))
    assert p.query == query and p.query_type == query_type and p.engine == engine
    assert [(s.index, s.url, s.title, bool(s.text)) for s in p.sources] == sources
    assert f"{n_markers} citation marker(s)" in p.found
    first_line = p.answer.splitlines()[0]
    assert query == "" or query not in p.answer, "the question must not land in the answer"
    assert not first_line.endswith("?") and "Sources" not in p.answer and "Related" not in p.answer
    assert not any(line.strip() in ("ChatGPT said:", "Copilot", "Answer") for line in p.answer.splitlines())
    assert p.query_type_why.startswith(query_type)
    if not query:
        assert any("write the query" in n for n in p.notes)
    # the form then builds a canonical answer the pipeline reads
    obj = {"answer_id": "pasted", "engine": p.engine or "pasted", "query": query or "q?", "query_type": p.query_type,
           "answer": p.answer, "sources": [{"index": s.index, "url": s.url, "title": s.title, "text": s.text}
                                           for s in p.sources]}
    parse_answer(obj, "pasted answer")


@pytest.mark.parametrize("question, expected", [
    ("How much of the world's electricity came from wind power in 2023?", "expertise"),
    ("What causes the northern lights?", "expertise"),
    ("Is coffee a diuretic?", "expertise"),
    ("how do vaccines train the immune system", "expertise"),
    ("Should zoos be abolished?", "debate"),
    ("Why is nuclear energy better than solar power?", "debate"),
    ("Is social media bad for teenagers?", "debate"),
    ("Are electric cars worth it?", "debate"),
    ("What are the pros and cons of school uniforms?", "debate"),
    ("Should governments legalize cannabis?", "debate"),
    ("", "expertise"),
])
def test_query_type_follows_the_wording(question, expected):
    from pipeline.importers.paste import guess_query_type

    kind, why = guess_query_type(question)
    assert kind == expected and why


QUESTION_STYLES = {
    "line": "{q}?\n\n", "heading": "## {q}?\n\n", "labelled": "Question: {q}?\n\n", "you said": "You said:\n{q}?\nChatGPT said:\n",
    "q colon": "Q: {q}?\nA:\n", "perplexity answer": "{q}?\n\nAnswer\n",
}
LIST_STYLES = {
    "bullet-url": "- {u}", "paren-title-url": "({i}) {t}. {u}", "number-title-url-snippet": "{i}. {t}\n{u}\n{t} in a few words.",
    "bracket-url": "[{i}] {u}", "bullet-title-dash-url": "- {t} \u2014 {u}",
}


@st.composite
def engine_pastes(draw):
    n = draw(st.integers(1, 6))
    srcs = [(k + 1, draw(titles).rstrip("."), draw(urls)) for k in range(n)]
    q_words = draw(st.lists(words, min_size=2, max_size=12))
    question = " ".join([draw(st.sampled_from(["What", "Why", "How", "Does", "Is", "When"])), *q_words])
    qstyle = draw(st.sampled_from(sorted(QUESTION_STYLES)))
    lstyle = draw(st.sampled_from(sorted(LIST_STYLES)))
    heading = draw(st.sampled_from(["Sources", "Sources:", "References", "Citations:", "Learn more"]))
    answer = draw(answers(n))
    related = draw(st.sampled_from(["", "\n\nRelated\nWhat else should I read?\nWho studies this?"]))
    body = "\n".join(LIST_STYLES[lstyle].format(i=i, t=t, u=u) for i, t, u in srcs)
    text = QUESTION_STYLES[qstyle].format(q=question) + answer + related + f"\n\n{heading}\n" + body
    return text, question + "?", answer, lstyle, srcs


@settings(max_examples=300, **SETTINGS)
@given(engine_pastes())
def test_property_question_answer_and_sources_come_back(case):
    """Generated pastes in the engines' layouts: the question, the answer and every URL come back,
    each in its own place, whatever the question style, list style or heading."""
    text, question, answer, lstyle, srcs = case
    p = parse_paste(text)
    assert p.query == question
    assert p.answer == answer
    assert [s.url for s in p.sources] == [u for _, _, u in srcs]
    if lstyle not in ("bullet-url", "bracket-url"):  # the styles that carry a title
        assert [s.title for s in p.sources] == [t for _, t, _ in srcs]
    assert p.query_type in ("debate", "expertise")


@settings(max_examples=200, **SETTINGS)
@given(st.sampled_from(sorted(QUESTION_STYLES)), st.text(max_size=300), st.text(max_size=300))
def test_property_any_text_after_a_question_never_crashes(qstyle, middle, tail):
    p = parse_paste(QUESTION_STYLES[qstyle].format(q="Is " + middle[:50]) + middle + "\n\nSources\n" + tail)
    assert p.found and all(s.index >= 1 for s in p.sources)
    assert sorted({s.index for s in p.sources}) == [s.index for s in p.sources]


@settings(max_examples=150, **SETTINGS)
@given(st.sampled_from(sorted(FIXTURES.glob("*.json"))), st.floats(0.0, 1.0))
def test_property_cut_off_json_says_it_is_cut_off(path, where):
    """A response pasted only in part (the copy stopped early) is refused as cut off, never read as answer text."""
    text = path.read_text(encoding="utf-8").rstrip()
    opened = text.index('"') + 1  # from the first key on it reads as JSON; "{" alone is just a brace
    cut = opened + int(where * (len(text) - 1 - opened))
    with pytest.raises(InputError, match="cut off"):
        parse_paste(text[:cut])


@pytest.mark.parametrize("text, expected", [
    ('{"id": "chatcmpl-1", "usage": {"total_tokens": 3}}', "keys id, usage"),
    ('[{"question": "q", "reply": "r"}]', "keys question, reply"),
    ('{"answer": 3}', "keys answer"),
])
def test_unknown_json_says_which_shapes_are_read(text, expected):
    with pytest.raises(InputError) as err:
        parse_paste(text)
    assert expected in str(err.value) and "canonical format" in str(err.value) and "capture envelope" in str(err.value)


def test_invalid_json_in_the_middle_names_line_and_column():
    with pytest.raises(InputError, match=r"not valid JSON: .* line 2, column"):
        parse_paste('{"answer": "x",\n  "sources": [1 2]}')


def test_uploads_cut_off_or_broken_say_which():
    whole = (FIXTURES / "perplexity_sonar.json").read_bytes()
    with pytest.raises(InputError, match="cut off"):
        parse_upload(whole[: len(whole) // 2], "half.json")
    good = json.dumps(json.loads(whole))
    with pytest.raises(InputError, match="line 2 is not a JSON object"):
        parse_upload(f"{good}\n{good[:40]}\n".encode(), "two.jsonl")


def test_a_pasted_stream_is_one_response():
    """A saved stream pasted or uploaded as a JSON list (here Anthropic's events) is one answer, not
    its first event."""
    import json as _json
    from pathlib import Path as _Path

    from pipeline.importers.paste import parse_json_value

    shapes = _Path(__file__).resolve().parents[2] / "fixtures" / "engines" / "shapes"
    events = [_json.loads(line) for line in (shapes / "anthropic_stream.jsonl").read_text().splitlines() if line.strip()]
    pasted = parse_json_value(events, "upload.json")
    assert pasted.answer == "The bridge opened in 1937 after four years of work [1]."
    assert not any("holds" in note for note in pasted.notes)
