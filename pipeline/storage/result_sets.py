"""A dataset's results as one set that changes whole: generations, a pointer, checksums, a lock.

A run writes every table of a dataset (answers, sources, and each judge's statements, labels, pairs,
metrics, summary and manifest) into a new generation folder that no reader looks at, lists every
file of it with its size and sha256 in `SET.json`, and then switches the dataset's pointer to it
with one atomic rename. A reader resolves the pointer and reads that generation. So a kill at any
moment leaves readers the old complete set or the new complete set, never a mix
(docs/design/decisions.md, "Result sets change whole").

    <results>/<dataset>/CURRENT          "gen-000007": the generation readers use
    <results>/<dataset>/gen-000007/      answers.parquet, sources.parquet, <judge>/*.parquet,
                                          <judge>/manifest.json, SET.json
    <results>/<dataset>/gen-000006/      the one before, kept so a reader that resolved the pointer a
                                          moment ago can finish; older ones are removed
    <results>/<dataset>/<judge>/parts/   a computed judge's saved labels per chunk (resume; not results)
    <results>/.locks/<dataset>.lock      held while a run writes the dataset

Results written before generations (tables directly in the dataset folder, no pointer) are read as
they are and called unverified; the next run of the dataset moves them into a generation.

Two runs on one dataset: `DatasetLock` takes an exclusive `flock` on the dataset's lock file and
writes its pid, start time and command into it. The kernel drops the lock when its holder dies,
however it dies, so a lock left by a killed run is taken over (and said so); a second live run
stops with a message naming the holder, or waits for it when asked to.

Checks: `set_problem` compares the pointed generation with its `SET.json` (every listed file there
with its size and checksum, nothing else beside them); readers (the store's listings, the
dashboard, `aee scorecard`) show a set with a problem as that problem, never its numbers.
Checksums are remembered per file (path, size, modification time, inode), so a reader pays for
hashing a file once.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pipeline.errors import InputError
from pipeline.storage.faults import point

__all__ = [
    "POINTER", "SET_FILE", "ResultSetError", "DatasetBusy", "DatasetLock", "NewGeneration", "current_set",
    "set_problem", "sweep_leftovers", "is_legacy", "is_our_temporary",
]

log = logging.getLogger(__name__)

POINTER = "CURRENT"
SET_FILE = "SET.json"
LOCKS = ".locks"
_GENERATION = re.compile(r"gen-(\d{6,})")
# what tempfile.mkstemp(prefix=".<file>.", suffix=".tmp") names our atomic writes: a dot, the target's
# name (a table, a JSON file or the pointer), a dot, eight characters, ".tmp"
_TEMPORARY = re.compile(r"\.(?:[^/]+\.(?:parquet|json)|CURRENT)\.[a-z0-9_]{8}\.tmp")
_LEGACY_FILES = ("answers.parquet", "sources.parquet")
_JUDGE_FILES = ("statements.parquet", "labels.parquet", "pairs.parquet", "metrics.parquet", "summary.parquet",
                "manifest.json",
                "over_time.json", "over_time_flips.parquet",  # written when the data has repeats or waves (pipeline/consistency)
                "answer_rows.parquet", "sides.parquet", "audit_clusters.parquet", "values.parquet",  # the pages' records
                "facts.parquet")  # (pipeline/page_records)
HASH_BLOCK = 1 << 20


class ResultSetError(InputError):
    """A dataset's results cannot be shown as they are (a set that does not match its list)."""


class DatasetBusy(InputError):
    """Another live run is writing this dataset."""


# ---- reading ------------------------------------------------------------------------------------


def _read_pointer(dataset_dir: Path) -> str | None:
    try:
        return (dataset_dir / POINTER).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


def is_legacy(dataset_dir: Path) -> bool:
    """Results written before generations: tables directly in the dataset folder, no pointer."""
    return _read_pointer(dataset_dir) is None and (dataset_dir / "answers.parquet").is_file()


def current_set(dataset_dir: Path) -> Path:
    """The folder readers read the dataset's tables from: the generation the pointer names, the
    dataset folder itself for results from before generations, and the dataset folder (where
    nothing is found) when there are no results. A pointer naming no generation folder gives that
    name's path all the same: every file is missing there and `set_problem` says why."""
    name = _read_pointer(dataset_dir)
    if name is None:
        return dataset_dir
    return dataset_dir / name if _GENERATION.fullmatch(name) else dataset_dir / ".invalid-pointer"


_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, inode) -> sha256
_DIGESTS_LOCK = threading.Lock()


def file_digest(path: Path) -> str:
    """sha256 of a file, remembered while its size, modification time and inode stay the same."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    with _DIGESTS_LOCK:
        found = _DIGESTS.get(key)
    if found is not None:
        return found
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(HASH_BLOCK):
            h.update(block)
    digest = h.hexdigest()
    with _DIGESTS_LOCK:
        if len(_DIGESTS) > 10_000:
            _DIGESTS.clear()
        _DIGESTS[key] = digest
    return digest


def _set_files(folder: Path) -> Iterator[Path]:
    """The files of a generation that belong to the set (everything but SET.json and temporaries)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != SET_FILE and not is_our_temporary(path.name):
            yield path


def set_problem(dataset_dir: Path) -> str | None:
    """Why the dataset's current results must not be shown, or None when they are a whole set
    (or were written before generations, which cannot be checked)."""
    name = _read_pointer(dataset_dir)
    if name is None:
        return None
    if not _GENERATION.fullmatch(name):
        return f"its pointer ({POINTER}) names {name[:40]!r}, which is not a result set"
    folder = dataset_dir / name
    try:
        listed = json.loads((folder / SET_FILE).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        return f"result set {name} has no {SET_FILE} (the folder is missing or incomplete)"
    except (OSError, ValueError, KeyError, TypeError):
        return f"the list of files of result set {name} ({SET_FILE}) cannot be read"
    present = {p.relative_to(folder).as_posix() for p in _set_files(folder)}
    for rel, want in sorted(listed.items()):
        path = folder / rel
        try:
            size = path.stat().st_size
        except OSError:
            return f"{rel} of result set {name} is missing"
        if size != want.get("bytes") or file_digest(path) != want.get("sha256"):
            return f"{rel} of result set {name} changed after the run wrote it (its checksum does not match)"
    extra = sorted(present - set(listed))
    if extra:
        return f"result set {name} holds {extra[0]}, which its run did not write"
    return None


# ---- the lock -------------------------------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


class DatasetLock:
    """An exclusive lock on writing one dataset's results, held by this process until `release`.

    `wait` seconds: how long to wait for another live run to finish (0: stop at once with a
    message naming it). The lock is an `flock` on `<results>/.locks/<dataset>.lock`, which the
    kernel releases when the holder exits or is killed; the file itself is never deleted (a waiter
    holding it open would otherwise lock a file nobody else can see)."""

    POLL_SECONDS = 0.2

    def __init__(self, results_root: Path, dataset: str, wait: float = 0.0) -> None:
        self.path = results_root / LOCKS / f"{dataset}.lock"
        self.dataset = dataset
        self.wait = max(0.0, float(wait))
        self.took_over: dict[str, Any] | None = None  # the holder a dead run left in the file
        self._fh: Any = None

    def acquire(self) -> "DatasetLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open while the lock is held
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    fh.close()
                    raise
                if time.monotonic() >= deadline:
                    holder = _describe(_holder(fh))
                    fh.close()
                    raise DatasetBusy(
                        f"dataset {self.dataset!r} is being written by another run ({holder}); wait for it to finish"
                        + (f" (waited {self.wait:.0f} s)" if self.wait else ", or pass --wait SECONDS to wait for it")
                    ) from None
                time.sleep(self.POLL_SECONDS)
        previous = _holder(fh)
        pid = previous.get("pid")
        if isinstance(pid, int) and pid != os.getpid():
            # the file still names a run: it never released the lock, so it died (the kernel let us in)
            self.took_over = previous
            log.warning("took over the lock of dataset %s left by pid %s, which is no longer running%s",
                        self.dataset, pid, "" if not _pid_alive(pid) else " (its pid now belongs to another process)")
        self._write(fh, {"pid": os.getpid(), "started": _now(), "command": " ".join(sys.argv)[:300]})
        self._fh = fh
        return self

    @staticmethod
    def _write(fh: Any, payload: dict[str, Any]) -> None:
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps(payload))
        fh.flush()

    def release(self) -> None:
        """Empty the file (a holder named in it is one that never released it) and unlock."""
        if self._fh is None:
            return
        try:
            self._fh.seek(0)
            self._fh.truncate()
            self._fh.flush()
        finally:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "DatasetLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fh: Any) -> dict[str, Any]:
    try:
        fh.seek(0)
        data = json.loads(fh.read() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "it has not written its details yet"
    return f"pid {holder['pid']}, since {holder.get('started', '?')}: {str(holder.get('command', ''))[:120]}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---- writing a new generation ---------------------------------------------------------------------


def _generations(dataset_dir: Path) -> list[tuple[int, Path]]:
    if not dataset_dir.is_dir():
        return []
    found = []
    for path in dataset_dir.iterdir():
        m = _GENERATION.fullmatch(path.name)
        if m and path.is_dir():
            found.append((int(m.group(1)), path))
    return sorted(found)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class NewGeneration:
    """A generation folder being written; invisible to readers until `publish`.

    Use under a `DatasetLock`: `table_path` places each table, `carry_over` links the other
    judges' tables of the previous set in, `publish` lists every file with its checksum, makes
    everything durable and switches the pointer; `discard` removes the folder."""

    def __init__(self, dataset_dir: Path) -> None:
        self.dataset_dir = dataset_dir
        # the set this one follows: its other judges' tables are carried over, its answers merged
        self.previous: Path | None = None
        self.previous_problem = set_problem(dataset_dir)
        if self.previous_problem is not None:
            log.warning("the results of %s cannot be trusted (%s): the new set keeps only this run's tables",
                        dataset_dir.name, self.previous_problem)
        elif is_legacy(dataset_dir) or _read_pointer(dataset_dir) is not None:
            self.previous = current_set(dataset_dir)
        numbers = [n for n, _ in _generations(dataset_dir)]
        pointed = _GENERATION.fullmatch(_read_pointer(dataset_dir) or "")
        if pointed:
            numbers.append(int(pointed.group(1)))
        self.name = f"gen-{max(numbers, default=0) + 1:06d}"
        self.path = dataset_dir / self.name
        self.path.mkdir(parents=True)
        point("generation:mkdir")

    def carry_over(self, keep_out: set[str]) -> None:
        """Link (or copy, where links are not possible) the previous set's judge folders into this
        one, except the folders named in `keep_out` (the judge this run writes). Their files are
        never changed in place, so a link is a copy that costs nothing."""
        if self.previous is None:
            return
        for folder in sorted(p for p in self.previous.iterdir() if p.is_dir()):
            if folder.name in keep_out or _GENERATION.fullmatch(folder.name) or folder.name.startswith("."):
                continue
            files = [folder / name for name in _JUDGE_FILES if (folder / name).is_file()]
            if not files:
                continue
            (self.path / folder.name).mkdir(exist_ok=True)
            for src in files:
                dst = self.path / folder.name / src.name
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
                point(f"generation:carry:{folder.name}/{src.name}")

    def publish(self) -> None:
        """List every file with its size and checksum, make all of it durable, and switch the
        dataset's pointer to this generation (one rename: readers see the old set or this one)."""
        files = {}
        for path in _set_files(self.path):
            _fsync(path)
            files[path.relative_to(self.path).as_posix()] = {"bytes": path.stat().st_size, "sha256": file_digest(path)}
        listing = {"generation": self.name, "created": _now(), "files": files}
        _write_text_durably(self.path / SET_FILE, json.dumps(listing, indent=1, sort_keys=True))
        point("generation:set-file")
        for folder in sorted({p.parent for p in _set_files(self.path)} | {self.path}, key=lambda p: -len(p.parts)):
            _fsync(folder)
        _write_text_durably(self.dataset_dir / POINTER, self.name + "\n")
        point("generation:pointer")
        _fsync(self.dataset_dir)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _write_text_durably(path: Path, text: str) -> None:
    """Write a small file through a temporary file, fsync it, and rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        point(f"write:{path.name}:temporary")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# ---- leftovers ------------------------------------------------------------------------------------


def is_our_temporary(name: str) -> bool:
    """A temporary file of our atomic writes (`.<table>.parquet.<8 characters>.tmp`), by its name."""
    return bool(_TEMPORARY.fullmatch(name))


def sweep_leftovers(dataset_dir: Path) -> list[str]:
    """Under the dataset's lock: remove what killed runs left behind (temporary files of our
    atomic writes, generation folders no pointer names that are newer than the current one or
    older than the one before it), and the tables of results from before generations once a
    generation replaced them. Never touches anything it did not write. Returns what it removed."""
    removed: list[str] = []
    if not dataset_dir.is_dir():
        return removed
    for path in sorted(dataset_dir.rglob("*.tmp")):
        if path.is_file() and is_our_temporary(path.name):
            path.unlink(missing_ok=True)
            removed.append(str(path.relative_to(dataset_dir)))
            point("sweep:temporary")
    pointed = _GENERATION.fullmatch(_read_pointer(dataset_dir) or "")
    if _read_pointer(dataset_dir) is None:  # nothing was ever published: every generation is a leftover
        for _, path in _generations(dataset_dir):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
            point("sweep:generation")
    elif pointed:
        current = int(pointed.group(1))
        generations = _generations(dataset_dir)
        older = [n for n, _ in generations if n < current]
        keep = {current, max(older, default=current)}
        for n, path in generations:
            if n not in keep:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path.name)
                point("sweep:generation")
        for name in _LEGACY_FILES:  # results from before generations, now inside one
            if (dataset_dir / name).is_file():
                (dataset_dir / name).unlink()
                removed.append(name)
                point("sweep:legacy")
        for folder in (p for p in dataset_dir.iterdir() if p.is_dir() and not _GENERATION.fullmatch(p.name)):
            for name in _JUDGE_FILES:
                if (folder / name).is_file():
                    (folder / name).unlink()
                    removed.append(f"{folder.name}/{name}")
                    point("sweep:legacy")
    return removed
