"""Turning a fetched body into plain text: transfer decoding, character sets, HTML main text
(trafilatura, with a tag-stripping fallback), PDF text, and content sniffing.

Split from `pipeline/fetching/fetch.py`, which keeps the network side (address policy, pinned connections,
redirects, the cache). Everything here works on bytes already read and bounded by the fetcher.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
import zlib
from email.message import Message
from html.parser import HTMLParser
from typing import Any

from pipeline.fetching import extract_worker
from pipeline.fetching.extract_worker import MAX_TRAFILATURA_CHARS, ExtractFailed, ExtractTimeout, run_bounded
from pipeline.injection.injection import injection_flags

log = logging.getLogger("pipeline.fetching.fetch")
MAX_PDF_PAGES = 300


class _Stop(Exception):
    """Internal: end the fetch with this reason (and the HTTP status, when there was one)."""

    def __init__(self, reason: str, status: int | None = None, *, refused: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.refused = refused


def _decode_transfer(body: bytes, encoding: str, max_bytes: int, status: int) -> bytes:
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise _Stop(f"unsupported content-encoding: {encoding}", status)
    # wbits 47 accepts gzip and zlib headers; raw deflate (-15) is a common server mistake.
    for wbits in ((47,) if "gzip" in encoding else (47, -15)):
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(body, max_bytes + 1)  # bounded: a zip bomb stops here
        except zlib.error:
            continue
        if len(out) > max_bytes or d.unconsumed_tail:
            raise _Stop(f"too large: more than max_bytes {max_bytes} after decompression",
                        status)
        return out
    raise _Stop(f"bad {encoding} body", status)


_WINDOWS_1252_ALIASES = {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "us-ascii",
                         "ascii"}
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]{0,300}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE
)


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    if name in _WINDOWS_1252_ALIASES:
        # Browsers read these labels as windows-1252, and so do real pages' bytes.
        return "cp1252"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _decode_text(body: bytes, declared: str | None, is_html: bool) -> str:
    for bom, enc in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                     (codecs.BOM_UTF16_BE, "utf-16")):
        if body.startswith(bom):
            return body.decode(enc, errors="replace")
    candidates = [_codec(declared)]
    if is_html:
        m = _META_CHARSET_RE.search(body[:4096])
        candidates.append(_codec(m.group(1).decode("ascii")) if m else None)
    for codec in candidates:
        if codec:
            return body.decode(codec, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(body[:200_000]).best()
        if best is not None and best.encoding:
            return body.decode(best.encoding, errors="replace")
    except Exception:  # charset_normalizer is optional; any failure falls through
        pass
    return body.decode("utf-8", errors="replace")


class _TagStripper(HTMLParser):
    """Last-resort HTML to text: drops scripts, styles and head, keeps block breaks."""

    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                        "section", "article", "blockquote", "pre", "table", "ul", "ol"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self._skip += 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip:
            self.parts.append(data)


def _tidy(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _strip_tags(html_text: str) -> tuple[str, str]:
    parser = _TagStripper()
    try:
        parser.feed(html_text)
        parser.close()
    except Exception:  # HTMLParser is lenient, but never let a parse bug escape
        pass
    return " ".join("".join(parser.title_parts).split()), _tidy("".join(parser.parts))


def _html_to_text_inline(html_text: str, url: str) -> tuple[str, str]:
    """(title, main text): trafilatura when it finds an article, else the tag stripper. Runs in the
    extractor process (pipeline.fetching.extract_worker); pages longer than MAX_TRAFILATURA_CHARS skip
    trafilatura, whose time grows faster than the page on some markup."""
    if len(html_text) > MAX_TRAFILATURA_CHARS:
        return _strip_tags(html_text)
    try:
        import trafilatura

        doc = trafilatura.bare_extraction(
            html_text, url=url, with_metadata=True, include_comments=False,
            include_tables=True, include_images=False, include_links=False,
        )
        if doc is not None:
            if isinstance(doc, dict):
                title, text = doc.get("title") or "", doc.get("text") or ""
            else:
                title, text = getattr(doc, "title", "") or "", getattr(doc, "text", "") or ""
            if text.strip():
                if not title:
                    title = _strip_tags(html_text)[0]
                return " ".join(title.split()), _tidy(text)
    except Exception as exc:  # ImportError or an extractor failure: use the plain stripper
        log.debug("trafilatura failed on %s: %s", url, exc)
    fallback_title, fallback_text = _strip_tags(html_text)
    return fallback_title, fallback_text


def _load_pdf_reader() -> Any:
    """pypdf's PdfReader when installed (pure Python), else None."""
    try:
        from pypdf import PdfReader
    except ImportError:
        return None
    return PdfReader


def _html_to_text(html_text: str, url: str, status: int = 200) -> tuple[str, str]:
    """`_html_to_text_inline` in the extractor process under its deadline; past it, the tag stripper
    alone gets one more deadline; past that the page has no text ("extraction timed out")."""
    if extract_worker.IN_PROCESS:
        return _html_to_text_inline(html_text, url)
    try:
        return run_bounded("html", html_text, url)
    except ExtractTimeout:
        log.warning("extracting %s took more than %g s; reading it with the plain tag stripper", url,
                    extract_worker.EXTRACT_SECONDS)
    except ExtractFailed as exc:
        log.warning("extracting %s failed (%s); reading it with the plain tag stripper", url, exc)
    try:
        return run_bounded("strip", html_text, url, extract_worker.STRIP_SECONDS)
    except ExtractTimeout:
        raise _Stop(f"extraction timed out (trafilatura {extract_worker.EXTRACT_SECONDS:g} s, "
                    f"then the tag stripper {extract_worker.STRIP_SECONDS:g} s)", status) from None
    except ExtractFailed as exc:
        raise _Stop(f"extraction failed: {exc}", status) from None


def _pdf_to_text(body: bytes, status: int) -> tuple[str, str]:
    """`_pdf_to_text_inline` in the extractor process under its deadline."""
    if _load_pdf_reader() is None:
        raise _Stop("pdf not supported", status)
    if extract_worker.IN_PROCESS:
        return _pdf_to_text_inline(body, status)
    try:
        return run_bounded("pdf", body, "")
    except ExtractTimeout:
        raise _Stop(f"extraction timed out (pdf, more than {extract_worker.EXTRACT_SECONDS:g} s)", status) from None
    except ExtractFailed as exc:
        raise _Stop(str(exc), status) from None


def _pdf_to_text_inline(body: bytes, status: int) -> tuple[str, str]:
    reader_cls = _load_pdf_reader()
    if reader_cls is None:
        raise _Stop("pdf not supported", status)
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed PDFs are common and noisy
    try:
        reader = reader_cls(io.BytesIO(body))
        pages = []
        for i, page in enumerate(reader.pages):
            if i >= MAX_PDF_PAGES:
                break
            pages.append(page.extract_text() or "")
        meta = reader.metadata
        title = str(meta.title or "") if meta is not None else ""
    except Exception as exc:
        raise _Stop(f"bad pdf: {type(exc).__name__}", status) from None
    return " ".join(title.split()), _tidy("\n".join(pages))


_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown", "text/csv"})
_PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})


def _sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head or b"<body" in head:
        return "text/html"
    return "text/plain"


# What share of a decoded body may be control characters or undecodable bytes before it is taken
# for binary data: real pages have next to none (a form feed, a stray NUL), random bytes about a
# tenth (the C0 controls alone are 28 of 256 byte values) or far more under UTF-8.
MAX_BINARY_SHARE = 0.02
_TEXT_CONTROLS = frozenset("\t\n\r\f\v")
_SAMPLE_CHARS = 100_000


def _binary_share(text: str) -> float:
    """The share of the first characters of `text` that no text holds: control characters other
    than white space, and U+FFFD (a byte the character set could not read)."""
    sample = text[:_SAMPLE_CHARS]
    if not sample:
        return 0.0
    odd = sum(1 for ch in sample if ch == "\ufffd" or ((ch < " " or "\x7f" <= ch <= "\x9f") and ch not in _TEXT_CONTROLS))
    return odd / len(sample)


def _text_or_stop(raw: str, mime: str, status: int) -> str:
    """`raw` when it is text; a body declared as text that is binary is not kept (it would be judged
    as a source's words)."""
    share = _binary_share(raw)
    if share > MAX_BINARY_SHARE:
        raise _Stop(f"unsupported content: binary data served as {mime} ({share:.0%} of its first characters are "
                    "control characters or bytes no character set reads)", status)
    return raw


def _extract(body: bytes, content_type: str, url: str, status: int):
    """(media type, title, text, injection kinds) for a 2xx body. The body's own first bytes
    override a declared text type when they say PDF (a PDF served as text/html is read as a PDF),
    and a text body that is binary is refused."""
    msg = Message()
    msg["content-type"] = content_type or ""
    mime = (content_type.split(";", 1)[0].strip().lower() if content_type else "")
    charset = msg.get_param("charset") if content_type else None
    if isinstance(charset, tuple):  # RFC 2231 form
        charset = charset[2]
    if not mime or mime in ("application/octet-stream", "binary/octet-stream"):
        mime = _sniff(body)
    elif mime in _HTML_TYPES | _TEXT_TYPES and _sniff(body) == "application/pdf":
        mime = "application/pdf"  # the bytes are a PDF whatever the server called them
    if mime in _PDF_TYPES:
        title, text = _pdf_to_text(body, status)
        raw = text
    elif mime in _HTML_TYPES:
        raw = _text_or_stop(_decode_text(body, charset, is_html=True), mime, status)
        title, text = _html_to_text(raw, url, status)
    elif mime in _TEXT_TYPES:
        raw = _text_or_stop(_decode_text(body, charset, is_html=False), mime, status)
        title, text = "", raw.strip()
    else:
        raise _Stop(f"unsupported content type: {mime}", status)
    kinds = tuple(sorted({f.kind for f in injection_flags(raw)}))
    return mime, title, text, kinds
