"""One judge cache for every worker of a Ray run (docs/design/decisions.md, "The judge cache on a
cluster").

The cache is the driver's SQLite file (`$AEE_CACHE_DIR/judges.sqlite`, the same one a local run
uses), and it has one writer:

- a worker wraps its judge in `ClusterCache`, a `CachingJudge` whose own SQLite file is a private
  journal in the worker's temporary folder. What the judge answers goes to the journal; a lookup
  tries the journal, then the run's cache: read straight from the file when the worker runs on the
  driver's machine, else through `CacheServer`, a small actor on the driver's machine that reads
  the file for workers elsewhere. Such a worker first checks the key against `KeyIndex`, the
  run's cache keys when it started (8 bytes each, sorted), and asks the actor only for keys that are
  there: a cold cache costs no round trip at all;
- after each chunk the worker hands its new journal rows back with the chunk's labels
  (`ClusterCache.drain`), and the driver writes them into the run's cache (`merge_rows`) before it
  saves the chunk's labels part. A worker that dies mid-chunk has written nothing to the cache,
  and its chunk is asked again whole.

So a second run of the same job, or a run restarted after a crash, is served from the cache like a
local run is, and nothing here needs storage shared between machines (SQLite over a network file
system is unsafe: its locks are not reliable there, and WAL mode needs memory shared on one host).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Sequence

from pipeline.judges.cache import CachingJudge

__all__ = ["CacheRow", "CacheServer", "ClusterCache", "KeyIndex", "merge_rows"]

CacheRow = tuple[str, str, str, str]  # key, judge, method, payload: one row of the `verdicts` table
_COLUMNS = "key, judge, method, payload"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def _payload(conn: sqlite3.Connection, key: str) -> CacheRow | None:
    try:
        row = conn.execute(f"SELECT {_COLUMNS} FROM verdicts WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError:  # the run's cache has no table yet: nothing cached
        return None
    return None if row is None else (str(row[0]), str(row[1]), str(row[2]), str(row[3]))


def merge_rows(path: Path, rows: Iterable[Sequence[str]]) -> int:
    """Write cache rows handed back by workers into the cache at `path` (one transaction); returns
    how many. The table is the one `CachingJudge` creates (the driver's judge has opened it)."""
    rows = [tuple(r) for r in rows]
    if not rows:
        return 0
    conn = _connect(path)
    try:
        with conn:
            conn.executemany(f"INSERT OR REPLACE INTO verdicts ({_COLUMNS}) VALUES (?, ?, ?, ?)", rows)
    finally:
        conn.close()
    return len(rows)


class KeyIndex:
    """Which keys the run's cache held when the run started: the first 8 bytes of each (sorted
    uint64), 8 MB per million entries. A key not in it was not in the cache then (entries merged
    during the run are not in it: a worker on another machine may then ask its judge again for a
    verdict another worker gave in the same run, and gets the same answer)."""

    def __init__(self, path: Path | None) -> None:
        import numpy as np

        prefixes: list[int] = []
        if path is not None and path.exists():
            conn = _connect(path)
            try:
                prefixes = [int(k[:16], 16) for (k,) in conn.execute("SELECT key FROM verdicts")]
            except sqlite3.OperationalError:
                prefixes = []
            finally:
                conn.close()
        self.prefixes = np.unique(np.array(prefixes, dtype=np.uint64))

    def __len__(self) -> int:
        return int(self.prefixes.size)

    def may_hold(self, key: str) -> bool:
        import numpy as np

        if not self.prefixes.size:
            return False
        value = np.uint64(int(key[:16], 16))
        i = int(np.searchsorted(self.prefixes, value))
        return i < self.prefixes.size and self.prefixes[i] == value


class CacheServer:
    """Reads the run's cache for workers on other machines (a Ray actor on the driver's machine;
    `pipeline.cluster.ray_executor` starts it). Read-only: the driver is the cache's one writer."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path)
        return conn

    def get(self, key: str) -> CacheRow | None:
        return _payload(self._conn(), key) if self.path.exists() else None


class ClusterCache(CachingJudge):
    """A worker's judge cache: a private journal in front of the run's shared cache (module doc).

    `shared_path` is the run's cache file when this worker can open it (same machine as the
    driver), `server` a `CacheServer` actor handle otherwise; `drain()` returns the rows answered
    since the last drain, for the driver to merge.
    """

    def __init__(self, inner: Any, *, shared_path: Path | None = None, server: Any = None,
                 index: KeyIndex | None = None) -> None:
        self._journal_dir = Path(tempfile.mkdtemp(prefix="aee-cache-journal-"))
        super().__init__(inner, path=self._journal_dir / "journal.sqlite")
        self._shared_path = shared_path if shared_path is not None and shared_path.exists() else None
        self._server = server
        self._index = index  # with `server`: ask it only for keys the run's cache held at the start
        self._shared_conn: sqlite3.Connection | None = None
        self._fresh: list[str] = []  # keys this worker's judge answered since the last drain

    def _shared_row(self, key: str) -> CacheRow | None:
        if self._shared_path is not None:
            with self._lock:
                if self._shared_conn is None:
                    self._shared_conn = _connect(self._shared_path)
                return _payload(self._shared_conn, key)
        if self._server is not None:
            if self._index is not None and not self._index.may_hold(key):
                return None
            import ray

            return ray.get(self._server.get.remote(key))
        return None

    def _get(self, key: str) -> list[dict[str, Any]] | None:
        found = super()._get(key)
        if found is not None:
            return found
        row = self._shared_row(key)
        if row is None:
            return None
        # keep the shared row in the journal (it is not fresh: it goes back to nobody), then read
        # it the way the cache reads its own rows
        conn = self._db()
        with conn:
            conn.execute(f"INSERT OR REPLACE INTO verdicts ({_COLUMNS}) VALUES (?, ?, ?, ?)", row)
        return super()._get(key)

    def _put(self, key: str, method: str, rows: list[dict[str, Any]]) -> None:
        super()._put(key, method, rows)
        with self._lock:
            self._fresh.append(key)

    def drain(self) -> list[CacheRow]:
        """The rows this worker's judge answered since the last call (for the driver to merge)."""
        with self._lock:
            keys, self._fresh = list(dict.fromkeys(self._fresh)), []
        conn = self._db()
        rows = [_payload(conn, key) for key in keys]
        return [r for r in rows if r is not None]

    def close(self) -> None:
        super().close()
        if self._shared_conn is not None:
            self._shared_conn.close()
            self._shared_conn = None
        shutil.rmtree(self._journal_dir, ignore_errors=True)
