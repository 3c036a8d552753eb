"""Tests for pipeline.text.text: citation markers, marker stripping and statement splitting."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.records import Statement
from pipeline.text.text import CitationMarker, all_cited_indexes, find_citation_markers, split_statements, strip_citation_markers


def markers(text: str, urls=None) -> list[tuple[str, tuple[int, ...], str]]:
    """(marker text, indexes, form) triples: compact to assert on."""
    return [(text[m.start:m.end], m.indexes, m.form) for m in find_citation_markers(text, urls)]


def texts(stmts: list[Statement]) -> list[str]:
    return [s.text for s in stmts]


# --------------------------------------------------------------------------------------------
# Marker forms
# --------------------------------------------------------------------------------------------


def test_single_bracket():
    assert markers("Zoos help [1].") == [("[1]", (1,), "bracket")]


def test_bracket_list_with_and_without_spaces():
    assert markers("A [1, 2] b [3,4] c [5; 6].") == [
        ("[1, 2]", (1, 2), "bracket"),
        ("[3,4]", (3, 4), "bracket"),
        ("[5; 6]", (5, 6), "bracket"),
    ]


def test_adjacent_brackets_are_separate_markers():
    t = "Claim.[1][2]"
    ms = find_citation_markers(t)
    assert [(m.start, m.end, m.indexes) for m in ms] == [(6, 9, (1,)), (9, 12, (2,))]
    assert all_cited_indexes(t) == [1, 2]


def test_range_hyphen_and_en_dash():
    assert markers("X [1-3]. Y [2\u20134]. Z [5 - 6].") == [
        ("[1-3]", (1, 2, 3), "range"),
        ("[2\u20134]", (2, 3, 4), "range"),
        ("[5 - 6]", (5, 6), "range"),
    ]


def test_range_mixed_with_list():
    assert markers("X [1, 3-4].") == [("[1, 3-4]", (1, 3, 4), "range")]


def test_range_cap_keeps_the_ends_and_reversed_range_ignored():
    # a range longer than the cap keeps its two ends, so a far end past the sources dangles and is
    # warned about like the same number alone (issue 31); a reversed range is no marker
    assert markers("X [1-500] and [5-2] and [1-50].")[0] == ("[1-500]", (1, 500), "range")
    assert [m[0] for m in markers("X [1-500] and [5-2].")] == ["[1-500]"]
    assert markers("X [1-50].")[0][1] == tuple(range(1, 51))


def test_zero_and_identifiers_are_not_citations():
    # zero, intervals with zero, ten digits and more
    assert markers("The range [0, 1] and [0] and [1234567890] and [1, 99999999999].") == []
    assert markers("Up to [999].") == [("[999]", (999,), "bracket")]


def test_large_numbers_are_citations_that_dangle():
    # an index no source has is a dangling citation whatever its size: never dropped in silence
    assert markers("A [42]. B [1000]. C [999999999]. D [1, 2020].") == [
        ("[42]", (42,), "bracket"), ("[1000]", (1000,), "bracket"), ("[999999999]", (999999999,), "bracket"),
        ("[1, 2020]", (1, 2020), "bracket")]
    stmts = split_statements("a", "Trees cool streets [42]. They cut heat [1000]. Shade helps [999999999].", {1, 2})
    assert [s.dangling for s in stmts] == [(42,), (1000,), (999999999,)] and all(not s.citations for s in stmts)


def test_lenticular_forms():
    assert markers("A\u30101\u3011 b\u30102\u2020source\u3011 c\u30104:0\u2020web\u3011.") == [
        ("\u30101\u3011", (1,), "lenticular"),
        ("\u30102\u2020source\u3011", (2,), "lenticular"),
        ("\u30104:0\u2020web\u3011", (4,), "lenticular"),
    ]


def test_caret_forms():
    assert markers("Claim ^1 and claim.^2 and ^3^ and ^[4].") == [
        ("^1", (1,), "caret"),
        ("^2", (2,), "caret"),
        ("^3^", (3,), "caret"),
        ("^[4]", (4,), "caret"),
    ]


def test_caret_not_math():
    assert markers("E = mc^2 and x^3 and (a+b)^2 and 10^6.") == []


def test_footnote_forms_including_bing_style():
    assert markers("A [^1] b [^2^] c[^3].") == [
        ("[^1]", (1,), "footnote"),
        ("[^2^]", (2,), "footnote"),
        ("[^3]", (3,), "footnote"),
    ]


def test_footnote_and_reference_definitions_are_not_citations():
    t = "Claim [^1].\n\n[^1]: Smith 2020.\n[2]: https://example.com\n"
    assert markers(t) == [("[^1]", (1,), "footnote")]


def test_markdown_link_to_listed_url():
    urls = {"https://example.com/page": 2, "https://who.int/": 5}
    t = "See [the study](https://EXAMPLE.com/page/#sec) and [WHO](http://who.int)."
    # scheme differs for the second link (http vs https): not the listed URL
    assert markers(t, urls) == [("[the study](https://EXAMPLE.com/page/#sec)", (2,), "link")]
    assert markers("[WHO](https://who.int)", urls) == [("[WHO](https://who.int)", (5,), "link")]


def test_markdown_link_to_unlisted_url_is_not_a_citation():
    urls = {"https://example.com/page": 2}
    assert markers("See [a page](https://other.org/x) and [1](https://other.org/y).", urls) == []
    assert markers("See [a page](https://example.com/page).") == []  # no source URLs given


def test_link_with_parentheses_and_title():
    urls = {"https://en.wikipedia.org/wiki/Zoo_(disambiguation)": 3}
    t = 'Read [this](https://en.wikipedia.org/wiki/Zoo_(disambiguation) "Zoo").'
    assert markers(t, urls)[0][1:] == ((3,), "link")


def test_image_is_never_a_marker():
    urls = {"https://example.com/a.png": 1}
    assert markers("![1](https://example.com/a.png)", urls) == []


def test_you_com_wrapped_number_link():
    t = "Claim [[2]](https://x.org/a)."
    assert markers(t) == [("[[2]](https://x.org/a)", (2,), "bracket")]


def test_markers_inside_code_are_ignored():
    t = "Use `x[1]` here [2].\n\n```\ny = a[3]\n```\n"
    assert markers(t) == [("[2]", (2,), "bracket")]


def test_checkbox_and_plain_brackets_are_not_markers():
    assert markers("- [ ] task\n- [x] done\n[note] and [a1]") == []


def test_all_cited_indexes_in_order_without_repeats():
    t = "A [3]. B [1][3]. C [2-4] \u30105\u3011."
    assert all_cited_indexes(t) == [3, 1, 2, 4, 5]


def test_marker_is_frozen_dataclass():
    m = CitationMarker(0, 3, (1,), "bracket")
    with pytest.raises(AttributeError):
        m.start = 1  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Stripping
# --------------------------------------------------------------------------------------------


def test_strip_markers_tidies_whitespace():
    t = "Zoos help [1]. They fund research.[2][3] Critics [1-3], disagree \u30104\u3011."
    assert strip_citation_markers(t, find_citation_markers(t)) == (
        "Zoos help. They fund research. Critics, disagree."
    )


def test_strip_keeps_link_label_words():
    urls = {"https://who.int": 1}
    t = "As [WHO](https://who.int) says [2](https://who.int)."
    assert strip_citation_markers(t, find_citation_markers(t, urls)) == "As WHO says."


def test_strip_inserts_space_between_sentences_that_would_touch():
    t = "One.[1]Two."
    assert strip_citation_markers(t, find_citation_markers(t)) == "One. Two."


def test_strip_ignores_bad_markers():
    assert strip_citation_markers("abc", [CitationMarker(5, 9, (1,), "bracket")]) == "abc"
    assert strip_citation_markers("abc", None) == "abc"  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Statement splitting
# --------------------------------------------------------------------------------------------


def split(text: str, listed=range(1, 6), urls=None) -> list[Statement]:
    stmts = split_statements("ans-1", text, listed, urls)
    for i, s in enumerate(stmts):
        assert s.index == i and s.answer_id == "ans-1"
        assert text[s.start:s.end] == s.text
    return stmts


def test_simple_sentences_and_citations():
    stmts = split("Zoos help conservation [1]. They also fund research [2, 3]! Do they? Yes.")
    assert texts(stmts) == [
        "Zoos help conservation [1].",
        "They also fund research [2, 3]!",
        "Do they?",
        "Yes.",
    ]
    assert [s.citations for s in stmts] == [(1,), (2, 3), (), ()]
    assert stmts[0].start == 0 and stmts[0].end == 27


def test_markers_after_period_belong_to_previous_sentence():
    stmts = split("Zoos are old. [2][3] Critics disagree.[4] Fine.")
    assert texts(stmts) == ["Zoos are old. [2][3]", "Critics disagree.[4]", "Fine."]
    assert [s.citations for s in stmts] == [(2, 3), (4,), ()]


def test_markers_after_period_across_line_break():
    stmts = split("Zoos are old.\n[2] Critics disagree.")
    assert texts(stmts) == ["Zoos are old.\n[2]", "Critics disagree."]


def test_dangling_citation_with_five_sources():
    stmts = split("Claim [2][7]. Other [7, 9, 7].", listed=[1, 2, 3, 4, 5])
    assert stmts[0].citations == (2,) and stmts[0].dangling == (7,)
    assert stmts[1].citations == () and stmts[1].dangling == (7, 9)


def test_citation_order_of_first_appearance_and_distinct():
    stmts = split("Claim [3] and [1][3] and [2-3].")
    assert stmts[0].citations == (3, 1, 2)


def test_link_citation_in_statement():
    urls = {"https://example.com/a": 4}
    stmts = split("Read [this](https://example.com/a). Then [that](https://b.org).", urls=urls)
    assert texts(stmts) == ["Read [this](https://example.com/a).", "Then [that](https://b.org)."]
    assert [s.citations for s in stmts] == [(4,), ()]


def test_headings_are_not_statements():
    t = (
        "# Title\n\nIntro sentence.\n\n## Section [1]\nBody sentence.\n\n"
        "Setext title\n============\n\nOther setext\n---\n\nLast one."
    )
    assert texts(split(t)) == ["Intro sentence.", "Body sentence.", "Last one."]


def test_bold_heading_lines_are_not_statements():
    t = "**Pros:**\n- Cheap.\n\n**Key points**\n\n**Pros**:\n\n* **Cons:**\n* Slow.\n\n**This bold line is a real sentence.**"
    assert texts(split(t)) == ["Cheap.", "Slow.", "**This bold line is a real sentence.**"]


def test_bullets_and_numbered_lists():
    t = (
        "Here are some points:\n"
        "- First point [1]. It has two sentences.\n"
        "* Second point\n"
        "+ Third point [2]\n"
        "1. Numbered one [3]\n"
        "2) Numbered two\n"
        "  - Nested item.\n"
        "- [ ] Task item.\n"
    )
    stmts = split(t)
    assert texts(stmts) == [
        "Here are some points:",
        "First point [1].",
        "It has two sentences.",
        "Second point",
        "Third point [2]",
        "Numbered one [3]",
        "Numbered two",
        "Nested item.",
        "Task item.",
    ]
    assert t[stmts[1].start - 2:stmts[1].start] == "- "


def test_list_item_continuation_line():
    stmts = split("- Zoos protect species and\n  fund research [1].\n- Next.")
    assert texts(stmts) == ["Zoos protect species and\n  fund research [1].", "Next."]


def test_rules_blank_lines_tables_and_code_are_not_statements():
    t = (
        "First.\n\n---\n\n***\n\n"
        "| Engine | Score |\n|:------|------:|\n| Bing [1] | high |\n| You | low |\n\n"
        "```python\nx = 1. Not a statement.\n```\n\n~~~\ncode. More.\n~~~\n"
        "Last."
    )
    assert texts(split(t)) == ["First.", "Bing [1] | high", "You | low", "Last."]


def test_blockquote_lines():
    stmts = split("> Quoted one.\n> Quoted two [1].")
    assert texts(stmts) == ["Quoted one.", "Quoted two [1]."]
    assert stmts[1].citations == (1,)


@pytest.mark.parametrize(
    "sentence",
    [
        "Fruits, e.g. Apples and pears, are healthy.",
        "That is, i.e. The main one, matters.",
        "Dr. Smith agrees with Prof. Jones.",
        "The U.S. Economy grew by 3.14 percent.",
        "Smith et al. Found a large effect [1].",
        "The value of pi is 3.14159 roughly.",
        "See https://example.com/a.b.c?x=1 for more.",
        "Call `obj.method(). Then` stops here.",
        "It costs approx. Five dollars.",
        "See Fig. 3 and No. 5 for details.",
        "J. K. Rowling wrote it.",
        "This is (see above.) not split.",
        "Quotes \"end.\" inside a sentence.",
    ],
)
def test_no_split_inside_sentence(sentence):
    stmts = split(sentence + " Next sentence here.")
    assert texts(stmts) == [sentence, "Next sentence here."]


def test_lowercase_after_period_does_not_split():
    assert texts(split("Apples, pears, etc. are fruit. Next one.")) == [
        "Apples, pears, etc. are fruit.",
        "Next one.",
    ]


def test_abbreviation_followed_by_marker_ends_sentence():
    assert texts(split("Made in the U.S. [1] Next one.")) == ["Made in the U.S. [1]", "Next one."]


def test_line_breaks_inside_paragraph():
    t = "Pros: cheaper\nCons: slower\nthis line was wrapped.\nA list,\nwrapped after comma."
    assert texts(split(t)) == [
        "Pros: cheaper",
        "Cons: slower\nthis line was wrapped.",
        "A list,\nwrapped after comma.",
    ]


def test_cjk_sentences():
    assert texts(split("动物园很好\u30101\u3011。它们保护动物。")) == [
        "动物园很好\u30101\u3011。",
        "它们保护动物。",
    ]


def test_source_list_lines_are_not_statements_and_cite_nothing():
    t = "The debate continues [1].\n\nSources:\n[1] https://example.com/a\n[2] https://example.com/b\n"
    stmts = split(t)
    assert texts(stmts) == ["The debate continues [1].", "Sources:"]
    assert [s.citations for s in stmts] == [(1,), ()]


def test_marker_only_and_url_only_lines():
    t = "Sources:\n\n[1][2]\n\nhttps://example.com/a\n\n- https://example.com/b\n"
    # a line that is only markers or only a URL carries no statement content
    assert texts(split(t)) == ["Sources:"]


def test_empty_and_odd_inputs():
    assert split_statements("a", "", []) == []
    assert split_statements("a", "   \n\n\t", [1]) == []
    assert split_statements("a", None, None) == []  # type: ignore[arg-type]
    assert find_citation_markers(None) == []  # type: ignore[arg-type]
    assert find_citation_markers("[1]", {"x": "y", 3: 4, "": 1}) == [  # type: ignore[dict-item]
        CitationMarker(0, 3, (1,), "bracket")
    ]
    assert split_statements("a", "```\nunclosed fence. Everything is code.", [1]) == []


def test_crlf_line_endings():
    stmts = split("# Head\r\n\r\nOne [1].\r\n- Two.\r\n")
    assert texts(stmts) == ["One [1].", "Two."]


# --------------------------------------------------------------------------------------------
# Scale: linear time on large and hostile inputs
# --------------------------------------------------------------------------------------------


def test_five_megabyte_answer():
    unit = "Zoos fund research on e.g. pandas [1][2]. They cost 3.5 dollars \u30103\u3011.\n- Item [4-5].\n\n"
    text = unit * (5_000_000 // len(unit) + 1)
    assert len(text) >= 5_000_000
    t0 = time.perf_counter()
    stmts = split_statements("big", text, range(1, 6))
    elapsed = time.perf_counter() - t0
    assert len(stmts) == 3 * (5_000_000 // len(unit) + 1)
    assert stmts[-1].citations == (4, 5)
    assert elapsed < 60, elapsed


@pytest.mark.parametrize(
    "piece",
    ["a\n", "A\nb\n", "[1](", "[" + "a" * 600, "[^1]:", "| a\n", "[", "[1", "[1-", "](", "[a](", "`", "``x", "^",
     "\u3010", "\u30101\u2020", ". ", "a.", "\n", " ", "|", "**", "[1, ", "(", "[^", "> ", "- "],
)
def test_hostile_repetitions_stay_fast(piece):
    text = piece * (400_000 // len(piece))
    t0 = time.perf_counter()
    split_statements("x", text, [1])
    find_citation_markers(text, {"https://a.b": 1})
    assert time.perf_counter() - t0 < 20


# --------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------

_TRICKY = list("[]()^\u3010\u3011\u2020-\u2013,.;:!?`*#|>_~=+\n\r\t 0123456789aZ/\\\"'")
_TRICKY += ["\u200e", "\u200f", "\u202e", "\u2028", "\u00a0", "\u3002", "\u2026", "https://a.b/", "[1]",
            "[^2]", "[3-4]", "\n\n", "\n- ", "\n1. ", "\n# ", "```", "**", "e.g.", "U.S.", "3.14"]
tricky_text = st.one_of(
    st.text(),
    st.lists(st.sampled_from(_TRICKY) | st.characters(), max_size=80).map("".join),
)


def check_statements(text: str, stmts: list[Statement], listed: set[int]) -> None:
    prev_end = 0
    for i, s in enumerate(stmts):
        assert s.index == i
        assert 0 <= prev_end <= s.start < s.end <= len(text)
        assert text[s.start:s.end] == s.text
        assert s.text == s.text.strip()
        assert set(s.citations) <= listed and not set(s.dangling) & listed
        assert len(set(s.citations + s.dangling)) == len(s.citations + s.dangling)
        prev_end = s.end


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=tricky_text, listed=st.sets(st.integers(0, 12), max_size=6))
def test_split_never_raises_and_spans_are_sound(text, listed):
    urls = {"https://a.b/": 1, "https://A.B/x": 2}
    stmts = split_statements("p", text, listed, urls)
    check_statements(text, stmts, listed)


@settings(max_examples=400, deadline=None)
@given(text=tricky_text)
def test_markers_never_raise_and_are_sound(text):
    ms = find_citation_markers(text, {"https://a.b/": 7})
    prev_end = 0
    for m in ms:
        assert prev_end <= m.start < m.end <= len(text)
        assert m.form in {"bracket", "range", "lenticular", "caret", "footnote", "link"}
        assert m.indexes and all(1 <= i <= 999_999_999 for i in m.indexes)
        prev_end = m.end
    stripped = strip_citation_markers(text, ms)
    assert isinstance(stripped, str) and len(stripped) <= len(text) + len(ms)
    assert all_cited_indexes(text, {"https://a.b/": 7}) == list(
        dict.fromkeys(i for m in ms for i in m.indexes)
    )


_WORDS = ["zoos", "animals", "research", "funding", "species", "habitat", "keepers", "visitors",
          "costs", "welfare", "science", "public", "debate", "policy", "growth", "studies"]
_MARKER_FORMS = [
    lambda ix: "".join(f"[{i}]" for i in ix),
    lambda ix: "[" + ", ".join(map(str, ix)) + "]",
    lambda ix: "".join(f"\u3010{i}\u2020source\u3011" for i in ix),
    lambda ix: "".join(f"[^{i}]" for i in ix),
    lambda ix: " ".join(f"^{i}" for i in ix),
]


@st.composite
def cited_sentence(draw):
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8))
    ix = draw(st.lists(st.integers(1, 12), max_size=3))
    body = " ".join([words[0].capitalize()] + words[1:])
    end = draw(st.sampled_from([".", "!", "?"]))
    if not ix:
        return body + end, []
    mark = draw(st.sampled_from(_MARKER_FORMS))(ix)
    placement = draw(st.sampled_from(["before", "after", "after-tight"]))
    if placement == "before":
        text = f"{body} {mark}{end}"
    elif placement == "after":
        text = f"{body}{end} {mark}"
    else:
        text = f"{body}{end}{mark}"
    return text, list(dict.fromkeys(ix))


@settings(max_examples=300, deadline=None)
@given(
    sentences=st.lists(cited_sentence(), min_size=1, max_size=8),
    seps=st.lists(st.sampled_from([" ", "  ", "\n", "\n\n", "\n- ", "\n\n1. "]), min_size=8, max_size=8),
    listed=st.sets(st.integers(1, 12)),
)
def test_generated_sentences_recover_their_citations(sentences, seps, listed):
    text = sentences[0][0]
    for (sent, _), sep in zip(sentences[1:], seps):
        text += sep + sent
    stmts = split_statements("g", text, listed)
    check_statements(text, stmts, listed)
    assert [s.text for s in stmts] == [sent for sent, _ in sentences]
    for s, (_, ix) in zip(stmts, sentences):
        assert s.citations == tuple(i for i in ix if i in listed)
        assert s.dangling == tuple(i for i in ix if i not in listed)
