"""Markdown answer text -> statements with character spans, and the citation-marker parser.

Everything here is a pure function over strings (stdlib ``re`` only) and is meant never to raise,
whatever the input: answers come from scraped engines and may hold any bytes-turned-text.

Regex risk: every pattern bounds the work per input character. Repeated groups are possessive
(``*+``, ``{m,n}+``), so a failure never re-tries shorter repetitions; free-text parts (link labels,
lenticular tails, URLs) have a length bound and exclude their closing delimiter; paragraphs, lines
and code spans are found with loops over ``str.find``, not a regex over whole paragraphs (such a
pattern is quadratic on long whitespace runs).

A 5 MB answer is split in roughly ten seconds (pure Python, one pass per stage); see
``tests/pipeline/text/test_text.py`` for the timing test and the hostile-repetition tests.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Collection, Iterable, Mapping
from urllib.parse import urlsplit

from pipeline.records import AnnotatedAnswer, Statement
from pipeline.text.abbreviations import is_abbreviation, next_word, trailing_symbols
from pipeline.text.headings import is_bold_heading, is_heading_line

__all__ = ["CitationMarker", "find_citation_markers", "strip_citation_markers", "split_statements",
           "all_cited_indexes", "statements_for"]

# What counts as a citation number: 1 to nine digits. An index the answer does not list dangles (counted
# and shown, never dropped: "[1000]" too); ten digits and more are an identifier (and overflow int32).
MIN_INDEX = 1
MAX_INDEX = 999_999_999
MAX_RANGE_ITEMS = 50


@dataclass(frozen=True, slots=True)
class CitationMarker:
    """One citation marker: its span in the searched text, the indexes it points to, its form."""

    start: int
    end: int
    indexes: tuple[int, ...]
    form: str  # bracket | range | lenticular | caret | footnote | link


# ---------------------------------------- Marker patterns -----------------------------------------

_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2212"  # hyphen, hyphen variants, en/em dash, minus
_NUM = r"[0-9]{1,9}+"
_ITEM = rf"{_NUM}(?:[ \t]*+[{_DASHES}][ \t]*+{_NUM})?+"
_LIST = rf"{_ITEM}(?:[ \t]*+[,;][ \t]*+{_ITEM})*+"
# A URL inside "(...)": no spaces or angle brackets; one level of balanced parentheses allowed
# (Wikipedia-style "Foo_(bar)"). The alternatives start with disjoint characters, so the
# possessive repetition cannot backtrack.
_URL = r"(?:[^\s()<>]|\([^\s()<>]{0,500}+\)){1,2000}+"
_TITLE = r"""(?:[ \t]++(?:"[^"\n]{0,300}+"|'[^'\n]{0,300}+'))?+"""

_MARKER_RE = re.compile(
    rf"""
    (?P<img>!\[[^\[\]\n]{{0,500}}+\]\([^()\n]{{0,2000}}+\))            # image: never a marker
  | (?P<wrapped>\[\[[ \t]*+(?P<wl>{_LIST})[ \t]*+\]\]                   # [[1]](url)  (You.com style)
        \([ \t]*+<?{_URL}>?{_TITLE}[ \t]*+\))
  | (?P<link>\[(?P<label>[^\[\]\n]{{0,500}}+)\]                         # [label](url)
        \([ \t]*+<?(?P<url>{_URL})>?{_TITLE}[ \t]*+\))
  | (?P<foot>\[\^(?P<fl>{_LIST})\^?\])                                  # [^1]  and Bing's [^1^]
  | (?P<len>\u3010[ \t]*+(?P<ll>{_LIST})(?::[0-9]{{1,4}}+)?+            # 【1】 【1†source】 【4:0†x】
        (?:\u2020[^\u3011\n]{{0,200}}+)?+[ \t]*+\u3011)
  | (?P<br>\[[ \t]*+(?P<bl>{_LIST})[ \t]*+\])                           # [1] [1, 2] [1-3]
  | (?P<caret>(?<![0-9A-Za-z)}}\]^])\^                                   # ^1  ^1^  ^[1]
        (?:\[[ \t]*+(?P<cl>{_LIST})[ \t]*+\]|(?P<cn>[0-9]{{1,3}}+)(?![0-9])\^?+))
    """,
    re.VERBOSE,
)
_ITEM_RE = re.compile(rf"([0-9]{{1,9}}+)(?:[ \t]*+[{_DASHES}][ \t]*+([0-9]{{1,9}}+))?+")

_FENCE_RE = re.compile(r"[ \t]*+(?:>[ \t]?+)*+[ \t]*+(`{3,}+|~{3,}+)")
_BACKTICKS_RE = re.compile(r"`++")


def _parse_list(body: str) -> tuple[tuple[int, ...], bool] | None:
    """Expand "1, 3-5" into (1, 3, 4, 5); None when any item is out of bounds (then: no marker)."""
    out: list[int] = []
    has_range = False
    for m in _ITEM_RE.finditer(body):
        a = int(m.group(1))
        if not MIN_INDEX <= a <= MAX_INDEX:
            return None
        if m.group(2) is None:
            out.append(a)
            continue
        b = int(m.group(2))
        if not MIN_INDEX <= b <= MAX_INDEX or b < a:
            return None
        has_range = True
        # A range too long to expand ([1-999999999]) keeps its two ends, so an end beyond the
        # listed sources is dangling and warned about, as the same number alone would be.
        out.extend(range(a, b + 1) if b - a + 1 <= MAX_RANGE_ITEMS else (a, b))
    if not out:
        return None
    return tuple(dict.fromkeys(out)), has_range


def _norm_url(url: str) -> str:
    """Compare-form of a URL: no fragment, no trailing slash, lower-case scheme and host."""
    u = url.strip().strip("<>").strip()
    try:
        p = urlsplit(u)
        scheme, netloc = p.scheme.lower(), p.netloc.lower()
        path = p.path.rstrip("/")
        out = f"{scheme}://{netloc}{path}" if scheme or netloc else path
        if p.query:
            out += "?" + p.query
        return out
    except (ValueError, TypeError):
        # urlsplit refuses some malformed netlocs (e.g. unbalanced "[" in the host)
        return u.split("#", 1)[0].rstrip("/").lower()


def _norm_source_map(source_urls: Mapping[str, int] | None) -> dict[str, int]:
    """Normalise a url -> index mapping once; the first URL wins when two normalise alike."""
    out: dict[str, int] = {}
    if not source_urls:
        return out
    try:
        items = list(source_urls.items())
    except Exception:  # not a mapping at all: treat as no sources
        return out
    for url, idx in items:
        if not isinstance(url, str) or not url.strip():
            continue
        if isinstance(idx, bool) or not isinstance(idx, int):
            continue
        out.setdefault(_norm_url(url), idx)
    return out


def _at_line_start(text: str, pos: int) -> bool:
    """True when only a little indentation (or '>' quoting) precedes pos on its line."""
    k, steps = pos, 0
    while k > 0 and text[k - 1] in " \t>" and steps < 8:
        k -= 1
        steps += 1
    return k == 0 or text[k - 1] == "\n"


# ---------- Line and code-region analysis (shared by the marker finder and the splitter) ----------


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, end excluding the newline and a trailing carriage return."""
    out: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    while True:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        ce = end - 1 if end > pos and text[end - 1] == "\r" else end
        out.append((pos, ce))
        if nl < 0:
            return out
        pos = nl + 1


class _Layout:
    """Lines of the text, which lines are fenced code, and all code regions (fenced + inline)."""

    __slots__ = ("lines", "fenced", "code")

    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.fenced = [False] * len(self.lines)
        code: list[tuple[int, int]] = []
        fence: tuple[str, int] | None = None
        fence_start = 0
        para_start = -1
        para_end = -1
        for i, (ls, le) in enumerate(self.lines):
            if fence is not None:
                self.fenced[i] = True
                m = _FENCE_RE.match(text, ls, le)
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] \
                        and not text[m.end():le].strip():
                    code.append((fence_start, le))
                    fence = None
                continue
            m = _FENCE_RE.match(text, ls, le)
            if m:
                if para_start >= 0:
                    _inline_code(text, para_start, para_end, code)
                    para_start = -1
                self.fenced[i] = True
                fence = (m.group(1)[0], len(m.group(1)))
                fence_start = ls
                continue
            if not text[ls:le].strip():
                if para_start >= 0:
                    _inline_code(text, para_start, para_end, code)
                    para_start = -1
                continue
            if para_start < 0:
                para_start = ls
            para_end = le
        if fence is not None:  # an unclosed fence runs to the end of the text (CommonMark)
            code.append((fence_start, len(text)))
        if para_start >= 0:
            _inline_code(text, para_start, para_end, code)
        code.sort()
        self.code = code


def _inline_code(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    """Append the inline code spans of one paragraph: a backtick run closed by a run of equal length."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text, start, end)]
    k = len(runs)
    if k < 2:
        return
    # next_same[i]: the next run with the same length as run i (precomputed so this stays linear)
    next_same = [-1] * k
    last: dict[int, int] = {}
    for i in range(k - 1, -1, -1):
        ln = runs[i][1] - runs[i][0]
        next_same[i] = last.get(ln, -1)
        last[ln] = i
    i = 0
    while i < k:
        j = next_same[i]
        if j >= 0:
            out.append((runs[i][0], runs[j][1]))
            i = j + 1
        else:
            i += 1


def _gaps(n: int, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches of [0, n) not covered by the sorted regions."""
    out, pos = [], 0
    for s, e in regions:
        if s > pos:
            out.append((pos, s))
        pos = max(pos, e)
    if pos < n:
        out.append((pos, n))
    return out


def _scan(
    text: str, source_urls: Mapping[str, int] | None, layout: _Layout
) -> tuple[list[CitationMarker], list[tuple[int, int]]]:
    """Markers outside code, plus every link/image span (so the splitter never splits inside one)."""
    urls = _norm_source_map(source_urls)
    markers: list[CitationMarker] = []
    links: list[tuple[int, int]] = []
    for gs, ge in _gaps(len(text), layout.code):
        for m in _MARKER_RE.finditer(text, gs, ge):
            s, e = m.start(), m.end()
            kind = m.lastgroup
            assert kind is not None  # every top-level alternative of _MARKER_RE is a named group
            if kind == "img":
                links.append((s, e))
                continue
            if kind == "link":
                links.append((s, e))
                idx = urls.get(_norm_url(m.group("url"))) if urls else None
                if idx is not None and not (s > 0 and text[s - 1] == "!"):
                    markers.append(CitationMarker(s, e, (idx,), "link"))
                continue
            body = m.group({"wrapped": "wl", "foot": "fl", "len": "ll", "br": "bl"}.get(kind, "cl"))
            if kind == "caret" and body is None:
                body = m.group("cn")
            if body is None:
                continue
            if kind in ("br", "foot") and text.startswith(":", e) and _at_line_start(text, s):
                continue  # "[^1]: ..." / "[1]: url" at a line start is a definition, not a citation
            parsed = _parse_list(body)
            if parsed is None:
                continue
            indexes, has_range = parsed
            if kind == "br" or kind == "wrapped":
                form = "range" if has_range else "bracket"
            else:
                form = {"foot": "footnote", "len": "lenticular", "caret": "caret"}[kind]
            markers.append(CitationMarker(s, e, indexes, form))
            if kind == "wrapped":
                links.append((s, e))
    return markers, links


def _as_text(text: object) -> str:
    if isinstance(text, str):
        return text
    return "" if text is None else str(text)


# --------------------------------------- Public marker API ----------------------------------------


def find_citation_markers(
    text: str, source_urls: Mapping[str, int] | None = None
) -> list[CitationMarker]:
    """Return the citation markers in text (outside code), in order of position."""
    text = _as_text(text)
    markers, _ = _scan(text, source_urls, _Layout(text))
    return markers


def all_cited_indexes(text: str, source_urls: Mapping[str, int] | None = None) -> list[int]:
    """Every index any marker in text points to, in order of first appearance, without repeats."""
    seen: dict[int, None] = {}
    for m in find_citation_markers(text, source_urls):
        for i in m.indexes:
            seen.setdefault(i, None)
    return list(seen)


_CLOSE_AFTER_GAP = " \t.,;:!?)]}\n\r"
_SENTENCE_END = ".!?\u2026\u3002\uff01\uff1f"


def _link_label(text: str, s: int, e: int) -> str:
    """For a "[label](url)" marker, the label worth keeping in stripped text ("" when numeric)."""
    if text[s] != "[" or text[s + 1:s + 2] == "[" or text[e - 1] != ")":
        return ""
    close = text.find("](", s, e)
    if close < 0:
        return ""
    label = text[s + 1:close].strip()
    return "" if not label or label.isdigit() else label


def strip_citation_markers(text: str, markers: Iterable[CitationMarker]) -> str:
    """Return text without the given markers, with the whitespace left around them tidied."""
    text = _as_text(text)
    try:
        spans = sorted((m.start, m.end) for m in (markers or ()))
    except (TypeError, AttributeError):
        spans = []
    pieces: list[str] = []
    pos = 0
    for s, e in spans:
        if not (isinstance(s, int) and isinstance(e, int)) or s < pos or not s < e <= len(text):
            continue  # overlapping, empty or out-of-range span: ignore it
        keep = _link_label(text, s, e)
        pieces.append(text[pos:s] + keep if keep else text[pos:s])
        pos = e
    pieces.append(text[pos:])
    out: list[str] = [pieces[0]] if pieces[0] else []
    for seg in pieces[1:]:
        # At each joint where a marker was removed: drop the space before it when a space or
        # closing punctuation follows; put one back when a sentence end would touch a word.
        # Only the last emitted piece is touched, so this stays linear in the text length.
        if not seg or seg[0] in _CLOSE_AFTER_GAP:
            while out and out[-1][-1] in " \t":
                out[-1] = out[-1].rstrip(" \t")
                if not out[-1]:
                    out.pop()
        if seg and out and out[-1][-1] in _SENTENCE_END and seg[0].isalnum():
            out.append(" ")
        if seg:
            out.append(seg)
    return "".join(out).strip()


# -------------------------------------- Statement splitting ---------------------------------------

_CLOSERS = "\"')]}*_\u201d\u2019\u00bb"
_CJK_END = "\u3002\uff01\uff1f"
_BOUNDARY_RE = re.compile(r"(?P<t>[.!?\u2026\u3002\uff01\uff1f\u203c\u2047\u2048\u2049]++)|\n")
_BULLET_RE = re.compile(
    "(?:[-*+\u2022\u25aa\u25e6\u2023\u25cf\u2013]|[0-9]{1,9}+[.)])(?:[ \t]++|$)"
    r"(?:\[[ xX]\][ \t]++)?+"
)
_ATX_RE = re.compile(r"#{1,6}+(?:[ \t]|$)")
_DEFINITION_RE = re.compile(r"\[\^?[^\]\n]{1,100}+\]:")
_URL_IN_TEXT_RE = re.compile(r"(?:https?|ftp)://\S++|www\.\S++")
_WORDCHAR_RE = re.compile(r"[^\W_]")


class _Spans:
    """Sorted non-overlapping spans with a fast "is this position inside one" test."""

    __slots__ = ("starts", "ends")

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]

    def inside(self, pos: int) -> bool:
        i = bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]


class _Block:
    """A paragraph, list item or table row: where it starts and ends, and its quote prefixes."""

    __slots__ = ("start", "end", "kind", "skip")

    def __init__(self, start: int, end: int, kind: str) -> None:
        self.start, self.end, self.kind = start, end, kind
        self.skip: dict[int, int] = {}  # position inside a "> " prefix -> content start


def _content_start(text: str, ls: int, le: int) -> tuple[int, bool]:
    """Skip indentation and blockquote '>' markers; report whether any '>' was seen."""
    c, quoted = ls, False
    while c < le:
        ch = text[c]
        if ch in " \t":
            c += 1
        elif ch == ">":
            c += 1
            quoted = True
        else:
            break
    return c, quoted


def _is_table_separator(s: str) -> bool:
    t = s.replace(" ", "").replace("\t", "")
    return "|" in t and "-" in t and not t.strip("|-:")


def _blocks(text: str, layout: _Layout) -> list[_Block]:
    """Group the non-code lines into blocks, dropping headings, rules, separators and definitions."""
    lines = layout.lines
    blocks: list[_Block] = []
    cur: _Block | None = None
    in_table = False
    n_lines = len(lines)

    def next_is_separator(i: int) -> bool:
        if i + 1 >= n_lines or layout.fenced[i + 1]:
            return False
        ns, ne = lines[i + 1]
        return _is_table_separator(text[ns:ne])

    for i, (ls, le) in enumerate(lines):
        if layout.fenced[i]:
            cur, in_table = None, False
            continue
        c, quoted = _content_start(text, ls, le)
        if c >= le:  # blank line (or a bare ">" line)
            cur, in_table = None, False
            continue
        content = text[c:le]
        if _ATX_RE.match(content):
            cur = None
            continue
        compact = content.replace(" ", "").replace("\t", "").rstrip()
        if compact and len(set(compact)) == 1 and compact[0] in "=-*_":
            ch = compact[0]
            no_inner_space = " " not in content.strip() and "\t" not in content.strip()
            if ch in "=-" and no_inner_space and cur is not None and cur.kind == "para" \
                    and (ch == "=" or len(compact) >= 2):
                if blocks and blocks[-1] is cur:
                    blocks.pop()  # setext underline: the paragraph above was a heading
                cur = None
                continue
            if len(compact) >= 3 and ch != "=":
                cur = None  # horizontal rule
                continue
        if _is_table_separator(content):
            cur, in_table = None, True
            continue
        if _DEFINITION_RE.match(content):
            cur = None  # footnote or link-reference definition
            continue
        if "|" in content and (content.lstrip().startswith("|") or in_table or next_is_separator(i)):
            cur = None
            if next_is_separator(i):
                continue  # table header row
            rs, re_ = c, le
            while rs < re_ and (text[rs].isspace() or text[rs] == "|"):
                rs += 1
            while re_ > rs and (text[re_ - 1].isspace() or text[re_ - 1] == "|"):
                re_ -= 1
            if rs < re_:
                blocks.append(_Block(rs, re_, "row"))
            continue
        in_table = False
        bm = _BULLET_RE.match(text, c, le)
        if bm:
            cur = _Block(bm.end(), le, "item")
            blocks.append(cur)
            continue
        if cur is None:
            cur = _Block(c, le, "para")
            blocks.append(cur)
        else:
            cur.end = le  # continuation line (soft break or lazy list continuation)
            if quoted:
                for p in range(ls, c):
                    cur.skip[p] = c
    return blocks


def _sentence_spans(
    text: str, block: _Block, marker_at: dict[int, int], protected: _Spans
) -> list[tuple[int, int]]:
    """Cut one block into sentence spans (untrimmed); markers after the end punctuation stay behind."""
    bs, be = block.start, block.end
    spans: list[tuple[int, int]] = []
    cur = bs
    symbols_lead = trailing_symbols(text, bs, be) is not None  # "\u2705 Done. \u274c Not done.": emoji open sentences
    for m in _BOUNDARY_RE.finditer(text, bs, be):
        p = m.start()
        if p < cur or protected.inside(p):
            continue
        if m.group("t") is None:  # a soft line break
            j = p + 1
            while j < be and (text[j].isspace() or j in block.skip):
                j += 1
            if j >= be or text[j].islower():
                continue
            k = p
            while k > cur and text[k - 1].isspace():
                k -= 1
            if k == cur or text[k - 1] in ",;":
                continue  # the line was wrapped mid-sentence
            spans.append((cur, p))
            cur = p + 1
            continue
        term = m.group("t")
        q = m.end()
        while q < be and text[q] in _CLOSERS:
            q += 1
        if q < be and not (text[q].isspace() or q in marker_at or term[-1] in _CJK_END
                           or (text[q] == "[" and q + 1 in marker_at)):  # You.com's "claim.[[1]] Next"
            continue  # "3.14", "example.com", "a.b": no break
        # Take the markers (and the spaces between them) that follow the punctuation.
        end, j = q, q
        while True:
            while j < be and text[j].isspace():
                j += 1
            me = marker_at.get(j)
            if me is None or me > be:
                break
            end = j = me
        symbols_end = trailing_symbols(text, j, be) if end == q and not symbols_lead else None
        if symbols_end is not None:
            end = j = symbols_end
            while j < be and text[j].isspace():
                j += 1
        if j < be and text[j].islower():
            continue
        if term == "." and (text.startswith(". . .", p) or (p >= 2 and text.startswith(". . .", p - 2))):
            continue  # a spaced ellipsis ". . ." ends, if at all, at its last dot
        if end == q and term == "." and is_abbreviation(text, p, cur, next_word(text, j, be)):
            continue
        spans.append((cur, end))
        cur = end
    if cur < be:
        spans.append((cur, be))
    return spans


def _has_content(text: str, s: int, e: int, mstarts: list[int], markers: list[CitationMarker]) -> bool:
    """True when the span holds a letter or digit outside markers and bare URLs."""
    pos = s
    i = bisect_left(mstarts, s)
    segs: list[str] = []
    while i < len(markers) and markers[i].start < e:
        segs.append(text[pos:markers[i].start])
        pos = max(pos, markers[i].end)
        i += 1
    segs.append(text[pos:e])
    for seg in segs:
        if _WORDCHAR_RE.search(_URL_IN_TEXT_RE.sub(" ", seg)):
            return True
    return False


def _is_plain_heading(text: str, span: tuple[int, int], following: tuple[int, int], mstarts: list[int]) -> bool:
    """A paragraph span that is a whole line without markers, followed by more text on a later line,
    and reads as a heading ("Population trends", "Key findings:")."""
    s, e = span
    i = bisect_left(mstarts, s)
    if i < len(mstarts) and mstarts[i] < e:
        return False
    if e - s > 300:
        return False  # far longer than a title; also keeps one huge line from being scanned per sentence
    k = s
    while k > 0 and text[k - 1] in " \t>":
        k -= 1
    if k > 0 and text[k - 1] != "\n":
        return False  # something stands before it on its line
    k = e
    while k < len(text) and text[k] in " \t\r":
        k += 1
    if k < len(text) and text[k] != "\n" or "\n" not in text[e:following[0]]:
        return False  # something follows it on its line, or the next statement does
    return is_heading_line(text[s:e])


def split_statements(
    answer_id: str,
    text: str,
    listed_indexes: Collection[int],
    source_urls: Mapping[str, int] | None = None,
) -> list[Statement]:
    """Split a markdown answer into sentence statements with spans, citations and dangling indexes."""
    text = _as_text(text)
    listed: set[int] = set()
    try:
        for x in listed_indexes or ():
            if isinstance(x, int) and not isinstance(x, bool):
                listed.add(x)
    except TypeError:
        pass
    layout = _Layout(text)
    markers, links = _scan(text, source_urls, layout)
    mstarts = [m.start for m in markers]
    marker_at = {m.start: m.end for m in markers}
    protected = _Spans(layout.code + links + [(m.start, m.end) for m in markers])

    spans: list[tuple[int, int]] = []
    paragraph_spans: set[int] = set()  # positions in `spans` that came from a paragraph block
    for block in _blocks(text, layout):
        if block.kind != "row":
            has_marker = bisect_left(mstarts, block.start) < len(mstarts) and \
                mstarts[bisect_left(mstarts, block.start)] < block.end
            if not has_marker and is_bold_heading(text, block.start, block.end):
                continue
            raw = _sentence_spans(text, block, marker_at, protected)
        else:
            raw = [(block.start, block.end)]
        kept: list[tuple[int, int]] = []
        for s, e in raw:
            while s < e and (text[s].isspace() or s in block.skip):
                s = block.skip.get(s, s + 1)
            while e > s and text[e - 1].isspace():
                e -= 1
            if s >= e:
                continue
            if _has_content(text, s, e, mstarts, markers):
                kept.append((s, e))
                continue
            # A piece with markers but no words, on the same line as the sentence before it
            # (e.g. "... end ) [2]"), gives its markers to that sentence; on a line of its own
            # (a "[1] https://..." source list) it is dropped.
            i = bisect_left(mstarts, s)
            if kept and i < len(markers) and markers[i].start < e and "\n" not in text[kept[-1][1]:s]:
                kept[-1] = (kept[-1][0], e)
        if block.kind == "para":
            paragraph_spans.update(range(len(spans), len(spans) + len(kept)))
        spans.extend(kept)
    spans = [sp for k, sp in enumerate(spans)
             if not (k in paragraph_spans and k + 1 < len(spans) and _is_plain_heading(text, sp, spans[k + 1], mstarts))]

    out: list[Statement] = []
    for n, (s, e) in enumerate(spans):
        cited: dict[int, None] = {}
        i = bisect_left(mstarts, s)
        while i < len(markers) and markers[i].start < e:
            if markers[i].end <= e:
                for idx in markers[i].indexes:
                    cited.setdefault(idx, None)
            i += 1
        out.append(
            Statement(
                answer_id=answer_id,
                index=n,
                text=text[s:e],
                start=s,
                end=e,
                citations=tuple(i for i in cited if i in listed),
                dangling=tuple(i for i in cited if i not in listed),
            )
        )
    return out


def statements_for(annotated: AnnotatedAnswer) -> tuple[Statement, ...]:
    """Statements carried by the data (AEE core statements, ExpertQA claims), or else those the
    splitter finds in the answer text."""
    if annotated.statements:
        return annotated.statements
    answer = annotated.answer
    urls = {s.url: s.index for s in answer.sources if s.url}
    return tuple(split_statements(answer.answer_id, answer.text, {s.index for s in answer.sources}, urls))


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Where the paragraphs, list items and table rows of a Markdown answer start and end (headings,
    rules and code left out): the units a paragraph-scoped citation covers (`pipeline.text.citation_scope`)."""
    text = _as_text(text)
    return [(b.start, b.end) for b in _blocks(text, _Layout(text))]
