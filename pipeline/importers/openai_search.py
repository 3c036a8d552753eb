"""OpenAI web search: the Responses API (`tools: [{"type": "web_search"}]`) and the Chat Completions
search models.

Responses API:

    {"id": "resp_...", "object": "response", "model", "output": [
        {"type": "web_search_call", "status", "action": {"type": "search", "query", "sources"?: [{"url"}]}},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "... ([example.org](https://example.org/a?utm_source=openai)) ...",
             "annotations": [{"type": "url_citation", "start_index", "end_index", "url", "title"}]}]}]}

Chat Completions (gpt-4o-search-preview and later search models):

    {"choices": [{"message": {"content": "...", "annotations": [
        {"type": "url_citation", "url_citation": {"start_index", "end_index", "url", "title"}}]}}]}

The indexes are character offsets of the markdown link the model wrote into the text. An offset
that does not land on its link (a client counting UTF-16 units, a text edited after the fact) is
located again by the cited URL, and counted.
"""

from __future__ import annotations

from pipeline.errors import InputError
from pipeline.importers.engine_common import (
    EngineParse,
    SourceList,
    SpanCitation,
    as_dict,
    as_list,
    nearest_occurrence,
    opt_int,
    opt_list,
    opt_str,
)
from pipeline.importers.perplexity import message_text


def parse_openai_responses(resp: dict, where: str) -> EngineParse:
    """A Responses API response -> answer text, sources in first-appearance order, span citations."""
    sources = SourceList(where, dedupe=True)
    parse = EngineParse("", sources, numbered_markers=False, model=opt_str(resp, "model", where, "model", limit=200),
                        response_id=opt_str(resp, "id", where, "id", limit=200))
    texts: list[str] = []
    pending: list[tuple[int, int, str, str]] = []  # (start, end, url, title) in the joined text
    pos = 0
    output = resp.get("output")
    if output is None and isinstance(resp.get("output_text"), str):  # an SDK dump with the text only
        parse.text = resp["output_text"]
        return parse
    for k, raw in enumerate(as_list(output, where, "output")):
        item = as_dict(raw, where, f"output[{k}]")
        kind = item.get("type")
        if kind == "web_search_call":
            action = item.get("action")
            if isinstance(action, dict):
                for j, src in enumerate(opt_list(action, "sources", where, f"output[{k}].action.sources")):
                    src = as_dict(src, where, f"output[{k}].action.sources[{j}]")
                    url = opt_str(src, "url", where, f"output[{k}].action.sources[{j}].url")
                    if url:
                        sources.add(url, opt_str(src, "title", where, f"output[{k}].action.sources[{j}].title"))
            continue
        if kind != "message":
            continue
        for c, part in enumerate(opt_list(item, "content", where, f"output[{k}].content")):
            field = f"output[{k}].content[{c}]"
            part = as_dict(part, where, field)
            if part.get("type") != "output_text":
                continue  # a refusal part carries no answer
            text = opt_str(part, "text", where, f"{field}.text")
            if texts:
                texts.append("\n\n")
                pos += 2
            for a, ann in enumerate(opt_list(part, "annotations", where, f"{field}.annotations")):
                ann = as_dict(ann, where, f"{field}.annotations[{a}]")
                if ann.get("type") == "url_citation":
                    pending.append(_citation(ann, text, pos, where, f"{field}.annotations[{a}]", parse))
            texts.append(text)
            pos += len(text)
    parse.text = "".join(texts)
    _add_spans(parse, pending)
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
            inner = as_dict(ann.get("url_citation"), where, f"{field}.url_citation")
            pending.append(_citation(inner, text, 0, where, f"{field}.url_citation", parse))
    _add_spans(parse, pending)
    return parse


def _citation(ann: dict, text: str, base: int, where: str, field: str, parse: EngineParse) -> tuple[int, int, str, str]:
    start = opt_int(ann, "start_index", where, f"{field}.start_index")
    end = opt_int(ann, "end_index", where, f"{field}.end_index")
    url = opt_str(ann, "url", where, f"{field}.url")
    title = opt_str(ann, "title", where, f"{field}.title")
    if start is None or end is None:
        raise InputError("a url_citation needs start_index and end_index", record=where, field=field)
    fixed = _locate_link(text, start, end, url)
    if fixed is not None and fixed != (start, end):
        parse.note("offsets_repaired")
        start, end = fixed
    return base + start, base + end, url, title


def _locate_link(text: str, start: int, end: int, url: str) -> tuple[int, int] | None:
    """The span of the cited link: the given one when it holds the URL (or the URL is nowhere in
    the text), else the markdown link around the occurrence of the URL nearest to `start`."""
    if not url or (0 <= start <= end <= len(text) and url in text[start:end]):
        return None
    at = nearest_occurrence(text, url, start)
    if at is None:
        return None
    s, e = at, at + len(url)
    if text[max(s - 2, 0):s] == "](":
        label = text.rfind("[", max(s - 600, 0), s - 2)
        s = label if label >= 0 else s
        e = e + 1 if text[e:e + 1] == ")" else e
    return s, e


def _add_spans(parse: EngineParse, pending: list[tuple[int, int, str, str]]) -> None:
    """Sources numbered in the order their citations appear in the text; one span per citation."""
    for start, end, url, title in sorted(pending, key=lambda p: (p[0], p[1])):
        index = parse.sources.add(url, title, field="annotations") if url else None
        if index is not None:
            parse.spans.append(SpanCitation(start, end, (index,)))
