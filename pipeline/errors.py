"""Errors a user can act on. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: names the file or record and the field so the user can fix it."""

    def __init__(self, message: str, *, record: str = "", field: str = "") -> None:
        self.record = record
        self.field = field
        where = ", ".join(part for part in (f"record {record}" if record else "", f"field {field!r}" if field else "") if part)
        super().__init__(f"{where}: {message}" if where else message)
