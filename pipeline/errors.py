"""Errors a user can act on. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations

import unicodedata

MAX_PART = 160  # characters of any user-supplied part (record id, field) kept in a message


def one_line(text: str, limit: int = MAX_PART) -> str:
    """Make untrusted text safe for a one-line message: control, format and line-break characters
    are shown escaped (so an id cannot forge extra log lines or reorder text with bidi marks)."""
    out = []
    for ch in str(text):
        if unicodedata.category(ch)[0] in ("C", "Z") and ch != " ":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    cleaned = "".join(out)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


class InputError(ValueError):
    """Bad input: names the file or record and the field so the user can fix it."""

    def __init__(self, message: str, *, record: str = "", field: str = "") -> None:
        self.record = one_line(record)
        self.field = one_line(field)
        where = ", ".join(part for part in (f"record {self.record}" if record else "", f"field {self.field!r}" if field else "") if part)
        message = one_line(message, 400)
        super().__init__(f"{where}: {message}" if where else message)
