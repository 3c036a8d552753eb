"""What every engine-response importer shares: typed field access with clear errors, the source
list, character and UTF-8 byte spans mapped onto statements, and the raw response kept for audit.

A provider mapper (perplexity.py, openai_search.py, anthropic_search.py, gemini.py, you_exa.py)
turns one response into an `EngineParse`: the answer text, the sources in the order the engine
listed them, and the citations that come as spans rather than as markers in the text. `build_answer`
then makes the canonical record: statements come from the splitter (`pipeline.text.text`), numbered
markers keep working as for any answer, and each span-based citation goes to every statement whose
words it touches (a span straddling two statements belongs to both).
"""

from __future__ import annotations

import hashlib
import json
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

from pipeline.errors import InputError
from pipeline.importers.canonical import MAX_ANSWER_CHARS, MAX_SOURCE_CHARS, MAX_SOURCES
from pipeline.importers.placement import (  # noqa: F401 - re-exported: the mappers' one import
    DROP_REASONS,
    SpanCitation,
    Utf8Offsets,
    attach_spans,
    locate_text,
    nearest_occurrence,
    reattach_leading_markers,
    squash,
)
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement
from pipeline.text.citation_scope import scope_note
from pipeline.text.text import find_citation_markers, split_statements

MAX_SPANS = 20_000  # span citations per answer; more is not a real response
MAX_SNIPPET_CHARS = 20_000  # provider text kept per source (all its snippets together)
MAX_TITLE_CHARS = 1_000
MAX_URL_CHARS = 8_000
MAX_RAW_CHARS = 100_000  # the response kept in Answer.meta["raw_response"] for audit
# Source numbers are int32 in the tables (pipeline.storage.store): a span citation naming a number outside
# that range would stop a run when its statements are written, so it is kept, dangling, at the bound.
MAX_STORED_INDEX = 2**31 - 1
MIN_STORED_INDEX = -(2**31)
OPAQUE_KEYS = frozenset({"encrypted_content", "encrypted_index", "signature", "thought_signature", "thoughtSignature"})


# ---- typed access: every problem names the record and the field ----------------------------------


def as_dict(value: Any, where: str, field: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {_kind(value)}", record=where, field=field)
    return value


def as_list(value: Any, where: str, field: str, *, limit: int = MAX_SPANS) -> list:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {_kind(value)}", record=where, field=field)
    if len(value) > limit:
        raise InputError(f"{len(value):,} items; the limit is {limit:,}", record=where, field=field)
    return value


def opt_list(obj: dict, key: str, where: str, field: str, *, limit: int = MAX_SPANS) -> list:
    """obj[key] as a list; [] when absent or null."""
    value = obj.get(key)
    return [] if value is None else as_list(value, where, field, limit=limit)


def opt_str(obj: dict, key: str, where: str, field: str, *, limit: int = MAX_SOURCE_CHARS) -> str:
    """obj[key] as a string; "" when absent or null."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {_kind(value)}", record=where, field=field)
    if len(value) > limit:
        raise InputError(f"{len(value):,} characters; the limit is {limit:,}", record=where, field=field)
    return value


def opt_int(obj: dict, key: str, where: str, field: str, default: int | None = None) -> int | None:
    """obj[key] as an integer; `default` when absent. JSON numbers such as 12.0 count as integers."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        value = int(value)  # protobuf JSON writes 64-bit integers as strings
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected an integer, got {_kind(value)}", record=where, field=field)
    return value


def pick(obj: dict, *keys: str) -> Any:
    """The first of several spellings present (camelCase REST JSON or snake_case SDK dumps)."""
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# ---- sources ---------------------------------------------------------------------------------------


def url_key(url: str) -> str:
    """Compare-form of a URL: lower-case scheme and host, no fragment or trailing slash, and no
    utm_* tracking parameters (OpenAI appends utm_source=openai to the links it writes)."""
    u = url.strip()
    try:
        p = urlsplit(u)
        query = urlencode([(k, v) for k, v in parse_qsl(p.query, keep_blank_values=True) if not k.lower().startswith("utm_")])
        return f"{p.scheme.lower()}://{p.netloc.lower()}{p.path.rstrip('/')}" + (f"?{query}" if query else "")
    except ValueError:
        return u.split("#", 1)[0].rstrip("/").lower()


@dataclass
class DraftSource:
    """A listed source while a response is read: URL, title and the provider's snippets."""

    url: str
    title: str = ""
    snippets: list[str] = field(default_factory=list)
    date: str = ""


class SourceList:
    """The sources of one answer in the order the engine listed them (index = position + 1).

    `dedupe=True` (span-based formats, where the list is built from cited URLs) gives a URL seen
    again the index it already has; `dedupe=False` keeps the engine's numbered list as it is, a URL
    listed twice included, so numbered markers keep pointing where the engine meant."""

    def __init__(self, where: str, *, dedupe: bool) -> None:
        self.where, self.dedupe = where, dedupe
        self.items: list[DraftSource] = []
        self._by_key: dict[str, int] = {}

    def add(self, url: str, title: str = "", snippet: str = "", date: str = "", field: str = "sources") -> int:
        """Add (or, deduplicating, find) a source; returns its 1-based index."""
        url, title = url.strip()[:MAX_URL_CHARS], title.strip()[:MAX_TITLE_CHARS]
        key = url_key(url) if url else ""
        if self.dedupe and key and key in self._by_key:
            index = self._by_key[key]
            self.enrich(index, title=title, snippet=snippet, date=date)
            return index
        if len(self.items) >= MAX_SOURCES:
            raise InputError(f"more than {MAX_SOURCES} sources", record=self.where, field=field)
        self.items.append(DraftSource(url, title, [], date))
        index = len(self.items)
        if key:
            self._by_key.setdefault(key, index)
        self.enrich(index, snippet=snippet)
        return index

    def find(self, url: str) -> int | None:
        return self._by_key.get(url_key(url)) if url.strip() else None

    def enrich(self, index: int, *, title: str = "", snippet: str = "", date: str = "") -> None:
        item = self.items[index - 1]
        item.title = item.title or title.strip()[:MAX_TITLE_CHARS]
        item.date = item.date or date
        snippet = snippet.strip()
        if snippet and snippet not in item.snippets and sum(len(s) for s in item.snippets) < MAX_SNIPPET_CHARS:
            item.snippets.append(snippet)

    def build(self, fetched: Mapping[str, Any] | None = None) -> tuple[Source, ...]:
        """Source records. Without fetched pages a source's text is the provider's snippets (marked
        "snippet"); with them (collect --sources fetch) it is the page's text, and a page that could
        not be fetched makes a dead source (fetch_ok False)."""
        out = []
        for k, item in enumerate(self.items, start=1):
            if fetched is None:
                text = "\n\n".join(item.snippets)[:MAX_SNIPPET_CHARS]
                out.append(Source(k, item.url, item.title, text, None, "snippet" if text else ""))
                continue
            page = fetched.get(item.url)
            if isinstance(page, dict) and page.get("ok") is True and isinstance(page.get("text"), str) and page["text"].strip():
                title = item.title or (page.get("title") if isinstance(page.get("title"), str) else "") or ""
                out.append(Source(k, item.url, title[:MAX_TITLE_CHARS], page["text"][:MAX_SOURCE_CHARS], True, "page"))
            else:
                out.append(Source(k, item.url, item.title, "", False, ""))
        return tuple(out)


# ---- spans ---------------------------------------------------------------------------------------


@dataclass
class EngineParse:
    """One response read by a provider mapper, before statements are made."""

    text: str
    sources: SourceList
    spans: list[SpanCitation] = field(default_factory=list)
    numbered_markers: bool = True  # "[n]" in the text points at source n (False: spans only)
    model: str = ""
    response_id: str = ""
    notes: dict[str, int] = field(default_factory=dict)  # counts worth a warning (offsets fixed, dropped...)

    def note(self, name: str, n: int = 1) -> None:
        self.notes[name] = self.notes.get(name, 0) + n


# ---- the canonical record ------------------------------------------------------------------------


def build_answer(parse: EngineParse, *, answer_id: str, engine: str, query: str, query_type: str, where: str,
                 dataset: str = "", meta: Mapping[str, str] | None = None,
                 fetched: Mapping[str, Any] | None = None) -> AnnotatedAnswer:
    """The canonical answer of a parsed response: sources, statements with their citations, meta."""
    text = parse.text
    if not text.strip():
        raise InputError("the response holds no answer text", record=where, field="answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise InputError(f"answer text is {len(text):,} characters; the limit is {MAX_ANSWER_CHARS:,}", record=where, field="answer")
    sources = parse.sources.build(fetched)
    listed = {s.index for s in sources}
    urls = {s.url: s.index for s in sources if s.url}
    markers = [m for m in find_citation_markers(text, urls) if parse.numbered_markers or m.form == "link"]
    statements = split_statements(answer_id, text, listed, urls)
    spans = reattach_leading_markers(text, [(s.start, s.end) for s in statements], markers)
    hits, counts = attach_spans(text, spans, [_storable(c, parse) for c in parse.spans])
    mstarts = [m.start for m in markers]
    made: list[Statement] = []
    marker_cites = marker_dangling = 0
    for k, ((s, e), span_hits) in enumerate(zip(spans, hits)):
        cited = list(span_hits)
        by_span = {index for _, index in span_hits}  # a link a span already cites is not counted twice
        i = bisect_right(mstarts, s - 1)
        while i < len(markers) and markers[i].start < e:
            if markers[i].end <= e:
                cited.extend((markers[i].start, index) for index in markers[i].indexes)
                marker_cites += sum(1 for index in markers[i].indexes if index in listed and index not in by_span)
                marker_dangling += sum(1 for index in markers[i].indexes if index not in listed)
            i += 1
        order = list(dict.fromkeys(index for _, index in sorted(cited)))
        made.append(Statement(answer_id, k, text[s:e], s, e, tuple(i for i in order if i in listed),
                              tuple(i for i in order if i not in listed)))
    notes = {**parse.notes, **{f"spans_{k}": v for k, v in counts.items() if v}}
    if marker_cites:
        notes["markers_placed"] = marker_cites
    if marker_dangling:
        notes["markers_dangling"] = marker_dangling
    info = {**(meta or {}), "model": parse.model, "response_id": parse.response_id,
            "citation_notes": json.dumps(notes, sort_keys=True) if notes else ""}
    answer = Answer(answer_id=answer_id, engine=engine, query=query, query_type=query_type, text=text,  # type: ignore[arg-type]
                    sources=sources, dataset=dataset, meta={k: v for k, v in info.items() if v})
    return AnnotatedAnswer(answer, tuple(made))


def _storable(cit: SpanCitation, parse: EngineParse) -> SpanCitation:
    """The citation with every source number the tables cannot hold moved to the nearest bound they
    can (a number that large matches no listed source, so it stays a dangling citation), noted."""
    fixed = tuple(min(max(i, MIN_STORED_INDEX), MAX_STORED_INDEX) for i in cit.indexes)
    if fixed == cit.indexes:
        return cit
    parse.note("index_past_table", sum(1 for a, b in zip(fixed, cit.indexes) if a != b))
    return SpanCitation(cit.start, cit.end, fixed, cit.how)


_NOTE_WORDS = {
    **{f"spans_{reason}": f"citation span(s) {words}; dropped" for reason, words in DROP_REASONS.items()},
    "spans_by_text": "citation(s) had no usable offsets and were located by their text or URL instead",
    "spans_in_paragraph": "citation link(s) stood outside any sentence and were given to the sentence before them in "
                          "the same paragraph",
    "chunk_index_outside_list": "citation(s) name a source number the response does not list; kept as dangling",
    "index_past_table": f"citation(s) name a source number beyond {MAX_STORED_INDEX:,} (the largest the results tables "
                        f"store); kept as dangling, numbered {MAX_STORED_INDEX:,} (or {MIN_STORED_INDEX:,} below zero)",
    "search_errors": "web search call(s) in the response failed",
    "reasoning_removed": "reasoning block(s) (<think>...</think>) removed from the answer text",
    "paused_turn": "the response stopped with pause_turn: its continuation is another response (import both with "
                   "--conversation, or put both in one envelope's \"responses\")",
    "no_citations": "response(s) carry no citations (no url_citation annotations): the answer has no sources",
    "document_citations": "citation(s) point at documents that are not web pages; not counted as sources",
}


def citation_warnings(annotated: AnnotatedAnswer) -> list[str]:
    """Plain-language lines for the citation notes an import left in the answer's meta."""
    try:
        notes = json.loads(annotated.answer.meta.get("citation_notes") or "{}")
    except ValueError:
        return []
    lines = [f"{n} {_NOTE_WORDS[k]}" for k, n in sorted(notes.items()) if k in _NOTE_WORDS and n]
    scope = scope_note(annotated.answer.meta, annotated.answer.engine)  # how far this engine's citations reach
    return lines + [scope] if scope else lines


# ---- raw response kept for audit -----------------------------------------------------------------


def raw_for_audit(response: Any) -> dict[str, str]:
    """The response as compact JSON for Answer.meta, bounded to MAX_RAW_CHARS, with opaque blobs
    (encrypted search content, signatures) replaced by their length; the SHA-256 of the whole
    response identifies it even when the kept copy is cut."""
    full = json.dumps(response, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(full.encode("utf-8", "surrogatepass")).hexdigest()
    kept = json.dumps(_without_blobs(response), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    out = {"raw_response_sha256": digest, "raw_response_chars": str(len(full))}
    if len(kept) > MAX_RAW_CHARS:
        out["raw_response"] = kept[:MAX_RAW_CHARS]
        out["raw_response_truncated"] = "yes"
    else:
        out["raw_response"] = kept
    return out


def _without_blobs(value: Any, depth: int = 0) -> Any:
    if depth > 64:
        return "(nested too deeply)"
    if isinstance(value, dict):
        return {k: (f"({len(v)} characters omitted)" if k in OPAQUE_KEYS and isinstance(v, str) else _without_blobs(v, depth + 1))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_blobs(v, depth + 1) for v in value]
    return value


def digest_id(*parts: str) -> str:
    """A short stable id from strings."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
