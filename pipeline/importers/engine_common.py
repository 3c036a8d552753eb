"""What every engine-response importer shares: typed field access with clear errors, the source
list, character and UTF-8 byte spans mapped onto statements, and the raw response kept for audit.

A provider mapper (perplexity.py, openai_search.py, anthropic_search.py, gemini.py, you_exa.py)
turns one response into an `EngineParse`: the answer text, the sources in the order the engine
listed them, and the citations that come as spans rather than as markers in the text. `build_answer`
then makes the canonical record: statements come from the splitter (`pipeline.text`), numbered
markers keep working as for any answer, and each span-based citation goes to every statement whose
words it touches (a span straddling two statements belongs to both).
"""

from __future__ import annotations

import hashlib
import json
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

from pipeline.errors import InputError
from pipeline.importers.canonical import MAX_ANSWER_CHARS, MAX_SOURCE_CHARS, MAX_SOURCES
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement
from pipeline.text import CitationMarker, find_citation_markers, split_statements

MAX_SPANS = 20_000  # span citations per answer; more is not a real response
MAX_SNIPPET_CHARS = 20_000  # provider text kept per source (all its snippets together)
MAX_TITLE_CHARS = 1_000
MAX_URL_CHARS = 8_000
MAX_RAW_CHARS = 100_000  # the response kept in Answer.meta["raw_response"] for audit
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


def nearest_occurrence(text: str, needle: str, near: int) -> int | None:
    """Where `needle` occurs in `text` closest to position `near`, among its first 100
    occurrences (a mapper repairing offsets a provider got wrong); None when it is empty or absent."""
    if not needle:
        return None
    hits: list[int] = []
    pos = text.find(needle)
    while pos >= 0 and len(hits) < 100:
        hits.append(pos)
        pos = text.find(needle, pos + 1)
    return min(hits, key=lambda h: abs(h - near)) if hits else None


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


@dataclass(frozen=True)
class SpanCitation:
    """A citation given as a character span of the answer text (end exclusive) and the sources it names."""

    start: int
    end: int
    indexes: tuple[int, ...]


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


class Utf8Offsets:
    """Map UTF-8 byte offsets of a text to character offsets (Gemini counts bytes, Python counts
    characters: any non-ASCII character before a segment shifts the two apart)."""

    def __init__(self, text: str) -> None:
        self.n = len(text)
        self.starts: list[int] | None = None
        if not text.isascii():
            starts, pos = [], 0
            for ch in text:
                starts.append(pos)
                pos += len(ch.encode("utf-8", "surrogatepass"))
            starts.append(pos)
            self.starts = starts

    @property
    def total(self) -> int:
        return self.n if self.starts is None else self.starts[-1]

    def char(self, byte: int) -> int | None:
        """The character at which this byte offset falls (a byte inside a character counts as the
        character's start); None when the offset lies outside the text."""
        if not 0 <= byte <= self.total:
            return None
        if self.starts is None:
            return byte
        return bisect_right(self.starts, byte) - 1


def attach_spans(text: str, spans: list[tuple[int, int]], citations: Iterable[SpanCitation]) -> tuple[list[list[tuple[int, int]]], dict[str, int]]:
    """For each statement span, the (position, source index) citations that land in it.

    A citation lands in every statement whose non-space characters it overlaps; a zero-length one
    in the statement that contains (or ends at) its position. Citations outside the text, reversed
    or touching no statement (a heading, the space between paragraphs) are counted, not placed."""
    hits: list[list[tuple[int, int]]] = [[] for _ in spans]
    counts = {"placed": 0, "straddling": 0, "outside_text": 0, "not_in_a_statement": 0}
    starts = [s for s, _ in spans]
    n = len(text)
    for cit in citations:
        a, b = cit.start, cit.end
        if not (0 <= a <= b <= n):
            counts["outside_text"] += 1
            continue
        landed: list[int] = []
        i = max(bisect_right(starts, a) - 1, 0)
        while i < len(spans) and spans[i][0] <= b:
            s, e = spans[i]
            if a == b:
                if s <= a <= e:
                    landed.append(i)
                    break
            else:
                lo, hi = max(a, s), min(b, e)
                if lo < hi and text[lo:hi].strip():
                    landed.append(i)
            i += 1
        if not landed:
            counts["not_in_a_statement"] += 1
            continue
        counts["placed"] += 1
        counts["straddling"] += len(landed) > 1
        for i in landed:
            hits[i].extend((max(a, spans[i][0]), index) for index in cit.indexes)
    return hits, counts


def _reattach_leading_markers(text: str, spans: list[tuple[int, int]], markers: list[CitationMarker]) -> list[tuple[int, int]]:
    """Give markers that open a statement to the statement before it on the same line.

    Engines cite after the claim: "Paris is the capital. ([wikipedia.org](https://...))" - the
    splitter ends the sentence at the full stop, so the parenthesised link would open the next
    statement (and so would You.com's "claim. [[1]] Next"). Here it moves back to the sentence it
    cites."""
    ends = {m.start: m.end for m in markers}
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if not out or "\n" in text[out[-1][1]:s]:
            out.append((s, e))
            continue
        j, closer, consumed = s, "", False
        if text[j] in "([" and j + 1 < e and (text[j + 1] in "[(" or (j + 1) in ends):
            j, closer = j + 1, ")" if text[j] == "(" else "]"  # "([site](url))", You.com's "[[1, 2]]"
        while True:
            while j < e and text[j] in " \t":
                j += 1
            if j in ends and ends[j] <= e:
                j, consumed = ends[j], True
            elif consumed and j < e and text[j] in ",;":
                j += 1
            else:
                break
        if closer and consumed:
            if j < e and text[j] == closer:
                j += 1
            else:
                consumed = False  # the bracket opens more than markers: a real parenthesis
        if not consumed:
            out.append((s, e))
            continue
        rest = j
        while rest < e and text[rest].isspace():
            rest += 1
        out[-1] = (out[-1][0], j)
        if rest < e:
            out.append((rest, e))
    return out


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
    spans = _reattach_leading_markers(text, [(s.start, s.end) for s in statements], markers)
    hits, counts = attach_spans(text, spans, parse.spans)
    mstarts = [m.start for m in markers]
    made: list[Statement] = []
    for k, ((s, e), span_hits) in enumerate(zip(spans, hits)):
        cited = list(span_hits)
        i = bisect_right(mstarts, s - 1)
        while i < len(markers) and markers[i].start < e:
            if markers[i].end <= e:
                cited.extend((markers[i].start, index) for index in markers[i].indexes)
            i += 1
        order = list(dict.fromkeys(index for _, index in sorted(cited)))
        made.append(Statement(answer_id, k, text[s:e], s, e, tuple(i for i in order if i in listed),
                              tuple(i for i in order if i not in listed)))
    notes = {**parse.notes, **{f"spans_{k}": v for k, v in counts.items() if v}}
    info = {**(meta or {}), "model": parse.model, "response_id": parse.response_id,
            "citation_notes": json.dumps(notes, sort_keys=True) if notes else ""}
    answer = Answer(answer_id=answer_id, engine=engine, query=query, query_type=query_type, text=text,  # type: ignore[arg-type]
                    sources=sources, dataset=dataset, meta={k: v for k, v in info.items() if v})
    return AnnotatedAnswer(answer, tuple(made))


def citation_warnings(annotated: AnnotatedAnswer) -> list[str]:
    """Plain-language lines for the citation notes an import left in the answer's meta."""
    try:
        notes = json.loads(annotated.answer.meta.get("citation_notes") or "{}")
    except ValueError:
        return []
    words = {
        "spans_outside_text": "citation span(s) point outside the answer text or are reversed; dropped",
        "spans_not_in_a_statement": "citation span(s) cover no statement (a heading or blank space); dropped",
        "offsets_repaired": "citation offset(s) did not match the cited text and were located by that text instead",
        "chunk_index_outside_list": "citation(s) name a source number the response does not list; kept as dangling",
        "search_errors": "web search call(s) in the response failed",
        "reasoning_removed": "reasoning block(s) (<think>...</think>) removed from the answer text",
    }
    return [f"{n} {words[k]}" for k, n in sorted(notes.items()) if k in words and n]


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
