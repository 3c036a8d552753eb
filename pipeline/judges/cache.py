"""A SQLite cache in front of any judge.

`CachingJudge(inner)` offers the same methods as the judge it wraps (`support_many` and
`source_stance` keep one entry per source). Each entry is keyed by a sha256 over the inner judge's
identity (name, prompt version, model, optional `cache_fingerprint`: its settings; for a judge that
calls a server, its endpoint: the base URL), the method, and
the key material the judge declares for the call (`Judge.cache_material`): everything its verdicts
depend on and nothing else. The offline judge's support material, for instance, is the pair input
it scores: the statement without markers, the source's text, whether the statement cites this
source (an uncited pair may be ruled out by the first pass) and the texts of all the statements'
cited sources. A judge that declares nothing gets `base.full_view_material`, every input of the
call. So two sources with the same text in one answer, one cited and one not, are two entries, and
a hit returns what a cold call would (tests/pipeline/judges/test_cache_material.py). A hit returns the stored
verdicts rebuilt field by field with the ids of the call that asked, so a rerun of the same data
makes no judge calls at all.

When only some sources of a call are missing, the inner judge is asked for those alone, and its
verdicts are stored under the material of that smaller call (a judge that packs sources into shared
requests would have packed them differently), never under the larger call's keys.

What is not cached:
- sampling calls: the inner judge has `temperature > 0` and `seed is None` (caching would make
  every "random" sample identical);
- results that contain a call failure, i.e. a verdict with `error == "call"` (a 500 or a timeout
  today should be retried tomorrow). Parse failures (`error == "parse"`), in contrast, are the
  model's own answer and are cached.

The database is opened in WAL mode with a busy timeout and one connection per thread, so several
threads and processes can share it. Only verdicts and key material go in; the key material holds
no credentials, and judges are expected to keep keys out of `Verdict.raw`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from pipeline.judges.base import PER_SOURCE_METHODS, full_view_material
from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["CachingJudge", "cache_key", "call_keys", "default_cache_path", "KEY_SCHEME"]

# The layout of a key's payload; a new scheme leaves every older entry unread (a miss).
# 2: keys hold the judge's declared key material (1 held texts only, so twin sources shared a key).
KEY_SCHEME = 2


_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    method TEXT NOT NULL,
    payload TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (datetime('now'))
)
"""


def default_cache_path() -> Path:
    """`pipeline.storage.paths.cache_dir()/judges.sqlite` (moved with $AEE_CACHE_DIR)."""
    from pipeline.storage.paths import cache_dir

    return cache_dir() / "judges.sqlite"


def _model_name(inner: Any) -> str:
    model = getattr(inner, "model", "")
    return "" if callable(model) else str(model)


def _endpoint(inner: Any) -> str:
    """Where a remote judge sends its calls (base URL, and the Azure API version), "" for a judge
    that runs here. Two servers may serve different models under one name, so a verdict from one
    is never served for the other."""
    base_url = getattr(inner, "base_url", None)
    if not isinstance(base_url, str) or not base_url.strip():
        return ""
    version = getattr(inner, "api_version", None)
    url = base_url.strip().rstrip("/")
    return f"{url}?api-version={version}" if isinstance(version, str) and version else url


def _judge_identity(inner: Any) -> dict[str, str]:
    identity = {
        "judge": str(getattr(inner, "name", type(inner).__name__)),
        "prompt_version": str(getattr(inner, "prompt_version", "")),
        # a model name ("gpt-4o-mini"); not a method of that name, whose text holds the object's
        # address and so would change the key in every process (the offline judge has `model()`)
        "model": _model_name(inner),
        "fingerprint": str(getattr(inner, "cache_fingerprint", "")),
    }
    endpoint = _endpoint(inner)
    if endpoint:  # added only when there is one: the keys of local judges stay as they were
        identity["endpoint"] = endpoint
    return identity


def key_material(inner: Any, method: str, answer: Answer, statements: Sequence[Statement],
                 sources: Sequence[Source]) -> list[Any]:
    """The inner judge's key material for one call (`Judge.cache_material`), or the widest material
    for a judge that does not declare any; one item per cache entry of the call."""
    declare = getattr(inner, "cache_material", None)
    found = declare(method, answer, statements, sources) if callable(declare) else None
    if found is None:  # a judge outside BaseJudge that declares nothing
        found = full_view_material(method, answer, statements, sources)
    want = len(sources) if method in PER_SOURCE_METHODS else 1
    if len(found) != want:
        raise TypeError(f"{type(inner).__name__}.cache_material({method!r}) gave {len(found)} items for {want} entries")
    return list(found)


def _key(inner: Any, method: str, material: Any) -> str:
    payload = {**_judge_identity(inner), "scheme": KEY_SCHEME, "method": method, "material": material}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def call_keys(inner: Any, method: str, answer: Answer, statements: Sequence[Statement] = (),
              sources: Sequence[Source] = ()) -> list[str]:
    """The cache keys of one call: one per source for "support" and "source_stance" (the sources
    the call is made with, in order), else one."""
    return [_key(inner, method, m) for m in key_material(inner, method, answer, statements, sources)]


def cache_key(
    inner: Any,
    method: str,
    answer: Answer,
    statements: Sequence[Statement] = (),
    source: Source | None = None,
    sources: Sequence[Source] | None = None,
) -> str:
    """The key of one entry: `source` alone for "support" and "source_stance" (the entry of a call
    with that one source, or its entry in a call with all of `sources` when given), the set
    `sources` for "support_set", neither for the statement-level methods."""
    call = list(sources) if sources is not None else ([source] if source is not None else [])
    keys = call_keys(inner, method, answer, statements, call)
    if method in PER_SOURCE_METHODS and source is not None:
        return keys[next(k for k, s in enumerate(call) if s is source)]
    return keys[0]


def _is_sampling(inner: Any) -> bool:
    temperature = getattr(inner, "temperature", 0.0) or 0.0
    return float(temperature) > 0 and getattr(inner, "seed", None) is None


class CachingJudge:
    """Wraps any judge; stores its verdict lists in SQLite. Counters: `hits`, `misses`, `bypassed`."""

    carries_labels = False  # only computed judges are cached (see pipeline.judges.with_cache)

    def __init__(self, inner: Any, path: Path | str | None = None) -> None:
        self.inner = inner
        self.name: str = getattr(inner, "name", type(inner).__name__)
        self.prompt_version: str = getattr(inner, "prompt_version", "")
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.bypassed = 0  # sampling calls that went straight to the inner judge
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._db()  # create the file and table now, so configuration errors surface early

    # ------------------------------------------------------------------ storage
    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            conn.commit()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _get(self, key: str) -> list[dict[str, Any]] | None:
        row = self._db().execute("SELECT payload FROM verdicts WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return _unpack(json.loads(row[0]))
        except (ValueError, TypeError, KeyError, IndexError):
            return None  # a damaged row behaves like a miss and is overwritten

    def _put(self, key: str, method: str, rows: list[dict[str, Any]]) -> None:
        conn = self._db()
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO verdicts (key, judge, method, payload) VALUES (?, ?, ?, ?)",
                (key, self.name, method, json.dumps(_pack(rows), ensure_ascii=False)),
            )

    def close(self) -> None:
        """Close every connection this wrapper opened."""
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._local = threading.local()

    def __enter__(self) -> "CachingJudge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    @property
    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "bypassed": self.bypassed}

    def __getattr__(self, item: str) -> Any:
        # Read-only pass-through for descriptive attributes (model, temperature, seed, ...).
        if item.startswith("_") or item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def __repr__(self) -> str:
        return f"CachingJudge({self.inner!r}, path={str(self.path)!r})"

    # ------------------------------------------------------------------ core
    def _count(self, hits: int = 0, misses: int = 0, bypassed: int = 0) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses
            self.bypassed += bypassed

    def _cached(self, method: str, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source],
                call: Callable[[], Sequence[Verdict]], members: tuple[int, ...] | None = None) -> list[Verdict]:
        """One entry: a statement-level method, or set support (`members`: the set's indexes)."""
        if _is_sampling(self.inner):
            self._count(bypassed=1)
            return list(call())
        (key,) = call_keys(self.inner, method, answer, statements, sources)
        rows = self._get(key)
        if rows is not None:
            self._count(hits=1)
            got = [_rebuild(row, answer, statements, None) for row in rows]
            return got if members is None else [dataclasses.replace(v, source_set=members) for v in got]
        self._count(misses=1)
        verdicts = list(call())
        if not any(v.error == "call" for v in verdicts):
            positions = _positions(statements)
            self._put(key, method, [_serialize(v, positions, None) for v in verdicts])
        return verdicts

    def _per_source(self, method: str, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source],
                    call: Callable[[Sequence[Source]], Sequence[Verdict]]) -> list[Verdict]:
        """One entry per source. The sources not in the cache go to the inner judge together (it may
        pack them into fewer requests), and their verdicts are stored under the keys of that call."""
        if _is_sampling(self.inner):
            self._count(bypassed=1)
            return list(call(sources))
        keys = call_keys(self.inner, method, answer, statements, sources)
        found: dict[int, list[Verdict]] = {}
        missing: list[int] = []
        for k, key in enumerate(keys):
            rows = self._get(key)
            if rows is None:
                missing.append(k)
            else:
                found[k] = [_rebuild(row, answer, statements, sources[k]) for row in rows]
        self._count(hits=len(found), misses=len(missing))
        if missing:
            asked = [sources[k] for k in missing]
            fresh = list(call(asked))
            asked_keys = keys if len(asked) == len(sources) else call_keys(self.inner, method, answer, statements, asked)
            indexes = [s.index for s in asked]
            positions = _positions(statements)
            by_index: dict[int | None, list[Verdict]] = {}
            for v in fresh:
                by_index.setdefault(v.source_index, []).append(v)
            for k, key in zip(missing, asked_keys):
                source = sources[k]
                verdicts = list(by_index.get(source.index, ()))
                found[k] = verdicts
                # two sources under one index cannot be told apart in the verdicts: not stored
                storable = verdicts and indexes.count(source.index) == 1
                if storable and not any(v.error == "call" for v in verdicts):
                    self._put(key, method, [_serialize(v, positions, source) for v in verdicts])
        return [v for k in range(len(sources)) for v in found[k]]

    # ------------------------------------------------------------------ Judge protocol
    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._cached("relevance", answer, statements, (), lambda: self.inner.relevance(answer, statements))

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._cached("stance", answer, statements, (), lambda: self.inner.stance(answer, statements))

    def confidence(self, answer: Answer) -> Verdict:
        return self._cached("confidence", answer, (), (), lambda: [self.inner.confidence(answer)])[0]

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        return self._per_source("support", answer, statements, [source],
                                lambda asked: self.inner.support(answer, statements, asked[0]))

    def support_many(
        self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]
    ) -> list[Verdict]:
        """`support` for several sources, one cache entry per source; a rerun finds every source
        and calls nothing."""
        return self._per_source("support", answer, statements, sources,
                                lambda asked: self.inner.support_many(answer, statements, asked))

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """Set support, cached under its own method name ("support_set"). A hit gets the set's own
        indexes back, so another answer with the same material under other numbers is rebuilt right."""
        members = tuple(sorted({s.index for s in sources}))
        return self._cached("support_set", answer, statements, sources,
                            lambda: self.inner.support_set(answer, statements, sources), members)

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        """One cache entry per source under the method name "source_stance" (the offline judge's
        material holds the query and the source text, not the answer: a source's stance on a query
        does not depend on the answer that lists it)."""
        return self._per_source("source_stance", answer, (), sources,
                                lambda asked: self.inner.source_stance(answer, asked))

    def prefetch(self, answers: Sequence[Any]) -> None:
        """Passed to the wrapped judge (batching hints are not results; nothing to cache)."""
        self.inner.prefetch(answers)


def _pack(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Store each distinct raw output once: the verdicts of one call share the model's whole reply
    (a packed support call answers for several sources), and repeating it per verdict made the
    payload, and reading it back, many times larger."""
    raws: dict[str, int] = {}
    out = []
    for row in rows:
        row = dict(row)
        row["raw"] = raws.setdefault(row.get("raw") or "", len(raws))
        out.append(row)
    return {"raws": list(raws), "rows": out}


def _unpack(payload: Any) -> list[dict[str, Any]]:
    if isinstance(payload, list):  # written before raws were shared
        return payload
    raws = payload["raws"]
    return [{**row, "raw": raws[row["raw"]]} for row in payload["rows"]]


_VERDICT_FIELDS = frozenset(f.name for f in dataclasses.fields(Verdict))


def _positions(statements: Sequence[Statement]) -> dict[int, int]:
    return {s.index: i for i, s in enumerate(statements)}


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Verdict))


def _serialize(verdict: Verdict, positions: dict[int, int], source: Source | None) -> dict[str, Any]:
    # field by field (a Verdict holds strings, numbers and a tuple of ints): dataclasses.asdict
    # deep-copies every value, a tenth of a large answer's time
    row: dict[str, Any] = {name: getattr(verdict, name) for name in _FIELD_NAMES}
    row["source_set"] = list(verdict.source_set)
    # Remember which input position the verdict belongs to, so a hit for the same inputs under
    # other ids (another answer with identical text) gets its own ids back.
    row["_pos"] = None if verdict.statement_index is None else positions.get(verdict.statement_index)
    row["_src"] = source is not None and verdict.source_index == source.index
    return row


def _rebuild(
    row: dict[str, Any], answer: Answer, statements: Sequence[Statement], source: Source | None
) -> Verdict:
    data = dict(row)
    pos = data.pop("_pos", None)
    same_source = data.pop("_src", False)
    data = {k: v for k, v in data.items() if k in _VERDICT_FIELDS}
    data["source_set"] = tuple(data.get("source_set") or ())  # JSON gave a list
    data["answer_id"] = answer.answer_id
    if pos is not None and 0 <= pos < len(statements):
        data["statement_index"] = statements[pos].index
    if same_source and source is not None:
        data["source_index"] = source.index
    return Verdict(**data)
