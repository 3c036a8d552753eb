"""Anthropic Messages with the web search (and web fetch) tools.

    {"id": "msg_...", "type": "message", "role": "assistant", "model", "content": [
        {"type": "thinking", "thinking": "...", "signature": "..."} | {"type": "redacted_thinking", "data": "..."},
        {"type": "text", "text": "I'll look that up."},
        {"type": "server_tool_use", "id": "srvtoolu_...", "name": "web_search", "input": {"query"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_...", "content": [
            {"type": "web_search_result", "url", "title", "encrypted_content", "page_age"}]
            | {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        {"type": "web_fetch_tool_result", "content": {"type": "web_fetch_result", "url", "retrieved_at",
            "content": {"type": "document", "title", "source": {"type": "text", "data": "..."}}}},
        {"type": "text", "text": "Based on the results, "},
        {"type": "text", "text": "the claim itself", "citations": [
            {"type": "web_search_result_location", "url", "title", "encrypted_index", "cited_text"}]}],
     "stop_reason": "end_turn" | "pause_turn" | ..., "usage": {...}}

The answer is the text blocks joined in order (a paragraph break where a tool call came between
them); thinking blocks, redacted or not, are not answer text. A cited text block has no offsets: its
own extent in the joined text is the citation span. The search results are the listed sources (a
fetched page too, with its text); `cited_text` becomes the source's snippet. Citations of search
results the caller supplied (`search_result_location`, with `source` as the address) count like web
results; citations of documents (`char_location`, `page_location`, `content_block_location`) count
only when they name a fetched page by its title, otherwise they are counted as document citations.

A long search turn can stop with `stop_reason: "pause_turn"`; the caller sends the conversation back
and the next response continues the same answer, citing results that came in the first one. Both
are one answer: `join_conversation` puts their content together (`aee score a.json b.json
--conversation`, or an envelope whose "responses" holds both), and refuses, saying why, what is not
such a continuation. A paused response imported alone says so in a warning.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import InputError
from pipeline.importers.engine_common import (
    MAX_SNIPPET_CHARS,
    EngineParse,
    SourceList,
    SpanCitation,
    as_dict,
    as_list,
    opt_list,
    opt_str,
)

_DOCUMENT_CITATIONS = ("char_location", "page_location", "content_block_location")


def parse_anthropic(resp: dict, where: str) -> EngineParse:
    """A Messages response -> answer text, search results as sources, each cited block as a span."""
    sources = SourceList(where, dedupe=True)
    parse = EngineParse("", sources, numbered_markers=False, model=opt_str(resp, "model", where, "model", limit=200),
                        response_id=opt_str(resp, "id", where, "id", limit=200))
    if resp.get("stop_reason") == "pause_turn":
        parse.note("paused_turn")
    joined = resp.get("conversation_ids")
    if isinstance(joined, list) and len(joined) > 1:  # a conversation joined by join_conversation: its own id
        parse.response_id = "+".join(str(i) for i in joined)[:200]
    texts: list[str] = []
    pos = 0
    after_tool = False
    fetched_titles: dict[str, int] = {}
    for k, raw in enumerate(as_list(resp.get("content"), where, "content")):
        block = as_dict(raw, where, f"content[{k}]")
        kind = block.get("type")
        if kind == "web_search_tool_result":
            _results(block, sources, where, f"content[{k}]", parse)
            after_tool = True
        elif kind == "web_fetch_tool_result":
            _fetched(block, sources, where, f"content[{k}]", parse, fetched_titles)
            after_tool = True
        elif kind == "text":
            text = opt_str(block, "text", where, f"content[{k}].text")
            if after_tool and texts and not texts[-1].endswith("\n") and not text.startswith("\n"):
                texts.append("\n\n")
                pos += 2
            after_tool = False
            start = pos
            texts.append(text)
            pos += len(text)
            for c, cit in enumerate(opt_list(block, "citations", where, f"content[{k}].citations")):
                index = _cited_source(as_dict(cit, where, f"content[{k}].citations[{c}]"), sources, where,
                                      f"content[{k}].citations[{c}]", parse, fetched_titles)
                if index is not None:
                    parse.spans.append(SpanCitation(start, pos, (index,), "block"))
        elif kind in ("server_tool_use", "tool_use", "mcp_tool_use"):
            after_tool = True
    parse.text = "".join(texts)
    return parse


def _cited_source(cit: dict, sources: SourceList, where: str, field: str, parse: EngineParse,
                  fetched_titles: dict[str, int]) -> int | None:
    kind = cit.get("type")
    cited = opt_str(cit, "cited_text", where, f"{field}.cited_text")
    if kind == "web_search_result_location":
        url = opt_str(cit, "url", where, f"{field}.url")
        return sources.add(url, opt_str(cit, "title", where, f"{field}.title"), snippet=cited, field=field)
    if kind == "search_result_location":
        url = opt_str(cit, "source", where, f"{field}.source")
        return sources.add(url, opt_str(cit, "title", where, f"{field}.title"), snippet=cited, field=field)
    if kind in _DOCUMENT_CITATIONS:
        title = opt_str(cit, "document_title", where, f"{field}.document_title")
        index = fetched_titles.get(title.strip()) if title.strip() else None
        if index is None:
            parse.note("document_citations")
        return index
    return None


def _results(block: dict, sources: SourceList, where: str, field: str, parse: EngineParse) -> None:
    content = block.get("content")
    if isinstance(content, dict):  # {"type": "web_search_tool_result_error", "error_code": ...}
        parse.note("search_errors")
        return
    for j, raw in enumerate(as_list(content, where, f"{field}.content")):
        item = as_dict(raw, where, f"{field}.content[{j}]")
        if item.get("type", "web_search_result") != "web_search_result":
            continue
        url = opt_str(item, "url", where, f"{field}.content[{j}].url")
        if url:
            sources.add(url, opt_str(item, "title", where, f"{field}.content[{j}].title"),
                        date=opt_str(item, "page_age", where, f"{field}.content[{j}].page_age", limit=100),
                        field=f"{field}.content[{j}]")


def _fetched(block: dict, sources: SourceList, where: str, field: str, parse: EngineParse, titles: dict[str, int]) -> None:
    """A page the web fetch tool read: a listed source whose text is the page as Anthropic got it."""
    content = as_dict(block.get("content") or {}, where, f"{field}.content")
    if content.get("type") != "web_fetch_result":  # web_fetch_tool_result_error
        parse.note("search_errors")
        return
    url = opt_str(content, "url", where, f"{field}.content.url")
    document = content.get("content")
    title = text = ""
    if isinstance(document, dict):
        title = opt_str(document, "title", where, f"{field}.content.content.title")
        source = document.get("source")
        if isinstance(source, dict) and source.get("type") == "text" and isinstance(source.get("data"), str):
            text = source["data"][:MAX_SNIPPET_CHARS]
    if url:
        index = sources.add(url, title, snippet=text, field=f"{field}.content")
        if title.strip():
            titles.setdefault(title.strip(), index)


def join_conversation(responses: list[Any], where: str) -> dict:
    """Responses of one conversation whose earlier ones stopped with pause_turn -> one response
    (content in order; model and id of the last). InputError says why they cannot be one answer."""
    if not responses:
        raise InputError("the conversation holds no response", record=where, field="responses")
    messages = [as_dict(r, where, f"responses[{k}]") for k, r in enumerate(responses)]
    for k, message in enumerate(messages):
        if message.get("type") != "message" or not isinstance(message.get("content"), list):
            raise InputError("is not an Anthropic message: only Anthropic responses that stopped with pause_turn are "
                             "continued by another response", record=where, field=f"responses[{k}]")
    for k, message in enumerate(messages[:-1]):
        reason = message.get("stop_reason")
        if reason != "pause_turn":
            raise InputError(f"stopped with stop_reason {str(reason)[:40]!r}, not 'pause_turn': it is a complete answer, "
                             "so the next response is not its continuation (score them as separate answers)",
                             record=where, field=f"responses[{k}].stop_reason")
    models = {m["model"] for m in messages if isinstance(m.get("model"), str) and m["model"]}
    if len(models) > 1:
        raise InputError(f"the responses come from different models ({', '.join(sorted(map(str, models)))[:200]}): "
                         "not one conversation", record=where, field="responses")
    joined = dict(messages[-1])
    joined["content"] = [block for m in messages for block in m["content"]]
    joined["conversation_ids"] = [str(m.get("id", "")) for m in messages]
    return joined
