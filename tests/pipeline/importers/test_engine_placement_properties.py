"""Property tests: for every engine format, a citation lands on the words its span covers or is
dropped with a counted reason, never on a neighbouring statement.

Each case is an answer of generated sentences (emoji, CJK, combining accents and other multi-byte
text before and inside the cited spans, paragraph breaks), some of them cited, written as one
provider's response with the offsets that provider uses (UTF-8 bytes for Gemini, characters for
OpenAI, block extents for Anthropic, markers for Perplexity and You.com). The draw then spoils it the
ways real responses are spoiled: default fields left out (proto3), offsets counted in the wrong unit,
spans reversed, out of range, overlapping two sentences, at position 0 and at the very end, and no
offsets at all. The expected citations of every sentence are known from the draw.

    test_gemini ........... 120 cases      test_openai_responses ... 120 cases
    test_openai_chat ...... 60 cases       test_anthropic .......... 80 cases
    test_markers .......... 80 cases (perplexity, you)     test_exa ... 30 cases
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.importers.engines import ImportOptions, engine_answer

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
WORDS = ["trees", "cool", "streets", "rain", "falls", "often", "cities", "grow", "rivers", "flood", "maps", "show", "data"]
ODD = ["café", "東京都の", "👩🏽‍🔬", "e\u0301te\u0301", "naïve", "𝔘nicode", "Ωmega", "x²", "🏳️‍🌈", "ﬁne"]


@st.composite
def sentences(draw) -> list[str]:
    out = []
    for _ in range(draw(st.integers(2, 6))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=6))
        if draw(st.booleans()):
            words.insert(draw(st.integers(0, len(words))), draw(st.sampled_from(ODD)))
        words.append(f"n{len(out)}")  # sentences differ, so text located by text has one place to go
        first = words[0]
        words[0] = first[:1].upper() + first[1:]
        out.append(" ".join(words) + ".")
    return out


def joined(parts: list[str], breaks: list[bool]) -> tuple[str, list[int]]:
    """The sentences joined by a space or a paragraph break, and where each starts."""
    text, starts = "", []
    for k, s in enumerate(parts):
        if k:
            text += "\n\n" if breaks[k % len(breaks)] else " "
        starts.append(len(text))
        text += s
    return text, starts


def check(obj: dict, expected: list[tuple[int, ...]], texts: list[str], drops: dict[str, int] | None = None) -> dict:
    annotated = engine_answer(obj, "case", options=ImportOptions(query="q?"))
    got = [s.text for s in annotated.statements]
    assert got == texts, (got, texts)  # the generator writes sentences the splitter keeps whole
    assert [tuple(sorted(s.citations)) for s in annotated.statements] == [tuple(sorted(e)) for e in expected]
    notes = json.loads(annotated.answer.meta.get("citation_notes") or "{}")
    for reason, n in (drops or {}).items():
        assert notes.get(f"spans_{reason}", 0) == n, (reason, notes)
    return notes


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


# ---- Gemini: UTF-8 bytes per part, proto3 defaults, segment text present or not ------------------


@settings(max_examples=120, **SETTINGS)
@given(sentences(), st.data())
def test_gemini(parts, data):
    breaks = data.draw(st.lists(st.booleans(), min_size=1, max_size=3))
    text, starts = joined(parts, breaks)
    preamble = data.draw(st.booleans())  # a thought part first: the answer is part 1
    n_chunks = data.draw(st.integers(1, 4))
    expected: list[set[int]] = [set() for _ in parts]
    drops = {"reversed": 0, "outside_text": 0, "not_answer_text": 0}
    supports = []
    for k in range(len(parts)):
        kind = data.draw(st.sampled_from(["none", "one", "pair", "reversed", "outside", "chars", "thought"]))
        if kind == "none" or (kind == "pair" and k + 1 == len(parts)):
            continue
        last = k + 1 if kind == "pair" else k
        a, e = starts[k], starts[last] + len(parts[last])
        chunks = sorted(set(data.draw(st.lists(st.integers(0, n_chunks - 1), min_size=1, max_size=3))))
        with_text = data.draw(st.booleans())
        seg: dict = {"startIndex": nbytes(text[:a]), "endIndex": nbytes(text[:e])}
        if kind == "chars":  # a client that counted characters: only the segment text can save it
            seg = {"startIndex": a, "endIndex": e}
            with_text = True
        if with_text:
            seg["text"] = text[a:e]
        if kind == "reversed":
            seg["startIndex"], seg["endIndex"] = seg["endIndex"], seg["startIndex"]
        if kind == "outside":
            seg["startIndex"], seg["endIndex"] = nbytes(text) + 5, nbytes(text) + 9
        if kind == "thought":
            seg["partIndex"] = 0 if preamble else 7
            seg.pop("text", None)
            with_text = False
        elif preamble and data.draw(st.booleans()):
            seg["partIndex"] = 1  # else left out, as real responses do even for a later part
        if seg.get("startIndex") == 0 and data.draw(st.booleans()):
            del seg["startIndex"]  # proto3: a zero is not written
        supports.append({"segment": seg, "groundingChunkIndices": chunks, **({"confidenceScores": [0.9]} if data.draw(st.booleans()) else {})})
        if kind in ("reversed", "outside") and not with_text:
            drops["reversed" if kind == "reversed" else "outside_text"] += 1
        elif kind == "thought":
            drops["not_answer_text" if preamble else "outside_text"] += 1
        else:
            for i in range(k, last + 1):
                expected[i] |= {c + 1 for c in chunks}
    answer_parts = ([{"text": "Thinking about rivers.", "thought": True}] if preamble else []) + [{"text": text}]
    obj = {"candidates": [{"content": {"parts": answer_parts}, "groundingMetadata": {
        "groundingChunks": [{"web": {"uri": f"https://r.example/{c}", "title": "same.example"}} for c in range(n_chunks)],
        "groundingSupports": supports}}]}
    check(obj, [tuple(e) for e in expected], parts, drops)


# ---- OpenAI: character offsets of the link, checked against the URL ------------------------------


def _openai_text(parts: list[str], cited: list[bool], breaks: list[bool]) -> tuple[str, list[str], list[tuple[int, int]]]:
    """Sentences, the cited ones with "([site](url))" before their full stop; the link spans."""
    written = [s[:-1] + f" ([s{k}.example](https://s{k}.example/p?utm_source=openai))." if c else s
               for k, (s, c) in enumerate(zip(parts, cited))]
    text, starts = joined(written, breaks)
    links = []
    for k, (w, c) in enumerate(zip(written, cited)):
        if c:
            at = starts[k] + w.index(" ([s") + 1
            links.append((at, starts[k] + len(w) - 1))
        else:
            links.append((-1, -1))
    return text, written, links


def _paragraph_scoped(own: list[tuple[int, ...]], breaks: list[bool]) -> list[tuple[int, ...]]:
    """OpenAI cites per paragraph: an uncited sentence takes the citation of the next cited sentence of
    its paragraph (sentence k and k+1 share a paragraph unless breaks[(k+1) % len(breaks)])."""
    out = list(own)
    for k in range(len(out) - 2, -1, -1):
        if not out[k] and not breaks[(k + 1) % len(breaks)]:
            out[k] = out[k + 1]
    return out


def _openai_annotations(data, text: str, cited: list[bool], links: list[tuple[int, int]]) -> tuple[list[dict], list[set[int]]]:
    anns, expected = [], []
    for k, c in enumerate(cited):
        if not c:
            expected.append(set())
            continue
        a, e = links[k]
        url = f"https://s{k}.example/p?utm_source=openai"
        kind = data.draw(st.sampled_from(["exact", "missing", "utf16", "reversed", "shifted", "wider"]))
        ann: dict = {"type": "url_citation", "url": url, "title": f"S{k}"}
        if kind == "exact":
            ann.update(start_index=a, end_index=e)
        elif kind == "missing":
            ann["index"] = None  # the early shape
        elif kind == "utf16":  # a client that counted UTF-16 units
            ann.update(start_index=len(text[:a].encode("utf-16-le")) // 2, end_index=len(text[:e].encode("utf-16-le")) // 2)
        elif kind == "reversed":
            ann.update(start_index=e, end_index=a)
        elif kind == "shifted":
            ann.update(start_index=max(a - 40, 0), end_index=max(a - 20, 0))
        else:  # the link and the words just before it (still one sentence)
            ann.update(start_index=max(a - 4, 0), end_index=e + 1)
        anns.append(ann)
        expected.append(set())
    return anns, expected


@settings(max_examples=120, **SETTINGS)
@given(sentences(), st.data())
def test_openai_responses(parts, data):
    cited = data.draw(st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)))
    breaks = data.draw(st.lists(st.booleans(), min_size=1, max_size=3))
    text, written, links = _openai_text(parts, cited, breaks)
    anns, _ = _openai_annotations(data, text, cited, links)
    order = data.draw(st.permutations(anns))
    obj = {"object": "response", "output": [{"type": "message", "content": [{"type": "output_text", "text": text, "annotations": order}]}]}
    annotated = engine_answer(obj, "case", options=ImportOptions(query="q?"))
    assert [s.text for s in annotated.statements] == written
    by_url = {s.url: s.index for s in annotated.answer.sources}
    own = [(by_url[f"https://s{k}.example/p?utm_source=openai"],) if c else () for k, c in enumerate(cited)]
    for k, (s, want) in enumerate(zip(annotated.statements, _paragraph_scoped(own, breaks))):
        assert s.citations == want, (k, s.text, s.citations, want)


@settings(max_examples=60, **SETTINGS)
@given(sentences(), st.data())
def test_openai_chat(parts, data):
    cited = data.draw(st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)))
    text, written, links = _openai_text(parts, cited, [False])
    anns, _ = _openai_annotations(data, text, cited, links)
    nested = [{"type": "url_citation", "url_citation": {k: v for k, v in a.items() if k != "type"}} for a in anns]
    obj = {"object": "chat.completion", "model": "gpt-4o-search-preview", "choices": [{"message": {"content": text, "annotations": nested}}]}
    annotated = engine_answer(obj, "case", options=ImportOptions(query="q?"))
    by_url = {s.url: s.index for s in annotated.answer.sources}
    own = [(by_url[f"https://s{k}.example/p?utm_source=openai"],) if c else () for k, c in enumerate(cited)]
    assert [s.citations for s in annotated.statements] == _paragraph_scoped(own, [False])


# ---- Anthropic: each cited block's extent ---------------------------------------------------------


@settings(max_examples=80, **SETTINGS)
@given(sentences(), st.data())
def test_anthropic(parts, data):
    blocks: list[dict] = [{"type": "thinking", "thinking": "Rivers. Flood.", "signature": "x"}]
    expected: list[set[int]] = []
    urls = [f"https://a{k}.example/" for k in range(3)]
    blocks.append({"type": "web_search_tool_result", "tool_use_id": "t", "content": [
        {"type": "web_search_result", "url": u, "title": f"A{k}", "encrypted_content": "e"} for k, u in enumerate(urls)]})
    for k, sentence in enumerate(parts):
        chosen = sorted(set(data.draw(st.lists(st.integers(0, 2), max_size=2))))
        cits = [{"type": "web_search_result_location", "url": urls[c], "title": f"A{c}", "cited_text": "q", "encrypted_index": "i"}
                for c in chosen]
        if k:
            blocks.append({"type": "text", "text": " "})
        blocks.append({"type": "text", "text": sentence, **({"citations": cits} if cits else {})})
        expected.append({c + 1 for c in chosen})
    check({"type": "message", "content": blocks}, [tuple(e) for e in expected], parts)


# ---- numbered markers: Perplexity and You.com -----------------------------------------------------


@settings(max_examples=80, **SETTINGS)
@given(sentences(), st.sampled_from(["perplexity", "you"]), st.data())
def test_markers(parts, fmt, data):
    written, expected = [], []
    for sentence in parts:
        chosen = sorted(set(data.draw(st.lists(st.integers(1, 4), max_size=3))))
        if not chosen:
            written.append(sentence)
            expected.append(())
            continue
        if fmt == "you":
            marker = "[[" + ", ".join(map(str, chosen)) + "]]"
        else:
            marker = "".join(f"[{c}]" for c in chosen)
        where = data.draw(st.sampled_from(["before", "after", "paren"]))
        body = sentence[:-1]
        if where == "before":
            written.append(f"{body}{marker}.")
        elif where == "after":
            written.append(f"{body}.{marker}")
        else:
            written.append(f"{body} (2024 estimate){marker}.")
        expected.append(tuple(chosen))
    breaks = data.draw(st.lists(st.booleans(), min_size=1, max_size=3))
    text, _ = joined(written, breaks)
    urls = [f"https://m{k}.example/" for k in range(1, 5)]
    if fmt == "perplexity":
        obj = {"model": "sonar", "choices": [{"message": {"content": text}}], "citations": urls}
    else:
        obj = {"answer": text, "citations": [{"source": u, "excerpts": ["x"]} for u in urls], "results": {"web": []}}
    check(obj, expected, written)


@settings(max_examples=30, **SETTINGS)
@given(sentences())
def test_exa(parts):
    text, _ = joined(parts, [False])
    obj = {"answer": text, "citations": [{"id": "1", "url": "https://e.example/1", "title": "E"}], "costDollars": {"total": 0.005}}
    check(obj, [() for _ in parts], parts)  # Exa cites the whole answer: no statement cites a source by itself
