"""How far an engine's citation reaches: one sentence, a whole paragraph, a span of characters.

Engines do not cite alike. Perplexity and You.com put "[n]" after the sentence it backs; Gemini and
Anthropic give character spans of the claim; ChatGPT search (and the OpenAI search API that serves
it) puts one link at the end of a paragraph for everything the paragraph says; Exa lists sources for
the answer as a whole. Read sentence by sentence, a paragraph-end link leaves every sentence before it
"uncited", which is how the splitter sees the text but not how the engine meant it.

Each engine format declares its scope (`pipeline.importers.engines.FORMATS`); answers that arrive as
plain text or canonical files take it from the engine's name (`scope_for_engine`). For the paragraph
scope, `cover_paragraphs` gives each uncited sentence the citations of the next cited sentence of its
paragraph (the marker that closes that stretch); a sentence after a paragraph's last marker stays
uncited. The scope and the number of sentences covered go into `Answer.meta`, and `scope_note` is
the one line a page shows about it.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Mapping

from pipeline.records import AnnotatedAnswer, Statement
from pipeline.text.text import paragraph_spans

SENTENCE, PARAGRAPH, SPAN, ANSWER = "sentence", "paragraph", "span", "answer"
SCOPES: dict[str, str] = {
    SENTENCE: "a marker backs the sentence it stands in or closes",
    PARAGRAPH: "a citation at the end of a paragraph backs every sentence of that paragraph before it",
    SPAN: "a citation backs the sentences whose words its character span covers",
    ANSWER: "sources are listed for the whole answer; no sentence carries a citation of its own",
}
META_SCOPE = "citation_scope"
META_COVERED = "citation_scope_covered"  # sentences that took their paragraph's citations

# Engines known by name (lower case, as pasted or written in a canonical file) and how they cite.
ENGINE_SCOPES: dict[str, str] = {
    "chatgpt": PARAGRAPH, "chatgpt search": PARAGRAPH, "openai": PARAGRAPH,
    "perplexity": SENTENCE, "you": SENTENCE, "you.com": SENTENCE, "copilot": SENTENCE, "bing": SENTENCE,
    "gemini": SPAN, "anthropic": SPAN, "claude": SPAN, "exa": ANSWER,
}


def known_scope(engine: str) -> str | None:
    """The scope of an engine named as a person would name it ("ChatGPT", "openai:gpt-4o-search");
    None when the name is not one of the engines above."""
    low = (engine or "").strip().lower()
    if low in ENGINE_SCOPES:
        return ENGINE_SCOPES[low]
    head = low.split(":", 1)[0].split("/", 1)[0].strip()
    return ENGINE_SCOPES.get(head)


def scope_for_engine(engine: str) -> str:
    """`known_scope`, or sentence when the name is not known."""
    return known_scope(engine) or SENTENCE


def scope_from_text(text: str, statements: tuple[Statement, ...] | list[Statement]) -> tuple[str, str]:
    """How the markers of an answer from an unknown engine most likely bind, read from the text, and
    why in words. Paragraph when every paragraph that carries markers carries them only on its last
    sentence and at least one such paragraph has sentences before that one (what ChatGPT search
    writes); sentence otherwise (a marker inside a paragraph shows the engine cites sentence by
    sentence)."""
    paragraphs = paragraph_spans(text)
    starts = [a for a, _ in paragraphs]
    by_paragraph: dict[int, list[Statement]] = {}
    for st in statements:
        if st.start < 0:
            continue
        k = bisect_right(starts, st.start) - 1
        if k >= 0 and st.start < paragraphs[k][1]:
            by_paragraph.setdefault(k, []).append(st)
    closing = 0
    for members in by_paragraph.values():
        cited = [st for st in members if st.citations or st.dangling]
        if not cited:
            continue
        if cited != [members[-1]]:
            return SENTENCE, "a marker stands inside a paragraph, not only at its end"
        closing += len(members) > 1
    if closing:
        return PARAGRAPH, (f"{closing} paragraph{'s' if closing != 1 else ''} of several sentences "
                           f"carr{'y' if closing != 1 else 'ies'} markers only at the end")
    return SENTENCE, "no paragraph of several sentences ends with its only markers"


def cover_paragraphs(text: str, statements: tuple[Statement, ...] | list[Statement]) -> tuple[list[Statement], list[int]]:
    """Statements where each uncited one takes the citations of the next cited statement in its
    paragraph (list item, table row); and the indexes of the statements so covered."""
    out = list(statements)
    paragraphs = paragraph_spans(text)
    starts = [s for s, _ in paragraphs]
    covered: list[int] = []

    def paragraph_of(st: Statement) -> int:
        k = bisect_right(starts, st.start) - 1
        return k if k >= 0 and st.start < paragraphs[k][1] else -1

    carry: Statement | None = None
    carry_paragraph = -2
    for k in range(len(out) - 1, -1, -1):
        st = out[k]
        where = paragraph_of(st) if st.start >= 0 else -1
        if st.citations or st.dangling:
            carry, carry_paragraph = st, where
        elif carry is not None and where >= 0 and where == carry_paragraph:
            out[k] = replace(st, citations=carry.citations, dangling=carry.dangling)
            covered.append(st.index)
    return out, sorted(covered)


def with_scope(annotated: AnnotatedAnswer, scope: str) -> AnnotatedAnswer:
    """The answer with its citation scope recorded and, for the paragraph scope, the sentences of each
    paragraph covered by its closing citation."""
    if scope not in SCOPES:
        raise ValueError(f"unknown citation scope {scope!r}; one of {', '.join(SCOPES)}")
    answer = annotated.answer
    meta = dict(answer.meta)
    meta[META_SCOPE] = scope
    statements = annotated.statements
    if scope == PARAGRAPH and statements:
        made, covered = cover_paragraphs(answer.text, statements)
        statements = tuple(made)
        if covered:
            meta[META_COVERED] = str(len(covered))
    return replace(annotated, answer=replace(answer, meta=meta), statements=statements)


def scope_note(meta: Mapping[str, str] | None, engine: str = "") -> str:
    """The one line a page shows about how this answer's citations bind ("" for the sentence scope,
    which is what a reader assumes anyway)."""
    scope = (meta or {}).get(META_SCOPE, "")
    if scope not in SCOPES or scope == SENTENCE:
        return ""
    who = engine.strip() or "this engine"
    line = f"How {who} cites: {SCOPES[scope]}."
    covered = (meta or {}).get(META_COVERED, "")
    if scope == PARAGRAPH and covered.isdigit() and int(covered):
        n = int(covered)
        line += f" {n} sentence{'s' if n != 1 else ''} without a marker of {'their' if n != 1 else 'its'} own " \
                f"{'are' if n != 1 else 'is'} counted as cited by {'their' if n != 1 else 'its'} paragraph's citation."
    return line
