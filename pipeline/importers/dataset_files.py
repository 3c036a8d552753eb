"""The files of a dataset published as JSON Lines splits (ExpertQA, HAGRID), read the same way by
each importer: the pinned download of its split files, "a folder of *.jsonl files or one file",
and reading a file line by line into checked JSON objects.

Downloads are size-bounded and written atomically (a temporary file renamed into place), so a
broken connection never leaves a half file that a later run would take as the dataset. Each
importer keeps its own URLs and its own words for the offline error, which name its files and the
environment variable that points at a local copy.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pipeline.errors import InputError
from pipeline.importers.canonical import check_values
from pipeline.importers.input_files import bounded_lines, open_input
from pipeline.importers.refusals import Refusals, refuse_or_raise

__all__ = ["MAX_DOWNLOAD_BYTES", "MAX_LINE_CHARS", "download_splits", "jsonl_files", "read_jsonl"]

MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024  # each published split is a few MB; refuse anything far larger
MAX_LINE_CHARS = 5_000_000


def download_splits(dest: Path, splits: Iterable[str], url_of: Callable[[str], str],
                    offline_message: Callable[[BaseException], str], *, timeout: float) -> Path:
    """Download `<split>.jsonl` from `url_of(split)` into `dest` for every split not already there
    (a non-empty file is kept) and return `dest`. InputError naming the URL when a reply is too
    large, or with `offline_message(exc)` when the download fails."""
    dest.mkdir(parents=True, exist_ok=True)
    for split in splits:
        target = dest / f"{split}.jsonl"
        if target.is_file() and target.stat().st_size > 0:
            continue
        url = url_of(split)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - fixed https URL
                declared = resp.headers.get("Content-Length")
                if declared and int(declared) > MAX_DOWNLOAD_BYTES:
                    raise InputError(f"refusing {declared} bytes (limit {MAX_DOWNLOAD_BYTES})", record=url)
                data = resp.read(MAX_DOWNLOAD_BYTES + 1)
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise InputError(offline_message(exc), record=url) from exc
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise InputError(f"download exceeds {MAX_DOWNLOAD_BYTES} bytes", record=url)
        with tempfile.NamedTemporaryFile(dir=dest, prefix=f".{split}.", suffix=".part", delete=False) as tmp:
            tmp.write(data)
            tmp_path = Path(tmp.name)
        tmp_path.replace(target)
    return dest


def jsonl_files(path: str | Path) -> list[Path]:
    """The *.jsonl files of a folder, sorted by name, or the one file `path` names."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise InputError("no *.jsonl files in folder", record=str(path))
        return files
    if path.exists():  # a file, or something else that open_input will refuse with its own reason
        return [path]
    raise InputError("no such file or folder", record=str(path))


def read_jsonl(path: Path, *, newline: str | None = None, refusals: Refusals | None = None) -> Iterator[tuple[int, str, Any]]:
    """(line number from 1, "file:line", parsed object) for every non-blank line, checked by
    `check_values`; one InputError naming the line for a line too long or not JSON, naming the
    file when it cannot be read or is not UTF-8. `newline` is passed to `open` ("\\n" splits on
    line feeds only; None also splits on lone carriage returns). With `refusals`, a line that cannot
    be read is refused and the next one read (a line too long ends the file: its end cannot be found)."""
    handle = open_input(path, newline=newline)
    with handle:
        try:
            too_long = lambda n: InputError(f"line longer than {MAX_LINE_CHARS} characters", record=f"{path.name}:{n}")  # noqa: E731
            for line_no, line in bounded_lines(handle, path, MAX_LINE_CHARS, too_long):
                if not line.strip():
                    continue
                where = f"{path.name}:{line_no}"
                try:
                    obj = _parse_line(line, where)
                    check_values(obj, where)  # lone surrogates and non-finite numbers fail only when written
                except InputError as exc:
                    refuse_or_raise(refusals, exc, path.name)
                    continue
                yield line_no, where, obj
        except InputError as exc:  # a line too long: where the next line starts is unknown
            refuse_or_raise(refusals, exc, path.name)
        except UnicodeDecodeError as exc:
            refuse_or_raise(refusals, InputError(f"not UTF-8 text (byte {exc.start}); the rest of the file is not read",
                                                 record=str(path)), path.name)


def _parse_line(line: str, where: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", record=where) from exc
    except RecursionError as exc:  # json recurses per nesting level
        raise InputError("JSON is nested too deeply", record=where) from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(str(exc)[:200], record=where) from exc
