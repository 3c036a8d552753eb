"""Query sets for `aee collect`: a JSONL or CSV file, or Liu et al.'s two sets by name.

A file has one query per JSONL object or CSV row: `query` (required), `query_type` ("debate" or
"expertise", optional; `--query-type` gives the default) and `id` (optional). The same query twice
is asked once.

`liu:debate` (1,000 debate questions, davinci-debate-1k.jsonl) and `liu:allsouls` (1,000 All Souls
essay prompts, allsouls.jsonl) come from Liu et al. 2023 (MIT licence). They are read from
`../shared/data/liu2023/` when present; otherwise downloaded once from the authors' repository at a
pinned commit into the cache and checked against a pinned SHA-256. Their contents never go into
this project. Both sets are open questions with more than one defensible answer, so they count
as debate queries (the stance metrics apply); `--query-type` overrides.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.importers.canonical import MAX_QUERY_CHARS
from pipeline.importers.input_files import bounded_lines, open_input, read_document
from pipeline.storage.paths import cache_dir, shared_dir

MAX_QUERIES = 100_000
LIU_COMMIT = "2c6b485ae1c2bd296ad7d5e0eee4da4065535e57"
LIU_REPO = "https://raw.githubusercontent.com/nelson-liu/evaluating-verifiability-in-generative-search-engines"


@dataclass(frozen=True)
class LiuSet:
    file: str
    repo_path: str
    sha256: str
    field: str  # the JSON key holding the question
    query_type: str


LIU_SETS: dict[str, LiuSet] = {
    "debate": LiuSet("davinci-debate-1k.jsonl", "davinci_debate/davinci-debate-1k.jsonl",
                     "047fdcbb4d866d9d09fe9f18a6f79ffef757366382f0b76b12cf026535f3ccbb", "query", "debate"),
    "allsouls": LiuSet("allsouls.jsonl", "allsouls/allsouls.jsonl",
                       "13361e22b820d1a92f763d3b08f6706757fdd54d77ebc1d6b3954f435c04a68f", "prompt_text", "debate"),
}


@dataclass(frozen=True)
class Query:
    """One question to ask."""

    query: str
    query_type: str
    query_id: str = ""  # the set's own id, kept in the envelope


def load_queries(spec: str, default_type: str | None = None) -> list[Query]:
    """The queries of a file or a named set, in order, without repeats."""
    return load_query_set(spec, default_type)[0]


def load_query_set(spec: str, default_type: str | None = None) -> tuple[list[Query], int]:
    """(the queries without repeats, how many repeats were dropped). Both Liu et al. sets hold one
    question twice, so each gives 999 queries."""
    if spec.startswith("liu:"):
        name = spec[4:]
        if name not in LIU_SETS:
            raise InputError(f"unknown set {spec!r}; choose liu:debate or liu:allsouls", field="--queries")
        liu = LIU_SETS[name]
        path = liu_path(liu)
        rows = _jsonl_rows(path)
        queries = [_query({"query": r.get(liu.field), "id": r.get("prompt_id"), "query_type": None}, f"{path.name}:{n}",
                          default_type or liu.query_type) for n, r in rows]
    else:
        path = Path(spec)
        if not path.is_file():
            raise InputError("no such query file", record=spec, field="--queries")
        rows = _csv_rows(path) if path.suffix.lower() == ".csv" else _jsonl_rows(path)
        queries = [_query(r, f"{path.name}:{n}", default_type or "expertise") for n, r in rows]
    seen: set[str] = set()
    unique = [q for q in queries if not (q.query in seen or seen.add(q.query))]  # type: ignore[func-returns-value]
    if not unique:
        raise InputError("the query set is empty", record=spec, field="--queries")
    return unique, len(queries) - len(unique)


def _query(row: dict, where: str, default_type: str) -> Query:
    text = row.get("query")
    if not isinstance(text, str) or not text.strip():
        raise InputError("missing or empty", record=where, field="query")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"{len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}", record=where, field="query")
    query_type = row.get("query_type") or default_type
    if query_type not in ("debate", "expertise"):
        raise InputError(f"must be 'debate' or 'expertise', not {str(query_type)[:40]!r}", record=where, field="query_type")
    qid = row.get("id")
    return Query(" ".join(text.split()), query_type, "" if qid is None else str(qid)[:200])


def _jsonl_rows(path: Path) -> list[tuple[int, dict]]:
    rows = []
    try:
        with open_input(path, newline=None) as fh:
            for n, line in bounded_lines(fh, path):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"invalid JSON: {exc}", record=f"{path.name}:{n}") from exc
                if not isinstance(obj, dict):
                    raise InputError("expected an object with a 'query'", record=f"{path.name}:{n}")
                rows.append((n, obj))
                if len(rows) > MAX_QUERIES:
                    raise InputError(f"more than {MAX_QUERIES:,} queries", record=str(path))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
    return rows


def _csv_rows(path: Path) -> list[tuple[int, dict]]:
    try:
        text = read_document(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
    try:
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "query" not in reader.fieldnames:
            raise InputError("the CSV needs a header row with a 'query' column", record=str(path))
        rows = [(n, dict(r)) for n, r in enumerate(reader, start=2)]
    except csv.Error as exc:
        raise InputError(f"bad CSV: {exc}", record=str(path)) from exc
    if len(rows) > MAX_QUERIES:
        raise InputError(f"more than {MAX_QUERIES:,} queries", record=str(path))
    return rows


def liu_path(liu: LiuSet) -> Path:
    """The set's file: ../shared when present, else the cached pinned download (fetched once)."""
    shared = shared_dir()
    if shared is not None and (shared / "data" / "liu2023" / liu.file).is_file():
        return shared / "data" / "liu2023" / liu.file
    cached = cache_dir() / "liu2023" / liu.file
    if cached.is_file() and _sha256(cached.read_bytes()) == liu.sha256:
        return cached
    return download_pinned(f"{LIU_REPO}/{LIU_COMMIT}/{liu.repo_path}", liu.sha256, cached)


def download_pinned(url: str, sha256: str, target: Path, max_bytes: int = 20_000_000, timeout: float = 60) -> Path:
    """Download url once into target, keeping it only when its SHA-256 is the pinned one."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a fixed https URL
            data = response.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"could not download the query set ({type(exc).__name__}: {exc}); "
                         "place it in ../shared/data/liu2023/ or retry online", record=url) from exc
    if len(data) > max_bytes:
        raise InputError("the download is larger than expected; not used", record=url)
    if _sha256(data) != sha256:
        raise InputError("the download does not match the pinned SHA-256; not used", record=url)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)
    return target


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
