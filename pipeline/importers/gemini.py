"""Google Gemini with grounding (Google Search), REST JSON or a snake_case SDK dump.

    {"candidates": [{"content": {"role": "model", "parts": [{"text": "..."}]},
        "groundingMetadata": {
            "webSearchQueries": [...],
            "groundingChunks": [{"web": {"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/...",
                                         "title": "example.org"}}],
            "groundingSupports": [{"segment": {"partIndex"?, "startIndex"?, "endIndex", "text"},
                                   "groundingChunkIndices": [0, 2], "confidenceScores": [...]}]}}],
     "modelVersion", "responseId"}

The chunks are the listed sources (chunk k is source k+1), one source per chunk even when several
carry the same site as title (a support naming chunks 0 and 2 cites sources 1 and 3). Their URIs are
redirect links and their title is the site's name, not the page's. Vertex AI answers grounded in a
data store give `retrievedContext` ({uri, title, text}) instead of `web`, Maps grounding `maps`.
LiteLLM returns Gemini's answer as an OpenAI-style chat completion with the grounding metadata in
`vertex_ai_grounding_metadata` (a list, one per candidate); it is read as the candidate it came from.

Segment offsets count UTF-8 BYTES of one part's text, not characters. A candidate may hold several
parts: thought summaries (`thought: true`), tool calls and their results, and the answer in a later
part; `partIndex` names the part. Answer parts separated by such parts are joined with a paragraph
break (a preamble is not the first sentence of the answer); adjacent text parts are joined as they
are. proto3 JSON leaves out zero values, so a missing `startIndex` or `partIndex` means 0 and a
support may lack `confidenceScores`. Real responses also omit `partIndex` for a segment in a later
part, so offsets are checked against `segment.text`: on the named part first, then on every other
answer part and on the joined text; when the bytes land nowhere the segment is located by its text
(nearest occurrence, any whitespace) and counted as located by text. Without a segment text the
bytes are trusted on the named part; a segment in a part that is not answer text, empty, reversed or
outside its part is dropped and counted.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import InputError
from pipeline.importers.engine_common import (
    EngineParse,
    SourceList,
    SpanCitation,
    Utf8Offsets,
    as_dict,
    as_list,
    locate_text,
    opt_int,
    opt_list,
    opt_str,
    pick,
    squash,
)


def litellm_grounding(resp: dict) -> Any:
    """The grounding metadata LiteLLM puts on an OpenAI-style response of a Gemini model (on the
    response or its message, as a list with one entry per candidate); None when there is none."""
    found = resp.get("vertex_ai_grounding_metadata")
    choices = resp.get("choices")
    if found is None and isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        found = message.get("vertex_ai_grounding_metadata") if isinstance(message, dict) else None
    return found


def _from_litellm(resp: dict, where: str) -> dict:
    """LiteLLM's OpenAI-style response of a Gemini model -> the candidate Gemini would have sent."""
    from pipeline.importers.perplexity import message_text

    choices = as_list(resp.get("choices"), where, "choices")
    if not choices:
        raise InputError("the response has no choices", record=where, field="choices")
    message = as_dict(as_dict(choices[0], where, "choices[0]").get("message"), where, "choices[0].message")
    text = message_text(message.get("content"), where, "choices[0].message.content")
    grounding = litellm_grounding(resp)
    if isinstance(grounding, list):
        grounding = grounding[0] if grounding else None
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if grounding is not None:
        candidate["groundingMetadata"] = grounding
    return {"candidates": [candidate], "modelVersion": resp.get("model"), "responseId": resp.get("id")}


def parse_gemini(resp: dict, where: str) -> EngineParse:
    """A generateContent response (or LiteLLM's OpenAI-style copy of one) -> answer text, chunks as
    sources, supports as span citations."""
    if "candidates" not in resp and "choices" in resp:
        resp = _from_litellm(resp, where)
    candidates = as_list(resp.get("candidates"), where, "candidates")
    if not candidates:
        raise InputError("the response has no candidates (blocked or empty)", record=where, field="candidates")
    cand = as_dict(candidates[0], where, "candidates[0]")
    content = as_dict(cand.get("content") or {}, where, "candidates[0].content")
    parts = opt_list(content, "parts", where, "candidates[0].content.parts")
    bases: list[int] = []  # character offset of each part in the joined text (-1: not answer text)
    texts: list[str] = []
    pieces: list[str] = []
    pos = 0
    gap = False  # a thought or tool part since the last answer part: the texts are not one run of prose
    for k, raw in enumerate(parts):
        part = as_dict(raw, where, f"candidates[0].content.parts[{k}]")
        text = opt_str(part, "text", where, f"candidates[0].content.parts[{k}].text")
        if part.get("thought") is True or "text" not in part:
            bases.append(-1)  # a thought summary or a non-text part (tool call, code, image) is not the answer
            texts.append(text)
            gap = gap or bool(pieces)
            continue
        if gap and not pieces[-1].endswith("\n") and not text.startswith("\n"):
            pieces.append("\n\n")
            pos += 2
        gap = False
        bases.append(pos)
        texts.append(text)
        pieces.append(text)
        pos += len(text)
    answer = "".join(pieces)
    model = pick(resp, "modelVersion", "model_version")
    rid = pick(resp, "responseId", "response_id")
    parse = EngineParse(answer, SourceList(where, dedupe=False), numbered_markers=False,
                        model=model if isinstance(model, str) else "", response_id=rid if isinstance(rid, str) else "")
    meta = pick(cand, "groundingMetadata", "grounding_metadata")
    if meta is None:
        return parse
    meta = as_dict(meta, where, "candidates[0].groundingMetadata")
    chunks = as_list(pick(meta, "groundingChunks", "grounding_chunks") or [], where, "groundingMetadata.groundingChunks")
    for k, raw in enumerate(chunks):
        chunk = as_dict(raw, where, f"groundingChunks[{k}]")
        web = pick(chunk, "web", "retrievedContext", "retrieved_context", "maps") or {}
        web = as_dict(web, where, f"groundingChunks[{k}].web")
        parse.sources.add(opt_str(web, "uri", where, f"groundingChunks[{k}].web.uri"),
                          opt_str(web, "title", where, f"groundingChunks[{k}].web.title"),
                          snippet=opt_str(web, "text", where, f"groundingChunks[{k}].web.text"), field=f"groundingChunks[{k}]")
    placer = _Segments(texts, bases, answer)
    supports = as_list(pick(meta, "groundingSupports", "grounding_supports") or [], where, "groundingMetadata.groundingSupports")
    for k, raw in enumerate(supports):
        field = f"groundingSupports[{k}]"
        support = as_dict(raw, where, field)
        segment = as_dict(support.get("segment") or {}, where, f"{field}.segment")
        part_index = _index(segment, "partIndex", "part_index", where, f"{field}.segment")
        start = _index(segment, "startIndex", "start_index", where, f"{field}.segment") or 0
        end = _index(segment, "endIndex", "end_index", where, f"{field}.segment") or 0
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
        placed = placer.place(part_index, start, end, seg_text)
        if isinstance(placed, str):
            parse.note(f"spans_{placed}")
            continue
        parse.spans.append(SpanCitation(placed[0], placed[1], tuple(dict.fromkeys(indexes)), placed[2]))
    return parse


def _index(segment: dict, camel: str, snake: str, where: str, field: str) -> int | None:
    key = camel if camel in segment else snake
    return opt_int(segment, key, where, f"{field}.{key}")


class _Segments:
    """Byte segments of parts -> character spans of the answer text, checked against segment.text."""

    def __init__(self, texts: list[str], bases: list[int], answer: str) -> None:
        self.texts, self.bases, self.answer = texts, bases, answer
        self.tables = [Utf8Offsets(t) for t in texts]
        self.joined = Utf8Offsets(answer)

    def _chars(self, part: int | None, start: int, end: int) -> tuple[int, int] | None:
        """Character span in the answer text of a byte span of one part (None: the joined text)."""
        text, base, table = (self.answer, 0, self.joined) if part is None else (self.texts[part], self.bases[part], self.tables[part])
        s, e = table.char(start), table.char(end)
        if s is None or e is None or base < 0:
            return None
        return base + s, base + e

    def place(self, part: int | None, start: int, end: int, seg_text: str) -> tuple[int, int, str] | str:
        """(start, end, how) in the answer text, or the reason the segment is dropped."""
        named = 0 if part is None else part
        if part is None and self.bases and self.bases[0] < 0:
            # partIndex left out while part 0 is a thought or a tool call: grounding never cites those,
            # so the segment is in the first answer part (the case python-genai issue 961 reports)
            named = next((p for p, b in enumerate(self.bases) if b >= 0), 0)
        if not 0 <= named < len(self.texts):
            return "outside_text"
        if seg_text.strip():
            want = squash(seg_text)
            others = [p for p in range(len(self.texts)) if p != named and self.bases[p] >= 0]
            for k, candidate in enumerate([named, *others, None]):
                span = self._chars(candidate, start, end)
                if span and span[0] < span[1] and squash(self.answer[span[0]:span[1]]) == want:
                    return span[0], span[1], "offsets" if k == 0 else "text"
            near = self._chars(named, min(start, self.tables[named].total), min(start, self.tables[named].total))
            found = locate_text(self.answer, seg_text, near[0] if near else 0)
            return (found[0], found[1], "text") if found else "text_not_found"
        if self.bases[named] < 0:
            return "not_answer_text"
        if end < start:
            return "reversed"
        span = self._chars(named, start, end)
        if span is None:
            return "outside_text"
        if span[0] == span[1]:
            return "empty"
        return span[0], span[1], "offsets"
