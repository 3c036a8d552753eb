"""OpenAI web search: the Responses API (`tools: [{"type": "web_search"}]`) and the Chat Completions
search models.

Responses API:

    {"id": "resp_...", "object": "response", "model", "output": [
        {"type": "reasoning", "summary": [...], "encrypted_content"?: "..."},
        {"type": "web_search_call", "status", "action": {"type": "search", "query", "sources"?: [{"url"}]}
                                                   | {"type": "open_page", "url"} | {"type": "find", "url", "pattern"}},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "... ([example.org](https://example.org/a?utm_source=openai)) ...",
             "annotations": [{"type": "url_citation", "start_index", "end_index", "url", "title"}]}]}]}

Chat Completions (gpt-4o-search-preview and later search models):

    {"choices": [{"message": {"content": "...", "annotations": [
        {"type": "url_citation", "url_citation": {"start_index", "end_index", "url", "title"}}]}}]}

The indexes are character offsets of the markdown link the model wrote into the text. They are
checked: a span that does not hold its link is located again by the URL (nearest occurrence), and
an annotation without offsets (the early shape: `"index": null`, no start/end; some proxies put
`url` and `title` straight on the annotation) is located by the link to its URL in the text, the
n-th annotation of a URL on the n-th link to it. A link found outside any sentence goes to the
sentence before it in its paragraph. An annotation whose URL the text never links and which has no
usable offsets is dropped and counted; its URL stays a listed source. A search model that returned
no annotations gives an answer with no sources (the scorecard then says there are no citations).
"""

from __future__ import annotations

import re

from pipeline.errors import InputError
from pipeline.importers.engine_common import (
    EngineParse,
    SourceList,
    SpanCitation,
    as_dict,
    as_list,
    opt_int,
    opt_list,
    opt_str,
    url_key,
)
from pipeline.importers.perplexity import message_text

# A markdown link "[label](url)" or a bare URL: where the model wrote the link it cites. Bounded.
_LINK_RE = re.compile(r"\[[^\[\]\n]{0,500}\]\(\s*<?(?P<url>[^\s()<>]{1,2000}(?:\([^\s()<>]{0,200}\)[^\s()<>]{0,200})?)>?"
                      r"(?:\s+\"[^\"\n]{0,300}\")?\s*\)|(?P<bare>https?://[^\s()<>\[\]]{1,2000})")


class _Pending:
    """One url_citation annotation while a response is read: where it points, and how it got there."""

    __slots__ = ("start", "end", "url", "title", "how")

    def __init__(self, start: int | None, end: int | None, url: str, title: str, how: str) -> None:
        self.start, self.end, self.url, self.title, self.how = start, end, url, title, how


def parse_openai_responses(resp: dict, where: str) -> EngineParse:
    """A Responses API response -> answer text, sources in first-appearance order, span citations."""
    sources = SourceList(where, dedupe=True)
    parse = EngineParse("", sources, numbered_markers=False, model=opt_str(resp, "model", where, "model", limit=200),
                        response_id=opt_str(resp, "id", where, "id", limit=200))
    texts: list[str] = []
    pending: list[_Pending] = []
    pos = 0
    output = resp.get("output")
    if output is None and isinstance(resp.get("output_text"), str):  # an SDK dump with the text only
        parse.text = resp["output_text"]
        return parse
    for k, raw in enumerate(as_list(output, where, "output")):
        item = as_dict(raw, where, f"output[{k}]")
        kind = item.get("type")
        if kind == "web_search_call":
            _search_sources(item, sources, where, f"output[{k}]", parse)
            continue
        if kind != "message":
            continue  # reasoning (maybe encrypted), tool calls: not answer text
        for c, part in enumerate(opt_list(item, "content", where, f"output[{k}].content")):
            field = f"output[{k}].content[{c}]"
            part = as_dict(part, where, field)
            if part.get("type", "output_text") not in ("output_text", "text"):
                continue  # a refusal part carries no answer
            text = opt_str(part, "text", where, f"{field}.text")
            if texts:
                texts.append("\n\n")
                pos += 2
            for a, ann in enumerate(opt_list(part, "annotations", where, f"{field}.annotations")):
                ann = as_dict(ann, where, f"{field}.annotations[{a}]")
                if ann.get("type") == "url_citation":
                    inner = ann.get("url_citation")
                    body = as_dict(inner, where, f"{field}.annotations[{a}].url_citation") if inner is not None else ann
                    pending.append(_annotation(body, text, pos, where, f"{field}.annotations[{a}]", parse))
            texts.append(text)
            pos += len(text)
    parse.text = "".join(texts)
    _place(parse, pending)
    if not pending:
        parse.note("no_citations")
    return parse


def parse_openai_chat(resp: dict, where: str) -> EngineParse:
    """A Chat Completions search-model response -> answer text, sources, span citations."""
    choices = as_list(resp.get("choices"), where, "choices")
    if not choices:
        raise InputError("the response has no choices", record=where, field="choices")
    message = as_dict(as_dict(choices[0], where, "choices[0]").get("message"), where, "choices[0].message")
    text = message_text(message.get("content"), where, "choices[0].message.content")
    parse = EngineParse(text, SourceList(where, dedupe=True), numbered_markers=False,
                        model=opt_str(resp, "model", where, "model", limit=200), response_id=opt_str(resp, "id", where, "id", limit=200))
    pending = []
    for a, ann in enumerate(opt_list(message, "annotations", where, "choices[0].message.annotations")):
        field = f"choices[0].message.annotations[{a}]"
        ann = as_dict(ann, where, field)
        if ann.get("type") == "url_citation":
            inner = ann.get("url_citation")
            body = as_dict(inner, where, f"{field}.url_citation") if inner is not None else ann  # flat: url on the annotation
            pending.append(_annotation(body, text, 0, where, f"{field}.url_citation", parse))
    _place(parse, pending)
    if not pending:
        parse.note("no_citations")
    return parse


def _search_sources(item: dict, sources: SourceList, where: str, field: str, parse: EngineParse) -> None:
    """The pages a web search call lists (`action.sources`) or opened (`open_page`, `find`)."""
    if item.get("status") == "failed":
        parse.note("search_errors")
    action = item.get("action")
    if not isinstance(action, dict):
        return
    for j, src in enumerate(opt_list(action, "sources", where, f"{field}.action.sources")):
        src = as_dict(src, where, f"{field}.action.sources[{j}]")
        url = opt_str(src, "url", where, f"{field}.action.sources[{j}].url")
        if url:
            sources.add(url, opt_str(src, "title", where, f"{field}.action.sources[{j}].title"))
    if action.get("type") in ("open_page", "find"):
        url = opt_str(action, "url", where, f"{field}.action.url")
        if url.lower().startswith(("http://", "https://")):
            sources.add(url)


def _annotation(ann: dict, text: str, base: int, where: str, field: str, parse: EngineParse) -> _Pending:
    """One annotation's span within its text part (checked), or no span yet (located later by URL)."""
    start = opt_int(ann, "start_index", where, f"{field}.start_index")
    end = opt_int(ann, "end_index", where, f"{field}.end_index")
    url = opt_str(ann, "url", where, f"{field}.url")
    title = opt_str(ann, "title", where, f"{field}.title")
    if start is None and end is None:
        hint = opt_int(ann, "index", where, f"{field}.index")  # the early shape: null, or a position
        return _Pending(None if hint is None else base + hint, None, url, title, "link")
    if start is None or end is None:
        start = end = start if start is not None else end
    assert start is not None and end is not None
    links = _links(text, url)
    # offsets are right when they hold a whole link to the URL or lie inside one; a span that only
    # grazes the link (counted in another unit, shifted) is moved onto the link, never left to straddle
    if links and not any(start <= s and e <= end or s <= start <= end <= e for s, e in links):
        near = min(links, key=lambda se: abs(se[0] - start))  # offsets off their link: the nearest link to the URL
        return _Pending(base + near[0], base + near[1], url, title, "text")
    return _Pending(base + start, base + end, url, title, "offsets")


def _links(text: str, url: str) -> list[tuple[int, int]]:
    """Spans of the markdown links (or bare URLs) in `text` that point at `url` (utm_* ignored)."""
    if not url:
        return []
    key = url_key(url)
    out = []
    for m in _LINK_RE.finditer(text):
        target = m.group("url") or m.group("bare") or ""
        if url_key(target.rstrip(".,;:")) == key:
            out.append((m.start(), m.end()))
        if len(out) >= 1000:
            break
    return out


def _place(parse: EngineParse, pending: list[_Pending]) -> None:
    """Spans for every annotation (those without offsets located by their link), then sources
    numbered in the order their citations appear in the text; one span per citation."""
    used: dict[str, list[tuple[int, int]]] = {}
    for p in pending:
        if p.end is not None:
            used.setdefault(url_key(p.url), []).append((p.start or 0, p.end))
    for p in pending:
        if p.end is not None:
            continue
        links = [se for se in _links(parse.text, p.url) if se not in used.get(url_key(p.url), [])]
        if links:
            hint = p.start
            s, e = min(links, key=lambda se: abs(se[0] - hint)) if hint is not None else links[0]
            used.setdefault(url_key(p.url), []).append((s, e))
            p.start, p.end = s, e
        elif p.start is not None and 0 <= p.start <= len(parse.text):
            p.end, p.how = p.start, "offsets"  # a bare position and no link to check it against
        else:
            parse.note("spans_url_not_in_text")
    placed = sorted((p for p in pending if p.end is not None), key=lambda p: (p.start, p.end))
    for p in placed:
        index = parse.sources.add(p.url, p.title, field="annotations") if p.url else None
        if index is not None:
            parse.spans.append(SpanCitation(p.start or 0, p.end or 0, (index,), p.how))
    for p in pending:
        if p.end is None and p.url:
            parse.sources.add(p.url, p.title, field="annotations")  # cited, but nowhere in the text: still listed
