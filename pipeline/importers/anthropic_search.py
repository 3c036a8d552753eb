"""Anthropic Messages with the web search tool.

    {"id": "msg_...", "type": "message", "role": "assistant", "model", "content": [
        {"type": "text", "text": "I'll look that up."},
        {"type": "server_tool_use", "id": "srvtoolu_...", "name": "web_search", "input": {"query"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_...", "content": [
            {"type": "web_search_result", "url", "title", "encrypted_content", "page_age"}]},
        {"type": "text", "text": "Based on the results, "},
        {"type": "text", "text": "the claim itself", "citations": [
            {"type": "web_search_result_location", "url", "title", "encrypted_index", "cited_text"}]}],
     "stop_reason", "usage": {"input_tokens", "output_tokens", "server_tool_use": {"web_search_requests"}}}

The answer is the text blocks joined in order (a paragraph break where a tool call came between
them). A cited text block has no offsets: its own extent in the joined text is the citation span.
The search results are the listed sources; `cited_text` (the quoted passage) becomes the source's
snippet text. A failed search comes back as a `web_search_tool_result_error` object and is counted.
"""

from __future__ import annotations

from pipeline.importers.engine_common import EngineParse, SourceList, SpanCitation, as_dict, as_list, opt_list, opt_str


def parse_anthropic(resp: dict, where: str) -> EngineParse:
    """A Messages response -> answer text, search results as sources, each cited block as a span."""
    sources = SourceList(where, dedupe=True)
    parse = EngineParse("", sources, numbered_markers=False, model=opt_str(resp, "model", where, "model", limit=200),
                        response_id=opt_str(resp, "id", where, "id", limit=200))
    texts: list[str] = []
    pos = 0
    after_tool = False
    for k, raw in enumerate(as_list(resp.get("content"), where, "content")):
        block = as_dict(raw, where, f"content[{k}]")
        kind = block.get("type")
        if kind == "web_search_tool_result":
            _results(block, sources, where, f"content[{k}]", parse)
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
                field = f"content[{k}].citations[{c}]"
                cit = as_dict(cit, where, field)
                if cit.get("type") != "web_search_result_location":
                    continue  # document citations (char/page locations) do not name web sources
                url = opt_str(cit, "url", where, f"{field}.url")
                index = sources.add(url, opt_str(cit, "title", where, f"{field}.title"),
                                    snippet=opt_str(cit, "cited_text", where, f"{field}.cited_text"), field=field)
                parse.spans.append(SpanCitation(start, pos, (index,)))
        elif kind in ("server_tool_use", "tool_use"):
            after_tool = True
    parse.text = "".join(texts)
    return parse


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
