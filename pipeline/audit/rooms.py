"""Who may write under a name in a served room (`pipeline.room`): the first browser session that
uses a name within a room's code owns it; another session must show the owner's key to write
under it. Kept in the labels store's SQLite file, in its own table, as hashes of the keys.

A name is compared without case or repeated spaces, so "ana" cannot pose as "Ana".
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

from pipeline.audit.labels import CODE_ALPHABET, labels_path

KEY_LENGTH = 8

_SCHEMA = """
CREATE TABLE IF NOT EXISTS room_names (
    room TEXT NOT NULL, name TEXT NOT NULL, key_hash TEXT NOT NULL, created TEXT NOT NULL,
    PRIMARY KEY (room, name)
);
"""


def new_key() -> str:
    """A session's key: shown to its owner, so they can carry on after a reload or in another tab."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(KEY_LENGTH))


def _hash(key: str) -> str:
    return hashlib.sha256(f"aee-name-key:{key.strip().upper()}".encode()).hexdigest()


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


class NameClaims:
    """Names bound to session keys, per room (see the module doc)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or labels_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as con:
            con.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        con.execute("PRAGMA busy_timeout=30000")
        return con

    def claim(self, room: str, name: str, key: str) -> bool:
        """True when `key` may write under `name` in `room`: the name was free (now it is this
        key's) or this key already owns it."""
        if not key.strip():
            return False
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with closing(self._connect()) as con:
            con.execute("INSERT OR IGNORE INTO room_names (room, name, key_hash, created) VALUES (?, ?, ?, ?)",
                        (room, _name_key(name), _hash(key), now))
            row = con.execute("SELECT key_hash FROM room_names WHERE room = ? AND name = ?",
                              (room, _name_key(name))).fetchone()
        return row is not None and secrets.compare_digest(row[0], _hash(key))

    def owner_is(self, room: str, name: str, key: str) -> bool:
        """Whether `key` owns `name` in `room` (False when nobody has claimed it)."""
        with closing(self._connect()) as con:
            row = con.execute("SELECT key_hash FROM room_names WHERE room = ? AND name = ?",
                              (room, _name_key(name))).fetchone()
        return row is not None and secrets.compare_digest(row[0], _hash(key))
