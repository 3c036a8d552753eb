"""Google Gemini with grounding (Google Search), REST JSON or a snake_case SDK dump.

    {"candidates": [{"content": {"role": "model", "parts": [{"text": "..."}]},
        "groundingMetadata": {
            "webSearchQueries": [...],
            "groundingChunks": [{"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/...",
                                         "title": "example.org"}}],
            "groundingSupports": [{"segment": {"partIndex"?, "startIndex"?, "endIndex", "text"},
                                   "groundingChunkIndices": [0, 2], "confidenceScores": [...]}]}}],
     "modelVersion", "responseId"}

The chunks are the listed sources (chunk k is source k+1). Their URIs are redirect links and their
title is the site's name, not the page's. Segment offsets count UTF-8 BYTES of the part's text, not
characters; proto3 JSON leaves out zero values, so a missing startIndex or partIndex means 0.
When a segment's text is given and the byte offsets do not land on it, the segment is located by
its text (nearest occurrence) and counted as repaired.
"""

from __future__ import annotations

from pipeline.errors import InputError
from pipeline.importers.engine_common import (
    EngineParse,
    SourceList,
    SpanCitation,
    Utf8Offsets,
    as_dict,
    as_list,
    nearest_occurrence,
    opt_int,
    opt_list,
    opt_str,
    pick,
)


def parse_gemini(resp: dict, where: str) -> EngineParse:
    """A generateContent response -> answer text, chunks as sources, supports as span citations."""
    candidates = as_list(resp.get("candidates"), where, "candidates")
    if not candidates:
        raise InputError("the response has no candidates (blocked or empty)", record=where, field="candidates")
    cand = as_dict(candidates[0], where, "candidates[0]")
    content = as_dict(cand.get("content") or {}, where, "candidates[0].content")
    parts = opt_list(content, "parts", where, "candidates[0].content.parts")
    bases: list[int] = []  # character offset of each part in the joined text (-1: not text)
    texts: list[str] = []
    pos = 0
    for k, raw in enumerate(parts):
        part = as_dict(raw, where, f"candidates[0].content.parts[{k}]")
        text = opt_str(part, "text", where, f"candidates[0].content.parts[{k}].text")
        if part.get("thought") is True or "text" not in part:
            bases.append(-1)  # a thought summary or a non-text part is not the answer
            texts.append("")
            continue
        bases.append(pos)
        texts.append(text)
        pos += len(text)
    model = pick(resp, "modelVersion", "model_version")
    rid = pick(resp, "responseId", "response_id")
    parse = EngineParse("".join(texts), SourceList(where, dedupe=False), numbered_markers=False,
                        model=model if isinstance(model, str) else "", response_id=rid if isinstance(rid, str) else "")
    meta = pick(cand, "groundingMetadata", "grounding_metadata")
    if meta is None:
        return parse
    meta = as_dict(meta, where, "candidates[0].groundingMetadata")
    chunks = as_list(pick(meta, "groundingChunks", "grounding_chunks") or [], where, "groundingMetadata.groundingChunks")
    for k, raw in enumerate(chunks):
        chunk = as_dict(raw, where, f"groundingChunks[{k}]")
        web = pick(chunk, "web", "retrievedContext", "retrieved_context") or {}
        web = as_dict(web, where, f"groundingChunks[{k}].web")
        parse.sources.add(opt_str(web, "uri", where, f"groundingChunks[{k}].web.uri"),
                          opt_str(web, "title", where, f"groundingChunks[{k}].web.title"),
                          snippet=opt_str(web, "text", where, f"groundingChunks[{k}].web.text"), field=f"groundingChunks[{k}]")
    offsets = [Utf8Offsets(t) for t in texts]
    supports = as_list(pick(meta, "groundingSupports", "grounding_supports") or [], where, "groundingMetadata.groundingSupports")
    for k, raw in enumerate(supports):
        field = f"groundingSupports[{k}]"
        support = as_dict(raw, where, field)
        segment = as_dict(support.get("segment") or {}, where, f"{field}.segment")
        part_index = _index(segment, "partIndex", "part_index", where, f"{field}.segment", 0)
        start = _index(segment, "startIndex", "start_index", where, f"{field}.segment", 0)
        end = _index(segment, "endIndex", "end_index", where, f"{field}.segment", 0)
        seg_text = opt_str(segment, "text", where, f"{field}.segment.text")
        raw_indexes = as_list(pick(support, "groundingChunkIndices", "grounding_chunk_indices") or [], where, f"{field}.groundingChunkIndices")
        indexes = []
        for j, ci in enumerate(raw_indexes):
            ci = opt_int({"i": ci}, "i", where, f"{field}.groundingChunkIndices[{j}]")
            if ci is None:
                continue
            if not 0 <= ci < len(chunks):
                parse.note("chunk_index_outside_list")
            indexes.append(ci + 1)  # an index outside the list stays a dangling citation
        if not indexes:
            continue
        span = _char_span(part_index, start, end, seg_text, texts, bases, offsets, parse)
        parse.spans.append(SpanCitation(span[0], span[1], tuple(dict.fromkeys(indexes))))
    return parse


def _index(segment: dict, camel: str, snake: str, where: str, field: str, default: int) -> int:
    key = camel if camel in segment else snake
    value = opt_int(segment, key, where, f"{field}.{key}", default)
    return default if value is None else value


def _char_span(part: int, start: int, end: int, seg_text: str, texts: list[str], bases: list[int],
               offsets: list, parse: EngineParse) -> tuple[int, int]:
    """Byte offsets within one part -> character offsets in the joined text ((-1, -1) when they
    cannot be placed: the span is then counted as outside the text)."""
    if not 0 <= part < len(texts) or bases[part] < 0:
        return -1, -1
    text, base, table = texts[part], bases[part], offsets[part]
    s, e = table.char(start), table.char(end)
    if seg_text and (s is None or e is None or text[s:e].strip() != seg_text.strip()):
        found = nearest_occurrence(text, seg_text.strip(), s if s is not None else 0)
        if found is not None:
            parse.note("offsets_repaired")
            return base + found, base + found + len(seg_text.strip())
    if s is None or e is None or e < s:
        return -1, -1
    return base + s, base + e
