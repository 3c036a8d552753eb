"""Perplexity Sonar chat completions.

    {"id", "model", "choices": [{"message": {"role": "assistant", "content": "... [1][2] ..."}}],
     "citations": ["https://...", ...],
     "search_results": [{"title", "url", "date", "last_updated", "snippet", "source"?}, ...],
     "images"?: [{"image_url", "origin_url", "height", "width"}], "related_questions"?: ["..."], "usage": {...}}

"[n]" in the content points at `citations[n-1]`; `search_results` add title, date and snippet by URL
(and stand in for `citations` when a response has only them). Citations may also come as objects
(`{"url", "title"}`). Images and related questions are not sources of the answer: they stay in the
raw response only. A streamed answer (chunks saved as JSONL) is joined first (streams.py). Reasoning models (sonar-reasoning)
put their thinking in a leading <think>...</think> block, which is not part of the answer.
"""

from __future__ import annotations

import re

from pipeline.errors import InputError
from pipeline.importers.engine_common import EngineParse, SourceList, as_dict, as_list, opt_list, opt_str, url_key

_THINK_RE = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)


def parse_perplexity(resp: dict, where: str) -> EngineParse:
    """One Sonar response -> answer text, numbered sources, no spans (markers carry the citations)."""
    choices = as_list(resp.get("choices"), where, "choices")
    if not choices:
        raise InputError("the response has no choices", record=where, field="choices")
    message = as_dict(as_dict(choices[0], where, "choices[0]").get("message"), where, "choices[0].message")
    content = message.get("content")
    text = message_text(content, where, "choices[0].message.content")
    sources = SourceList(where, dedupe=False)
    parse = EngineParse(text, sources, model=opt_str(resp, "model", where, "model", limit=200),
                        response_id=opt_str(resp, "id", where, "id", limit=200))
    think = _THINK_RE.match(text)
    if think:
        parse.text = text[think.end():]
        parse.note("reasoning_removed")

    results: dict[str, dict] = {}
    ordered: list[tuple[str, dict]] = []
    for k, raw in enumerate(opt_list(resp, "search_results", where, "search_results")):
        item = as_dict(raw, where, f"search_results[{k}]")
        url = opt_str(item, "url", where, f"search_results[{k}].url")
        ordered.append((url, item))
        results.setdefault(url_key(url), item)
    used: set[str] = set()
    for k, raw in enumerate(opt_list(resp, "citations", where, "citations")):
        if isinstance(raw, dict):  # citations as objects ({"url", "title"?, "snippet"?}) in some dumps and proxies
            url = opt_str(raw, "url", where, f"citations[{k}].url")
            item = {**results.get(url_key(url), {}), **{k2: v for k2, v in raw.items() if v}}
        else:
            url = opt_str({"u": raw}, "u", where, f"citations[{k}]")
            item = results.get(url_key(url), {})
        used.add(url_key(url))
        sources.add(url, **_details(item, where, f"citations[{k}]"))
    for k, (url, item) in enumerate(ordered):
        if url_key(url) not in used:  # listed by the engine but not in `citations`: still a listed source
            used.add(url_key(url))
            sources.add(url, **_details(item, where, f"search_results[{k}]"))
    return parse


def _details(item: dict, where: str, field: str) -> dict[str, str]:
    return {"title": opt_str(item, "title", where, f"{field}.title"), "snippet": opt_str(item, "snippet", where, f"{field}.snippet"),
            "date": opt_str(item, "date", where, f"{field}.date", limit=100)}


def message_text(content: object, where: str, field: str) -> str:
    """A chat message's content: a string, or a list of text parts (joined)."""
    if isinstance(content, str) or content is None:
        return content or ""
    parts = as_list(content, where, field)
    texts = []
    for k, part in enumerate(parts):
        part = as_dict(part, where, f"{field}[{k}]")
        if part.get("type", "text") in ("text", "output_text"):
            texts.append(opt_str(part, "text", where, f"{field}[{k}].text"))
    return "".join(texts)
