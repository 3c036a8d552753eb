"""The human labels of every audit, in one append-only SQLite file (`<results>/_audit/labels.sqlite`).

Every label a person gives is one row (an event) written in its own committed transaction the moment
it is given, in WAL mode with full sync: a refreshed page, a closed tab or a killed server loses
nothing that was shown as saved. Nothing is ever updated or deleted: changing one's mind appends a
newer event, and an import appends its rows, so an earlier label can always be read back
(`history`). The current label of an (item, annotator, field) is its newest event.

Annotators are told apart by name; each one's events carry that name, so two people labelling the
same sample never mix, and each resumes at the first item they have neither labelled nor skipped.

Classes (the classroom mode): a teacher splits one sample into seats of ten items, each under a
short code a student types in; consecutive seats overlap so every item gets two students and the
class's agreement among itself can be measured.
"""

from __future__ import annotations

import secrets
import sqlite3
import unicodedata
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from pipeline.audit import CANT_TELL, FIELD_VALUES, audit_dir
from pipeline.errors import InputError

MAX_NAME = 60
MAX_NOTE = 2000
MAX_ORIGIN = 200
NOTE = "note"
SKIP = "skip"
FIELDS = (*FIELD_VALUES, NOTE, SKIP)
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud and typed by students
CODE_LENGTH = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sample_id TEXT NOT NULL, item_id TEXT NOT NULL, annotator TEXT NOT NULL,
    field TEXT NOT NULL, value TEXT NOT NULL, origin TEXT NOT NULL, created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_sample ON events (sample_id, annotator, item_id, field);
CREATE TABLE IF NOT EXISTS seats (
    code TEXT PRIMARY KEY, sample_id TEXT NOT NULL, class_name TEXT NOT NULL,
    seat INTEGER NOT NULL, first INTEGER NOT NULL, size INTEGER NOT NULL, created TEXT NOT NULL
);
"""


def labels_path(root: Path | None = None) -> Path:
    return audit_dir(root) / "labels.sqlite"


def clean_name(name: object, what: str = "annotator") -> str:
    """An annotator's (or class's) name as stored: spaces collapsed, 1 to MAX_NAME printable characters."""
    text = " ".join(str(name or "").split())
    if not text:
        raise InputError(f"the {what} name is empty", field=f"--{what}")
    if len(text) > MAX_NAME:
        raise InputError(f"the {what} name is longer than {MAX_NAME} characters", field=f"--{what}")
    if any(unicodedata.category(ch)[0] == "C" for ch in text):
        raise InputError(f"the {what} name holds control characters", field=f"--{what}")
    return text


# spellings people type in a spreadsheet, read as the stored value
_ABSTAIN = {"cannot_tell": CANT_TELL, "cant_tell": CANT_TELL, "?": CANT_TELL, "unsure": CANT_TELL}
_ALIASES = {"relevant": {"yes": "relevant", "no": "filler", "not_relevant": "filler", "irrelevant": "filler"}}


def check_value(field: str, value: object) -> str:
    """A field's value as stored; InputError naming the allowed values otherwise."""
    if field not in FIELDS:
        raise InputError(f"unknown label field; use one of {', '.join(FIELDS)}", field=str(field))
    text = "" if value is None else str(value).strip()
    if field == NOTE:
        return text[:MAX_NOTE]
    if field == SKIP:
        return "1"
    allowed = FIELD_VALUES[field]
    lowered = text.lower().replace("’", "").replace("'", "").replace(" ", "_").replace("-", "_")
    lowered = (_ALIASES.get(field, {}) | _ABSTAIN).get(lowered, lowered)
    if lowered not in allowed:
        raise InputError(f"{text!r} is not a {field} label; use one of {', '.join(allowed)}", field=field)
    return lowered


class LabelStore:
    """Append-only label events and classroom seats in one SQLite file (see the module doc)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or labels_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as con:
            con.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("PRAGMA busy_timeout=30000")
        return con

    # ---- writing ---------------------------------------------------------------------------------

    def record(self, sample_id: str, item_id: str, annotator: str, field: str, value: object, origin: str = "app") -> str:
        """Save one label now (its own committed transaction); returns the value as stored."""
        stored = check_value(field, value)
        self.record_many([(sample_id, item_id, clean_name(annotator), field, stored)], origin)
        return stored

    def record_many(self, rows: Sequence[tuple[str, str, str, str, str]], origin: str) -> int:
        """Append already checked (sample, item, annotator, field, value) rows in one transaction."""
        if not rows:
            return 0
        now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        with closing(self._connect()) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.executemany("INSERT INTO events (sample_id, item_id, annotator, field, value, origin, created) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)", [(*r, origin[:MAX_ORIGIN], now) for r in rows])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return len(rows)

    # ---- reading ---------------------------------------------------------------------------------

    def _frame(self, query: str, params: Iterable) -> pd.DataFrame:
        with closing(self._connect()) as con:
            return pd.read_sql_query(query, con, params=tuple(params))

    def current(self, sample_id: str, annotator: str | None = None) -> pd.DataFrame:
        """The newest event per (item, annotator, field) of a sample (skips and notes included):
        columns item_id, annotator, field, value, origin, created, id."""
        where, params = "sample_id = ?", [sample_id]
        if annotator is not None:
            where += " AND annotator = ?"
            params.append(annotator)
        return self._frame(
            f"SELECT e.item_id, e.annotator, e.field, e.value, e.origin, e.created, e.id FROM events e JOIN ("
            f"SELECT MAX(id) AS id FROM events WHERE {where} GROUP BY item_id, annotator, field) last ON e.id = last.id "
            "ORDER BY e.id", params)

    def labels(self, sample_id: str, annotator: str | None = None) -> pd.DataFrame:
        """Current labels in wide form: one row per (item, annotator), one column per label field
        (None where not given), plus `skipped` (True when the newest action on the item was a skip)."""
        events = self.current(sample_id, annotator)
        columns = ["item_id", "annotator", *FIELD_VALUES, NOTE, "skipped", "last_id"]
        if events.empty:
            return pd.DataFrame(columns=columns)
        wide = events.pivot_table(index=["item_id", "annotator"], columns="field", values="value", aggfunc="first")
        wide = wide.reset_index()
        last = events.groupby(["item_id", "annotator"])["id"].max().rename("last_id").reset_index()
        label_ids = events[events["field"] != SKIP].groupby(["item_id", "annotator"])["id"].max().rename("label_id")
        skip_ids = events[events["field"] == SKIP].groupby(["item_id", "annotator"])["id"].max().rename("skip_id")
        wide = wide.merge(last, on=["item_id", "annotator"]).merge(label_ids.reset_index(), how="left",
                                                                    on=["item_id", "annotator"])
        wide = wide.merge(skip_ids.reset_index(), how="left", on=["item_id", "annotator"])
        wide["skipped"] = wide["skip_id"].notna() & (wide["label_id"].isna() | (wide["skip_id"] > wide["label_id"]))
        for col in columns:
            if col not in wide.columns:
                wide[col] = None
        wide = wide[columns].astype(object)
        return wide.where(wide.notna(), None)

    def annotators(self, sample_id: str) -> list[str]:
        """Everyone with at least one event on the sample, in the order they started."""
        frame = self._frame("SELECT annotator, MIN(id) AS first FROM events WHERE sample_id = ? GROUP BY annotator "
                            "ORDER BY first", [sample_id])
        return list(frame["annotator"])

    def history(self, sample_id: str, item_id: str | None = None) -> pd.DataFrame:
        """Every event of a sample (or of one item), oldest first."""
        if item_id is None:
            return self._frame("SELECT * FROM events WHERE sample_id = ? ORDER BY id", [sample_id])
        return self._frame("SELECT * FROM events WHERE sample_id = ? AND item_id = ? ORDER BY id", [sample_id, item_id])

    def version(self) -> tuple[int, int]:
        """(events, newest event id): changes whenever anyone saves a label (a cache key for readers)."""
        with closing(self._connect()) as con:
            n, last = con.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM events").fetchone()
        return int(n), int(last)

    def state(self, sample_ids: Iterable[str]) -> tuple[int, int]:
        """(events, newest event id) of some samples: what a published `human:audit` judge records,
        so a page can tell labels given after it was published."""
        ids = sorted(set(sample_ids))
        if not ids:
            return 0, 0
        marks = ", ".join("?" for _ in ids)
        with closing(self._connect()) as con:
            n, last = con.execute(f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM events WHERE sample_id IN ({marks})",
                                  ids).fetchone()
        return int(n), int(last)

    def event_count(self) -> int:
        with closing(self._connect()) as con:
            return int(con.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    # ---- classroom seats -------------------------------------------------------------------------

    def create_class(self, sample_id: str, class_name: str, item_count: int, seats: int, per_seat: int = 10,
                     overlap: int = 5, spread: bool = False) -> list[dict]:
        """`seats` codes, each for `per_seat` consecutive items of the sample in its labelling order,
        consecutive seats starting `per_seat - overlap` items apart (wrapping around), so every item
        is met by about per_seat / (per_seat - overlap) students. With `spread`, when the seats hold
        at least two labels per item, the starts are spread evenly over the whole sample instead, so
        every item is met by two students or more (any two consecutive starts are at most
        ceil(2n / seats) <= per_seat items apart). Codes are random, unique, and never reused."""
        name = clean_name(class_name, "class")
        if not 1 <= seats <= 500:
            raise InputError("a class has 1 to 500 students", field="students")
        if item_count < 1:
            raise InputError("the sample has no items", record=sample_id)
        per_seat = max(1, min(per_seat, item_count))
        step = max(1, per_seat - max(0, overlap))
        even = spread and seats >= 2 and seats * per_seat >= 2 * item_count
        rows = []
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with closing(self._connect()) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                taken = {r[0] for r in con.execute("SELECT code FROM seats")}
                for seat in range(seats):
                    code = _new_code(taken)
                    taken.add(code)
                    rows.append({"code": code, "sample_id": sample_id, "class_name": name, "seat": seat + 1,
                                 "first": (seat * item_count) // seats if even else (seat * step) % item_count, "size": per_seat, "created": now})
                con.executemany("INSERT INTO seats (code, sample_id, class_name, seat, first, size, created) VALUES "
                                "(:code, :sample_id, :class_name, :seat, :first, :size, :created)", rows)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return rows

    def seat(self, code: str) -> dict | None:
        """The seat of a code (case and spaces ignored), None when no class has it."""
        wanted = "".join(str(code or "").split()).upper().replace("-", "")
        if not wanted or len(wanted) > 20:
            return None
        frame = self._frame("SELECT * FROM seats WHERE code = ?", [wanted])
        return None if frame.empty else frame.iloc[0].to_dict()

    def classes(self, sample_id: str | None = None) -> pd.DataFrame:
        """Every seat (of one sample), by class and seat number."""
        if sample_id is None:
            return self._frame("SELECT * FROM seats ORDER BY created, class_name, seat", [])
        return self._frame("SELECT * FROM seats WHERE sample_id = ? ORDER BY created, class_name, seat", [sample_id])


def seat_items(order: Sequence[str], first: int, size: int) -> list[str]:
    """The item ids of a seat: `size` items of the sample's order from `first`, wrapping around."""
    n = len(order)
    return [order[(first + k) % n] for k in range(min(size, n))]


def seat_coverage(item_count: int, seats: Iterable[tuple[int, int]]) -> dict[int, int]:
    """{times seen: number of items} for seats given as (first, size) over `item_count` items."""
    seen = [0] * item_count
    for first, size in seats:
        for k in range(min(size, item_count)):
            seen[(first + k) % item_count] += 1
    out: dict[int, int] = {}
    for times in seen:
        out[times] = out.get(times, 0) + 1
    return out


def student_name(seat: dict, name: str) -> str:
    """A student's annotator name: their own name with the seat code, so two students who type the
    same first name never share labels."""
    return clean_name(f"{clean_name(name)[:40]} ({seat['code']})")


def _new_code(taken: set[str]) -> str:
    while True:
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if code not in taken:
            return code
