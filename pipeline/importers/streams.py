"""Streamed responses saved as they arrived -> the one response the provider would have returned.

People save streams three ways: one event per line (JSONL), the server-sent-event text itself
("event: ...\\ndata: {...}"), or a JSON list (Gemini's streamGenerateContent answers with one). Each
provider streams differently:

- OpenAI Responses: `response.*` events. `response.completed` (or `.incomplete`) carries the whole
  response and wins; without it the message is rebuilt from `response.output_item.done` items, or
  from `response.output_text.delta` and `response.output_text.annotation.added` events.
- Chat Completions (OpenAI search models, Perplexity): `chat.completion.chunk` objects whose
  `choices[0].delta` add content (and annotations); Perplexity repeats `citations` and
  `search_results` on the chunks, the last ones count. A chunk holding a whole `message` wins.
- Anthropic: `message_start`, `content_block_start`, `content_block_delta` (`text_delta`,
  `citations_delta`, `input_json_delta`, thinking and signature deltas), `message_delta`
  (stop_reason), `message_stop`.
- Gemini: GenerateContentResponse chunks; text parts of the same kind are joined, grounding
  metadata (usually on the last chunk) is merged.
- You.com Agents API: `response.*` events numbered by `seq_id`, their payload under `response`
  (`output_index`, `type` "message.answer" with a `delta`, or "web_search.results" with the list).

`stream_format` says whether a list of objects is such a stream and whose; `assemble` joins it.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.errors import InputError

MAX_EVENTS = 200_000

_ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                               "message_delta", "message_stop", "ping"})


def event_kind(obj: Any) -> str | None:
    """The stream an object belongs to: "openai-responses", "chat", "anthropic", "gemini", or None."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if isinstance(kind, str):
        if kind.startswith("response.") and "seq_id" in obj:
            return "you-agent"  # You.com Agents API events: the payload sits under "response"
        if kind.startswith("response.") or kind == "error" and "sequence_number" in obj:
            return "openai-responses"
        if kind in _ANTHROPIC_EVENTS:
            return "anthropic"
    if obj.get("object") == "chat.completion.chunk" or (
            isinstance(obj.get("choices"), list) and obj["choices"] and isinstance(obj["choices"][0], dict)
            and "delta" in obj["choices"][0]):
        return "chat"
    return None


def stream_format(objects: list[Any]) -> str | None:
    """Whose stream a list of objects is ("openai-responses", "chat", "anthropic", "gemini", "you-agent"), or None."""
    if not objects:
        return None
    kinds = {event_kind(o) for o in objects[:50]} - {None}
    if len(kinds) == 1:
        return kinds.pop()
    if not kinds and all(isinstance(o, dict) and isinstance(o.get("candidates"), list) for o in objects) and len(objects) > 1:
        return "gemini"
    return None


def parse_sse(text: str, where: str) -> list[Any]:
    """The JSON `data:` payloads of server-sent-event text ("[DONE]" and comments skipped)."""
    out: list[Any] = []
    data: list[str] = []

    def flush() -> None:
        if data:
            payload = "\n".join(data).strip()
            data.clear()
            if payload and payload != "[DONE]":
                try:
                    out.append(json.loads(payload))
                except ValueError as exc:
                    raise InputError(f"event {len(out) + 1} is not JSON ({str(exc)[:80]})", record=where) from exc
                if len(out) > MAX_EVENTS:
                    raise InputError(f"more than {MAX_EVENTS:,} events", record=where)

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    flush()
    return out


def looks_like_sse(head: str) -> bool:
    first = next((ln for ln in head.splitlines() if ln.strip()), "")
    return first.startswith(("event:", "data:", "id:", ": "))


def assemble(kind: str, events: list[Any], where: str) -> dict:
    """One response from its stream events (InputError when nothing usable is in them)."""
    if len(events) > MAX_EVENTS:
        raise InputError(f"more than {MAX_EVENTS:,} events", record=where)
    events = [e for e in events if isinstance(e, dict)]
    if kind == "openai-responses":
        return _openai_responses(events, where)
    if kind == "chat":
        return _chat(events)
    if kind == "anthropic":
        return _anthropic(events, where)
    if kind == "gemini":
        return _gemini(events)
    if kind == "you-agent":
        return _you_agent(events, where)
    raise InputError(f"unknown stream kind {kind!r}", record=where)


def _openai_responses(events: list[dict], where: str) -> dict:
    for e in reversed(events):
        if e.get("type") in ("response.completed", "response.incomplete", "response.failed") and isinstance(e.get("response"), dict):
            response = e["response"]
            if response.get("output"):
                return response
    head: dict = next((e["response"] for e in events if e.get("type") == "response.created" and isinstance(e.get("response"), dict)), {})
    items: dict[int, dict] = {}
    for e in events:
        if e.get("type") == "response.output_item.done" and isinstance(e.get("item"), dict):
            items[_int(e.get("output_index"), len(items))] = e["item"]
    if not items:  # rebuild the message text from deltas and annotation events
        texts: dict[tuple[int, int], list[str]] = {}
        done: dict[tuple[int, int], str] = {}
        notes: dict[tuple[int, int], list[dict]] = {}
        for e in events:
            key = (_int(e.get("output_index"), 0), _int(e.get("content_index"), 0))
            if e.get("type") == "response.output_text.delta" and isinstance(e.get("delta"), str):
                texts.setdefault(key, []).append(e["delta"])
            elif e.get("type") == "response.output_text.done" and isinstance(e.get("text"), str):
                done[key] = e["text"]
            elif e.get("type") == "response.output_text.annotation.added" and isinstance(e.get("annotation"), dict):
                notes.setdefault(key, []).append(e["annotation"])
        for oi in sorted({k[0] for k in (*texts, *done)}):
            parts = [{"type": "output_text", "text": done.get((oi, ci), "".join(texts.get((oi, ci), []))),
                      "annotations": notes.get((oi, ci), [])} for ci in sorted({k[1] for k in (*texts, *done) if k[0] == oi})]
            items[oi] = {"type": "message", "role": "assistant", "content": parts}
    if not items:
        raise InputError("the stream holds no output (no response.completed event, no output items, no text deltas)", record=where)
    return {**head, "object": "response", "output": [items[k] for k in sorted(items)]}


def _chat(events: list[dict]) -> dict:
    whole = [e for e in events if isinstance(e.get("choices"), list) and e["choices"] and isinstance(e["choices"][0], dict)
             and isinstance(e["choices"][0].get("message"), dict) and isinstance(e["choices"][0]["message"].get("content"), str)]
    out: dict = {}
    content: list[str] = []
    annotations: list[Any] = []
    for e in events:
        for key, value in e.items():
            if key not in ("choices", "object") and value not in (None, [], {}):
                out[key] = value  # citations, search_results, model, id, usage: the last chunk's
        choices = e.get("choices")
        delta = choices[0].get("delta") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if isinstance(delta, dict):
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta.get("annotations"), list):
                annotations.extend(delta["annotations"])
    message: dict = {"role": "assistant", "content": "".join(content)}
    if annotations:
        message["annotations"] = annotations
    if whole:
        message = whole[-1]["choices"][0]["message"]
    return {**out, "object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def _anthropic(events: list[dict], where: str) -> dict:
    message: dict = {}
    blocks: dict[int, dict] = {}
    partial: dict[int, list[str]] = {}
    for e in events:
        kind = e.get("type")
        if kind == "message_start" and isinstance(e.get("message"), dict):
            message = dict(e["message"])
        elif kind == "content_block_start" and isinstance(e.get("content_block"), dict):
            block = json.loads(json.dumps(e["content_block"]))
            blocks[_int(e.get("index"), len(blocks))] = block
        elif kind == "content_block_delta" and isinstance(e.get("delta"), dict):
            index = _int(e.get("index"), 0)
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = e["delta"]
            dkind = delta.get("type")
            if dkind == "text_delta" and isinstance(delta.get("text"), str):
                block["text"] = str(block.get("text") or "") + delta["text"]
            elif dkind == "citations_delta" and isinstance(delta.get("citation"), dict):
                block.setdefault("citations", [])
                if isinstance(block["citations"], list):
                    block["citations"].append(delta["citation"])
            elif dkind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
                partial.setdefault(index, []).append(delta["partial_json"])
            elif dkind == "thinking_delta" and isinstance(delta.get("thinking"), str):
                block["thinking"] = str(block.get("thinking") or "") + delta["thinking"]
        elif kind == "message_delta" and isinstance(e.get("delta"), dict):
            message.update({k: v for k, v in e["delta"].items() if v is not None})
        elif kind == "error":
            raise InputError(f"the stream ended with an error: {str(e.get('error'))[:200]}", record=where)
    for index, pieces in partial.items():
        try:
            blocks[index]["input"] = json.loads("".join(pieces) or "{}")
        except ValueError:
            blocks[index]["input"] = {}
    if not message and not blocks:
        raise InputError("the stream holds no message", record=where)
    return {"type": "message", "role": "assistant", **{k: v for k, v in message.items() if k != "content"},
            "content": [blocks[k] for k in sorted(blocks)]}


def _gemini(chunks: list[dict]) -> dict:
    parts: list[dict] = []
    grounding: dict[str, Any] = {}
    out: dict = {}
    for chunk in chunks:
        for key in ("modelVersion", "model_version", "responseId", "response_id", "usageMetadata"):
            if key in chunk:
                out[key] = chunk[key]
        cands = chunk.get("candidates")
        cand = cands[0] if isinstance(cands, list) and cands and isinstance(cands[0], dict) else {}
        content = cand.get("content")
        for part in (content.get("parts") if isinstance(content, dict) else None) or []:
            if not isinstance(part, dict):
                continue
            last = parts[-1] if parts else None
            if (last is not None and isinstance(part.get("text"), str) and isinstance(last.get("text"), str)
                    and bool(part.get("thought")) == bool(last.get("thought"))):
                last["text"] += part["text"]
            else:
                parts.append(dict(part))
        meta = cand.get("groundingMetadata") or cand.get("grounding_metadata")
        if isinstance(meta, dict):
            for key, value in meta.items():
                if isinstance(value, list) and key in ("groundingSupports", "grounding_supports"):
                    have = grounding.setdefault(key, [])
                    seen = {json.dumps(v, sort_keys=True) for v in have}  # chunks may repeat the supports so far
                    have.extend(v for v in value if json.dumps(v, sort_keys=True) not in seen)
                elif value not in (None, [], {}):
                    grounding[key] = value  # chunks and queries: the last chunk's list is the whole list
    candidate: dict = {"content": {"role": "model", "parts": parts}}
    if grounding:
        candidate["groundingMetadata"] = grounding
    return {**out, "candidates": [candidate]}


def _you_agent(events: list[dict], where: str) -> dict:
    """You.com Agents API events -> the batch response: answer deltas joined per output item, search
    results from any event that carries a full list of them."""
    items: dict[int, dict] = {}
    for e in events:
        body = e.get("response")
        if not isinstance(body, dict):
            continue
        index = _int(body.get("output_index"), 0)
        kind = body.get("type")
        if isinstance(body.get("delta"), str):
            item = items.setdefault(index, {"type": kind if isinstance(kind, str) else "message.answer", "text": ""})
            item["text"] = str(item.get("text") or "") + body["delta"]
        for key in ("full", "content"):
            if kind == "web_search.results" and isinstance(body.get(key), list):
                items[index] = {"type": "web_search.results", "content": body[key]}
    if not items:
        raise InputError("the stream holds no answer text and no search results", record=where)
    return {"agent": "you", "output": [items[k] for k in sorted(items)]}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1_000_000 else default
