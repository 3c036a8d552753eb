"""Paste anything: what a person copied from an engine's page, or a saved response, made into an
answer text and a numbered source list for the Re-score form to show before scoring.

Plain text is an answer with its markers, followed by (or holding) a source list in whatever shape
it came in:

    [1] Title - https://...        [1]: https://... "Title"     [^1]: https://...
    1. https://...                 1) Title https://...         - [Title](https://...)
    https://...  (a bare list)     a "Sources:" / "References" / "**Sources**" line above any of these

A list is found under such a heading, or as the run of source-like lines at the end of the text;
footnote and reference definitions are taken from anywhere. Without any list, the answer's own
markdown links become the sources. A JSON text or file (a capture envelope, a bare engine response,
a canonical answer) goes through the importers instead; citations that an engine gives as spans
are written into the text as [n] markers, since that is what the form can hold.

Pure functions over strings; never raises for odd text (only InputError for unreadable JSON input).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pipeline.errors import InputError
from pipeline.importers.canonical import MAX_ANSWER_CHARS, parse_answer
from pipeline.importers.engines import ImportOptions, detect, engine_answer, one_stream
from pipeline.importers.streams import stream_format
from pipeline.records import AnnotatedAnswer
from pipeline.text import find_citation_markers

MAX_PASTE_CHARS = MAX_ANSWER_CHARS
MAX_PASTED_SOURCES = 200
PLACEHOLDER_QUERY = "\u2063query not given\u2063"  # only while importing a bare response; never shown

_URL = r"(?:https?://|www\.)[^\s<>\"'`\]\[)(]{1,2000}(?:\([^\s<>\"'()]{0,300}\)[^\s<>\"'`\]\[)(]{0,500})?"
_URL_RE = re.compile(_URL, re.IGNORECASE)
_MDLINK_RE = re.compile(r"\[([^\[\]\n]{0,500})\]\(\s*<?(" + _URL + r")>?(?:\s+\"([^\"\n]{0,300})\")?\s*\)", re.IGNORECASE)
_HEADING_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(sources?|references?|citations?|links|bibliography|footnotes|works cited|"
    r"learn more|read more|sources and related content)[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$", re.IGNORECASE)
_INDEXED_RE = re.compile(r"^[ \t]*(?:[-*\u2022][ \t]+)?(?:\[\^?([0-9]{1,3})\^?\][ \t]*[:.)\-\u2013\u2014]?|\^?([0-9]{1,3})[.):][ \t]|"
                         r"\u3010([0-9]{1,3})\u3011)[ \t]*(.*)$")
_BULLET_RE = re.compile(r"^[ \t]*[-*\u2022\u25aa\u25e6][ \t]+(.*)$")
_INLINE_CITE_RE = re.compile(r"\(\s*\[[^\[\]\n]{0,500}\]\(")
_EMPTY_WRAP_RE = re.compile(r"(?<![\w)])(?:\(\s*\)|<\s*>)")
_DEFINITION_RE = re.compile(r"^[ \t]{0,3}\[(\^?)([0-9]{1,3})\]:[ \t]*(.*)$")
_SEPARATORS = " \t-\u2013\u2014|:,;\u00b7"
_SUPERSCRIPTS = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "0123456789")
_SUPER_RUN_RE = re.compile(r"(?<=[\w.,;:!?)\]\"'\u201d])([\u2070\u00b9\u00b2\u00b3\u2074-\u2079]{1,3})")


@dataclass
class PastedSource:
    index: int
    url: str = ""
    title: str = ""
    text: str = ""


@dataclass
class Pasted:
    """What a paste held: the answer text, its sources and, from a file, what was asked."""

    answer: str
    sources: list[PastedSource] = field(default_factory=list)
    query: str = ""
    engine: str = ""
    query_type: str = ""
    found: str = ""  # one plain sentence on what was recognised
    notes: list[str] = field(default_factory=list)


def parse_paste(text: str) -> Pasted:
    """An answer and its source list from pasted text (JSON goes through the importers)."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > MAX_PASTE_CHARS:
        raise InputError(f"{len(text):,} characters; the limit is {MAX_PASTE_CHARS:,}", record="pasted text")
    stripped = text.strip().lstrip("\ufeff")
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, (dict, list)) and not (isinstance(data, list) and all(isinstance(x, (int, str)) for x in data)):
            return parse_json_value(data, "pasted JSON")
    return _parse_text(text)


def parse_upload(data: bytes, name: str) -> Pasted:
    """An uploaded file: JSON (one object, a list, or JSONL: the first answer) or plain text."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=name) from exc
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except RecursionError as exc:
            raise InputError("JSON is nested too deeply", record=name) from exc
        except ValueError:
            lines = [ln for ln in stripped.splitlines() if ln.strip()]
            try:
                value = [json.loads(ln) for ln in lines]  # JSONL
            except (ValueError, RecursionError) as exc:
                raise InputError("not valid JSON or JSONL", record=name) from exc
        return parse_json_value(value, name)
    return parse_paste(text)


def parse_json_value(value: object, where: str) -> Pasted:
    """The first answer of a JSON value, in any format the importers know."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and len(value) > 1 and stream_format(value) is not None and one_stream(value):
        items = [value]  # a saved stream (events, chunks) is one response
    if not items:
        raise InputError("the file holds no answer", record=where)
    obj = items[0]
    fmt = detect(obj)
    if fmt == "canonical":
        annotated = parse_answer(obj, where)
        found = "an answer in the project's canonical format"
        bare = False
    else:
        bare = not (isinstance(obj, dict) and isinstance(obj.get("query"), str) and obj["query"].strip())
        annotated = engine_answer(obj, where, fmt, ImportOptions(query=PLACEHOLDER_QUERY if bare else None))
        found = f"a response in the {fmt} format" + ("" if bare else " (capture envelope)")
    pasted = from_annotated(annotated, found)
    if bare:
        pasted.query = ""
        pasted.notes.append("The response does not say what was asked: write the query.")
    if len(items) > 1:
        pasted.notes.append(f"The file holds {len(items)} answers; the first is shown (score the file with `aee run` for all).")
    return pasted


def from_annotated(annotated: AnnotatedAnswer, found: str) -> Pasted:
    """An imported answer as form fields. Citations that no marker in the text expresses (span-based
    formats) are written in as [n] markers before each statement's closing punctuation."""
    a = annotated.answer
    urls = {s.url: s.index for s in a.sources if s.url}
    text, inserted = a.text, 0
    for st in sorted(annotated.statements, key=lambda s: s.start, reverse=True):
        if st.start < 0:
            continue
        marked = {i for m in find_citation_markers(st.text, urls) for i in m.indexes}
        missing = [i for i in (*st.citations, *st.dangling) if i not in marked]
        if not missing:
            continue
        at = st.end
        while at > st.start and text[at - 1] in ".!?\u3002":
            at -= 1
        text = text[:at] + " " + "".join(f"[{i}]" for i in missing) + text[at:]
        inserted += 1
    pasted = Pasted(text, [PastedSource(s.index, s.url, s.title, s.text) for s in a.sources], a.query, a.engine, a.query_type,
                    f"Read {found} with {len(a.sources)} source(s).")
    if inserted:
        pasted.notes.append(f"The engine gave its citations as text spans; they were written into the answer as [n] markers "
                            f"in {inserted} statement(s) so the form can hold them.")
    if any(s.text for s in a.sources):
        pasted.notes.append("Source texts are the engine's own snippets, not the pages; clear them and tick fetch to judge the pages.")
    return pasted


# ---- plain text ----------------------------------------------------------------------------------


def _parse_text(text: str) -> Pasted:
    lines = text.split("\n")
    notes: list[str] = []
    definitions: list[tuple[int, PastedSource]] = []
    keep: list[str] = []
    for line in lines:  # footnote / reference definitions, wherever they are
        m = _DEFINITION_RE.match(line)
        source = _source_from(m.group(3), int(m.group(2))) if m else None
        if source is not None:
            definitions.append((len(keep), source))
        else:
            keep.append(line)
    lines = keep
    heading = max((k for k, ln in enumerate(lines) if _HEADING_RE.match(ln)), default=-1)
    block: list[PastedSource] = []
    how = ""
    if heading >= 0:
        block = _parse_block(lines[heading + 1:], titles_alone=True)
        if block:
            lines, how = lines[:heading], f'a "{lines[heading].strip(" #*_:")}" list'
        elif definitions and not any(ln.strip() for ln in lines[heading + 1:]):
            lines = lines[:heading]  # the heading stood over footnote definitions, taken out above
    if not block:
        start = _trailing_block_start(lines)
        if start is not None:
            block = _parse_block(lines[start:], titles_alone=False)
            if block:
                lines, how = lines[:start], "a source list at the end"
    answer = "\n".join(lines).strip()
    sources = _number(block + [s for _, s in definitions], notes)
    if definitions:
        how = (how + " and " if how else "") + f"{len(definitions)} footnote/reference definition(s)"
    if not sources:
        links = _answer_links(answer)
        if links:
            sources, how = links, "the answer's own links (no source list was found)"
    answer = _superscripts(answer, len(sources), notes)
    n_markers = len(find_citation_markers(answer, {s.url: s.index for s in sources if s.url}))
    found = (f"Found an answer with {n_markers} citation marker(s) and {len(sources)} source(s) from {how}." if sources
             else f"Found an answer with {n_markers} citation marker(s) and no source list; add the sources below.")
    return Pasted(answer, sources, found=found, notes=notes)


def _is_source_line(line: str) -> bool:
    s = line.strip()
    if not s:
        return False
    if _URL_RE.fullmatch(s.strip("<>")) or _MDLINK_RE.fullmatch(s):
        return True
    m = _INDEXED_RE.match(line) or _BULLET_RE.match(line)
    if not m or not _URL_RE.search(s):
        return False
    if _INLINE_CITE_RE.search(s):
        return False  # "- a claim ([site](url))": an answer's bullet citing, not a list entry
    rest = _MDLINK_RE.sub(" ", s)
    return len(_URL_RE.sub(" ", rest).split()) <= 25


def _is_title_line(line: str) -> bool:
    m = _INDEXED_RE.match(line)
    return m is not None and not _URL_RE.search(line) and 0 < len(m.group(4).split()) <= 25


def _trailing_block_start(lines: list[str]) -> int | None:
    """Where the run of source-like lines (blank lines allowed between) at the end begins; a
    numbered title line whose URL sits on the next line counts too."""
    k, start, below = len(lines) - 1, None, ""
    while k >= 0:
        line = lines[k]
        if not line.strip():
            k -= 1
            continue
        if not (_is_source_line(line) or (_is_title_line(line) and _URL_RE.fullmatch(below.strip().strip("<>") or "-"))):
            break
        start, below = k, line
        k -= 1
    if start is not None and start == 0:
        return None  # nothing but links: that is the answer, not its sources
    return start


def _parse_block(lines: list[str], titles_alone: bool) -> list[PastedSource]:
    """Sources from the lines of a list; an indexed title line followed by a URL line is one source."""
    out: list[PastedSource] = []
    for line in lines:
        s = line.strip()
        if not s:
            continue
        m = _INDEXED_RE.match(line)
        index = int(m.group(1) or m.group(2) or m.group(3)) if m else 0
        bullet = _BULLET_RE.match(line)
        body = m.group(4) if m else bullet.group(1) if bullet else s
        if not m and out and not out[-1].url and _URL_RE.fullmatch(s.strip("<>")):
            out[-1].url = _clean_url(s.strip("<>"))  # "1. Title" then the URL on its own line
            continue
        source = _source_from(body, index)
        if source is None:
            if (m or _BULLET_RE.match(line)) and body.strip():
                out.append(PastedSource(index, "", _clean_title(body)))
            elif not titles_alone:
                break
            continue
        out.append(source)
        if len(out) >= MAX_PASTED_SOURCES:
            break
    # under a "Sources" heading a title alone is a source; at the end of a text only entries with a URL are
    return out if titles_alone else [s for s in out if s.url]


def _source_from(body: str, index: int) -> PastedSource | None:
    """A source from one entry's text (index 0: unnumbered); None without a URL."""
    link = _MDLINK_RE.search(body)
    if link:
        label, url, quoted = link.group(1).strip(), link.group(2), link.group(3) or ""
        rest = (body[:link.start()] + " " + body[link.end():]).strip()
        title = quoted or (label if label and not label.isdigit() and not _URL_RE.fullmatch(label) else "") or _clean_title(rest)
        return PastedSource(index, _clean_url(url), title)
    found = _URL_RE.search(body)
    if not found:
        return None
    url = found.group(0)
    rest = body[:found.start()] + " " + body[found.end():]
    quoted = re.search(r"\"([^\"\n]{1,300})\"", rest)
    title = quoted.group(1) if quoted else _clean_title(rest)
    return PastedSource(index, _clean_url(url), title)


def _clean_url(url: str) -> str:
    url = url.strip().strip("<>").rstrip(".,;:!?")
    if url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1]
    return "https://" + url if url.lower().startswith("www.") else url


def _clean_title(rest: str) -> str:
    t = _EMPTY_WRAP_RE.sub(" ", rest).strip().strip(_SEPARATORS)  # the "(" ")" or "<" ">" a removed URL stood in
    for left, right in (("(", ")"), ('"', '"'), ("'", "'"), ("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("\u201c", "\u201d")):
        if len(t) > len(left) + len(right) and t.startswith(left) and t.endswith(right):
            t = t[len(left):-len(right)].strip(_SEPARATORS)  # only a pair: a title may end in an apostrophe
    return " ".join(t.split())[:300]


def _number(sources: list[PastedSource], notes: list[str]) -> list[PastedSource]:
    """Give every source an index: its own number when it has one (first wins), else the next free."""
    used: set[int] = set()
    keeps = []
    for s in sources:
        keeps.append(bool(s.index) and s.index not in used)
        if keeps[-1]:
            used.add(s.index)
    for s, kept in zip(sources, keeps):
        if kept:
            continue
        if s.index:
            notes.append(f"Source number {s.index} appears twice; the second was given the next free number.")
        n = 1
        while n in used:
            n += 1
        used.add(n)
        s.index = n
    return sorted(sources, key=lambda s: s.index)[:MAX_PASTED_SOURCES]


def _answer_links(answer: str) -> list[PastedSource]:
    out: list[PastedSource] = []
    seen: set[str] = set()
    for m in _MDLINK_RE.finditer(answer):
        url = _clean_url(m.group(2))
        if url not in seen and len(out) < MAX_PASTED_SOURCES:
            seen.add(url)
            label = m.group(1).strip()
            out.append(PastedSource(len(out) + 1, url, "" if label.isdigit() else label))
    return out


def _superscripts(answer: str, n_sources: int, notes: list[str]) -> str:
    """Superscript numbers (¹ ² ³, what some pages copy as) become [n] markers when sources exist."""
    if not n_sources or not _SUPER_RUN_RE.search(answer):
        return answer

    def marker(m: re.Match) -> str:
        digits = m.group(1).translate(_SUPERSCRIPTS)
        if 1 <= int(digits) <= n_sources:
            return f"[{int(digits)}]"
        return "".join(f"[{d}]" for d in digits if d != "0")

    notes.append("Superscript numbers were read as citation markers.")
    return _SUPER_RUN_RE.sub(marker, answer)
