"""A labelled file's bytes as text, whatever tool saved it, and the check that every value is text.

Spreadsheets and their exports do not all write UTF-8: Excel's "Unicode text" is UTF-16, an older
Windows setup writes Windows-1252, a Mac or Linux tool Latin-1. Refusing the whole file because one
note holds an accented letter would lose every good row, so `decode_labels` reads such a file and
says how it read it:

- a byte-order mark decides (UTF-8, UTF-16, UTF-32);
- text without one that is UTF-8 is read as UTF-8;
- NUL bytes in every other position are UTF-16 without a mark;
- a file holding well-formed UTF-8 sequences next to a few bytes that are not is UTF-8 damaged in
  places: those bytes are kept as lone surrogates ("surrogateescape"), and each row holding one is
  refused by `not_text`, alone;
- a file with no UTF-8 sequence at all is an 8-bit file: read as Windows-1252 (a superset of the
  printable Latin-1 letters), or Latin-1 where a byte has no Windows-1252 meaning.

`not_text(value)` finds what cannot be stored as text in one value (a lone surrogate, from a JSON
escape like "\\ud800" or from a byte that was not UTF-8), so one such cell costs its row only.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_labels", "not_text"]

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# a well-formed UTF-8 sequence of two to four bytes (lead byte, then continuation bytes)
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_NAMES = {"utf-32": "UTF-32", "utf-16": "UTF-16", "utf-16-le": "UTF-16 (little-endian, no byte-order mark)",
          "utf-16-be": "UTF-16 (big-endian, no byte-order mark)", "cp1252": "Windows-1252", "latin-1": "Latin-1"}


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _utf16_without_mark(data: bytes) -> str | None:
    """"utf-16-le" / "utf-16-be" when NUL bytes fill every other position (ASCII text in UTF-16)."""
    sample = data[:4096]
    if len(sample) < 4 or b"\x00" not in sample:
        return None
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    half = len(sample) // 2
    if odd >= 0.4 * half and even == 0:
        return "utf-16-le"
    if even >= 0.4 * half and odd == 0:
        return "utf-16-be"
    return None


def decode_labels(data: bytes, name: str) -> tuple[str, str]:
    """(the text, a note saying how it was read when that was not plain UTF-8, else "").
    Raises InputError only for bytes that no encoding above can read (a UTF-16 file cut mid-character)."""
    from pipeline.errors import InputError

    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise InputError(f"the file starts with a {_NAMES.get(codec, 'UTF-8')} byte-order mark but byte "
                                 f"{exc.start} (line {_line_of(data, exc.start)}) is not {_NAMES.get(codec, 'UTF-8')}; "
                                 "save it again as UTF-8", record=name) from None
            return text, ("" if codec == "utf-8-sig" else f"the file is {_NAMES[codec]}, not UTF-8: read as {_NAMES[codec]}")
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    wide = _utf16_without_mark(data)
    if wide is not None:
        try:
            return data.decode(wide), f"the file is {_NAMES[wide]}, not UTF-8: read as such"
        except UnicodeDecodeError:
            pass
    where = f"line {_line_of(data, first_bad)}, byte 0x{data[first_bad]:02x}"
    if _UTF8_SEQUENCE.search(data):
        return data.decode("utf-8", "surrogateescape"), (
            f"the file is UTF-8 with bytes that are not ({where} first): a row with one in a cell the import "
            "reads is refused, the others are read")
    try:
        text, codec = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, codec = data.decode("latin-1"), "latin-1"
    return text, (f"the file is not UTF-8 ({where} first): read as {_NAMES[codec]}; check the accented characters "
                  "of the rows that hold them, or save the file as UTF-8")


def not_text(value: object) -> str | None:
    """Why `value` (a cell of a labelled row) cannot be stored as text, or None when it can."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
        return None
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        if 0xDC80 <= ord(bad) <= 0xDCFF:  # how surrogateescape keeps a byte that was not UTF-8
            return (f"character {exc.start + 1} is not text (byte 0x{ord(bad) - 0xDC00:02x}, which is not UTF-8, "
                    "or a lone surrogate)")
        return f"a lone surrogate (U+{ord(bad):04X}) at character {exc.start + 1} is not text"
