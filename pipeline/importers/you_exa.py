"""You.com and Exa answer endpoints.

You.com Answer API (`POST /v1/answer`): a markdown answer with numbered inline citations such as
[[1, 2]] that point into `citations`, each with verbatim `excerpts`; `results.web` are the search
results considered (url, title, snippets, page_age):

    {"answer": "...", "citations": [{"source": "https://...", "excerpts": ["..."]}],
     "results": {"web": [{"url", "title", "snippets": ["..."], "page_age"}]}}

You.com Agents API (`POST /v1/agents/runs`, express / advanced agents): `output` is a list of
items, the search results first and the answer after, markers in the answer numbering the results:

    {"agent": "express", "input": [...], "output": [
        {"type": "web_search.results", "content": [{"url", "citation_uri", "title", "snippet", "source_type"}]},
        {"type": "message.answer", "text": "..."}]}

You.com Research API (`POST /v1/research`) nests the same idea under `output`
(`{"output": {"content", "content_type": "text", "sources": [{"url", "title", "snippets"}]}}`), and
the older Smart API listed `search_results` (`url`, `name`, `snippet`).

Exa (`POST /answer`): an answer with the sources it drew on listed for the whole answer:

    {"answer": "...", "citations": [{"id", "url", "title", "author", "publishedDate", "text"?}],
     "costDollars": {"total"}, "requestId"?}

Exa's answer carries no per-sentence markers, so its statements cite nothing individually; the
sources stay listed (the answer cites them as a whole), which the scorecard shows as uncited
statements and sources. `text` (asked for with "text": true) is the provider's page text.
"""

from __future__ import annotations

from pipeline.errors import InputError
from pipeline.importers.engine_common import EngineParse, SourceList, as_dict, as_list, opt_list, opt_str, url_key


def parse_you(resp: dict, where: str) -> EngineParse:
    """A You.com Answer, Research or Smart response -> answer text and numbered sources."""
    sources = SourceList(where, dedupe=False)
    output = resp.get("output")
    if isinstance(output, list):  # Agents API
        return _agent_run(output, sources, where)
    if isinstance(output, dict):  # Research API
        content = output.get("content")
        if not isinstance(content, str):
            raise InputError("only text research output can be audited (content_type 'text')", record=where, field="output.content")
        parse = EngineParse(content, sources)
        for k, raw in enumerate(opt_list(output, "sources", where, "output.sources")):
            item = as_dict(raw, where, f"output.sources[{k}]")
            snippets = [opt_str({"s": s}, "s", where, f"output.sources[{k}].snippets[{j}]")
                        for j, s in enumerate(opt_list(item, "snippets", where, f"output.sources[{k}].snippets"))]
            sources.add(opt_str(item, "url", where, f"output.sources[{k}].url"), opt_str(item, "title", where, f"output.sources[{k}].title"),
                        snippet="\n\n".join(snippets), field=f"output.sources[{k}]")
        return parse
    text = opt_str(resp, "answer", where, "answer")
    parse = EngineParse(text, sources)
    results: dict[str, dict] = {}
    web = resp.get("results")
    web_list = as_list(web.get("web") or [], where, "results.web") if isinstance(web, dict) else []
    for k, raw in enumerate(web_list):
        item = as_dict(raw, where, f"results.web[{k}]")
        results.setdefault(url_key(opt_str(item, "url", where, f"results.web[{k}].url")), item)
    used: set[str] = set()
    for k, raw in enumerate(opt_list(resp, "citations", where, "citations")):
        item = as_dict(raw, where, f"citations[{k}]")
        url = opt_str(item, "source", where, f"citations[{k}].source") or opt_str(item, "url", where, f"citations[{k}].url")
        excerpts = [opt_str({"s": s}, "s", where, f"citations[{k}].excerpts[{j}]")
                    for j, s in enumerate(opt_list(item, "excerpts", where, f"citations[{k}].excerpts"))]
        result = results.get(url_key(url), {})
        used.add(url_key(url))
        title = opt_str(result, "title", where, f"citations[{k}] (results.web).title") or opt_str(item, "title", where, f"citations[{k}].title")
        sources.add(url, title,
                    snippet="\n\n".join(excerpts), date=opt_str(result, "page_age", where, "results.web.page_age", limit=100),
                    field=f"citations[{k}]")
    for key, item in results.items():
        if key not in used:
            _add_result(sources, item, where, "results.web", "snippets")
    for k, raw in enumerate(opt_list(resp, "search_results", where, "search_results")):  # the older Smart API
        item = as_dict(raw, where, f"search_results[{k}]")
        sources.add(opt_str(item, "url", where, f"search_results[{k}].url"), opt_str(item, "name", where, f"search_results[{k}].name"),
                    snippet=opt_str(item, "snippet", where, f"search_results[{k}].snippet"), field=f"search_results[{k}]")
    return parse


def _agent_run(output: list, sources: SourceList, where: str) -> EngineParse:
    """An Agents API run: the results of its web searches are the numbered sources; the answer
    items joined (a paragraph apart) are the text."""
    texts: list[str] = []
    for k, raw in enumerate(as_list(output, where, "output")):
        item = as_dict(raw, where, f"output[{k}]")
        kind = item.get("type")
        if kind == "web_search.results":
            for j, res in enumerate(opt_list(item, "content", where, f"output[{k}].content")):
                res = as_dict(res, where, f"output[{k}].content[{j}]")
                url = opt_str(res, "url", where, f"output[{k}].content[{j}].url") or \
                    opt_str(res, "citation_uri", where, f"output[{k}].content[{j}].citation_uri")
                sources.add(url, opt_str(res, "title", where, f"output[{k}].content[{j}].title"),
                            snippet=opt_str(res, "snippet", where, f"output[{k}].content[{j}].snippet"),
                            field=f"output[{k}].content[{j}]")
        elif kind in ("message.answer", "chat_node.answer") or (isinstance(kind, str) and kind.endswith(".answer")):
            text = opt_str(item, "text", where, f"output[{k}].text")
            if text.strip():
                texts.append(text)
    return EngineParse("\n\n".join(texts), sources)


def _add_result(sources: SourceList, item: dict, where: str, field: str, snippet_key: str) -> None:
    snippets = [s for s in (item.get(snippet_key) or []) if isinstance(s, str)] if isinstance(item.get(snippet_key), list) else []
    sources.add(opt_str(item, "url", where, f"{field}.url"), opt_str(item, "title", where, f"{field}.title"),
                snippet="\n\n".join(snippets), date=opt_str(item, "page_age", where, f"{field}.page_age", limit=100), field=field)


def parse_exa(resp: dict, where: str) -> EngineParse:
    """An Exa /answer response -> answer text and its answer-level sources."""
    answer = resp.get("answer")
    if isinstance(answer, (dict, list)):
        raise InputError("a structured answer (outputSchema) is not prose and cannot be audited", record=where, field="answer")
    text = opt_str(resp, "answer", where, "answer")
    rid = resp.get("requestId")
    parse = EngineParse(text, SourceList(where, dedupe=False), response_id=rid if isinstance(rid, str) else "")
    for k, raw in enumerate(opt_list(resp, "citations", where, "citations")):
        item = as_dict(raw, where, f"citations[{k}]")
        parse.sources.add(opt_str(item, "url", where, f"citations[{k}].url"), opt_str(item, "title", where, f"citations[{k}].title"),
                          snippet=opt_str(item, "text", where, f"citations[{k}].text"),
                          date=opt_str(item, "publishedDate", where, f"citations[{k}].publishedDate", limit=100), field=f"citations[{k}]")
    return parse
