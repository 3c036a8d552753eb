"""A SQLite cache in front of any judge.

`CachingJudge(inner)` offers the same methods as the judge it wraps (`support_many` and
`source_stance` keep one entry per source). Each call is keyed by a
sha256 over everything that can change the output: the inner judge's name, prompt version, model,
optional `cache_fingerprint`, the method, and the inputs (query, query type, answer text,
statement texts, source text; for `support_set`, the texts of every source of the set). A hit
returns the stored verdicts, rebuilt field by field, so a rerun of the same data makes no judge
calls at all.

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
from typing import Any, Sequence

from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["CachingJudge", "cache_key", "default_cache_path"]


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
    """`pipeline.paths.cache_dir()/judges.sqlite` (moved with $AEE_CACHE_DIR)."""
    from pipeline.paths import cache_dir

    return cache_dir() / "judges.sqlite"


def _model_name(inner: Any) -> str:
    model = getattr(inner, "model", "")
    return "" if callable(model) else str(model)


def _judge_identity(inner: Any) -> dict[str, str]:
    return {
        "judge": str(getattr(inner, "name", type(inner).__name__)),
        "prompt_version": str(getattr(inner, "prompt_version", "")),
        # a model name ("gpt-4o-mini"); not a method of that name, whose text holds the object's
        # address and so would change the key in every process (the offline judge has `model()`)
        "model": _model_name(inner),
        "fingerprint": str(getattr(inner, "cache_fingerprint", "")),
    }


def cache_key(
    inner: Any,
    method: str,
    answer: Answer,
    statements: Sequence[Statement] = (),
    source: Source | None = None,
    sources: Sequence[Source] | None = None,
) -> str:
    """sha256 hex digest over the judge identity, the method and the inputs that reach the judge.
    `sources` (set support) adds the texts of a source set, in order; keys of the other methods
    are unchanged by it."""
    payload: dict[str, Any] = {
        **_judge_identity(inner),
        "method": method,
        "query": answer.query,
        "query_type": answer.query_type,
        "answer": answer.text if method == "confidence" else "",
        "statements": [s.text for s in statements],
        "source": None if source is None else source.text,
    }
    if sources is not None:
        payload["sources"] = [s.text for s in sources]
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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
    def _cached(
        self,
        method: str,
        answer: Answer,
        statements: Sequence[Statement],
        source: Source | None,
        call: Any,
    ) -> list[Verdict]:
        if _is_sampling(self.inner):
            with self._lock:
                self.bypassed += 1
            return list(call())
        key = cache_key(self.inner, method, answer, statements, source)
        rows = self._get(key)
        if rows is not None:
            with self._lock:
                self.hits += 1
            return [_rebuild(row, answer, statements, source) for row in rows]
        with self._lock:
            self.misses += 1
        verdicts = list(call())
        if not any(v.error == "call" for v in verdicts):
            self._put(key, method, [_serialize(v, statements, source) for v in verdicts])
        return verdicts

    # ------------------------------------------------------------------ Judge protocol
    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._cached("relevance", answer, statements, None,
                            lambda: self.inner.relevance(answer, statements))

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        return self._cached("stance", answer, statements, None,
                            lambda: self.inner.stance(answer, statements))

    def confidence(self, answer: Answer) -> Verdict:
        return self._cached("confidence", answer, (), None,
                            lambda: [self.inner.confidence(answer)])[0]

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        return self._cached("support", answer, statements, source,
                            lambda: self.inner.support(answer, statements, source))

    def support_many(
        self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]
    ) -> list[Verdict]:
        """`support` for several sources, one cache entry per source. The sources not in the cache
        go to the inner judge together (its `support_many` may pack them into fewer calls); a
        rerun finds every source and calls nothing."""
        if _is_sampling(self.inner):
            with self._lock:
                self.bypassed += 1
            return self._inner_many(answer, statements, sources)
        found: dict[int, list[Verdict]] = {}
        missing: list[tuple[Source, str]] = []
        for source in sources:
            key = cache_key(self.inner, "support", answer, statements, source)
            rows = self._get(key)
            if rows is None:
                missing.append((source, key))
            else:
                found[id(source)] = [_rebuild(row, answer, statements, source) for row in rows]
        with self._lock:
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            fresh = self._inner_many(answer, statements, [s for s, _ in missing])
            for source, key in missing:
                verdicts = [v for v in fresh if v.source_index == source.index]
                found[id(source)] = verdicts
                if verdicts and not any(v.error == "call" for v in verdicts):
                    self._put(key, "support", [_serialize(v, statements, source) for v in verdicts])
        return [v for s in sources for v in found[id(s)]]

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """Set support, cached under its own method name ("support_set") and keyed by the texts
        of the sources in the set. A hit gets the set's own indexes back, so another answer with the
        same texts under other numbers is rebuilt right."""
        members = tuple(sorted({s.index for s in sources}))
        if _is_sampling(self.inner):
            with self._lock:
                self.bypassed += 1
            return list(self.inner.support_set(answer, statements, sources))
        key = cache_key(self.inner, "support_set", answer, statements, None, sources)
        rows = self._get(key)
        if rows is not None:
            with self._lock:
                self.hits += 1
            return [dataclasses.replace(_rebuild(row, answer, statements, None), source_set=members) for row in rows]
        with self._lock:
            self.misses += 1
        verdicts = list(self.inner.support_set(answer, statements, sources))
        if not any(v.error == "call" for v in verdicts):
            self._put(key, "support_set", [_serialize(v, statements, None) for v in verdicts])
        return verdicts

    def _inner_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        return list(self.inner.support_many(answer, statements, sources))

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        """One cache entry per source under the method name "source_stance" (the key holds the
        query and the source text, not the answer: a source's stance on a query does not depend on
        the answer that lists it). Missing sources go to the inner judge together."""
        if _is_sampling(self.inner):
            with self._lock:
                self.bypassed += 1
            return list(self.inner.source_stance(answer, sources))
        found: dict[int, list[Verdict]] = {}
        missing: list[tuple[Source, str]] = []
        for source in sources:
            key = cache_key(self.inner, "source_stance", answer, (), source)
            rows = self._get(key)
            if rows is None:
                missing.append((source, key))
            else:
                found[id(source)] = [_rebuild(row, answer, (), source) for row in rows]
        with self._lock:
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            fresh = list(self.inner.source_stance(answer, [s for s, _ in missing]))
            for source, key in missing:
                verdicts = [v for v in fresh if v.source_index == source.index]
                found[id(source)] = verdicts
                if verdicts and not any(v.error == "call" for v in verdicts):
                    self._put(key, "source_stance", [_serialize(v, (), source) for v in verdicts])
        return [v for s in sources for v in found[id(s)]]

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


def _serialize(verdict: Verdict, statements: Sequence[Statement], source: Source | None) -> dict[str, Any]:
    row = dataclasses.asdict(verdict)
    # Remember which input position the verdict belongs to, so a hit for the same inputs under
    # other ids (another answer with identical text) gets its own ids back.
    row["_pos"] = next(
        (i for i, s in enumerate(statements) if s.index == verdict.statement_index), None
    )
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
