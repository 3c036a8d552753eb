"""Opening an input file without trusting it: regular files only, and every read bounded.

Whatever path a person gives (`aee score PATH`, `aee run --path PATH`, a query set, a probe file)
is opened here. A FIFO, a socket or a block device is refused with one line: reading a FIFO waits
for a writer that may never come. A character device is read only when it has data at once
(`/dev/zero` does, a terminal does not), so nothing here ever waits. Every read is capped: one
JSON document, or one line of a JSONL file, is at most MAX_RECORD_MB megabytes (an answer with its
sources is far smaller; `/dev/zero` stops there with "input larger than 64 MB" instead of filling
the memory).
"""

from __future__ import annotations

import io
import os
import select
import stat
from pathlib import Path
from typing import IO, Callable, Iterator

from pipeline.errors import InputError

__all__ = ["MAX_RECORD_MB", "MAX_RECORD_BYTES", "open_input", "read_document", "bounded_lines", "too_large",
           "not_regular"]

MAX_RECORD_MB = 64
MAX_RECORD_BYTES = MAX_RECORD_MB * 1024 * 1024
_CHUNK = 1 << 20

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"))


def not_regular(entries: list[Path]) -> list[str]:
    """"name (what it is)" for each entry that is not a regular file (a FIFO, a socket, a link to a
    device...): a folder's reader skips them, and says which it skipped."""
    out = []
    for entry in entries:
        try:
            mode = os.stat(entry).st_mode
        except OSError as exc:
            out.append(f"{entry.name} (unreadable: {exc.strerror or exc})")
            continue
        if stat.S_ISREG(mode):
            continue
        kind = next((name for test, name in _KINDS if test(mode)),
                    "a character device" if stat.S_ISCHR(mode) else "not a file")
        out.append(f"{entry.name} ({'a link to ' if entry.is_symlink() else ''}{kind})")
    return out


def too_large(path: Path | str, what: str, hint: str = "") -> InputError:
    """The error for input beyond the cap."""
    return InputError(f"input larger than {MAX_RECORD_MB} MB ({what}); the limit is {MAX_RECORD_MB} MB for one "
                      f"answer with its sources{hint}", record=str(path))


def _open_fd(path: Path) -> int:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
    try:
        if stat.S_ISREG(mode):
            return os.open(path, os.O_RDONLY)
        if stat.S_ISCHR(mode):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            ready, _, _ = select.select([fd], [], [], 0)
            if not ready:
                os.close(fd)
                raise InputError("not a regular file but a device with nothing to read; give a JSON or JSONL file",
                                 record=str(path))
            return fd
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise InputError(f"not a regular file but {kind}; give a JSON or JSONL file, or a folder of them", record=str(path))


def open_input(path: Path, newline: str | None = "\n", encoding: str = "utf-8-sig", errors: str = "strict") -> IO[str]:
    """A text handle on a regular file (or a character device with data); InputError for anything
    else. `newline="\\n"` splits lines on line feeds only (U+2028 may stand raw in a JSON string)."""
    fd = _open_fd(path)
    return io.open(fd, "r", encoding=encoding, errors=errors, newline=newline, closefd=True)


def read_document(path: Path, limit: int = MAX_RECORD_BYTES) -> bytes:
    """A whole file's bytes, at most `limit` of them (`too_large` beyond)."""
    fd = _open_fd(path)
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            try:
                chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            except BlockingIOError:
                break  # a device that ran dry: what it gave is the document
            except OSError as exc:
                raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise too_large(path, "one JSON document", "; a larger dataset reads as JSONL, one answer per line")
    finally:
        os.close(fd)
    return b"".join(chunks)


def bounded_lines(handle: IO[str], path: Path | str, limit: int = MAX_RECORD_BYTES,
                  too_long: Callable[[int], InputError] | None = None) -> Iterator[tuple[int, str]]:
    """(line number from 1, line) of a text handle, each line read with at most `limit` characters;
    a longer line raises `too_long(line number)` (default `too_large`) before more of it is read."""
    line_no = 0
    while True:
        try:
            line = handle.readline(limit + 1)
        except BlockingIOError:
            return  # a device that ran dry
        if not line:
            return
        line_no += 1
        if len(line) > limit:
            raise too_long(line_no) if too_long is not None else too_large(path, f"line {line_no}")
        yield line_no, line
